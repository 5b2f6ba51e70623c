"""The bot's plain data, by subject: :mod:`.kube` (nodes, GPU pods and their owners),
:mod:`.disruption` (Karpenter's do-not-disrupt and NodePool disruption budgets),
:mod:`.kueue` (Workloads and queues), :mod:`.snapshot` (one read of a cluster),
:mod:`.telemetry` (per-GPU DCGM figures over a window), :mod:`.quote` (a price with its source),
:mod:`.findings` (findings and the actions that fix them), :mod:`.usage` (usage over a period,
for the cost engine), :mod:`.history` (what advice is made from), :mod:`.ledger` (a row of the
usage ledger); :mod:`.codec` (their JSON round-trip) and :mod:`.times` (aware UTC, RFC 3339,
whole hours, a month's hours).

Everything here is immutable and free of I/O, so a snapshot and its telemetry can be written to
JSON, read back and replayed through the same decision code. Conventions: times are aware UTC
``datetime``; durations seconds; money USD; GPUs physical-GPU equivalents."""
