"""Mutation testing, a developer tool (not run in CI): change one thing in a module, run the
module's tests, and report every change they did not notice.

``python -m scripts.mutate [MODULE ...] [--list] [--only LINE ...] [--jobs N]`` (``make mutate``,
``make mutate MODULES="endpointslice_operator/view/merge.py"``). For each module of
:data:`MODULES` (or those named), each mutation site gives one mutant: a comparison turned into
its neighbour (``<`` / ``<=``, ``==`` / ``!=``, ``in`` / ``not in``, ``is`` / ``is not``),
``and`` / ``or`` swapped, a ``not`` dropped, ``+`` / ``-`` swapped, an integer constant plus
one, ``True`` / ``False`` swapped, ``break`` / ``continue`` swapped; and the operators of
issue 35's audit: a statement of a function made ``pass`` (``await self._spend()`` too), a
string constant or dict key changed (``"name"`` -> ``"XXnameXX"``), a condition negated
(``if``, ``elif``, ``while``, a ternary: ``if c:`` -> ``if not c:``), ``return X`` ->
``return None``, two different positional arguments of a call swapped (not ``min``/``max``).
Annotations (``cast``, ``Literal``, ``TypeVar`` included), docstrings, f-strings, ``__all__``,
``assert`` and ``raise`` statements and log calls (``log.*``, ``logger.*``, ``logging.*``,
``warnings.*``, ``print``) are left alone, and so is what ``if TYPE_CHECKING:`` guards; every
mutant compiles and differs from the original. The mutant is written into a copy of the
package (the working tree is never touched) that comes first on ``PYTHONPATH``; the module's
tests run against it with ``-x`` and a timeout of ten times the unmutated run. A mutant is
*killed* when they fail, *survived* when they pass.

Two things make a run cheap without changing what it measures. A fork server per package copy
(``scripts/pytest_forks.py``) imports pytest and the tests' third-party libraries once, and
forks a child per run that imports the package afresh from the copy (no interpreter or pytest
start-up per mutant). And the unmutated run is made under coverage.py, a context per test, so
each mutant runs only the tests that ran its statement (:func:`selected_tests`), the tests
that killed mutants of its function first: a mutant no test runs survives without a run (no
test can tell it from the original); one outside functions or in a statement run at import
runs all the tests; one that passes the tests selected is run against all of them before it
counts as survived, so a survivor is one that the whole list missed, as before. ``--all-tests``
runs every mutant against all the tests (the fork server still).

Some mutants cannot be noticed by any test because they change nothing (a ``break`` after
which the loop could not continue anyway): those are listed with the reason in
:data:`EQUIVALENT` and left out of the score, ``killed / (mutants - equivalent)``.

CPU heavy: run it module by module (``nice -n 19`` is applied to the test runs); ``--jobs N``
tests N mutants at a time, each in its own copy of the package (default 1). To cover a new
module add it to :data:`MODULES` with the tests that exercise it, fastest first.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripts import mutation_scores

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "endpointslice_operator"

MODULES: dict[str, tuple[str, ...]] = {
    # module (relative to the repository) -> its tests, fastest first
    "endpointslice_operator/view/merge.py": ("tests/view/test_merge.py",),
    "endpointslice_operator/reconciler/core_endpoints.py": (
        "tests/reconciler/test_core_endpoints_edges.py",
        "tests/reconciler/test_core_endpoints.py",
    ),
    "endpointslice_operator/reconciler/sources.py": (
        "tests/reconciler/test_sources_network_status_entries.py",
        "tests/reconciler/test_sources_without_namespace.py",
        "tests/reconciler/test_sources_claim_status.py",
        "tests/reconciler/test_sources.py",
    ),
    "endpointslice_operator/reconciler/records.py": (
        "tests/reconciler/test_records_edges.py",
        "tests/reconciler/test_pod_record_shapes.py",
        "tests/reconciler/test_records.py",
    ),
    "endpointslice_operator/view/model.py": (
        "tests/view/test_model_names.py",
        "tests/view/test_model_reading.py",
        "tests/view/test_model.py",
        "tests/view/test_merge.py",
    ),
    "endpointslice_operator/controller/work/queue.py": (
        "tests/controller/work/test_queue.py",
        "tests/controller/work/test_queue_invariants.py",
    ),
    "endpointslice_operator/reconciler/planner.py": (
        "tests/reconciler/test_slice_to_fill.py",
        "tests/reconciler/test_planner_slice_writes.py",
        "tests/reconciler/test_planner.py",
        "tests/reconciler/test_reconciler.py",
        "tests/reconciler/test_trafficdist.py",
        "tests/reconciler/test_topology.py",
        "tests/reconciler/test_mirroring.py",
        "tests/reconciler/test_properties.py",
    ),
    "endpointslice_operator/reconciler/desired.py": (
        "tests/reconciler/test_desired_inputs.py",
        "tests/reconciler/test_records.py",
        "tests/reconciler/test_sources.py",
        "tests/reconciler/test_reconciler.py",
        "tests/reconciler/test_planner.py",
        "tests/reconciler/test_properties.py",
    ),
    "endpointslice_operator/reconciler/hints/topology.py": (
        "tests/reconciler/test_topology_utils.py",
        "tests/reconciler/test_topology_sliceinfo.py",
        "tests/reconciler/test_topology.py",
        "tests/reconciler/test_trafficdist.py",
        "tests/reconciler/test_topology_idempotence.py",
        "tests/reconciler/test_topology_properties.py",
    ),
    "endpointslice_operator/reconciler/hints/trafficdist.py": (
        "tests/reconciler/test_trafficdist.py",
        "tests/reconciler/test_trafficdist_values.py",
        "tests/reconciler/test_planner.py",
        "tests/reconciler/test_reconciler.py",
    ),
    "endpointslice_operator/reconciler/slices.py": (
        "tests/reconciler/test_slices.py",
        "tests/reconciler/test_slice_objects_junk.py",
        "tests/reconciler/test_slice_copies.py",
        "tests/reconciler/test_utils.py",
        "tests/reconciler/test_cached_slice.py",
        "tests/reconciler/test_slice_to_fill.py",
        "tests/reconciler/test_planner.py",
        "tests/reconciler/test_reconciler.py",
    ),
    "endpointslice_operator/reconciler/cached_slice.py": (
        "tests/reconciler/test_cached_slice.py",
        "tests/reconciler/test_cached_slice_reads.py",
        "tests/controller/cache/test_indexes.py",
    ),
    "endpointslice_operator/reconciler/ports.py": (
        "tests/reconciler/test_ports.py",
        "tests/reconciler/test_ports_text.py",
        "tests/reconciler/test_util.py",
        "tests/reconciler/test_utils.py",
    ),
    "endpointslice_operator/reconciler/labels.py": (
        "tests/reconciler/test_labels.py",
        "tests/reconciler/test_utils.py",
        "tests/reconciler/test_reconciler.py",
        "tests/reconciler/test_records.py",
    ),
    "endpointslice_operator/reconciler/compact.py": (
        "tests/reconciler/test_compact.py",
        "tests/reconciler/test_compact_sharing.py",
    ),
    "endpointslice_operator/reconciler/ipaddr.py": (
        "tests/reconciler/test_ipaddr_reasons.py",
        "tests/reconciler/test_records.py",
    ),
    "endpointslice_operator/reconciler/tracking/trigger_time.py": (
        "tests/reconciler/test_trigger_time.py",
    ),
    "endpointslice_operator/reconciler/tracking/tracker.py": (
        "tests/reconciler/test_tracker.py",
        "tests/reconciler/test_tracker_keys.py",
    ),
    "endpointslice_operator/reconciler/tracking/metrics_cache.py": (
        "tests/reconciler/test_metrics_cache.py",
        "tests/reconciler/test_metrics_cache_families.py",
    ),
    "endpointslice_operator/reconciler/config.py": (
        "tests/reconciler/test_config_schema.py",
        "tests/reconciler/test_records.py",
    ),
    "endpointslice_operator/reconciler/plan.py": (
        "tests/reconciler/test_plan_defaults.py",
        "tests/reconciler/test_planner.py",
        "tests/reconciler/test_reconciler.py",
        "tests/reconciler/test_topology.py",
    ),
    "endpointslice_operator/reconciler/service.py": (
        "tests/reconciler/test_service_plan.py",
        "tests/reconciler/test_planner.py",
        "tests/reconciler/test_topology.py",
        "tests/reconciler/test_reconciler.py",
    ),
    "endpointslice_operator/reconciler/mirroring.py": (
        "tests/reconciler/test_mirroring_reports.py",
        "tests/reconciler/test_mirroring_inputs.py",
        "tests/reconciler/test_mirroring_resync_writes_nothing.py",
        "tests/reconciler/test_mirroring.py",
    ),
    "endpointslice_operator/reconciler/endpoints.py": (
        "tests/reconciler/test_endpoints_without_ref.py",
        "tests/reconciler/test_endpoint_form.py",
        "tests/reconciler/test_endpoints.py",
        "tests/reconciler/test_util.py",
    ),
    "endpointslice_operator/reconciler/mcs.py": (
        "tests/reconciler/test_mcs_edges.py",
        "tests/reconciler/test_mcs.py",
        "tests/reconciler/test_mcs_slices.py",
    ),
    "endpointslice_operator/reconciler/endpoint_selector.py": (
        "tests/reconciler/test_endpoint_selector_owner.py",
        "tests/reconciler/test_endpoint_selector.py",
    ),
    "endpointslice_operator/controller/cache/owner_kinds.py": (
        "tests/controller/cache/test_owner_kinds.py",
        "tests/controller/cache/test_owner_kinds_registry.py",
    ),
    "endpointslice_operator/controller/endpoint_selector/index.py": (
        "tests/controller/endpoint_selector/test_counts.py",
        "tests/controller/endpoint_selector/test_validation.py",
        "tests/controller/endpoint_selector/test_index.py",
        "tests/controller/endpoint_selector/test_sync.py",
    ),
    "endpointslice_operator/controller/mcs/cache.py": (
        "tests/controller/mcs/test_cache.py",
        "tests/controller/mcs/test_kopf_relist.py",
    ),
    "endpointslice_operator/controller/watch/relist.py": (
        "tests/controller/watch/test_relist_scopes_of_each_relisting.py",
        "tests/controller/watch/test_relist_releases_its_checks.py",
        "tests/controller/watch/test_relist_api_timeout.py",
        "tests/controller/watch/test_relist_count_request.py",
        "tests/controller/watch/test_relist_answers_without_uid.py",
        "tests/controller/watch/test_relist.py",
    ),
    "endpointslice_operator/controller/mcs/kopf_handlers.py": (
        "tests/controller/mcs/test_kopf_relist.py",
    ),
    # the multi-cluster controller's I/O modules, against API emulators (real HTTP)
    "endpointslice_operator/controller/mcs/imports.py": ("tests/controller/mcs/test_imports.py",),
    "endpointslice_operator/controller/mcs/clusters.py": ("tests/controller/mcs/test_clusters.py",),
    "endpointslice_operator/controller/mcs/controller.py": (
        "tests/controller/mcs/test_controller.py",
    ),
    "endpointslice_operator/view/watch.py": (
        "tests/view/test_watch_feed.py",
        "tests/view/test_watch.py",
        "tests/view/test_service_import_view.py",
    ),
    # EndpointSelectors' owners (controller/owners/endpoint_selector_*)
    "endpointslice_operator/controller/endpoint_selector/status.py": (
        "tests/controller/endpoint_selector/test_status.py",
    ),
    "endpointslice_operator/controller/endpoint_selector/watch.py": (
        "tests/controller/endpoint_selector/test_watch.py",
    ),
}
"""The modules under mutation testing and the tests that must notice a change in each."""

_SAME_LENGTH = (
    "len(keys) -> len(states): a parsed body's keys and states are built side by side from "
    "the same entries, of one length"
)
_FAST_PATH = (
    "existing_entry's fast path returns what the parser returns for every endpoint it takes "
    "(tests/reconciler/test_endpoint_form.py holds that on every shape): "
)
_OTHER_SIZE = (
    "a conditions mapping of another size lacks a condition (KeyError: the parser) or holds "
    "the three, read alike by both"
)
_MISSPELT = (
    "a key misspelt in the fast path raises KeyError, which sends the endpoint to the parser"
)
_NEVER_FAST = (
    "`None is None and type(None) is str` and `x is None and ...` are both false, so every "
    "endpoint goes through the parser (only the cost differs)"
)

EQUIVALENT: dict[str, str] = {
    "endpointslice_operator/reconciler/planner.py:_slice_to_fill:Break->Continue:break": (
        "after an exact fit (diff 0) no later slice can pass `0 <= diff < 0`"
    ),
    "endpointslice_operator/view/merge.py:_without:Gt->GtE:if len(rest) > 1:": (
        "one candidate left kept as a list of one instead of the endpoint itself: every reader "
        "(_winner, _with, _without) treats both alike"
    ),
    "endpointslice_operator/view/merge.py:_without:Is->IsNot:"
    "return None if candidates is None or candidates.slice == slice_name else candidates": (
        "only called for a slice's previous contribution, so never with None nor with another "
        "slice's lone endpoint: both branches that test it are unreachable"
    ),
    "endpointslice_operator/view/merge.py:_replace:And->Or:"
    'if self.policy == "serving" and (ready_before[group_key] == 0) != (group.ready == 0):': (
        "re-examines every address of the group more often; _show skips the unchanged ones, "
        "so the changes and the view are the same (only the cost differs)"
    ),
    "endpointslice_operator/controller/work/queue.py:_refill:Gt->GtE:"
    "if self._last is not None and now > self._last:": ("at now == last the refill adds nothing"),
    "endpointslice_operator/controller/work/queue.py:_refill:Gt->GtE:"
    "if self._last is None or now > self._last:": (
        "at now == last, last is set to the value it has"
    ),
    "endpointslice_operator/controller/work/queue.py:reserve:GtE->Gt:"
    "return 0.0 if self._tokens >= 0 else -self._tokens / self.qps": (
        "at exactly 0 tokens the other branch gives -0.0, which equals 0.0"
    ),
    "endpointslice_operator/controller/work/queue.py:when:Gt->GtE:if exponent > 1023:": (
        "at 1023 base * 2**1023 is already beyond any maximum: the cap either way"
    ),
    "endpointslice_operator/controller/work/queue.py:add_after:LtE->Lt:"
    "if pending[0] <= deadline:": (
        "an equal deadline replaces the timer with one at the same time: one wake-up either way"
    ),
    "endpointslice_operator/controller/work/queue.py:unfinished_work_seconds:Or->And:"
    "if not self._processing or self._loop is None:": (
        "nothing processing sums to 0.0 anyway; processing without a loop cannot happen"
    ),
    "endpointslice_operator/controller/work/queue.py:_get:And->Or:"
    "if getter.done() and not getter.cancelled() and self._ready:": (
        "passes on a wake-up that was never received: the woken worker finds no key and "
        "waits again (a spurious wake-up, harmless by design of the loop around it)"
    ),
    "endpointslice_operator/reconciler/planner.py:_plan_port_group:True->False:"
    "for key, state in zip(view.keys, view.states, strict=True):": (
        "a slice view's keys and states are built side by side, always of one length"
    ),
    "endpointslice_operator/reconciler/planner.py:_plan_port_group:Gt->GtE:if room > 0:": (
        "a full update (room 0) takes an empty run of endpoints: nothing changes"
    ),
    "endpointslice_operator/reconciler/planner.py:_plan_port_group:Sub->Add:"
    "taken += min(room, len(remaining) - taken)": (
        "differs only when the update takes all that remains; the count then passes the end "
        "either way and the loop ends"
    ),
    "endpointslice_operator/reconciler/planner.py:_plan_port_group:GtE->Gt:"
    "if taken >= len(remaining):": ("with nothing left the next updates take empty runs"),
    "endpointslice_operator/reconciler/planner.py:_plan_port_group:Break->Continue:break": (
        "with nothing left the next updates take empty runs"
    ),
    "endpointslice_operator/controller/work/queue.py:_drop_pending:NotIn->In:"
    "if key not in self._processing:": (
        "only on stop, after which the queue never reads its added-at times again"
    ),
    "endpointslice_operator/reconciler/planner.py:_plan_port_group:Sub->Add:"
    "room = max_per_slice - len(target)": (
        "a new slice is empty (both give max_per_slice); a slice to fill was chosen because "
        "all that remains fits in it, so either room takes all of it"
    ),
    "endpointslice_operator/reconciler/planner.py:_plan_port_group:And->Or:"
    "if remaining and updates:": (
        "with nothing remaining the updates take empty runs; with no updates there is no loop"
    ),
    "endpointslice_operator/reconciler/planner.py:_plan_address_type:Swap0,1:"
    "update_dicts = [work.build(own, address_type, ports) for work, ports in updates]": (
        "every update is of an existing slice (a view), which build copies: the owner, the "
        "address type and the ports are read only to make a new slice"
    ),
    "endpointslice_operator/reconciler/planner.py:_plan_address_type:Swap1,2:"
    "update_dicts = [work.build(own, address_type, ports) for work, ports in updates]": (
        "every update is of an existing slice (a view), which build copies: the owner, the "
        "address type and the ports are read only to make a new slice"
    ),
    "endpointslice_operator/reconciler/planner.py:_name:Str->XX:"
    'return name if isinstance(name, str) else ""': (
        "the name given to slices without one, compared only with other such names: the "
        "unchanged slices already leave out every name an update has, so another default "
        "differs only for a slice named XXXX beside an unnamed one (every stored object has a "
        "name)"
    ),
    "endpointslice_operator/reconciler/planner.py:_plan_port_group:Stmt->Pass:"
    "unchanged.remove(fill)": (
        "a slice is chosen to fill only when all that remains fits in it, so the loop ends "
        "after it and the list of unchanged slices (local) is not read again"
    ),
    "endpointslice_operator/reconciler/planner.py:_plan_address_type:Swap0,1:"
    "if len(deletes) == 1 and placeholder_equal(deletes[0].raw, placeholder):": (
        "placeholder_equal is symmetric (each comparison is an equality of both sides' "
        "values, over the union of their fields; test_slices holds it both ways)"
    ),
    # reconciler/mcs.py
    "endpointslice_operator/reconciler/mcs.py:plan_import_slices:False->True:"
    'import_config = config.model_copy(update={"placeholder": False, "topology_hints": False})'
    " #2": (
        "the Reconciler is built without a TopologyCache, so its topology is None whatever "
        "topology_hints says (the setting is read nowhere else in reconciler/)"
    ),
    # controller/cache/owner_kinds.py
    "endpointslice_operator/controller/cache/owner_kinds.py:split_owner_key:Str->XX:"
    'if colon and "/" not in prefix:': (
        "register refuses a key prefix holding '/', so a prefix that holds one is never in "
        "_BY_PREFIX: the look-up misses either way and the key is a Service's"
    ),
    # reconciler/desired.py
    "endpointslice_operator/reconciler/desired.py:desired_from_service_pods:Stmt->Pass:"
    "fixed_ports = resolve_ports(ports, _NO_PORTS_POD)": (
        "the ports of integer targets resolved once for all pods: without it each pod "
        "resolves them itself (cached by its port tables), to the same key (find_port "
        "returns an integer target as it is, whatever the pod)"
    ),
    # reconciler/labels.py
    "endpointslice_operator/reconciler/labels.py:format_trigger_time:Str->XX:"
    'text += "." + f"{moment.microsecond:06d}".rstrip("0") #2': (
        "rstrip takes a set of characters: 'XX0XX' strips the same as '0' from a string of digits"
    ),
    # reconciler/mirroring.py
    "endpointslice_operator/reconciler/mirroring.py:_ports:Continue->Break:continue": (
        "_ports only reads subsets made by repack_subsets, whose ports are all mappings"
    ),
    "endpointslice_operator/reconciler/mirroring.py:_ports:And->Or:"
    "number if isinstance(number, int) and not isinstance(number, bool) else 0,": (
        "repack_subsets keeps only ports with a positive int number: both forms take it"
    ),
    "endpointslice_operator/reconciler/mirroring.py:_ports:0->1:"
    "number if isinstance(number, int) and not isinstance(number, bool) else 0,": (
        "repack_subsets keeps only ports with a positive int number: the else is unreachable"
    ),
    "endpointslice_operator/reconciler/mirroring.py:desired_from_endpoints:Break->Continue:break": (
        "once the cap is reached `added` no longer changes in the subset, so every later "
        "address takes the same branch and adds nothing (only the cost differs)"
    ),
    "endpointslice_operator/reconciler/mirroring.py:plan_mirroring:False->True:"
    '"topology_hints": False,': (
        "the Reconciler is built without a TopologyCache, so its topology is None whatever "
        "topology_hints says"
    ),
    "endpointslice_operator/reconciler/mirroring.py:plan_mirroring:Key->XX:"
    '"topology_hints": False,': (
        "the Reconciler is built without a TopologyCache, so its topology is None whatever "
        "topology_hints says (a misspelt key leaves the config's own value)"
    ),
    "endpointslice_operator/reconciler/mirroring.py:plan_mirroring:0->1:"
    "plan.events[:0] = mirrored.events": (
        "the planner records events only through a TopologyCache, which this Reconciler has "
        "not: plan.events is empty here and [:1] of it is [:0]"
    ),
    # reconciler/endpoints.py
    "endpointslice_operator/reconciler/endpoints.py:to_dict:True->False:"
    "for field, value in zip(_CONDITIONS, (ready, serving, terminating), strict=True)": (
        "two tuples of three: strict or not, zip gives the same pairs"
    ),
    "endpointslice_operator/reconciler/endpoints.py:to_dict:True->False:"
    "field: value for field, value in zip(_REF_FIELDS, values, strict=True) if value": (
        "two tuples of six: strict or not, zip gives the same pairs"
    ),
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:3->4:"
    "and len(conditions) == 3": _FAST_PATH + _OTHER_SIZE,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Eq->NotEq:"
    "and len(conditions) == 3": _FAST_PATH + _OTHER_SIZE,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Or->And:"
    "and (node_name is None or type(node_name) is str)": _FAST_PATH + _NEVER_FAST,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Or->And:"
    "and (zone is None or type(zone) is str)": _FAST_PATH + _NEVER_FAST,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Str->XX:"
    'addresses = raw["addresses"]': _FAST_PATH + _MISSPELT,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Str->XX:"
    'conditions = raw["conditions"]': _FAST_PATH + _MISSPELT,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Str->XX:"
    'ref = raw["targetRef"]': _FAST_PATH + _MISSPELT,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Str->XX:"
    'conditions["ready"],': _FAST_PATH + _MISSPELT,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Str->XX:"
    'conditions["serving"],': _FAST_PATH + _MISSPELT,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Str->XX:"
    'conditions["terminating"],': _FAST_PATH + _MISSPELT,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Str->XX:"
    'kind, ns, name, uid = ref["kind"], ref["namespace"], ref["name"], ref["uid"]': _FAST_PATH
    + _MISSPELT,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Str->XX:"
    'kind, ns, name, uid = ref["kind"], ref["namespace"], ref["name"], ref["uid"] #2': _FAST_PATH
    + _MISSPELT,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Str->XX:"
    'kind, ns, name, uid = ref["kind"], ref["namespace"], ref["name"], ref["uid"] #3': _FAST_PATH
    + _MISSPELT,
    "endpointslice_operator/reconciler/endpoints.py:existing_entry:Str->XX:"
    'kind, ns, name, uid = ref["kind"], ref["namespace"], ref["name"], ref["uid"] #4': _FAST_PATH
    + _MISSPELT,
    # view/model.py
    "endpointslice_operator/view/model.py:<module>:True->False:"
    "@dataclass(frozen=True, slots=True) #2": (
        "Change is frozen, which refuses every attribute assignment with or without slots; "
        "slots=False only gives each instance a __dict__ (memory), which nothing reads"
    ),
    "endpointslice_operator/view/model.py:address_sort_key:10->11:return (10, 0, address)": (
        "a sort key only (bisect, sorted, ==): 10 and 11 both sort after IPv4 (4) and IPv6 (6) "
        "and every non-IP key changes alike, so the order and equalities are the same"
    ),
    "endpointslice_operator/view/model.py:address_sort_key:Str->XX:"
    'return (ip.version, int(ip), "")': (
        "a sort key only (bisect, sorted, ==): every IP key changes alike and IP keys differ "
        "from the others in the first element, so the order and equalities are the same"
    ),
    "endpointslice_operator/view/model.py:address_sort_key:0->1:return (10, 0, address)": (
        "a sort key only (bisect, sorted, ==): every non-IP key changes alike and IP keys "
        "differ in the first element, so the order and equalities are the same"
    ),
    # controller/owners/__init__.py
    "endpointslice_operator/controller/cache/owner_kinds.py:<module>:True->False:"
    "@dataclass(frozen=True, slots=True) #2": (
        "OwnerKind is frozen, which refuses every attribute assignment with or without slots; "
        "slots=False only gives each instance a __dict__ (memory), which nothing reads"
    ),
    # controller/owners/endpoint_selector.py
    "endpointslice_operator/controller/endpoint_selector/index.py:<module>:True->False:"
    "@dataclass(frozen=True, slots=True) #2": (
        "EndpointSelectorEntry is frozen, which refuses every attribute assignment with or "
        "without slots; slots=False only gives each instance a __dict__ (memory), which "
        "nothing reads"
    ),
    # reconciler/core_endpoints.py
    "endpointslice_operator/reconciler/core_endpoints.py:truncate_subsets:Gt->GtE:"
    "truncate_ready = total_ready > max_capacity": (
        "at total_ready == max_capacity both branches keep every ready address (each share "
        "rounds up to the subset's count, the room is exactly their sum) and drop every "
        "not-ready one"
    ),
    # reconciler/records.py
    "endpointslice_operator/reconciler/records.py:<module>:1->2:_INTERN_LIMIT = 1 << 16": (
        "the size at which the port-table sharing cache is emptied: the tuple returned is "
        "equal to the one given whatever the size (only memory differs)"
    ),
    "endpointslice_operator/reconciler/records.py:<module>:16->17:_INTERN_LIMIT = 1 << 16": (
        "the size at which the port-table sharing cache is emptied: the tuple returned is "
        "equal to the one given whatever the size (only memory differs)"
    ),
    "endpointslice_operator/reconciler/records.py:<module>:4096->4097:_TIMES_LIMIT = 4096": (
        "the size at which the transition-time sharing cache is emptied: the string returned "
        "is equal to the one given whatever the size (only memory differs)"
    ),
    "endpointslice_operator/reconciler/records.py:_shared:GtE->Gt:if len(table) >= limit:": (
        "empties the sharing cache one entry later: the value returned is equal either way"
    ),
    "endpointslice_operator/reconciler/records.py:_intern_labels:NotEq->Eq:"
    "if as_given is not None and as_given != items and len(as_given) == len(items):": (
        "only decides whether the label map is also filed under the items as given; a later "
        "lookup by those items finds the map built from them, as rebuilding it would"
    ),
    "endpointslice_operator/reconciler/records.py:_intern_labels:Eq->NotEq:"
    "if as_given is not None and as_given != items and len(as_given) == len(items):": (
        "only decides whether the label map is also filed under the items as given; a later "
        "lookup by those items finds the map built from them, as rebuilding it would"
    ),
    "endpointslice_operator/reconciler/records.py:_intern_labels:And->Or:"
    "if as_given is not None and as_given != items and len(as_given) == len(items):": (
        "only decides whether the label map is also filed under the items as given (or under "
        "None, never looked up); a later lookup finds the map built from them"
    ),
    "endpointslice_operator/reconciler/records.py:_intern_labels:If->IfNot:"
    "if as_given is not None and as_given != items and len(as_given) == len(items):": (
        "only decides whether the label map is also filed under the items as given (or under "
        "None, never looked up, or under items that are the sorted ones already); a later "
        "lookup by those items finds the map built from them, as rebuilding it would"
    ),
    "endpointslice_operator/reconciler/records.py:_intern_labels:Stmt->Pass:"
    "_label_maps[as_given] = shared": (
        "the label map not filed under the items as given: a later lookup by them misses and "
        "finds the same map under the sorted items (only the cost differs)"
    ),
    "endpointslice_operator/reconciler/records.py:_reusable_ips:True->False:"
    "for entry, ip in zip(pod_ips, known, strict=True):": (
        "the lengths were checked equal just before: strict or not, zip gives the same pairs"
    ),
    # reconciler/topology.py
    "endpointslice_operator/reconciler/hints/topology.py:giving_and_receiving_zones:Gt->GtE:"
    "if allocated > allocation.desired:": (
        "a zone exactly at its desired share gets a surplus of 0.0, which _most never picks "
        "(it takes only amounts above 0.0) and so never gives"
    ),
    "endpointslice_operator/reconciler/hints/topology.py:giving_and_receiving_zones:Lt->LtE:"
    "elif allocated < allocation.desired:": (
        "a zone exactly at its desired share gets a deficit of 0.0, which _most never picks "
        "(it takes only amounts above 0.0) and so never receives"
    ),
    "endpointslice_operator/reconciler/hints/topology.py:redistribute_hints:Or->And:"
    "if not giving_zones or not receiving_zones:": (
        "an early return only: with no giving zone every endpoint fails `giving_zones.get(zone, "
        "0) <= 0`, with no receiving zone the inner loop has nothing to walk; nothing changes"
    ),
    "endpointslice_operator/reconciler/hints/topology.py:set_nodes:False->True:"
    "sufficient = False": (
        "the branch also empties cpu_by_zone and leaves the loop, and fewer than two zones "
        "is insufficient on its own"
    ),
    "endpointslice_operator/reconciler/hints/topology.py:set_nodes:Break->Continue:break": (
        "sufficient is already False: the outcome is insufficient whatever later nodes add"
    ),
    # reconciler/trafficdist.py
    "endpointslice_operator/reconciler/hints/trafficdist.py:_heuristic:False->True:"
    "return _Heuristic(close=False, node_hints=False) #2": (
        "node_hints is read only when close is True: needs_update and update return first "
        "for the default heuristic"
    ),
    "endpointslice_operator/reconciler/hints/trafficdist.py:needs_update:Return->None:"
    "return False": (
        "its one caller (reconcile_hints_with_unchanged) tests only its truth: None and False "
        "are both false"
    ),
    # reconciler/slices.py
    "endpointslice_operator/reconciler/slices.py:view:And->Or:elif isinstance(uid, str) and uid:": (
        "_store keeps only non-empty string uids, so a look-up under any other uid misses "
        "either way and the slice is parsed"
    ),
    "endpointslice_operator/reconciler/slices.py:_store:1->2:"
    "self._endpoints -= len(old[2][1])": _SAME_LENGTH,
    "endpointslice_operator/reconciler/slices.py:_store:1->2:"
    "self._endpoints += len(body[1])": _SAME_LENGTH,
    "endpointslice_operator/reconciler/slices.py:_store:1->2:"
    "self._endpoints -= len(evicted[2][1])": _SAME_LENGTH,
    "endpointslice_operator/reconciler/slices.py:forget:1->2:"
    "self._endpoints -= len(old[2][1])": _SAME_LENGTH,
    "endpointslice_operator/reconciler/slices.py:copy_for_update:Str->XX:"
    'k: json_copy(existing[k]) for k in existing if k not in ("metadata", "endpoints", "ports")': (
        "the existing metadata copied too: the copy is replaced by the one made below, so the "
        "update is the same (only the place of the key in the dict differs, which a JSON "
        "object does not have)"
    ),
    "endpointslice_operator/reconciler/slices.py:copy_for_update:Str->XX:"
    'k: json_copy(existing[k]) for k in existing if k not in ("metadata", "endpoints", "ports")'
    " #3": (
        "the existing ports copied too: the copy is replaced by the one made below from the "
        "same ports, so the update is the same (only the place of the key differs)"
    ),
    "endpointslice_operator/reconciler/slices.py:copy_for_update:Str->XX:"
    'if k not in ("managedFields", "labels") #2': (
        "the existing labels copied too: the copy is replaced by the labels given just below, "
        "so the update is the same (only the place of the key differs)"
    ),
    # reconciler/cached_slice.py
    "endpointslice_operator/reconciler/cached_slice.py:_columns:Break->Continue:break": (
        "walking on through the record's pod IPs can only pick another string equal to the "
        "address, held by the same record: the same value, shared either way"
    ),
    "endpointslice_operator/reconciler/cached_slice.py:_columns:Str->XX:"
    'ref_kind = ref_ns = ""  # the targetRefs\' one kind and namespace, from the first endpoint': (
        "kept only by a slice without endpoints, whose empty columns never read the kind or "
        "the namespace (no state to build, no pod to look up)"
    ),
    "endpointslice_operator/reconciler/cached_slice.py:_column_states:True->False:"
    "columns = zip(self._nodes, self._zones, self._flags, self._names, self._uids, strict=True)": (
        "the columns are appended side by side in one loop of _columns: one length"
    ),
    "endpointslice_operator/reconciler/cached_slice.py:share_pod_strings:True->False:"
    "for record, name, uid in zip(records, self._names, self._uids, strict=True)": (
        "records is built from _names, and _names and _uids side by side in _columns: one length"
    ),
    # reconciler/trigger_time.py
    "endpointslice_operator/reconciler/tracking/trigger_time.py:<module>:True->False:"
    "@dataclass(slots=True)": (
        "_ServiceState is private and gets no attribute beyond its two fields: without slots "
        "each instance only gains a __dict__ (memory)"
    ),
    "endpointslice_operator/reconciler/tracking/trigger_time.py:_earliest:Lt->LtE:"
    "return candidate if current is None or candidate < current else current": (
        "on a tie both are the same instant: the result compares equal either way, and the "
        "stamp is formatted in UTC"
    ),
    # reconciler/metrics_cache.py
    "endpointslice_operator/reconciler/tracking/metrics_cache.py:num_desired_slices:LtE->Lt:"
    "if endpoints <= 0:": ("at 0 endpoints the division below gives 0 as well"),
    "endpointslice_operator/reconciler/tracking/metrics_cache.py:<module>:True->False:"
    "@dataclass(frozen=True, slots=True) #3": (
        "_Totals is private and never assigned to after it is built: frozen forbids what "
        "nothing does"
    ),
    "endpointslice_operator/reconciler/tracking/metrics_cache.py:<module>:True->False:"
    "@dataclass(frozen=True, slots=True) #4": (
        "_Totals is private and frozen: without slots each instance only gains a __dict__ (memory)"
    ),
    # controller/mcs/imports.py
    "endpointslice_operator/controller/mcs/imports.py:_apply:Or->And:"
    "imported = await self._ensure_import(key, resolution, derived) or imported": (
        "_ensure_import returns None only for an import not ours, which the first call "
        "already returned on: the import written again differs from the first one only in "
        "spec.ips, spec.ipFamilies and its resourceVersion, and the imported slices are "
        "planned from its metadata (name, namespace, uid, labels, annotations), the same in both"
    ),
    # controller/mcs/clusters.py
    "endpointslice_operator/controller/mcs/clusters.py:run:True->False:"
    "await asyncio.gather(watching, return_exceptions=True)": (
        "gathers the one watch task it has just cancelled, which ends only by that "
        "cancellation (ListWatcher retries every failure, a kubeconfig that does not load is "
        "retried): the CancelledError propagates either way"
    ),
    # controller/mcs/controller.py
    "endpointslice_operator/controller/mcs/controller.py:watch:True->False:"
    "await asyncio.gather(*tasks, return_exceptions=True)": (
        "the tasks were all cancelled just before; without return_exceptions the gather raises "
        "at the first one done (a cancellation, or the failure of one already done, which the "
        "gather in the try raised already) instead of waiting for the others to finish "
        "closing: they finish the same moments later (only when differs)"
    ),
    "endpointslice_operator/controller/mcs/controller.py:lead:True->False:"
    "await asyncio.gather(*tasks, return_exceptions=True)": (
        "the probes and the standing loop catch every error and end only by the cancellation "
        "just made, after _started and the syncer's ready were cleared: a CancelledError "
        "either way, and the tasks hold nothing to release"
    ),
    "endpointslice_operator/controller/mcs/controller.py:_standing_of:True->False:"
    ") + tuple((cluster, True, self.leases.expired(cluster)) for cluster in "
    "self._imported_ids())": (
        "a constant in every imported cluster's entry of both standings compared (the peers' "
        "entries come first, as many each time): equal standings stay equal, different ones "
        "different"
    ),
    # controller/watch/relist.py (issue 35's operators)
    "endpointslice_operator/controller/watch/relist.py:__init__:Stmt->Pass:self._last = 0.0": (
        "_last is read only by _finish, whose task _start creates; _start's two callers (note "
        "and begin) set _last right after it, before that task first runs"
    ),
    "endpointslice_operator/controller/watch/relist.py:_gone:Return->None:return False": (
        "its one caller (_finish) tests only its truth: None and False are both false"
    ),
    "endpointslice_operator/controller/watch/relist.py:missing_any:Return->None:return False": (
        "its one caller (keep_counting) tests only its truth: None and False are both false"
    ),
    # controller/work/queue.py (issue 35's operators)
    "endpointslice_operator/controller/work/queue.py:refund:Stmt->Pass:self._refill(now)": (
        "the refill and the refunded token are both capped at burst: refilled before or "
        "after the token is added (by the next reserve), the bucket holds min(burst, tokens "
        "+ elapsed * qps + 1) either way, and _last is set by that next refill"
    ),
    "endpointslice_operator/controller/work/queue.py:release_held:Stmt->Pass:self._update_idle()": (
        "every released key is added (add updates idle itself) or already dirty (busy before "
        "and after); once stopping there is none to release (stop drops the held keys and "
        "hold holds none)"
    ),
    # controller/endpoint_selector/status.py (issue 35's operators)
    "endpointslice_operator/controller/endpoint_selector/status.py:status_writer:"
    'Str->XX:return ObjectWriter(api_client, collection, ("uid",), fence=fence)': (
        "the delete preconditions of a writer that only patches the status (write_counts): "
        "read by ObjectWriter.delete alone, which nothing calls on it"
    ),
}
""":attr:`Mutant.key` (``module:function:operator:source line``, `` #2`` for the second alike)
-> why the mutant cannot change behaviour."""


@dataclass(frozen=True)
class Mutant:
    module: str
    index: int
    line: int
    function: str
    operator: str
    text: str
    """The source line, stripped."""
    occurrence: int = 1
    """1 for the first mutant of this operator on this text in this function, 2 for the
    next (``a == 0 or b == 0``, two ``continue`` lines), ..."""

    @property
    def key(self) -> str:
        """Stable while that line of that function stays as it is; unique in the module."""
        key = f"{self.module}:{self.function}:{self.operator}:{self.text}"
        return key if self.occurrence == 1 else f"{key} #{self.occurrence}"


_COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_LOG_NAMES = {"log", "logger", "logging", "warnings"}
_TYPING_CALLS = {"cast", "TypeVar", "NewType", "ParamSpec", "TypeAliasType"}
"""Calls whose string arguments are types, not values."""
_TYPING_SUBSCRIPTS = {"Literal", "Annotated"}
_SYMMETRIC_CALLS = {"min", "max"}
"""Calls whose arguments swapped give the same value: no argument swap."""


def _name(node: ast.AST) -> str | None:
    """``x`` for ``x`` and ``a.b.x``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_log_call(node: ast.AST) -> bool:
    """``log.*(...)``, ``logger.*(...)``, ``logging.*(...)``, ``warnings.*(...)``,
    ``print(...)``."""
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Name):
        return node.func.id == "print"
    if not isinstance(node.func, ast.Attribute):
        return False
    base = node.func.value
    return isinstance(base, ast.Name) and base.id in _LOG_NAMES


class _Sites(ast.NodeTransformer):
    """Numbers the mutation sites in order; mutates the one numbered ``target`` (if any).

    Every site is numbered after the sites inside it (a statement after its expressions), the
    same way when listing and when mutating, so a number names the same site both times."""

    def __init__(self, target: int = -1) -> None:
        self.target = target
        self.count = 0
        self.found: list[tuple[int, str, str]] = []  # (line, function, operator)
        self._function = "<module>"

    def _site(self, node: ast.AST, operator: str) -> bool:
        """Record a site; True when it is the one to mutate."""
        self.found.append((getattr(node, "lineno", 0), self._function, operator))
        hit = self.count == self.target
        self.count += 1
        return hit

    def _deleted(self, node: ast.stmt) -> ast.AST:
        """``node``, or ``pass`` in its place when it is the site to mutate (in functions
        only: a module's or class's statement deleted breaks its import, not behaviour)."""
        if self._function != "<module>" and self._site(node, "Stmt->Pass"):
            return ast.copy_location(ast.Pass(), node)
        return node

    def _negated(self, node: ast.If | ast.While | ast.IfExp, operator: str) -> None:
        """``if c:`` -> ``if not (c):`` (not for a condition that is a ``not`` already,
        whose ``Not->`` mutant does the same)."""
        test = node.test
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return
        if self._site(node, operator):
            node.test = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=test), test)

    # -- what is not mutated ----------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        outer, self._function = self._function, node.name
        node.body = [self.visit(stmt) for stmt in node.body]  # not the annotations, defaults
        self._function = outer
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        return node

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        return node  # the message of an error is not behaviour under test here

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return node  # f-strings: messages

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if _name(node.value) in _TYPING_SUBSCRIPTS:
            return node  # Literal["a"], Annotated[...]: types
        return self.generic_visit(node)

    # -- mutations --------------------------------------------------------------------------

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        if isinstance(node.value, ast.Constant) or _is_log_call(node.value):
            return node  # docstrings, log lines
        self.generic_visit(node)
        return self._deleted(node)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return node
        self.generic_visit(node)
        return self._deleted(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        return self._deleted(node)

    def visit_Return(self, node: ast.Return) -> ast.AST:
        self.generic_visit(node)
        value = node.value
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return node
        if self._site(node, "Return->None"):
            return ast.copy_location(ast.Return(value=ast.Constant(None)), node)
        return node

    def visit_If(self, node: ast.If) -> ast.AST:
        if _name(node.test) == "TYPE_CHECKING":
            return node
        self.generic_visit(node)
        self._negated(node, "If->IfNot")
        return node

    def visit_While(self, node: ast.While) -> ast.AST:
        self.generic_visit(node)
        self._negated(node, "While->WhileNot")
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        self._negated(node, "IfExp->IfExpNot")
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if _is_log_call(node):
            return node
        if _name(node.func) in _TYPING_CALLS:
            node.args = [
                arg if isinstance(arg, ast.Constant) else self.visit(arg) for arg in node.args
            ]
            node.keywords = [self.visit(keyword) for keyword in node.keywords]
            return node
        self.generic_visit(node)
        if _name(node.func) in _SYMMETRIC_CALLS:
            return node
        args = node.args
        for i in range(len(args) - 1):
            first, second = args[i], args[i + 1]
            if isinstance(first, ast.Starred) or isinstance(second, ast.Starred):
                continue
            if ast.dump(first) == ast.dump(second):
                continue
            if self._site(node, f"Swap{i},{i + 1}"):
                args[i], args[i + 1] = second, first
        return node

    def visit_Dict(self, node: ast.Dict) -> ast.AST:
        keys: list[ast.expr | None] = []
        for key in node.keys:
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                if self._site(key, "Key->XX"):
                    key = ast.copy_location(ast.Constant(f"XX{key.value}XX"), key)
                keys.append(key)
            else:
                keys.append(None if key is None else self.visit(key))
        node.keys = keys
        node.values = [self.visit(value) for value in node.values]
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        for i, op in enumerate(node.ops):
            swap = _COMPARE_SWAPS.get(type(op))
            if swap is not None and self._site(node, f"{type(op).__name__}->{swap.__name__}"):
                node.ops[i] = swap()
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        swap = ast.Or if isinstance(node.op, ast.And) else ast.And
        if self._site(node, f"{type(node.op).__name__}->{swap.__name__}"):
            node.op = swap()
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and self._site(node, "Not->"):
            return node.operand
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        swaps: dict[type[ast.operator], type[ast.operator]] = {ast.Add: ast.Sub, ast.Sub: ast.Add}
        swap = swaps.get(type(node.op))
        if swap is not None and self._site(node, f"{type(node.op).__name__}->{swap.__name__}"):
            node.op = swap()
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        value = node.value
        if isinstance(value, bool):
            if self._site(node, f"{value}->{not value}"):
                return ast.copy_location(ast.Constant(not value), node)
        elif isinstance(value, int) and self._site(node, f"{value}->{value + 1}"):
            return ast.copy_location(ast.Constant(value + 1), node)
        elif isinstance(value, str) and self._site(node, "Str->XX"):
            return ast.copy_location(ast.Constant(f"XX{value}XX"), node)
        return node

    def visit_Break(self, node: ast.Break) -> ast.AST:
        if self._site(node, "Break->Continue"):
            return ast.copy_location(ast.Continue(), node)
        return node

    def visit_Continue(self, node: ast.Continue) -> ast.AST:
        if self._site(node, "Continue->Break"):
            return ast.copy_location(ast.Break(), node)
        return node


def mutants(module: str) -> list[Mutant]:
    source = (ROOT / module).read_text(encoding="utf-8")
    lines = source.splitlines()
    sites = _Sites()
    sites.visit(ast.parse(source))
    seen: dict[tuple[str, str, str], int] = {}
    found: list[Mutant] = []
    for index, (line, function, operator) in enumerate(sites.found):
        text = lines[line - 1].strip()
        occurrence = seen[function, operator, text] = seen.get((function, operator, text), 0) + 1
        found.append(Mutant(module, index, line, function, operator, text, occurrence))
    return found


def mutated_source(mutant: Mutant) -> str:
    tree = ast.parse((ROOT / mutant.module).read_text(encoding="utf-8"))
    tree = _Sites(mutant.index).visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree))


_PYTEST_ARGS = (
    "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--import-mode=append",
    "-o", "addopts=",
)  # fmt: skip


class _Forks:
    """The fork server (``scripts/pytest_forks.py``) of one package copy: it imports pytest and
    the tests' third-party libraries once, then forks a child per test run, which imports the
    package afresh from the copy (as the mutant left it)."""

    def __init__(self, copy_root: Path, tests: tuple[str, ...]) -> None:
        # ROOT after the copy: the tests (and conftest) of this checkout, even when the
        # virtualenv's editable install points at another checkout of the repository.
        path = os.pathsep.join((str(copy_root), str(ROOT)))
        env = {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
        self.copy_root = copy_root
        self._log_path = copy_root / "pytest_forks.log"
        with self._log_path.open("wb") as log:
            self._process = subprocess.Popen(
                ["nice", "-n", "19", sys.executable, str(ROOT / "scripts" / "pytest_forks.py")],
                cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                text=True,
            )  # fmt: skip
        self._request({"preload": list(tests)})

    def _request(self, request: dict[str, object]) -> dict[str, Any]:
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            log = self._log_path.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise SystemExit(f"the fork server of {self.copy_root} ended:\n{log}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def run(
        self, tests: tuple[str, ...], timeout: float | None, cover: Path | None = None
    ) -> dict[str, Any]:
        """``{"passed", "seconds", "output"}`` of the tests against the copy (with ``cover``:
        and ``"tests"``, the node ids run, ``"lines"``, line -> the node ids that ran it)."""
        return self._request(
            {
                "args": [*_PYTEST_ARGS, *tests],
                "timeout": timeout,
                "cover": None if cover is None else str(cover),
            }
        )

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


@dataclass(frozen=True)
class _Coverage:
    """Which tests ran which line of the module, from one run of all its tests under
    coverage.py (a context per test; ``""`` for import and collection)."""

    tests: tuple[str, ...]
    """Every test's node id, in the order of the run."""
    lines: dict[int, frozenset[str]]
    seconds: dict[str, float]
    """How long each test took."""

    @classmethod
    def of(cls, answer: dict[str, Any]) -> _Coverage:
        lines = {int(line): frozenset(tests) for line, tests in answer["lines"].items()}
        return cls(tuple(answer["tests"]), lines, answer["durations"])


def _headers(source: str) -> list[range]:
    """The lines of each statement of ``source``, a compound statement's header only (``if
    ...:``, not its body), so that the innermost one holding a line is its statement."""
    found: list[range] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.stmt):
            continue
        end = node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            end = max(node.lineno, body[0].lineno - 1)
        found.append(range(node.lineno, end + 1))
    return found


def selected_tests(
    mutant: Mutant, headers: list[range], coverage: _Coverage
) -> tuple[str, ...] | None:
    """The tests that can notice ``mutant``: those that ran its statement (any line of it, as
    a multi-line statement may record only some). ``None`` for all of them: a mutant outside
    functions (import time, and a module's state is shared by every test after it), or a
    statement run at import or collection. ``()`` for none: no test runs that statement, so
    none can tell the mutant from the original, and it survives without a run."""
    if mutant.function == "<module>":
        return None
    holding = [span for span in headers if mutant.line in span]
    lines = min(holding, key=len) if holding else range(mutant.line, mutant.line + 1)
    ran: set[str] = set()
    for line in lines:
        ran |= coverage.lines.get(line, frozenset())
    if "" in ran:
        return None
    return tuple(test for test in coverage.tests if test in ran)


def _killers_first(
    chosen: tuple[str, ...], killers: dict[str, int], seconds: dict[str, float]
) -> tuple[str, ...]:
    """``chosen`` reordered for ``-x`` to stop early: the tests that killed most mutants of
    this function so far first, then the quickest (the same tests: a killed mutant is found
    sooner, a survivor runs them all anyway)."""
    return tuple(sorted(chosen, key=lambda test: (-killers.get(test, 0), seconds.get(test, 0.0))))


_AST_LOCK = threading.Lock()
"""One thread at a time in ``ast``: CPython 3.11's AST constructors share a recursion-depth
counter across threads, and two ``--jobs`` workers parsing at once fail now and then with
``SystemError: AST constructor recursion depth mismatch``."""


def _package_copy(directory: Path) -> Path:
    shutil.copytree(
        ROOT / PACKAGE, directory / PACKAGE, ignore=shutil.ignore_patterns("__pycache__")
    )
    return directory


def run_module(
    module: str,
    only_lines: set[int] | None,
    jobs: int = 1,
    select: bool = True,
    tests: tuple[str, ...] | None = None,
) -> tuple[int, int, int, list[Mutant]]:
    """``(mutants, killed, equivalent, survivors)`` of one module against ``tests`` (default:
    its tests in :data:`MODULES`), ``jobs`` mutants at a time (each in its own copy of the
    package, with its own fork server). With ``select``, each mutant runs only the tests that
    ran its line (:func:`selected_tests`), and one that passes them is run against all the
    tests before it counts as survived."""
    tests = MODULES[module] if tests is None else tests
    found = [m for m in mutants(module) if only_lines is None or m.line in only_lines]
    to_run = [m for m in found if m.key not in EQUIVALENT]
    with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
        copies = [_package_copy(Path(tmp) / str(n)) for n in range(max(1, min(jobs, len(to_run))))]
        forks = [_Forks(copy_root, tests) for copy_root in copies]
        try:
            original = (copies[0] / module).read_text(encoding="utf-8")
            baseline = forks[0].run(tests, None, cover=copies[0] / module if select else None)
            if not baseline["passed"]:
                raise SystemExit(
                    f"{module}: the tests fail without any mutation: {tests}\n{baseline['output']}"
                )
            timeout = max(30.0, 10 * baseline["seconds"])
            coverage = _Coverage.of(baseline) if select else None
            headers = _headers(original)
            free: queue.SimpleQueue[_Forks] = queue.SimpleQueue()
            for server in forks:
                free.put(server)
            runs: list[int] = []  # tests selected per mutant run (0: all)
            killers: dict[str, dict[str, int]] = {}  # function -> test -> mutants it killed

            def survives(mutant: Mutant) -> bool | None:
                """True, False, or None when no test runs its line (survived, not run)."""
                chosen = None if coverage is None else selected_tests(mutant, headers, coverage)
                if chosen == ():
                    return None
                server = free.get()
                target = server.copy_root / module
                try:
                    with _AST_LOCK:
                        text = mutated_source(mutant)
                    target.write_text(text, encoding="utf-8")
                    runs.append(0 if chosen is None else len(chosen))
                    if chosen is not None and coverage is not None:
                        chosen = _killers_first(
                            chosen, killers.get(mutant.function, {}), coverage.seconds
                        )
                    answer = server.run(chosen or tests, timeout)
                    if answer["passed"] and chosen is not None:
                        answer = server.run(tests, timeout)  # survived: all tests missed it
                    failed = answer.get("failed")
                    if failed:
                        counts = killers.setdefault(mutant.function, {})
                        counts[failed] = counts.get(failed, 0) + 1
                    return bool(answer["passed"])
                finally:
                    target.write_text(original, encoding="utf-8")
                    free.put(server)

            survivors: list[Mutant] = []
            unrun = 0
            with ThreadPoolExecutor(max_workers=len(copies)) as pool:
                for number, (mutant, survived) in enumerate(
                    zip(to_run, pool.map(survives, to_run), strict=True), 1
                ):
                    if survived is None:
                        unrun += 1
                    if survived is None or survived:
                        survivors.append(mutant)
                        why = " (no test runs this line)" if survived is None else ""
                        print(
                            f"  SURVIVED {module}:{mutant.line} {mutant.function}: "
                            f"{mutant.operator}{why}",
                            flush=True,
                        )
                    if number % 20 == 0:
                        print(f"  {module}: {number}/{len(to_run)}", flush=True)
        finally:
            for server in forks:
                server.close()
    if coverage is not None and to_run:
        everything = len(coverage.tests)
        chosen = [n or everything for n in runs]
        average = sum(chosen) / len(chosen) if chosen else 0.0
        print(
            f"{module}: {len(runs)} mutants run, against {average:.1f} of {everything} tests "
            f"on average; {unrun} on lines no test runs (survived, not run)",
            flush=True,
        )
    equivalent = len(found) - len(to_run)
    return len(found), len(to_run) - len(survivors), equivalent, survivors


def _score(killed: int, total: int, equivalent: int) -> str:
    scored = total - equivalent
    return f"{killed}/{scored} = {100 * killed / scored:.1f}%" if scored else "no mutants"


def _stamp() -> str:
    """``<date> at <commit>`` of the score table (today, the checkout's HEAD)."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, check=False
    )
    commit = head.stdout.decode().strip() if head.returncode == 0 else "(no commit)"
    return f"{time.strftime('%Y-%m-%d', time.gmtime())} at {commit}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.mutate", description=__doc__)
    parser.add_argument("modules", nargs="*", help=f"default: all of {len(MODULES)}")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--only", nargs="+", type=int, metavar="LINE", help="only these lines")
    parser.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="mutants tested at a time (default 1)"
    )
    parser.add_argument(
        "--all-tests",
        action="store_true",
        help="run each mutant against all the module's tests (no selection by coverage)",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    modules = args.modules or list(MODULES)
    unknown = [m for m in modules if m not in MODULES]
    if unknown:
        parser.error(f"not in MODULES: {', '.join(unknown)}")
    if args.list:
        for module in modules:
            for mutant in mutants(module):
                print(f"{module}:{mutant.line} {mutant.function}: {mutant.operator}")
        return 0
    only = set(args.only) if args.only else None
    rows = []
    for module in modules:
        print(f"{module}: {len(mutants(module))} mutants, tests {' '.join(MODULES[module])}")
        total, killed, equivalent, survivors = run_module(
            module, only, args.jobs, select=not args.all_tests
        )
        rows.append((module, total, killed, equivalent, len(survivors)))
        print(f"{module}: {_score(killed, total, equivalent)} killed", flush=True)
    stamp = _stamp()
    print("\n| Module | Mutants | Equivalent | Killed | Survived | Score | Measured |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for module, total, killed, equivalent, survived in rows:
        relative = module.removeprefix(f"{PACKAGE}/")
        print(
            f"| `{relative}` | {total} | {equivalent} | {killed} | {survived} | "
            f"{_score(killed, total, equivalent)} | {stamp}, "
            f"code {mutation_scores.module_fingerprint(relative)} |"
        )
    if only is not None:
        print("(--only: the rows count those lines' mutants, not the module's)")
    return 1 if any(row[4] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
