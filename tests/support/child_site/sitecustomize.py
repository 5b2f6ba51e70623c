"""Start-up hook of the Python processes the tests spawn to run the bot (see
``tests/support/processes.py``, which puts this directory first on the child's ``PYTHONPATH``;
Python imports ``sitecustomize`` at start-up).

It makes the child start as the bot starts in production: without ``kubernetes_validate``. Only
the test extra installs that package (tests/support/schemas.py loads it for the tests that
validate manifests), and the kubernetes client's dynamic module imports it whenever it is installed: 1.5 to 2.5 s of
jsonschema at every start of a process that imports ``kubernetes``. A ``None`` entry in
``sys.modules`` makes ``import kubernetes_validate`` raise ImportError, as where it is not
installed, and the client goes on without it (as ``benchmarks/sweep.py`` does in-process).
"""

import sys

sys.modules["kubernetes_validate"] = None  # type: ignore[assignment]
