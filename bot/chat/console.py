"""A terminal chat backend: the same messages and commands as Slack, as text.

``ConsoleChat`` prints what would be posted; ``ConsoleSession`` takes ``/gpu ...``,
``approve|snooze|exempt|deny|restore <id>`` and ``snooze-alert <id>`` lines and routes them
through the same handlers the Slack app uses.
"""

from __future__ import annotations

import itertools
import logging
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, TextIO

import emoji

from actions.model.times import utc_now
from bot.chat.alert_snooze import DEFAULT_SNOOZE_SECONDS
from bot.chat.alert_snooze import snooze as snooze_alert
from bot.chat.approvals import Approvals
from bot.chat.approve_all import request_ids as approve_all_ids
from bot.chat.blocks.alerts import ALERT_SNOOZE, APPROVE_ALL
from bot.chat.blocks.proposals import APPROVE, DENY, EXEMPT, RESTORE, SNOOZE
from bot.chat.commands import CommandContext, dispatch
from bot.chat.failures import explain
from bot.chat.outcomes import Outcome
from bot.runtime.chat import ChatError, Message, MessageRef
from bot.runtime.runtime import Runtime

log = logging.getLogger(__name__)

_VERBS = {
    "approve": APPROVE,
    "snooze": SNOOZE,
    "exempt": EXEMPT,
    "deny": DENY,
    "restore": RESTORE,
}


_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|([^>]+))?>")


def _mrkdwn(text: str) -> str:
    """Slack mrkdwn as a terminal shows it: mentions and links spelt out, emoji shortcodes as
    emoji, no bold stars and no code fences (the fenced lines stay, aligned as they were)."""
    if "<" in text:  # most lines mention no one: a sweep writes thousands of them
        text = re.sub(r"<@(\w+)>", r"@\1", text)
        text = re.sub(r"<!subteam\^(\w+)>", r"@group:\1", text)
        text = _LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})" if m.group(2) else m.group(1), text)
    if ":" in text:
        # Slack's shortcodes are GitHub's aliases; an unknown one (SQLite's ":memory:") stays as it is.
        text = emoji.emojize(text, language="alias")
    if "```" in text:
        text = re.sub(r"```\n?", "", text)
    # Escaped text (actions.text.plain) reads as it was written.
    return text.replace("*", "").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def to_text(message: Message) -> str:
    """Render Block Kit as plain text; buttons become the commands that press them."""
    if not message.blocks:
        return _mrkdwn(message.text)
    out = []
    for b in message.blocks:
        kind = b.get("type")
        if kind == "header":
            title = b["text"]["text"]
            out += [title, "=" * len(title)]
        elif kind == "section":
            if "text" in b:
                out.append(_mrkdwn(b["text"]["text"]))
            for f in b.get("fields", []):
                out.append("  " + _mrkdwn(f["text"]).replace("\n", ": ", 1))
        elif kind == "context":
            out += ["  " + _mrkdwn(e.get("text", "")) for e in b.get("elements", [])]
        elif kind == "actions":
            presses = [
                f"[{verb} {e['value']}]"
                for e in b.get("elements", [])
                for verb, aid in _VERBS.items()
                if e.get("action_id") == aid
            ]
            presses += [f"[snooze-alert {e['value']}]" for e in b.get("elements", []) if e.get("action_id") == ALERT_SNOOZE]
            presses += [f"[approve-all {e['value']}]" for e in b.get("elements", []) if e.get("action_id") == APPROVE_ALL]
            out.append("  " + " ".join(presses))
        elif kind == "image":
            out.append(f"  (image: {b.get('image_url', '')})")
    return "\n".join(out)


class ConsoleChat:
    """Prints messages to ``out``; channel ids are shown as ``#name``, and a message by the time
    ``clock`` gave when it was posted (Slack's ``ts`` means nothing at a terminal). Files (charts)
    are written into ``files_dir`` (default: a new temporary directory, made at the first upload)
    and their path printed. Never fails, except an upload that cannot be written raises
    ChatError."""

    def __init__(self, out: TextIO, files_dir: str | Path | None = None, clock: Callable[[], datetime] = utc_now):
        self.out = out
        self.clock = clock
        self._ts = itertools.count(1)
        self._posted: dict[str, datetime] = {}
        self._metadata: dict[MessageRef, dict[str, Any]] = {}
        self.files_dir = Path(files_dir) if files_dir is not None else None

    def post(self, channel: str, message: Message) -> MessageRef:
        ref = MessageRef(channel, f"{next(self._ts)}.000000")
        self._posted[ref.ts] = self.clock()
        if message.metadata:
            self._metadata[ref] = message.metadata
        self._show(f"── new message in {channel} at {self._posted[ref.ts]:%H:%M} UTC ──", message)
        return ref

    def update(self, ref: MessageRef, message: Message) -> None:
        posted = self._posted.get(ref.ts)
        which = f"of {posted:%H:%M} UTC" if posted else "posted earlier"
        self._show(f"── message {which} in {ref.channel} updated ──", message)

    def find(self, channel: str, event_type: str, payload: dict[str, Any], since: datetime) -> MessageRef | None:
        """The newest message this console posted to ``channel`` since ``since`` with that
        metadata (see :meth:`bot.runtime.chat.Chat.find`)."""
        for ref, meta in reversed(list(self._metadata.items())):
            posted = self._posted.get(ref.ts)
            if ref.channel != channel or meta.get("event_type") != event_type or (posted and posted < since):
                continue
            if payload.items() <= (meta.get("event_payload") or {}).items():
                return ref
        return None

    def ephemeral(self, channel: str, user: str, message: Message) -> None:
        self._show(f"── only @{user} sees this ──", message)

    def upload_file(self, channel: str, filename: str, content: bytes, title: str, initial_comment: str) -> None:
        """Write ``content`` to ``files_dir``/``filename`` (a ``-2``, ``-3``... suffix rather than
        overwriting an earlier file) and print the path with ``title`` and ``initial_comment``.
        Raises ChatError when the file cannot be written."""
        try:
            if self.files_dir is None:
                self.files_dir = Path(tempfile.mkdtemp(prefix="gpu-cost-bot-files-"))
            self.files_dir.mkdir(parents=True, exist_ok=True)
            path = _free_path(self.files_dir / Path(filename).name)
            path.write_bytes(content)
        except OSError as e:
            raise ChatError(f"upload of {filename} to {channel}: {e}") from e
        text = f"{_mrkdwn(initial_comment)}\n  (file: {title}: {path})" if initial_comment else f"  (file: {title}: {path})"
        print(f"\n── new file in {channel} ──\n{text}", file=self.out, flush=True)

    def _show(self, banner: str, message: Message) -> None:
        print(f"\n{banner}\n{to_text(message)}", file=self.out, flush=True)


def _free_path(path: Path) -> Path:
    n = 2
    candidate = path
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate


class ConsoleSession:
    """One person at the terminal, acting as Slack user ``user``; ``snooze-alert`` holds an
    alert's follow-ups for ``alert_snooze_seconds`` (``alerts.snooze_seconds``)."""

    def __init__(self, rt: Runtime, user: str, out: TextIO, alert_snooze_seconds: float = DEFAULT_SNOOZE_SECONDS):
        self.rt = rt
        self.user = user
        self.out = out
        self.alert_snooze_seconds = alert_snooze_seconds
        self.approvals = Approvals(rt)

    def handle(self, line: str) -> Outcome | None:
        """Run one line. Returns the press outcome for buttons, ``None`` for commands. Never
        raises: whatever fails is said to the user (and logged), and the session goes on."""
        try:
            return self._handle(line.strip())
        except Exception as e:  # noqa: BLE001 - one failed line must not end the console bot
            said = explain(e)
            if said.expected:
                log.warning("console line %r failed: %s", line, said.message)
            else:
                log.exception("console line %r failed", line)
            self._private(f"error: {said.message}")
            return None

    def _private(self, text: str) -> None:
        print(f"\n── only @{self.user} sees this ──\n{_mrkdwn(text)}", file=self.out, flush=True)

    def _handle(self, line: str) -> Outcome | None:
        if not line:
            return None
        if line.startswith("/gpu"):
            ctx = CommandContext(user=self.user, prices=self.rt.prices, rt=self.rt, spend_usd=self.rt.spend_function())
            reply = dispatch(line[len("/gpu"):], ctx)
            print(f"\n{to_text(reply.message)}", file=self.out, flush=True)
            return None
        verb, _, arg = line.partition(" ")
        if verb == "snooze-alert" and arg.strip().lstrip("#").isdigit():
            outcome = snooze_alert(self.rt, int(arg.strip().lstrip("#")), self.user, self.alert_snooze_seconds)
            self._private(outcome.message)
            return outcome
        if verb == "approve-all":
            try:
                ids = approve_all_ids(self.rt.store, arg)
            except ValueError as e:
                self._private(f"`approve-all` takes what its button shows (`alert:7` or `12,15`): {e}")
                return None
            outcome = self.approvals.approve_all(ids, self.user)
            self._private(outcome.message)
            return outcome
        if verb in _VERBS and arg.strip().lstrip("#").isdigit():
            outcome = self.approvals.press(_VERBS[verb], int(arg.strip().lstrip("#")), self.user)
            if not outcome.ok:
                self._private(outcome.message)
            return outcome
        print(
            "\nType `/gpu help`, `/gpu estimate 16 a100 1w`, or `approve 1` (also snooze, exempt, deny, restore).",
            file=self.out, flush=True,
        )
        return None

    def loop(self, read: Callable[[str], str] = input) -> None:
        """Read lines until EOF or ``quit``."""
        while True:
            try:
                line = read("gpu-cost-bot> ")
            except EOFError:
                return
            if line.strip() in ("quit", "exit"):
                return
            self.handle(line)
