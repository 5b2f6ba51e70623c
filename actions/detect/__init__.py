"""Finding waste in one snapshot of a cluster and one window of telemetry. Pure.

:mod:`.owners` walks a GPU pod to the object that owns it and its Kueue Workload;
:mod:`.consumers` names who holds a pod and the action for its kind; :mod:`.idle` is the idle-GPU
detector; :mod:`.unrequested` finds GPUs no pod requests; :mod:`.detection` runs them all over a
sweep, each action through :mod:`.gate` (the one gate every action passes: policy, opt-outs,
do-not-disrupt, disruption budgets); :mod:`.clusters` keys and joins the sweeps of several clusters; :mod:`.memo` keeps what is
derived from an unchanged object."""
