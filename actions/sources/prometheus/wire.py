"""Prometheus HTTP API answers decoded from their bytes into typed records, with msgspec.

The shape is the API's envelope (Prometheus docs, "HTTP API", "Format overview"):
``{"status": "success"|"error", "data": {"resultType": "vector"|"matrix", "result": [...]},
"errorType": ..., "error": ..., "warnings": [...]}``; an instant vector's samples are
``{"metric": {label: value}, "value": [unix seconds, "value"]}`` and a range matrix's series
``{"metric": {...}, "values": [[t, "v"], ...]}``. Only the labels a decoder is built for are
kept, as attributes ("" when a series lacks one), so 10,000 series cost no per-label dict.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import msgspec


class ApiError(ValueError):
    """An answer whose ``status`` is not ``success`` (Prometheus sends them with 400, 422 or 503,
    some compatible backends with 200): ``error_type`` and ``error`` as
    Prometheus words them (``errorType``, ``error``)."""

    def __init__(self, error_type: str, error: str):
        super().__init__(f"{error_type or 'error'}: {error}")
        self.error_type = error_type
        self.error = error


@lru_cache(maxsize=None)
def _types(labels: tuple[str, ...], optional: tuple[str, ...]) -> tuple[type, type]:
    """The envelope types of an instant vector and a range matrix whose metrics keep
    ``labels`` (default "") and ``optional`` (default None)."""
    fields: list[Any] = [(name, str, "") for name in labels] + [(name, str | None, None) for name in optional]
    # gc=False: records of strings and numbers make no cycles, and 10,000 of them tracked would
    # make the collector walk them (and a running bot's whole heap) again and again.
    metric = msgspec.defstruct("Metric", fields, frozen=True, gc=False)
    out = []
    for kind, value_field in (("Vector", ("value", tuple[float, str])),
                              ("Matrix", ("values", list[tuple[float, str]]))):
        sample = msgspec.defstruct(f"{kind}Sample", [("metric", metric), value_field], gc=False)
        data = msgspec.defstruct(f"{kind}Data", [("resultType", str), ("result", list[sample])])
        out.append(msgspec.defstruct(f"{kind}Answer", [
            ("status", str), ("data", data | None, None), ("errorType", str, ""), ("error", str, ""),
            ("warnings", list[str], []),
        ]))
    return out[0], out[1]


@lru_cache(maxsize=None)
def decoder(labels: tuple[str, ...], optional: tuple[str, ...] = (), *, matrix: bool = False) -> msgspec.json.Decoder:
    """A decoder of a whole answer (vector, or ``matrix``) keeping ``labels`` and ``optional``
    labels of each series' metric as attributes of the same names."""
    vector, range_ = _types(labels, optional)
    return msgspec.json.Decoder(range_ if matrix else vector)


def result(raw: bytes, labels: tuple[str, ...], optional: tuple[str, ...] = (), *, matrix: bool = False) -> list:
    """The ``data.result`` of the answer ``raw``: samples with ``.metric`` (the labels as
    attributes) and ``.value`` ``(t, "v")`` (a vector) or ``.values`` (a matrix). Raises
    ApiError for a ``status: error`` answer, msgspec.ValidationError/DecodeError (ValueErrors)
    for anything that is not this shape."""
    answer = decoder(labels, optional, matrix=matrix).decode(raw)
    if answer.status != "success":
        raise ApiError(answer.errorType, answer.error)
    if answer.data is None:
        raise msgspec.ValidationError("a success answer without `data`")
    return answer.data.result
