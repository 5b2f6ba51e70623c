"""One cluster's share of a Prometheus shared by several: every series selector the bot sends gets
a label matcher (``cluster="gpu-east"``), as a Thanos, Mimir or VictoriaMetrics query endpoint in
front of many clusters' Prometheis expects (their external label, ``cluster`` by convention).

The bot's queries name only three families of metrics, dcgm-exporter's ``DCGM_FI_*``,
kube-state-metrics' ``kube_*`` and Kueue's ``kueue_*``, so a selector is found by its metric name
and never confused with a label name (``by (namespace, pod)``), a function (``max_over_time(``)
or a string (``label_replace(..., "engine_signal", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", ...)``,
whose quoted text is left alone).
"""

from __future__ import annotations

import re

# A metric name of the three families, not preceded by a name character (so ``label_kube_x``
# is not one) and not followed by more of one.
_SELECTOR = re.compile(r"(?<![A-Za-z0-9_:])((?:DCGM_FI_|kube_|kueue_)[A-Za-z0-9_:]*)(\s*\{)?")
# A selector by name pattern alone: ``{__name__=~"DCGM_FI_.*"}``.
_NAME_ONLY = re.compile(r"\{(\s*__name__)")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def matcher(label: str, value: str) -> str:
    """``label="value"`` with the value escaped as a PromQL string. Raises ValueError for a
    label name PromQL cannot take."""
    if not _LABEL.match(label):
        raise ValueError(f"{label!r} is not a Prometheus label name (letters, digits and _, not starting with a digit)")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'{label}="{escaped}"'


def scoped(promql: str, label: str, value: str) -> str:
    """``promql`` with ``label="value"`` added to every ``DCGM_FI_*``, ``kube_*`` and ``kueue_*``
    selector and to every ``{__name__...}`` one: ``max by (pod) (DCGM_FI_DEV_GPU_UTIL{pod!=""})`` ->
    ``max by (pod) (DCGM_FI_DEV_GPU_UTIL{cluster="a",pod!=""})``. Quoted strings are kept as they
    are. Pure; raises ValueError for a bad label name."""
    added = matcher(label, value)

    def one(m: re.Match) -> str:
        if m.group(2):
            return f"{m.group(1)}{{{added},"
        return f"{m.group(1)}{{{added}}}"

    def code(text: str) -> str:
        return _NAME_ONLY.sub(lambda m: f"{{{added},{m.group(1)}", _SELECTOR.sub(one, text))

    out, last = [], 0
    for s in _STRING.finditer(promql):
        out.append(code(promql[last:s.start()]))
        out.append(s.group(0))
        last = s.end()
    out.append(code(promql[last:]))
    # A selector with empty braces became `name{cluster="a",}`: PromQL accepts the trailing comma.
    return "".join(out)
