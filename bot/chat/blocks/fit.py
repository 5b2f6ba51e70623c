"""Rows fitted to Slack's limits: never cut mid-row or inside an open code block, totals kept,
and what does not fit counted in a last "... and N more" line. Pure.

Slack takes at most 50 blocks in a message and 3000 characters in a section's text
(https://docs.slack.dev/reference/block-kit/blocks); a long answer is therefore packed into as many
sections as it may use, and rows beyond them are counted, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

SECTION_CHARS = 3000  # Slack's limit on a section's text and on a context element's
MESSAGE_BLOCKS = 50  # Slack's limit on blocks in one message
MORE_HINT = "see `gpu-cost-bot report --json`"
_FENCE = "```"


def clip(text: str, limit: int) -> str:
    """``text`` whole when at most ``limit`` characters, else its start and "…" (``limit`` in all)."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def clip_middle(text: str, limit: int) -> str:
    """``text`` whole when at most ``limit`` characters, else its start, "…" and its end, so a
    long Kubernetes name keeps the suffix that tells it from its siblings."""
    if len(text) <= limit:
        return text
    if limit < 3:
        return text[:limit]
    head = (limit - 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


def more_line(hidden: int, noun: str = "more", hint: str | None = MORE_HINT) -> str:
    """``"… and 17 more (see `gpu-cost-bot report --json`)"``; ``noun`` names what is hidden."""
    return f"… and {hidden} {noun}" + (f" ({hint})" if hint else "")


def _pack(rows: Sequence[str], title: str, repeat: str, tail: Sequence[str], code: bool, more: str,
          limit: int) -> list[str]:
    """The section texts holding ``rows`` then ``tail`` (in the last), ``more`` after them."""
    def frame(body: list[str], first: bool, last: bool) -> str:
        inner = ([repeat] if repeat else []) + body
        text = "\n".join(inner)
        if code:
            text = f"{_FENCE}\n{text}\n{_FENCE}" if inner else ""
        parts = ([title] if first and title else []) + ([text] if text else []) + ([more] if last and more else [])
        return "\n".join(parts)

    sections: list[str] = []
    current: list[str] = []
    for row in rows:
        if current and len(frame(current + [row], not sections, False)) > limit:
            sections.append(frame(current, not sections, False))
            current = []
        current.append(row)
    # The totals stay with the last rows; they move to a section of their own when they do not fit.
    if current and len(frame(current + list(tail), not sections, True)) > limit:
        sections.append(frame(current, not sections, False))
        current = []
    sections.append(frame(current + list(tail), not sections, True))
    return sections


def fit_rows(
    rows: Sequence[str], *, max_sections: int, title: str = "", repeat: str = "", tail: Sequence[str] = (),
    code: bool = False, noun: str = "more", hint: str | None = MORE_HINT, limit: int = SECTION_CHARS,
) -> list[str]:
    """``rows`` packed into at most ``max_sections`` texts of at most ``limit`` characters each
    (Slack's section limit by default). ``title`` opens the first; ``repeat`` (a table's header
    row) opens every one; ``code`` puts the rows of each in a code block of its own, so none is
    left open; ``tail`` (totals) always ends the last. When not every row fits, the first ones
    are kept and the last text ends with :func:`more_line` (``noun``, ``hint``). A row longer
    than a section is clipped with "…". Raises ValueError when ``max_sections`` < 1."""
    if max_sections < 1:
        raise ValueError(f"max_sections must be at least 1, got {max_sections}")
    # A row alone must fit a section; the totals move to a section of their own when they do not
    # fit beside it (_pack), so they take no room from the rows.
    room = limit - len(title) - len(repeat) - 2 * len(_FENCE) - 8 - 80
    rows = [clip(r, max(room, 40)) for r in rows]
    tail = [clip(t, room) for t in tail]
    packed = _pack(rows, title, repeat, tail, code, "", limit)
    if len(packed) <= max_sections:
        return packed
    # The most rows that fit with the "more" line: fitting is monotone in the number of rows.
    low, high = 0, len(rows)
    while low < high:
        mid = (low + high + 1) // 2
        more = more_line(len(rows) - mid, noun, hint)
        if len(_pack(rows[:mid], title, repeat, tail, code, more, limit)) <= max_sections:
            low = mid
        else:
            high = mid - 1
    return _pack(rows[:low], title, repeat, tail, code, more_line(len(rows) - low, noun, hint), limit)


def fit_blocks(head: Sequence[dict], body: Sequence[dict], tail: Sequence[dict], more: Callable[[int], dict],
               max_blocks: int = MESSAGE_BLOCKS) -> list[dict]:
    """``head + body + tail`` within ``max_blocks``: the ``head`` and ``tail`` blocks are kept,
    and when the ``body`` does not fit its first blocks are kept and ``more(hidden)`` (a block
    saying how many were left out) takes the place of the rest."""
    room = max_blocks - len(head) - len(tail)
    if len(body) <= room:
        return [*head, *body, *tail]
    shown = max(room - 1, 0)
    return [*head, *body[:shown], more(len(body) - shown), *tail]
