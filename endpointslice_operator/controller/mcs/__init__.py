"""Multi-Cluster Services (KEP-1645): the operator side. See docs/multicluster.md.

* :mod:`.cache`: what one cluster (this one, or a peer) holds that imports are made from;
* :mod:`.clusters`: list-watches of a cluster into its cache, and a peer's health and Lease;
* :mod:`.imports`: one import's sync (ServiceImport, derived Service, imported slices, the
  status of this cluster's ServiceExport), computed with ``reconciler.mcs``;
* :mod:`.controller`: the whole, run by the operator when ``--multicluster`` is on.
"""
