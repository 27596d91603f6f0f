"""view.model: the names the view shares with the writers of the slices and with its callers
(spelled again in the model so that it loads without the reconciler): the owner labels of
EndpointSelector and imported slices, and the endpoint policies."""

from __future__ import annotations

import pytest

from endpointslice_operator.reconciler import endpoint_selector, mcs
from endpointslice_operator.view.merge import EndpointView
from endpointslice_operator.view.model import (
    LABEL_ENDPOINT_SELECTOR_NAME,
    LABEL_MCS_SERVICE_NAME,
    POLICIES,
)


def test_the_owner_labels_are_those_the_slices_are_written_with() -> None:
    assert LABEL_ENDPOINT_SELECTOR_NAME == "endpointslice-operator.io/endpoint-selector-name"
    assert LABEL_ENDPOINT_SELECTOR_NAME == endpoint_selector.LABEL_ENDPOINT_SELECTOR_NAME
    assert LABEL_MCS_SERVICE_NAME == "multicluster.kubernetes.io/service-name"
    assert LABEL_MCS_SERVICE_NAME == mcs.LABEL_MCS_SERVICE_NAME


def test_the_policies_are_those_the_view_takes() -> None:
    assert POLICIES == ("ready", "serving", "all")
    for policy in POLICIES:
        assert EndpointView(policy=policy).policy == policy
    with pytest.raises(ValueError, match="policy must be ready, serving or all"):
        EndpointView(policy="XXreadyXX")  # type: ignore[arg-type]
