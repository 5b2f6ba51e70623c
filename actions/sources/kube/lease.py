"""The coordination.k8s.io/v1 Lease that names the one replica running the scheduled jobs.

Reads, creates and replaces one Lease through the real ``kubernetes`` client. A replace carries
the ``metadata.resourceVersion`` that was read, so the API server refuses it (409 Conflict) when
another replica wrote the Lease in between: of two replicas racing for an expired Lease, exactly
one wins. What to write (acquire, renew, release) is decided by ``bot.service.leader``; this module only
moves :class:`LeaseRecord` values to and from the API server.

``spec.acquireTime`` and ``spec.renewTime`` are MicroTime: the API server parses them with the
layout ``2006-01-02T15:04:05.000000Z07:00`` and rejects anything without exactly six fractional
digits. The client's typed ``create/replace_namespaced_lease`` validate a dict body into a
``V1Lease`` and write its datetimes back with ``isoformat()``, which gives ``+00:00`` and drops
an all-zero fraction: rejected. So writes send the JSON built here through the client's own
request machinery (``param_serialize``/``call_api``: same configuration, auth and TLS).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

import kubernetes.client
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from actions.sources.kube.reader import load_kube_config

MICRO_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


class LeaseError(Exception):
    """The API server could not be asked or answered with an error: ``status`` is the HTTP status
    (0 when no HTTP response arrived, e.g. a timeout or a refused connection)."""

    def __init__(self, doing: str, status: int, message: str):
        super().__init__(f"{doing} failed ({status or 'no HTTP status'}): {message}")
        self.status = status


class LeaseConflict(LeaseError):
    """The Lease changed since it was read (409 Conflict on replace), or another replica created
    it first (409 AlreadyExists on create). Read it again before deciding anything."""


def format_micro_time(t: datetime) -> str:
    """``t`` (aware) as a Kubernetes MicroTime: UTC, six fractional digits, ``Z``. Raises
    ValueError for a naive datetime."""
    if t.tzinfo is None:
        raise ValueError(f"MicroTime needs an aware datetime, got naive {t!r}")
    return t.astimezone(timezone.utc).strftime(MICRO_TIME_FORMAT)


def parse_micro_time(text: str | None) -> datetime | None:
    """A MicroTime (or a plain RFC 3339 time, which older writers produce) as an aware UTC
    datetime; None for None or an empty string. Raises ValueError for anything else."""
    if not text:
        return None
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"time {text!r} has no offset")
    return parsed.astimezone(timezone.utc)


@dataclass(frozen=True)
class LeaseRecord:
    """A Lease's spec: ``holder`` is the holding replica's identity (``""`` when released or never
    held), ``lease_duration_seconds`` how long (whole seconds) the holder may go without renewing
    before others may take over, ``acquire_time``/``renew_time`` aware UTC datetimes (None when
    absent), ``transitions`` how many times the Lease changed holder."""

    holder: str
    lease_duration_seconds: int
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int

    def spec(self) -> dict:
        """The record as a Lease ``spec`` JSON object."""
        out: dict = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.transitions,
        }
        if self.acquire_time is not None:
            out["acquireTime"] = format_micro_time(self.acquire_time)
        if self.renew_time is not None:
            out["renewTime"] = format_micro_time(self.renew_time)
        return out

    @classmethod
    def from_spec(cls, spec: dict | None) -> "LeaseRecord":
        """The record in a Lease ``spec`` JSON object; missing fields read as empty/zero. Raises
        ValueError for a malformed time."""
        spec = spec or {}
        return cls(
            holder=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=parse_micro_time(spec.get("acquireTime")),
            renew_time=parse_micro_time(spec.get("renewTime")),
            transitions=int(spec.get("leaseTransitions") or 0),
        )


@dataclass(frozen=True)
class Lease:
    """A Lease as read: its ``record`` and the ``resource_version`` a replace must carry."""

    namespace: str
    name: str
    record: LeaseRecord
    resource_version: str


class LeaseClient:
    """Reads and writes the Lease ``namespace``/``name`` through ``api_client``.

    Needs RBAC ``get``, ``create`` and ``update`` on ``leases.coordination.k8s.io`` in
    ``namespace``. Every call takes ``timeout`` (seconds, the whole request) so a hung API server
    cannot hold a leader past its renew deadline.
    """

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str, name: str):
        if not namespace or not name:
            raise ValueError(f"a Lease needs a namespace and a name, got {namespace!r}/{name!r}")
        self._api = kubernetes.client.CoordinationV1Api(api_client)
        self.namespace = namespace
        self.name = name

    def get(self, *, timeout: float) -> Lease | None:
        """The Lease, or None when it does not exist. Raises LeaseError."""
        try:
            response = self._api.read_namespaced_lease(
                self.name, self.namespace, _preload_content=False, _request_timeout=timeout
            )
        except ApiException as e:
            if e.status == 404:
                return None
            raise self._error("reading", e.status, e.reason, e.body) from None
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise LeaseError(f"reading Lease {self.namespace}/{self.name}", 0, str(e)) from None
        return self._decode(response.data)

    def create(self, record: LeaseRecord, *, timeout: float) -> Lease:
        """Create the Lease holding ``record``. Raises LeaseConflict when it exists already,
        LeaseError otherwise."""
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.spec(),
        }
        return self._write("POST", "creating", "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", body, timeout)

    def update(self, current: Lease, record: LeaseRecord, *, timeout: float) -> Lease:
        """Replace ``current`` (as read) with ``record``. Raises LeaseConflict when the Lease
        changed since ``current`` was read or was deleted, LeaseError otherwise."""
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "resourceVersion": current.resource_version,
            },
            "spec": record.spec(),
        }
        return self._write(
            "PUT", "replacing", "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", body, timeout
        )

    def _write(self, method: str, doing: str, path: str, body: dict, timeout: float) -> Lease:
        client = self._api.api_client
        try:
            request = client.param_serialize(
                method=method,
                resource_path=path,
                path_params={"namespace": self.namespace, "name": self.name},
                header_params={"Accept": "application/json", "Content-Type": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
            )
            response = client.call_api(*request, _request_timeout=timeout)
            data = response.read()
        except ApiException as e:
            raise self._error(doing, e.status, e.reason, e.body) from None
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise LeaseError(f"{doing} Lease {self.namespace}/{self.name}", 0, str(e)) from None
        if not 200 <= response.status <= 299:
            raise self._error(doing, response.status, response.reason, data)
        return self._decode(data)

    def _decode(self, data: bytes) -> Lease:
        try:
            obj = json.loads(data)
            meta = obj["metadata"]
            return Lease(
                namespace=meta.get("namespace", self.namespace),
                name=meta["name"],
                record=LeaseRecord.from_spec(obj.get("spec")),
                resource_version=str(meta["resourceVersion"]),
            )
        except (ValueError, KeyError, TypeError) as e:
            raise LeaseError(f"decoding Lease {self.namespace}/{self.name}", 0, f"malformed body: {e}") from None

    def _error(self, doing: str, status: int | None, reason: str | None, body: bytes | str | None) -> LeaseError:
        """The LeaseError for an error answer: the ``message`` of its Status body, else the reason."""
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            message = str(json.loads(text)["message"])
        except (TypeError, ValueError, KeyError):
            message = str(reason or text or "no message")
        what = f"{doing} Lease {self.namespace}/{self.name}"
        # A replace of a deleted Lease (404) is a lost race like any other: read again.
        if status == 409 or (doing == "replacing" and status == 404):
            return LeaseConflict(what, status, message)
        return LeaseError(what, status or 0, message)


def lease_client(
    namespace: str, name: str, *, kubeconfig: str | None = None, context: str | None = None
) -> LeaseClient:
    """A LeaseClient for ``namespace``/``name`` on the cluster found the way
    :func:`actions.sources.kube.reader.load_kube_config` finds it (in-cluster service account, else
    ``kubeconfig``/``context``). Raises ClusterConfigError when there is none."""
    loaded = load_kube_config(kubeconfig, context)
    cfg = loaded.configuration
    loaded.close()
    # No transport retries: urllib3 would retry a hung request three more times, each up to the
    # timeout, carrying a leader past its renew deadline. The elector retries every retry period.
    cfg.retries = 0
    return LeaseClient(kubernetes.client.ApiClient(configuration=cfg), namespace, name)
