"""Applying an approved ``ProposedAction``, and undoing it: one module per kind of executor.

:mod:`.kubernetes` patches objects through the API server (Notebooks, StatefulSets, Deployments,
LeaderWorkerSets, Workloads, RayClusters, InferenceServices); :mod:`.jupyterhub` stops and starts
single-user servers through a Hub's REST API; :mod:`.routing` sends each action to the one that
handles its target; :mod:`.in_memory` is a kubectl dump played as a cluster (the demo,
``--cluster-state``). Each is an :class:`actions.ports.ClusterWriter`; what each verb changes, and
its exact inverse, is decided purely by :mod:`actions.remedy`. Each can also try an action first
(``dry_run``): the Kubernetes writer as a server-side dry run (``dryRun=All``), the others as far
as their backend allows (see each).
"""
