"""A command's reply as the text a person reads."""

from __future__ import annotations


def text_of(reply) -> str:
    """The reply's fallback text and every block's and element's text, one per line."""
    parts = [reply.message.text]
    for b in reply.message.blocks:
        if "text" in b:
            parts.append(b["text"]["text"])
        parts += [e.get("text", "") for e in b.get("elements", [])]
    return "\n".join(parts)
