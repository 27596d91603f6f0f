"""List and watch parameters that only make sense together, checked as kube-apiserver v1.36
checks them (apimachinery's ``ValidateListOptions``) before it lists or watches: 422
``ListOptions.meta.k8s.io "" is invalid`` with one cause per rule broken.

* A list: ``resourceVersionMatch`` needs ``resourceVersion``, not with ``continue``; ``Exact``
  not at ``0``; only ``Exact`` or ``NotOlderThan``. ``sendInitialEvents`` is for watches.
* A watch: ``sendInitialEvents`` needs ``resourceVersionMatch=NotOlderThan``;
  ``resourceVersionMatch`` needs ``sendInitialEvents``, is only ``NotOlderThan`` and not with
  ``continue``; ``continue`` is for lists.

v1.24 let ``sendInitialEvents`` on a list and ``continue`` on a watch through, and refused
``sendInitialEvents`` on a watch (its WatchList feature was off); the conformance table in
``tests/realcluster/test_conformance.py`` names those differences.
"""

from __future__ import annotations

from collections.abc import Mapping

from endpointslice_operator.testing.errors import Cause, invalid
from endpointslice_operator.testing.validation import forbidden, not_supported

__all__ = ["check_list_options"]

_NOT_OLDER_THAN = "NotOlderThan"
_EXACT = "Exact"


def _list_causes(query: Mapping[str, str]) -> list[Cause]:
    causes: list[Cause] = []
    match = query.get("resourceVersionMatch", "")
    if match:
        if not query.get("resourceVersion"):
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if query.get("continue"):
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if match == _EXACT:
            if query.get("resourceVersion") == "0":
                causes.append(
                    forbidden(
                        "resourceVersionMatch",
                        'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                    )
                )
        elif match != _NOT_OLDER_THAN:
            causes.append(
                not_supported("resourceVersionMatch", match, (_EXACT, _NOT_OLDER_THAN, ""))
            )
    if "sendInitialEvents" in query:
        causes.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return causes


def _watch_causes(query: Mapping[str, str]) -> list[Cause]:
    causes: list[Cause] = []
    match = query.get("resourceVersionMatch", "")
    initial = "sendInitialEvents" in query
    if initial and match != _NOT_OLDER_THAN:
        causes.append(
            forbidden(
                "resourceVersionMatch",
                f"sendInitialEvents requires setting resourceVersionMatch to {_NOT_OLDER_THAN}",
            )
        )
    if match:
        if not initial:
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                )
            )
        if match != _NOT_OLDER_THAN:
            causes.append(not_supported("resourceVersionMatch", match, (_NOT_OLDER_THAN,)))
        if query.get("continue"):
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
    if query.get("continue"):
        causes.append(forbidden("continue", "continue is forbidden for watch"))
    return causes


def check_list_options(query: Mapping[str, str], *, watch: bool) -> None:
    """Raise the API server's 422 when the parameters do not go together."""
    causes = _watch_causes(query) if watch else _list_causes(query)
    if causes:
        raise invalid("ListOptions", "meta.k8s.io", "", causes)
