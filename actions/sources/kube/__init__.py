"""The Kubernetes API and its offline twin, read into the model: :mod:`.reader` (a live API server,
paged, decoded straight from bytes), :mod:`.structs` (the fields read, as msgspec Structs),
:mod:`.objects` and :mod:`.jobobjects` (JSON to model types), :mod:`.owners` (the owner walk,
one GET per owner), :mod:`.reflector` and :mod:`.watch_cache` (``run``'s list+watch caches),
:mod:`.visibility` (Kueue's pending-workloads API), :mod:`.dump` (a ``kubectl get -o json``
dump) and :mod:`.lease` (the Lease that elects the leader)."""
