"""Kueue's queues as the bot reads them: :mod:`.queues` (who waits for which GPUs in each
LocalQueue and ClusterQueue, and where the same GPUs sit idle) and :mod:`.freeing` (which idle
consumers to stop so a pending Workload can be admitted). Pure."""
