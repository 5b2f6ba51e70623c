"""What the bot knows and does about GPU cost, with no chat in it.

- Data at the bottom: :mod:`.model` (the types), :mod:`.policy` (thresholds, teams),
  :mod:`.prices` (the catalog and overrides), :mod:`.text` (units as people read them).
- Pure decisions above it: :mod:`.idle` (what is idle), :mod:`.cost` (the cost engine),
  :mod:`.estimate`, :mod:`.queue`, :mod:`.alerts`, :mod:`.patches` (what an action patches and
  how to undo it).
- At the edges: ``sources/`` (Prometheus, the Kubernetes API, a kubectl dump, AWS prices),
  :mod:`.executors` (patches a live cluster), :mod:`.in_memory_cluster` (a dump played as a
  cluster), :mod:`.store` (the database), :mod:`.lease`; :mod:`.reporting` reads a period's usage
  and prices it.

Nothing here imports ``bot``; decisions import nothing that does I/O (``.importlinter``).
"""

import sys


class _NoKubernetesValidate:
    """Keeps the kubernetes client's ``kubernetes.dynamic.client`` from importing
    ``kubernetes_validate`` (the tests' extra installs it): ``import kubernetes`` always imports
    ``kubernetes.dynamic``, which imports it when it is installed, and it pulls jsonschema's
    format checkers, whose ``rfc3987_syntax`` builds a grammar at import: 1.8 s of every start-up.
    The bot never validates through the dynamic client; other importers (the deploy tests) still
    get the package."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "kubernetes_validate":
            importer = sys.modules.get("kubernetes.dynamic.client")
            if getattr(getattr(importer, "__spec__", None), "_initializing", False):
                raise ModuleNotFoundError("kubernetes_validate is not loaded for the dynamic client", name=name)
        return None


sys.meta_path.insert(0, _NoKubernetesValidate())
