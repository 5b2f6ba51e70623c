"""GPU cost per team: :mod:`.engine` (the cost engine: usage and prices in, a report out),
:mod:`.report` (what a report says, and its JSON), :mod:`.queues` (the same report by Kueue
LocalQueue or ClusterQueue), :mod:`.periods` (``7d``, ``mtd``, ``last-month``), :mod:`.fleet`
(several clusters' reports added up), :mod:`.reporting` (a report read from a usage source and
priced) and :mod:`.gc_pause` (Python's garbage collector paused while a large report is built).
Pure: usage comes through :class:`actions.ports.UsageSource`."""
