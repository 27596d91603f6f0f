"""``status.endpointSliceObjects`` of a ServiceImport (KEP-1645 after kubernetes/enhancements
PR #6037): the value, where :func:`service_import` puts it, and when it asks for a status
write."""

from __future__ import annotations

import copy
from typing import Any

from endpointslice_operator.reconciler.mcs import (
    ENDPOINT_SLICES_ABSENT,
    ENDPOINT_SLICES_PRESENT,
    endpoint_slice_objects,
    service_import,
    service_import_change,
)
from tests.reconciler.test_mcs_import_change import resolution


def test_present_with_one_imported_slice_absent_with_none() -> None:
    assert (ENDPOINT_SLICES_PRESENT, ENDPOINT_SLICES_ABSENT) == ("Present", "Absent")
    assert endpoint_slice_objects([]) == "Absent"
    assert endpoint_slice_objects(iter(())) == "Absent"
    assert endpoint_slice_objects([{"metadata": {"name": "a"}}]) == "Present"
    assert endpoint_slice_objects(iter([{}, {}])) == "Present"  # any iterable, even empty slices


def test_written_in_the_status_only_when_given() -> None:
    assert "endpointSliceObjects" not in service_import(resolution())["status"]
    status = service_import(resolution(), endpoint_slices="Absent")["status"]
    assert status == {"clusters": [{"cluster": "east"}], "endpointSliceObjects": "Absent"}


def test_a_status_write_when_it_differs_and_none_when_not_asked() -> None:
    stored: dict[str, Any] = copy.deepcopy(service_import(resolution(), endpoint_slices="Present"))
    assert service_import_change(
        stored, service_import(resolution(), endpoint_slices="Present")
    ) == (
        False,
        False,
    )
    assert service_import_change(
        stored, service_import(resolution(), endpoint_slices="Absent")
    ) == (
        False,
        True,
    )
    # Not given: whatever is stored is left as it is (no write for it).
    assert service_import_change(stored, service_import(resolution())) == (False, False)
    del stored["status"]["endpointSliceObjects"]
    assert service_import_change(stored, service_import(resolution(), endpoint_slices="Present"))[1]
    stored["status"] = "junk"
    assert service_import_change(stored, service_import(resolution(), endpoint_slices="Absent"))[1]
