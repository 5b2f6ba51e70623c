"""Many wire-level clusters on one machine, for the fleet benchmarks: ``count`` FakeKubeApi servers
in processes of their own holding the same objects, and a query endpoint that answers every
cluster's share from one cluster's series.

One fake of 50,000 pods holds about 760 MB of Python objects (each pod a deep copy of the demo's);
ten would not fit beside Prometheus. The objects are built once, their equal parts (containers,
tolerations, statuses, env of a namespace) made one object (:func:`shared`, as a JSON hash-cons),
and the server processes are forked from that: they share the pages until they touch them.
"""

from __future__ import annotations

import gc
import multiprocessing
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable, Iterator

from tests.support.fakes.kube_api import FakeKubeApi

# The API server sends a BOOKMARK about once a minute; the fake's default (1 s) suits tests, and
# 80 idle watches would make the bot's CPU the fake's cadence.
BOOKMARK_SECONDS = 60.0


def shared(obj: Any, memo: dict) -> Any:
    """``obj`` (JSON values) with every equal dict, list and string made one object, kept in
    ``memo`` across calls. Only for objects nobody mutates afterwards."""
    if isinstance(obj, dict):
        items = {k: shared(v, memo) for k, v in obj.items()}
        key = ("d", tuple((k, id(v)) for k, v in items.items()))
    elif isinstance(obj, list):
        items = [shared(v, memo) for v in obj]
        key = ("l", tuple(id(v) for v in items))
    elif isinstance(obj, (str, int, float)) and not isinstance(obj, bool):
        key = (type(obj), obj)
        items = obj
    else:
        return obj
    return memo.setdefault(key, items)


def _serve(fake: FakeKubeApi, conn) -> None:
    fake.bookmark_seconds = BOOKMARK_SECONDS
    fake.start()
    conn.send(fake.url)
    conn.recv()  # until told to stop (or the parent goes: EOFError)


def pss_mb(pid: int) -> float:
    """Proportional set size of process ``pid``, MB (its share of pages shared with others)."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


@contextmanager
def fake_clusters(objects: Iterable[dict], count: int) -> Iterator[list[tuple[str, int]]]:
    """``count`` FakeKubeApi servers holding ``objects``, each in a forked process; yields their
    ``(url, pid)``. Fork before starting threads of your own."""
    fake, memo = FakeKubeApi(), {}
    store = fake._store
    for obj in objects:
        # Each object's copy is shared as soon as it is stored, so the heap holds the shared
        # form only, compact, rather than 50,000 freed copies for the children to inherit.
        fake.add(obj)
        change = store.changes.pop()  # nothing changes later: a watch starts at its list's version
        store.objects[change.key] = shared(change.new, memo)
    del memo
    gc.collect()
    gc.freeze()  # the children's collector must not touch (and so copy) the shared pages
    ctx = multiprocessing.get_context("fork")
    procs, pipes = [], []
    try:
        for _ in range(count):
            ours, theirs = ctx.Pipe()
            p = ctx.Process(target=_serve, args=(fake, theirs), daemon=True)
            p.start()
            procs.append(p)
            pipes.append(ours)
        urls = [c.recv() for c in pipes]
        del fake, store
        gc.unfreeze()
        gc.collect()
        yield [(u, p.pid) for u, p in zip(urls, procs)]
    finally:
        for c in pipes:
            try:
                c.send("stop")
            except OSError:
                pass
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join()


_CLUSTER = re.compile(r'cluster="[^"]*"\s*,?')


class OneClusterAnswers:
    """A query endpoint for many clusters that holds one: every query's ``cluster="..."`` matcher
    is dropped before it goes to the Prometheus at ``upstream`` (whose series carry no cluster
    label), so each cluster gets the answer of one cluster of the same fleet, computed afresh by
    the real engine. Runs on a thread of the calling process (not the bot's)."""

    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                path, _, query = self.path.partition("?")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                data = owner.rewrite(body.decode()).encode() if body else None
                url = f"{owner.upstream}{path}" + (f"?{owner.rewrite(query)}" if query else "")
                req = urllib.request.Request(url, data=data, method=self.command)
                if data is not None:
                    req.add_header("Content-Type", self.headers.get("Content-Type", "application/x-www-form-urlencoded"))
                try:
                    with urllib.request.urlopen(req, timeout=900) as r:
                        status, payload, kind = r.status, r.read(), r.headers.get("Content-Type", "application/json")
                except urllib.error.HTTPError as e:
                    status, payload, kind = e.code, e.read(), e.headers.get("Content-Type", "application/json")
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _forward

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @staticmethod
    def rewrite(form: str) -> str:
        """A query string or form body with the cluster matchers taken out of its ``query``."""
        pairs = urllib.parse.parse_qsl(form, keep_blank_values=True)
        return urllib.parse.urlencode([(k, _CLUSTER.sub("", v).replace(",}", "}") if k == "query" else v)
                                       for k, v in pairs])

    def __enter__(self) -> "OneClusterAnswers":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
