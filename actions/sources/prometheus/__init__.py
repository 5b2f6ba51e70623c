"""Prometheus, read: :mod:`.api` (the HTTP API, retries, errors), :mod:`.wire` (answers decoded
from bytes), :mod:`.promql` (building blocks and dcgm-exporter's label conventions), :mod:`.scope`
(one cluster's share of a shared endpoint), :mod:`.telemetry_promql` and :mod:`.telemetry` (the
sweep's per-GPU telemetry), :mod:`.usage_promql` and :mod:`.usage` (a period's usage for cost
reports), :mod:`.history` (advice's history) and :mod:`.kueue` (Kueue's admission waits and the
spot ratio). Every figure is aggregated server-side, so the queries per read do not grow with
the fleet."""
