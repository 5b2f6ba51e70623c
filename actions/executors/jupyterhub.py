"""Stopping and starting JupyterHub single-user servers through the Hub's REST API.

kubespawner's pods have no owner to scale (kubespawner 7.1.0 spawner.py); only the Hub can stop
one, and only the Hub can start the same server again. The routes (jupyterhub 5.5.1
``apihandlers/users.py``; 6.x keeps them):

- ``GET  /users/{name}``: the user model; its ``servers`` map (server name -> Server, ``""`` the
  default server) lists the active servers, each with ``ready``, ``pending`` and ``user_options``;
- ``DELETE /users/{name}/servers/{server}`` (``/users/{name}/server`` for the default one): 204
  stopped (also when it was already stopped), 202 stop pending;
- ``POST`` on the same path with the ``user_options`` as the JSON body: 201 started, 202
  pending, 400 when it is already running or a stop is still pending.

The token needs the ``servers`` scope (it includes ``read:servers`` and ``delete:servers``, and
in 6.x ``start:servers``); it is sent as ``Authorization: token <token>``.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any, Mapping
from urllib.parse import quote

import urllib3

from actions.model.findings import ProposedAction
from actions.model.kube import ObjectRef
from actions.remedy.patches import ExecutorError, check_target, plan_apply, plan_restore
from actions.sources.bounded import BoundedPoolManager
from actions.text import shown_url


def server_of(target: ObjectRef) -> tuple[str, str]:
    """``(user, server name)`` of a ``JupyterHubServer`` target named ``<user>/<server>``
    (``""`` for the default server). Server names never contain ``/``; user names may."""
    user, _, server = target.name.rpartition("/")
    return user, server


HUB_MAX_RESPONSE_BYTES = 16 * 1024 * 1024

class HubClient:
    """One Hub's REST API at ``api_url`` (``http://hub.jhub.svc:8081/hub/api``) with ``token``.

    ``timeout_seconds`` bounds each request in all, connect and every read of its answer;
    ``settle_seconds`` how long a stop or start may stay
    pending before the call gives up (the Hub finishes it on its own)."""

    def __init__(self, api_url: str, token: str, *, timeout_seconds: float = 10, settle_seconds: float = 60):
        self.api_url = api_url.rstrip("/")
        self._headers = {"Authorization": f"token {token}", "Content-Type": "application/json"}
        # Each call bounded in all, its answer read as it arrives (a Hub's answers are small).
        self._http = BoundedPoolManager(urllib3.PoolManager(retries=False), HUB_MAX_RESPONSE_BYTES)
        self._timeout = urllib3.Timeout(total=timeout_seconds)
        self.settle_seconds = settle_seconds

    def _path(self, user: str, server: str) -> str:
        base = f"{self.api_url}/users/{quote(user, safe='')}"
        return f"{base}/servers/{quote(server, safe='')}" if server else f"{base}/server"

    def _call(self, method: str, url: str, target: ObjectRef, body: Any = None) -> tuple[int, Any]:
        try:
            r = self._http.request(
                method, url, headers=self._headers, body=None if body is None else json.dumps(body).encode(),
                timeout=self._timeout,
            )
        except (urllib3.exceptions.HTTPError, OSError) as e:
            where = shown_url(self.api_url)
            raise ExecutorError(f"{target}: cannot reach the JupyterHub API at {where}: {e}", target) from e
        try:
            data = json.loads(r.data) if r.data else None
        except ValueError:
            data = r.data.decode("utf-8", "replace")[:300]
        return r.status, data

    def server(self, target: ObjectRef) -> dict:
        """The server as the Hub shows it: ``{"running": bool, "pending": str | None,
        "user_options": {...}}`` (not running when the Hub lists no such active server). Raises
        ExecutorError when the user does not exist or the Hub refuses."""
        user, server = server_of(target)
        status, data = self._call("GET", f"{self.api_url}/users/{quote(user, safe='')}", target)
        if status != 200 or not isinstance(data, dict):
            raise self._error(target, "read", status, data)
        found = (data.get("servers") or {}).get(server)
        if not found:
            return {"running": False, "pending": None, "user_options": {}}
        return {
            "running": not found.get("stopped", False) and found.get("pending") != "stop",
            "pending": found.get("pending"),
            "user_options": found.get("user_options") or {},
        }

    def stop(self, target: ObjectRef) -> None:
        """Stop the server and wait (up to ``settle_seconds``) until the Hub says it stopped."""
        user, server = server_of(target)
        status, data = self._call("DELETE", self._path(user, server), target)
        if status == 202:
            self._settle(target, running=False)
        elif status != 204:
            raise self._error(target, "stop", status, data)

    def start(self, target: ObjectRef, user_options: Mapping[str, Any]) -> None:
        """Start the server with ``user_options`` and wait until it is no longer pending."""
        user, server = server_of(target)
        status, data = self._call("POST", self._path(user, server), target, dict(user_options))
        if status == 202:
            self._settle(target, running=True)
        elif status == 400 and "already running" in str(data):
            return
        elif status != 201:
            raise self._error(target, "start", status, data)

    def _settle(self, target: ObjectRef, *, running: bool) -> None:
        deadline = time.monotonic() + self.settle_seconds
        while time.monotonic() < deadline:
            state = self.server(target)
            if not state["pending"] and state["running"] == running:
                return
            time.sleep(0.2)
        raise ExecutorError(
            f"{target}: the Hub still has the {'start' if running else 'stop'} pending after "
            f"{self.settle_seconds:g} s; it goes on by itself, check it in the Hub's admin page", target,
        )

    @staticmethod
    def _error(target: ObjectRef, doing: str, status: int, data: Any) -> ExecutorError:
        message = data.get("message") if isinstance(data, dict) else data
        if status == 404:
            suffix = "" if doing != "start" else "; nothing to restore"
            return ExecutorError(f"{target} no longer exists in the Hub ({message}){suffix}", target, 404)
        if status == 403:
            return ExecutorError(
                f"{doing} {target}: the Hub refused the token (HTTP 403: {message}); it needs the servers scope",
                target, 403,
            )
        return ExecutorError(f"{doing} {target} failed: HTTP {status}: {message}", target, status)


class HubWriter:
    """A ClusterWriter for ``JupyterHubServer`` targets: ``hubs`` maps a namespace to the Hub
    whose single-user pods run there."""

    def __init__(self, hubs: Mapping[str, HubClient]):
        self.hubs = dict(hubs)

    def _hub(self, action: ProposedAction) -> HubClient:
        check_target(action)
        hub = self.hubs.get(action.target.namespace)
        if hub is None:
            raise ExecutorError(
                f"{action.target}: no JupyterHub is configured for namespace {action.target.namespace}", action.target
            )
        return hub

    def apply(self, action: ProposedAction, now: datetime) -> dict:
        """Stop the server; the undo record keeps its ``user_options`` so Restore starts it the
        same way. Idempotent. Raises ExecutorError."""
        hub = self._hub(action)
        patch, undo = plan_apply(action, hub.server(action.target), now)
        if patch is not None:
            hub.stop(action.target)
        return undo

    def dry_run(self, action: ProposedAction, now: datetime) -> dict:
        """See ``ClusterWriter.dry_run``, as far as a Hub allows: its REST API has no dry run,
        so this is a read (``GET /users/{name}``), not a server-side dry run. It checks that the
        user still exists and plans the stop from the server's state: a running server would be
        stopped, one not running would be left as it is (as ``apply`` does). Nothing is sent
        that changes anything. Raises ExecutorError("<target> no longer exists in the Hub ...",
        status 404) when the user is gone, ExecutorError when the Hub cannot be read or refuses
        the token; never ActionRefused (no request that acts is sent to be refused). Returns
        the undo record planned."""
        hub = self._hub(action)
        return plan_apply(action, hub.server(action.target), now)[1]

    def current(self, action: ProposedAction) -> dict | None:
        """The server as its Hub shows it (:meth:`HubClient.server`); None when the user is gone.
        Raises ExecutorError when the Hub cannot be read or none is configured."""
        target = action.target
        hub = self.hubs.get(target.namespace)
        if hub is None:
            raise ExecutorError(f"{target}: no JupyterHub is configured for namespace {target.namespace}", target)
        try:
            return hub.server(target)
        except ExecutorError as e:
            if e.status == 404:
                return None
            raise

    def restore(self, action: ProposedAction, undo: dict, now: datetime) -> None:
        """Start the same named server again with the options it ran with. Idempotent (a
        running server is left as it is). Raises ExecutorError."""
        hub = self._hub(action)
        patch = plan_restore(action, undo, hub.server(action.target))
        if patch is not None:
            hub.start(action.target, patch["start"]["user_options"])
