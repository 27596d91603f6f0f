"""Shared machinery of the operator-level benchmarks.

* :mod:`~benchmarks.lib.cluster`: the benchmark cluster (Services, Pods, Nodes, slices) and how
  it is loaded into an emulator store in bulk.
* :mod:`~benchmarks.lib.emulator_process`: the emulator as a separate process, populated at
  start, with a small control API (write counts, in-process event churn).
* :mod:`~benchmarks.lib.minimal_controller`: the baseline: the least a controller can do (watch
  pods, PUT one slice per Service), as a separate process.
* :mod:`~benchmarks.lib.processes`: starting, probing and always killing those processes.
* :mod:`~benchmarks.lib.client`: the load generator's HTTP client (readiness flips, slice
  watches) and the latency bookkeeping.
"""
