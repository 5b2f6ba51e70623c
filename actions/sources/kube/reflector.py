"""List+watch of one kind of Kubernetes object, as client-go's Reflector does it.

Listing 50,000 pods of about 5 KB each costs a sweep seconds of CPU, almost all of it for objects
that did not change since the last sweep (:mod:`actions.sources.kube.watch_cache` says which kinds are
kept). A :class:`Reflector` lists its kind once (paged, as
:class:`~actions.sources.kube.reader.KubernetesSource` does), then watches from the list's
``resourceVersion`` with ``allowWatchBookmarks=true`` and applies each ``WatchEvent`` (a JSON
line: ``{"type": "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR", "object": ...}``,
apimachinery pkg/apis/meta/v1 watch.go) to what it keeps: the model value of each object, decoded
with the Structs of :mod:`actions.sources.kube.objects`, keyed by namespace and name as client-go's
store keys them (``MetaNamespaceKeyFunc``). Following the Kubernetes API concepts ("Efficient
detection of changes"):

- a watch that ends (its ``timeoutSeconds`` ran out) or is cut mid-stream is opened again from the
  last ``resourceVersion`` seen (an event's or a BOOKMARK's);
- an ``ERROR`` event with a 410 Status (reason ``Expired`` or ``Gone``: the server no longer holds
  the history from that version), or a 410 answer to the watch, means a fresh list;
- a 403 or 404 (no RBAC ``watch``, the kind no longer served) stops the watch for good, with a
  warning: sweeps list as they did before;
- any other failure (an error Status, a body that does not decode, an API server that cannot be
  reached) marks the cache not synced and lists again after a back-off.

:meth:`Reflector.items` answers ``None`` until the first list is done and whenever the cache is
not known to be current; the source then lists as it always did. The watch runs on a daemon
thread that logs its failures and never raises; :meth:`Reflector.stop` ends it promptly by shutting
the open response down.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import kubernetes.client
import msgspec
import urllib3
import urllib3.exceptions

from actions.sources.kube import structs
from actions.sources.kube.shared_strings import shared

log = logging.getLogger(__name__)

O = TypeVar("O")  # the decoded object's Struct
V = TypeVar("V")  # what the cache keeps for one object

# A watch lasts a random 5-10 minutes, as client-go's reflector picks (minWatchTimeout x [1, 2)),
# so that many replicas do not reconnect at once.
WATCH_SECONDS = (300.0, 600.0)
# Back-off after a failure: doubling from the first to the last, in seconds.
BACKOFF_SECONDS = (0.5, 30.0)


class WatchEvent(msgspec.Struct):
    """apimachinery pkg/apis/meta/v1 ``WatchEvent``: ``object`` is kept raw until ``type`` says
    what it is (the watched kind, or a ``Status`` for ``ERROR``)."""

    type: str
    object: msgspec.Raw


class Status(msgspec.Struct):
    """The fields read of a meta/v1 ``Status`` (an ``ERROR`` event's object)."""

    code: int = 0
    reason: str = ""
    message: str = ""


class _Bookmark(msgspec.Struct):
    """A ``BOOKMARK`` event's object: only ``metadata.resourceVersion`` is set."""

    metadata: structs.ObjectMeta = msgspec.field(default_factory=structs.ObjectMeta)


class _Page(msgspec.Struct, Generic[O]):
    metadata: structs.ListMeta = msgspec.field(default_factory=structs.ListMeta)
    items: list[O] | None = None


_EVENT = msgspec.json.Decoder(WatchEvent)
_STATUS = msgspec.json.Decoder(Status)
_BOOKMARK = msgspec.json.Decoder(_Bookmark)


class WatchError(Exception):
    """The list or the watch failed: HTTP ``status`` (0 when no response came, or the body did not
    decode) and the server's message. ``expired`` when the server no longer holds the history
    from the asked ``resourceVersion`` (410): only a fresh list helps then."""

    def __init__(self, resource: str, status: int, message: str):
        super().__init__(f"{resource}: {status or 'no HTTP status'}: {message}")
        self.status = status

    @property
    def expired(self) -> bool:
        return self.status == 410


@dataclass(frozen=True)
class WatchedKind(Generic[O, V]):
    """One kind to keep: ``path`` lists it cluster-wide (``/api/v1/pods``), ``struct`` is the
    kubeobjects Struct an item decodes to, ``keep(obj)`` the value kept for it (``None``: keep
    nothing; a ValueError is kept and raised by :meth:`Reflector.items`), ``field_selector`` as the
    source lists it."""

    resource: str
    path: str
    struct: type
    keep: Callable[[O], V | None]
    field_selector: str = ""


class Reflector(Generic[O, V]):
    """The objects of ``kind`` on the API server behind ``api_client``, kept by list+watch.

    Lists ``page_size`` at a time; each list request gives up after ``timeout_seconds`` and a
    watch that sends nothing for ``timeoutSeconds`` + ``timeout_seconds``. Needs RBAC ``list``
    and ``watch`` on the kind. Not started until :meth:`start`.
    """

    def __init__(
        self, api_client: kubernetes.client.ApiClient, kind: WatchedKind, *, page_size: int = 500,
        timeout_seconds: float = 10, watch_seconds: tuple[float, float] = WATCH_SECONDS,
        backoff_seconds: tuple[float, float] = BACKOFF_SECONDS,
    ):
        self.kind = kind
        self._client = api_client
        self._page_size = page_size
        self._timeout = timeout_seconds
        self._watch_seconds = watch_seconds
        self._backoff = backoff_seconds
        self._page = msgspec.json.Decoder(_Page[kind.struct])
        self._object = msgspec.json.Decoder(kind.struct)
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str], V] = {}
        self._broken: dict[tuple[str, str], ValueError] = {}
        self._synced = False
        self._resource_version = ""
        self._stop = threading.Event()
        self._response: urllib3.BaseHTTPResponse | None = None
        self._thread: threading.Thread | None = None
        self.lists = 0  # lists done (the first, then one per relist), for logs and tests
        self.gave_up = False  # after a 403 or 404: sweeps list this kind for themselves

    # --- what the source reads ---------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        """True when a list is done and the watch since then has not failed."""
        return self._synced

    @property
    def running(self) -> bool:
        """True while the watch thread runs (started, and neither stopped nor given up)."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def resource_version(self) -> str:
        """The last resourceVersion seen (a list's, an event's or a BOOKMARK's); ``""`` before."""
        return self._resource_version

    def items(self) -> list[V] | None:
        """The kept values, in no order; ``None`` when not synced. Raises the ValueError of an
        object whose ``keep`` failed (malformed), as listing it would."""
        with self._lock:
            if not self._synced:
                return None
            if self._broken:
                raise next(iter(self._broken.values()))
            return list(self._values.values())

    # --- life cycle --------------------------------------------------------------------------------

    def start(self) -> "Reflector":
        """List and watch on a daemon thread from now until :meth:`stop`."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"watch-{self.kind.resource}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop watching: the open watch is shut down at once. False when the thread did not end
        within ``timeout`` seconds (it is a daemon: it cannot hold the exit)."""
        self._stop.set()
        response = self._response
        if response is not None:
            try:
                response.shutdown()  # type: ignore[attr-defined] - urllib3 >= 2.3: wakes a blocked read
            except (OSError, AttributeError):
                pass
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                if not self._resource_version:
                    self._relist()
                self._watch()
                failures = 0
            except WatchError as e:
                if self._stop.is_set():
                    break
                if e.status in (403, 404):
                    with self._lock:
                        self._synced = False
                    self.gave_up = True
                    log.warning("cannot watch %s (%s); sweeps list them instead", self.kind.resource, e)
                    return
                if e.expired:
                    log.info("watch of %s expired (%s); listing them again", self.kind.resource, e)
                    self._resource_version = ""
                    continue  # the server asks for a list, not for patience
                failures += 1
                self._failed(f"{e}", failures)
            except (OSError, urllib3.exceptions.HTTPError, ValueError) as e:
                if self._stop.is_set():
                    break
                failures += 1
                self._failed(f"{type(e).__name__}: {e}", failures)
            except Exception:  # noqa: BLE001 - the watch must never take the process down
                failures += 1
                log.exception("watch of %s failed unexpectedly", self.kind.resource)
                self._failed("unexpected error", failures)

    def _failed(self, why: str, failures: int) -> None:
        """Not synced, and a fresh list after a back-off (sweeps list for themselves meanwhile)."""
        with self._lock:
            self._synced = False
        self._resource_version = ""
        first, last = self._backoff
        delay = min(last, first * 2 ** (failures - 1))
        log.warning(
            "watch of %s failed (%s); sweeps list %s until it is synced again (next try in %.1f s)",
            self.kind.resource, why, self.kind.resource, delay,
        )
        self._stop.wait(delay)

    # --- list and watch ----------------------------------------------------------------------------

    def _get(self, query: list[tuple[str, str]], read_timeout: float) -> urllib3.BaseHTTPResponse:
        """GET the kind's path with ``query``: the open response (2xx), else WatchError."""
        request = self._client.param_serialize(
            method="GET", resource_path=self.kind.path, query_params=query,
            header_params={"Accept": "application/json"}, auth_settings=["BearerToken"],
        )
        response = self._client.call_api(*request, _request_timeout=(self._timeout, read_timeout)).response
        if not 200 <= response.status < 300:
            try:
                body = response.read()
            finally:
                response.release_conn()
            try:
                message = _STATUS.decode(body).message
            except msgspec.DecodeError:
                message = body.decode("utf-8", "replace")[:500]
            raise WatchError(self.kind.resource, response.status, message)
        return response

    def _selector(self) -> list[tuple[str, str]]:
        return [("fieldSelector", self.kind.field_selector)] if self.kind.field_selector else []

    def _relist(self) -> None:
        """Replace what is kept with a fresh paged list; synced after it."""
        values: dict[tuple[str, str], V] = {}
        broken: dict[tuple[str, str], ValueError] = {}
        token = ""
        while True:
            query = [("limit", str(self._page_size)), *self._selector()]
            if token:
                query.append(("continue", token))
            response = self._get(query, self._timeout)
            try:
                body = response.read()
            finally:
                response.release_conn()
            try:
                page = self._page.decode(body)
            except msgspec.DecodeError as e:
                raise WatchError(self.kind.resource, 0, f"malformed list: {e}") from e
            for obj in page.items or ():
                self._put(values, broken, obj)
            token = page.metadata.continue_
            if not token:
                break
        with self._lock:
            self._values, self._broken = values, broken
            self._resource_version = page.metadata.resource_version
            self._synced = True
        self.lists += 1
        log.info("listed %d %s at resourceVersion %s", len(values), self.kind.resource, self._resource_version)

    def _put(self, values: dict[tuple[str, str], V], broken: dict[tuple[str, str], ValueError], obj: O) -> None:
        key = _key(obj)
        broken.pop(key, None)
        try:
            value = self.kind.keep(obj)
        except ValueError as e:
            values.pop(key, None)
            broken[key] = e
            return
        if value is None:
            values.pop(key, None)
        else:
            values[key] = value

    def _watch(self) -> None:
        """One watch from the kept resourceVersion until the server ends it; raises WatchError
        (``expired`` on 410), ValueError for an event that does not decode, and what urllib3
        raises when the connection breaks."""
        seconds = int(random.uniform(*self._watch_seconds))
        query = [
            ("watch", "1"), ("resourceVersion", self._resource_version), ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(seconds)), *self._selector(),
        ]
        response = self._get(query, seconds + self._timeout)
        self._response = response
        try:
            if self._stop.is_set():
                return
            with self._lock:
                self._synced = True  # the watch resumes where the list (or the last event) left off
            buffer = b""
            try:
                for chunk in response.stream(65536):
                    lines = (buffer + chunk).split(b"\n")
                    buffer = lines.pop()
                    for line in lines:
                        if line.strip():
                            self._apply(line)
            except (OSError, urllib3.exceptions.HTTPError) as e:
                # Cut mid-stream (or shut down by stop()): what was applied is current up to the
                # last resourceVersion seen, so the next watch resumes from there.
                if not self._stop.is_set():
                    log.info("watch of %s was cut (%s); resuming from resourceVersion %s",
                             self.kind.resource, e, self._resource_version)
                return
            if buffer.strip():
                self._apply(buffer)
        finally:
            self._response = None
            response.release_conn()

    def _apply(self, line: bytes) -> None:
        try:
            event = _EVENT.decode(line)
            if event.type == "ERROR":
                status = _STATUS.decode(event.object)
                raise WatchError(self.kind.resource, status.code, f"{status.reason}: {status.message}")
            if event.type == "BOOKMARK":
                self._resource_version = _BOOKMARK.decode(event.object).metadata.resource_version
                return
            obj = self._object.decode(event.object)
        except msgspec.DecodeError as e:
            raise ValueError(f"malformed watch event of {self.kind.resource}: {e}") from e
        with self._lock:
            if event.type in ("ADDED", "MODIFIED"):
                self._put(self._values, self._broken, obj)
            elif event.type == "DELETED":
                self._values.pop(_key(obj), None)
                self._broken.pop(_key(obj), None)
            else:
                raise ValueError(f"watch event of {self.kind.resource} of unknown type {event.type!r}")
        self._resource_version = obj.metadata.resource_version  # type: ignore[attr-defined]


def _key(obj: object) -> tuple[str, str]:
    meta = obj.metadata  # type: ignore[attr-defined]
    return shared(meta.namespace), meta.name
