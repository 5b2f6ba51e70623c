"""Kueue's queues as the bot reads them: :mod:`.queues` (who waits for which GPUs in each
LocalQueue and ClusterQueue, and where the same GPUs sit idle), :mod:`.freeing` (which idle
consumers to stop so a pending Workload can be admitted), :mod:`.eta` (when a pending Workload
likely starts), :mod:`.starts` (that estimate for each pending Workload of a queue report, and what
would admit it now) and :mod:`.quota` (a ClusterQueue's GPU nominalQuota). Pure."""
