"""Which alerts hold: :mod:`.alert` (an alert, its kinds and keys), :mod:`.budgets` (50/80/100% of
a monthly budget and the month-end forecast), :mod:`.queues` (Workloads waiting too long,
ClusterQueues whose admission wait is long) and :mod:`.capacity` (idle on-demand GPUs, a low spot
ratio). Pure: data and ``now`` in, alerts out; the caller claims each in the store before posting."""
