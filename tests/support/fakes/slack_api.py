"""A fake Slack Web API served over real HTTP on 127.0.0.1, for tests.

Point the real ``slack_sdk.WebClient`` at it::

    with FakeSlack() as fake:
        fake.usergroups = {"S0APPROVERS": ["U1", "U2"]}
        client = WebClient(token="xoxb-test", base_url=fake.base_url)
        client.chat_postMessage(channel="C1", text="hi")
        assert list(fake.messages("C1").values())[0]["text"] == "hi"

Routes on the one server (``root`` is ``http://127.0.0.1:PORT``):

- ``{root}/api/{method}``: Web API methods, JSON or form body (plus query string),
  ``Authorization: Bearer xox...`` required. Answers are real Slack JSON shapes.
- ``{root}/upload/v1/{file_id}``: the upload URL handed out by files.getUploadURLExternal
  (raw bytes POSTed by ``files_upload_v2``; no token, like Slack's pre-signed URL).
- ``{root}/response/{name}``: a response_url; JSON POSTs are recorded in ``responses``.

Everything received is recorded in ``calls``. State is guarded by one lock because the
server is a ThreadingHTTPServer.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, NamedTuple
from urllib.parse import parse_qsl, urlsplit

from tests.support.fakes.block_kit import VIEW_BLOCKS, blocks_errors, message_error

BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
APP_ID = "A0GPUCOST"
TEAM_ID = "T1"

JSONDict = dict[str, Any]


class Call(NamedTuple):
    """One Web API request received: ``(method, params, headers)``.

    ``method`` is e.g. ``"chat.postMessage"``; ``params`` the merged query string and body
    (JSON body -> its dict; form body -> ``{name: str}``); ``headers`` has lower-cased names.
    """

    method: str
    params: JSONDict
    headers: dict[str, str]


class Failure(NamedTuple):
    """A queued one-shot failure: HTTP ``status`` (e.g. 429) or ``ok: false`` with ``error``;
    ``after`` means the call is carried out first and only its answer fails (an answer lost on
    the way back: the caller cannot tell that it happened)."""

    status: int
    error: str
    retry_after: int | None
    after: bool = False


class FakeSlack:
    """The fake Web API server; a context manager that starts and stops it.

    Configuration (set before or during a test):
        usergroups: ``{"S0APPROVERS": ["U1", "U2"]}`` for usergroups.users.list.
        users: ``{"U1": {"name": "alice", "real_name": "Alice"}}`` merged into users.info answers.
        valid_tokens: ``None`` (any ``xox*-`` token is accepted) or a set of accepted tokens.

    Records (read by tests):
        calls: list of ``Call(method, params, headers)`` in arrival order (failed ones too).
        responses: payload dicts POSTed to response URLs, in order (``responses_to(name)`` filters).
        ephemerals: params dict of each accepted chat.postEphemeral, plus its ``message_ts``.
        uploads: ``{file_id: bytes}`` received at upload URLs.
        files: ``{file_id: file object}`` shared by files.completeUploadExternal.
        home_views: ``{user_id: view}``, each user's App Home as views.publish last set it.
        refused: ``(response name, Slack's error answer)`` of response_url posts refused for
            breaking Block Kit's limits (:mod:`tests.support.fakes.block_kit`); Web API methods
            answer such a message ``invalid_blocks`` (or ``msg_too_long``) and do not keep it.
    """

    def __init__(self) -> None:
        self.usergroups: dict[str, list[str]] = {}
        self.users: dict[str, JSONDict] = {}
        self.valid_tokens: set[str] | None = None
        self.calls: list[Call] = []
        self.ephemerals: list[JSONDict] = []
        self.uploads: dict[str, bytes] = {}
        self.files: dict[str, JSONDict] = {}
        self.refused: list[tuple[str, JSONDict]] = []
        self.home_views: dict[str, JSONDict] = {}
        self._responses: list[tuple[str, JSONDict]] = []
        self._messages: dict[str, dict[str, JSONDict]] = defaultdict(dict)
        self._pending_uploads: dict[str, JSONDict] = {}
        self._failures: dict[str, deque[Failure]] = defaultdict(deque)
        self._counter = 0
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------

    def __enter__(self) -> "FakeSlack":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Shut the server down and close its socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        assert self._server is not None, "FakeSlack is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def base_url(self) -> str:
        """The ``base_url`` for ``WebClient``: ``http://127.0.0.1:PORT/api/`` (trailing slash)."""
        return f"{self.root}/api/"

    def response_url(self, name: str) -> str:
        """A response_url on this server; POSTs to it land in ``responses``."""
        return f"{self.root}/response/{name}"

    # -- test helpers --------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        *,
        status: int = 200,
        retry_after: int | None = None,
        error: str | None = None,
        times: int = 1,
    ) -> None:
        """Make the next ``times`` calls to ``method`` fail.

        ``status=429, retry_after=1`` answers HTTP 429 with ``Retry-After: 1`` and
        ``{"ok": false, "error": "ratelimited"}``; ``status=500`` answers HTTP 500 with
        ``internal_error``; ``error="channel_not_found"`` answers HTTP 200 with
        ``{"ok": false, "error": "channel_not_found"}``. Several calls queue.
        """
        if error is None:
            error = "ratelimited" if status == 429 else "internal_error"
        with self._lock:
            for _ in range(times):
                self._failures[method].append(Failure(status, error, retry_after))

    def lose_next_answer(self, method: str, *, status: int = 504) -> None:
        """Carry out the next call to ``method`` as usual (a post is posted), then answer HTTP
        ``status`` instead of its result, as when the answer is lost on the way back."""
        with self._lock:
            self._failures[method].append(Failure(status, "answer_lost", None, after=True))

    def calls_to(self, method: str) -> list[JSONDict]:
        """The params dicts of every call to ``method``, in order."""
        with self._lock:
            return [c.params for c in self.calls if c.method == method]

    def messages(self, channel: str) -> dict[str, JSONDict]:
        """``{ts: message}`` for ``channel`` in posting order, each as it now reads after updates.

        A message is ``{"type": "message", "ts", "text", "blocks", "user", "bot_id", ...}``
        plus ``thread_ts`` if it was posted in a thread and ``edited`` once updated.
        """
        with self._lock:
            return {ts: dict(m) for ts, m in self._messages.get(channel, {}).items()}

    @property
    def responses(self) -> list[JSONDict]:
        """Payload dicts POSTed to any response URL, in order."""
        with self._lock:
            return [payload for _, payload in self._responses]

    def responses_to(self, name: str) -> list[JSONDict]:
        """Payload dicts POSTed to ``response_url(name)``, in order."""
        with self._lock:
            return [payload for n, payload in self._responses if n == name]

    # -- internals used by the handler -------------------------------------------

    def _next_ts(self) -> str:
        """A unique, increasing Slack ts: the current Unix time in microseconds, as Slack's is
        (``conversations.history``'s ``oldest`` compares with it), ``"1763900000.123456"``."""
        self._counter = max(self._counter + 1, int(time.time() * 1_000_000))
        return f"{self._counter // 1_000_000}.{self._counter % 1_000_000:06d}"

    def _pop_failure(self, method: str) -> Failure | None:
        queue = self._failures.get(method)
        return queue.popleft() if queue else None

    def _token_error(self, params: JSONDict, headers: dict[str, str]) -> str | None:
        auth = headers.get("authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else params.get("token")
        if not token:
            return "not_authed"
        if not str(token).startswith("xox"):
            return "invalid_auth"
        if self.valid_tokens is not None and token not in self.valid_tokens:
            return "invalid_auth"
        return None

    def _api(self, method: str, params: JSONDict) -> JSONDict:
        handler = _METHODS.get(method)
        if handler is None:
            return {"ok": False, "error": "unknown_method"}
        return handler(self, params)


# -- Web API methods: (fake, params) -> answer dict ------------------------------------


def _as_json(value: Any) -> Any:
    """Form-encoded bodies carry blocks/files as JSON strings; JSON bodies carry them as lists."""
    if isinstance(value, str) and value[:1] in "[{":
        return json.loads(value)
    return value


def _auth_test(fake: FakeSlack, params: JSONDict) -> JSONDict:
    return {
        "ok": True,
        "url": f"{fake.root}/",
        "team": "Fake Team",
        "user": "gpu-cost-bot",
        "team_id": TEAM_ID,
        "user_id": BOT_USER_ID,
        "bot_id": BOT_ID,
        "is_enterprise_install": False,
    }


def _message_fields(params: JSONDict) -> JSONDict:
    fields: JSONDict = {}
    for key in ("text", "blocks", "attachments", "metadata"):
        if key in params and params[key] is not None:
            fields[key] = _as_json(params[key])
    return fields


def _post_message(fake: FakeSlack, params: JSONDict) -> JSONDict:
    channel = params.get("channel")
    if not channel:
        return {"ok": False, "error": "channel_not_found"}
    fields = _message_fields(params)
    if not any(fields.get(k) for k in ("text", "blocks", "attachments")):
        return {"ok": False, "error": "no_text"}
    if refused := message_error(fields):
        return refused
    ts = fake._next_ts()
    message: JSONDict = {
        "type": "message",
        "user": BOT_USER_ID,
        "bot_id": BOT_ID,
        "app_id": APP_ID,
        "team": TEAM_ID,
        "ts": ts,
        "text": "",
        **fields,
    }
    if params.get("thread_ts"):
        message["thread_ts"] = params["thread_ts"]
    fake._messages[channel][ts] = message
    return {"ok": True, "channel": channel, "ts": ts, "message": dict(message)}


def _update(fake: FakeSlack, params: JSONDict) -> JSONDict:
    channel, ts = params.get("channel"), params.get("ts")
    message = fake._messages.get(channel or "", {}).get(ts or "")
    if message is None:
        return {"ok": False, "error": "message_not_found"}
    if refused := message_error(_message_fields(params)):
        return refused
    message.update(_message_fields(params))
    message["edited"] = {"user": BOT_USER_ID, "ts": fake._next_ts()}
    return {"ok": True, "channel": channel, "ts": ts, "text": message.get("text", ""), "message": dict(message)}


def _post_ephemeral(fake: FakeSlack, params: JSONDict) -> JSONDict:
    if not params.get("channel"):
        return {"ok": False, "error": "channel_not_found"}
    if not params.get("user"):
        return {"ok": False, "error": "user_not_found"}
    fields = _message_fields(params)
    if not any(fields.get(k) for k in ("text", "blocks", "attachments")):
        return {"ok": False, "error": "no_text"}
    if refused := message_error(fields):
        return refused
    message_ts = fake._next_ts()
    fake.ephemerals.append({**params, **fields, "message_ts": message_ts})
    return {"ok": True, "message_ts": message_ts}


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("true", "1")


def _conversations_history(fake: FakeSlack, params: JSONDict) -> JSONDict:
    """Newest first, ``oldest``/``latest`` exclusive bounds (Slack ts strings), ``limit`` (default
    100, at most 999) and ``cursor`` paging; a message's ``metadata`` only with
    ``include_all_metadata``."""
    channel = params.get("channel")
    if not channel:
        return {"ok": False, "error": "channel_not_found"}
    try:
        oldest = float(params.get("oldest") or 0)
        latest = float(params.get("latest") or "inf")
        limit = min(max(int(params.get("limit") or 100), 1), 999)
        offset = int(params.get("cursor") or 0)
    except ValueError:
        return {"ok": False, "error": "invalid_arguments"}
    found = [m for ts, m in fake._messages.get(channel, {}).items() if oldest < float(ts) < latest]
    found.sort(key=lambda m: float(m["ts"]), reverse=True)
    page = found[offset : offset + limit]
    more = offset + limit < len(found)
    metadata = _truthy(params.get("include_all_metadata"))
    messages = [{k: v for k, v in m.items() if k != "metadata" or metadata} for m in page]
    return {
        "ok": True,
        "messages": messages,
        "has_more": more,
        "pin_count": 0,
        "response_metadata": {"next_cursor": str(offset + limit) if more else ""},
    }


def _usergroups_users_list(fake: FakeSlack, params: JSONDict) -> JSONDict:
    group = params.get("usergroup")
    if group not in fake.usergroups:
        return {"ok": False, "error": "no_such_subteam"}
    return {"ok": True, "users": list(fake.usergroups[group])}


def _users_info(fake: FakeSlack, params: JSONDict) -> JSONDict:
    user_id = params.get("user")
    if not user_id:
        return {"ok": False, "error": "user_not_found"}
    extra = fake.users.get(user_id, {})
    name = extra.get("name", user_id.lower())
    real_name = extra.get("real_name", name)
    user = {
        "id": user_id,
        "team_id": TEAM_ID,
        "name": name,
        "real_name": real_name,
        "deleted": False,
        "is_bot": False,
        "is_admin": False,
        "tz": "Etc/UTC",
        "profile": {"display_name": name, "real_name": real_name},
        **extra,
    }
    return {"ok": True, "user": user}


def _channel(params: JSONDict) -> JSONDict:
    channel_id = params.get("channel", "")
    return {
        "id": channel_id,
        "name": channel_id.lower(),
        "is_channel": True,
        "is_private": False,
        "is_archived": False,
        "is_member": True,
    }


def _conversations_join(fake: FakeSlack, params: JSONDict) -> JSONDict:
    if not params.get("channel"):
        return {"ok": False, "error": "channel_not_found"}
    return {"ok": True, "channel": _channel(params)}


def _conversations_info(fake: FakeSlack, params: JSONDict) -> JSONDict:
    if not params.get("channel"):
        return {"ok": False, "error": "channel_not_found"}
    return {"ok": True, "channel": _channel(params)}


def _get_upload_url(fake: FakeSlack, params: JSONDict) -> JSONDict:
    filename, length = params.get("filename"), params.get("length")
    if not filename or length in (None, ""):
        return {"ok": False, "error": "invalid_arguments"}
    file_id = f"F0{len(fake._pending_uploads) + 1:09d}"
    fake._pending_uploads[file_id] = {"filename": filename, "length": int(length)}
    return {"ok": True, "upload_url": f"{fake.root}/upload/v1/{file_id}", "file_id": file_id}


def _complete_upload(fake: FakeSlack, params: JSONDict) -> JSONDict:
    wanted = _as_json(params.get("files")) or []
    shared: list[JSONDict] = []
    for item in wanted:
        file_id = item.get("id")
        pending = fake._pending_uploads.get(file_id)
        if pending is None or file_id not in fake.uploads:
            return {"ok": False, "error": "file_not_found"}
        channels = [c for c in str(params.get("channels") or params.get("channel_id") or "").split(",") if c]
        name = pending["filename"]
        ts = fake._next_ts()
        shared.append(
            {
                "id": file_id,
                "created": int(float(ts)),
                "timestamp": int(float(ts)),
                "name": name,
                "title": item.get("title") or name,
                "mimetype": _mimetype(name),
                "filetype": name.rsplit(".", 1)[-1].lower() if "." in name else "binary",
                "user": BOT_USER_ID,
                "size": len(fake.uploads[file_id]),
                "is_external": False,
                "url_private": f"{fake.root}/files-pri/{TEAM_ID}-{file_id}/{name}",
                "permalink": f"{fake.root}/files/{BOT_USER_ID}/{file_id}/{name}",
                "channels": channels,
                "initial_comment": params.get("initial_comment"),
                "thread_ts": params.get("thread_ts"),
            }
        )
    for f in shared:
        fake.files[f["id"]] = f
    return {"ok": True, "files": [{"id": f["id"], "title": f["title"]} for f in shared]}


def _mimetype(name: str) -> str:
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return {
        "png": "image/png",
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "csv": "text/csv",
        "txt": "text/plain",
        "json": "application/json",
    }.get(ext, "application/octet-stream")


def _views_publish(fake: FakeSlack, params: JSONDict) -> JSONDict:
    """views.publish (docs.slack.dev/reference/methods/views.publish): ``user_id`` and ``view``
    (a JSON string in a form body) of ``type: home``, its blocks within Block Kit's limits for a
    view; kept in ``home_views`` under a view id that stays the user's, and answered as Slack
    answers, the published view with its ``id``, ``hash`` and ``app_id``."""
    user, view = params.get("user_id"), _as_json(params.get("view"))
    if not user:
        return {"ok": False, "error": "invalid_arguments", "response_metadata": {"messages": ["invalid `user_id`"]}}
    if not isinstance(view, dict) or view.get("type") != "home":
        return {"ok": False, "error": "invalid_arguments", "response_metadata": {"messages": ["invalid `view`"]}}
    if errors := blocks_errors(view.get("blocks"), VIEW_BLOCKS):
        return {"ok": False, "error": "invalid_blocks", "errors": errors}
    view_id = fake.home_views.get(user, {}).get("id") or f"V0{len(fake.home_views) + 1:09d}"
    published = {
        "id": view_id, "team_id": TEAM_ID, "type": "home", "close": None, "submit": None,
        "blocks": view.get("blocks") or [], "private_metadata": view.get("private_metadata", ""),
        "callback_id": view.get("callback_id", ""), "state": {"values": {}}, "hash": fake._next_ts(),
        "clear_on_close": False, "notify_on_close": False, "root_view_id": view_id, "previous_view_id": None,
        "app_id": APP_ID, "external_id": view.get("external_id", ""), "bot_id": BOT_ID,
    }
    fake.home_views[user] = published
    return {"ok": True, "view": dict(published)}


_METHODS: dict[str, Callable[[FakeSlack, JSONDict], JSONDict]] = {
    "auth.test": _auth_test,
    "views.publish": _views_publish,
    "chat.postMessage": _post_message,
    "chat.update": _update,
    "chat.postEphemeral": _post_ephemeral,
    "usergroups.users.list": _usergroups_users_list,
    "users.info": _users_info,
    "conversations.join": _conversations_join,
    "conversations.info": _conversations_info,
    "conversations.history": _conversations_history,
    "files.getUploadURLExternal": _get_upload_url,
    "files.completeUploadExternal": _complete_upload,
}


# -- HTTP ------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeSlack/1.0"

    @property
    def fake(self) -> FakeSlack:
        return self.server.fake  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:
        self._route(b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._route(self.rfile.read(length) if length else b"")

    def _route(self, raw: bytes) -> None:
        url = urlsplit(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        if url.path.startswith("/api/"):
            self._web_api(url.path[len("/api/"):], url.query, raw, headers)
        elif url.path.startswith("/upload/v1/"):
            self._upload(url.path[len("/upload/v1/"):], raw)
        elif url.path.startswith("/response/"):
            self._response_url(url.path[len("/response/"):], raw)
        else:
            self._send(404, b"not found", "text/plain")

    def _web_api(self, method: str, query: str, raw: bytes, headers: dict[str, str]) -> None:
        params: JSONDict = dict(parse_qsl(query, keep_blank_values=True))
        content_type = headers.get("content-type", "")
        if raw and content_type.startswith("application/json"):
            params.update(json.loads(raw.decode("utf-8")))
        elif raw:
            params.update(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
        fake = self.fake
        with fake._lock:
            fake.calls.append(Call(method, params, headers))
            failure = fake._pop_failure(method)
            if failure is not None and not failure.after:
                extra = {"Retry-After": str(failure.retry_after)} if failure.retry_after is not None else {}
                self._send_json(failure.status, {"ok": False, "error": failure.error}, extra)
                return
            token_error = fake._token_error(params, headers)
            answer = {"ok": False, "error": token_error} if token_error else fake._api(method, params)
        if failure is not None:
            self._send_json(failure.status, {"ok": False, "error": failure.error})
            return
        self._send_json(200, answer)

    def _upload(self, file_id: str, raw: bytes) -> None:
        fake = self.fake
        with fake._lock:
            fake.calls.append(Call("upload", {"file_id": file_id, "bytes": len(raw)}, {}))
            if file_id not in fake._pending_uploads:
                self._send(404, b"file not found", "text/plain")
                return
            fake.uploads[file_id] = raw
        self._send(200, f"OK - {len(raw)}".encode(), "text/plain; charset=utf-8")

    def _response_url(self, name: str, raw: bytes) -> None:
        payload = json.loads(raw.decode("utf-8")) if raw else {}
        refused = message_error(payload)
        with self.fake._lock:
            if refused:
                # Not shown, so not among ``responses``; tests read why in ``refused``.
                self.fake.refused.append((name, refused))
            else:
                self.fake._responses.append((name, payload))
        if refused:
            self._send_json(400, refused)
            return
        self._send(200, b"ok", "text/html")

    def _send_json(self, status: int, body: JSONDict, extra_headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(body).encode("utf-8"), "application/json; charset=utf-8", extra_headers)

    def _send(self, status: int, body: bytes, content_type: str, extra_headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra_headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)
