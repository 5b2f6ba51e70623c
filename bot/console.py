"""A terminal chat backend: the same messages and commands as Slack, as text.

``ConsoleChat`` prints what would be posted; ``ConsoleSession`` takes ``/gpu ...`` and
``approve|snooze|exempt|deny|restore <id>`` lines and routes them through the same handlers the
Slack app uses.
"""

from __future__ import annotations

import itertools
import re
import tempfile
from pathlib import Path
from typing import Callable, TextIO

from bot import alerting, blocks
from bot.alert_blocks import ALERT_SNOOZE
from bot.approvals import Approvals, Outcome
from bot.chat import ChatError, Message, MessageRef
from bot.commands import CommandContext, dispatch
from bot.reports import spend_function
from bot.runtime import Runtime
from bot.settings import AlertSettings

_VERBS = {
    "approve": blocks.APPROVE,
    "snooze": blocks.SNOOZE,
    "exempt": blocks.EXEMPT,
    "deny": blocks.DENY,
    "restore": blocks.RESTORE,
}


def _mrkdwn(text: str) -> str:
    text = re.sub(r"<@(\w+)>", r"@\1", text)
    text = re.sub(r"<!subteam\^(\w+)>", r"@group:\1", text)
    return text.replace("*", "")


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
            out.append("  " + " ".join(presses))
        elif kind == "image":
            out.append(f"  (image: {b.get('image_url', '')})")
    return "\n".join(out)


class ConsoleChat:
    """Prints messages to ``out``; channel ids are shown as ``#name``. Files (charts) are written
    into ``files_dir`` (default: a new temporary directory, made at the first upload) and their
    path printed. Never fails, except an upload that cannot be written raises ChatError."""

    def __init__(self, out: TextIO, files_dir: str | Path | None = None):
        self.out = out
        self._ts = itertools.count(1)
        self.files_dir = Path(files_dir) if files_dir is not None else None

    def post(self, channel: str, message: Message) -> MessageRef:
        ref = MessageRef(channel, f"{next(self._ts)}.000000")
        self._show(f"── new message in {channel} ──", message)
        return ref

    def update(self, ref: MessageRef, message: Message) -> None:
        self._show(f"── message {ref.ts} in {ref.channel} updated ──", message)

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
    """One person at the terminal, acting as Slack user ``user``."""

    def __init__(self, rt: Runtime, user: str, out: TextIO):
        self.rt = rt
        self.user = user
        self.out = out
        self.approvals = Approvals(rt)

    def handle(self, line: str) -> Outcome | None:
        """Run one line. Returns the press outcome for buttons, ``None`` for commands."""
        line = line.strip()
        if not line:
            return None
        if line.startswith("/gpu"):
            reply = dispatch(line[len("/gpu"):], CommandContext(user=self.user, prices=self.rt.prices, rt=self.rt, spend_usd=spend_function(self.rt)))
            print(f"\n{to_text(reply.message)}", file=self.out, flush=True)
            return None
        verb, _, arg = line.partition(" ")
        if verb == "snooze-alert" and arg.strip().lstrip("#").isdigit():
            outcome = alerting.snooze(self.rt, int(arg.strip().lstrip("#")), self.user, AlertSettings().snooze_seconds)
            print(f"\n── only @{self.user} sees this ──\n{_mrkdwn(outcome.message)}", file=self.out, flush=True)
            return outcome
        if verb in _VERBS and arg.strip().lstrip("#").isdigit():
            outcome = self.approvals.press(_VERBS[verb], int(arg.strip().lstrip("#")), self.user)
            if not outcome.ok:
                print(f"\n── only @{self.user} sees this ──\n{_mrkdwn(outcome.message)}", file=self.out, flush=True)
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
