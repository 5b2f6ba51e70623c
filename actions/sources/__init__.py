"""One module per outside system the bot reads, each turning it into ``actions.model`` data:
Prometheus (:mod:`.prometheus` telemetry, :mod:`.prometheus_usage` cost history,
:mod:`.prometheus_kueue` Kueue's metrics), the Kubernetes API (:mod:`.kubernetes`, decoded by
:mod:`.kubeobjects`), a kubectl dump (:mod:`.kubectl_dump`), a telemetry recording
(:mod:`.recorded`) and AWS prices (:mod:`.aws_prices`).
"""
