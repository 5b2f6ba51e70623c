"""The edges that read the outside world into ``actions.model`` data, one package or module per
system: ``kube/`` (the Kubernetes API and kubectl dumps), ``prometheus/`` (telemetry, usage,
history and Kueue's metrics), ``aws/`` (live prices) and :mod:`.recording` (telemetry replayed
from a recording). Each implements a port of :mod:`actions.ports`. :mod:`.bounded` reads an
upstream's answers against a size limit and a total deadline.
"""
