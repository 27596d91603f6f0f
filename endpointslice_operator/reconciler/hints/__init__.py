"""Topology hints: Topology Aware Hints `Auto` (`topology`) and `spec.trafficDistribution`
(`trafficdist`), as the staging library's `topologycache/` and `trafficdist/`."""
