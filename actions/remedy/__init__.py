"""What applying an action means, and its exact inverse, as pure decisions over an object's JSON:
:mod:`.patches` (stop a Notebook, scale to zero, deactivate a Workload, suspend a RayCluster, stop
an InferenceService, delete a NodeClaim) and :mod:`.resize` (right-size a pod template's GPUs);
:mod:`.verify` judges afterwards whether the cluster shows what the action meant.
The executors (:mod:`actions.executors`) send them."""
