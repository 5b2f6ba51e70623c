"""Block Kit's documented limits, checked the way Slack checks them before it accepts a message.

The fake Slack (:mod:`tests.support.fakes.slack_api`) answers ``{"ok": false, "error":
"invalid_blocks", "errors": [...]}`` for a message or view that breaks one, as Slack does, so a
renderer that outgrows Slack fails its test instead of failing in a customer's workspace.

Limits and where Slack documents them:

- https://docs.slack.dev/reference/block-kit/blocks : "up to 50 blocks in each message, and 100
  blocks in modals or Home tabs"; a ``block_id`` at most 255 characters.
- https://docs.slack.dev/reference/block-kit/blocks/section-block : ``text`` at most 3000
  characters; ``fields`` at most 10 items of at most 2000 characters each.
- https://docs.slack.dev/reference/block-kit/blocks/header-block : ``text`` (plain_text) at most
  150 characters.
- https://docs.slack.dev/reference/block-kit/blocks/context-block : at most 10 ``elements``.
- https://docs.slack.dev/reference/block-kit/blocks/actions-block : at most 25 ``elements``.
- https://docs.slack.dev/reference/block-kit/block-elements/button-element : ``text`` at most 75
  characters, ``action_id`` at most 255, ``value`` at most 2000, ``url`` at most 3000.
- https://docs.slack.dev/reference/methods/chat.postMessage : ``text`` over 40,000 characters
  is refused (``msg_too_long``).

(slack_sdk's ``Block.validate_json`` checks some of these but, in 3.48, not a button's ``value``
nor a field's length, so the fake states them itself.)
"""

from __future__ import annotations

from typing import Any

MESSAGE_BLOCKS = 50
VIEW_BLOCKS = 100  # modals and the App Home tab
TEXT_CHARS = 40_000
SECTION_TEXT = 3000
FIELDS = 10
FIELD_TEXT = 2000
HEADER_TEXT = 150
CONTEXT_ELEMENTS = 10
ACTIONS_ELEMENTS = 25
BLOCK_ID = 255
BUTTON_TEXT = 75
ACTION_ID = 255
BUTTON_VALUE = 2000
BUTTON_URL = 3000


def _text_of(obj: Any) -> str:
    return str(obj.get("text", "")) if isinstance(obj, dict) else ""


def _element_errors(where: str, e: Any) -> list[str]:
    if not isinstance(e, dict):
        return [f"{where}: not an object"]
    errors = []
    if len(str(e.get("action_id", ""))) > ACTION_ID:
        errors.append(f"{where}.action_id: must be at most {ACTION_ID} characters")
    if e.get("type") == "button":
        if len(_text_of(e.get("text"))) > BUTTON_TEXT:
            errors.append(f"{where}.text: must be at most {BUTTON_TEXT} characters")
        if len(str(e.get("value", ""))) > BUTTON_VALUE:
            errors.append(f"{where}.value: must be at most {BUTTON_VALUE} characters")
        if len(str(e.get("url", ""))) > BUTTON_URL:
            errors.append(f"{where}.url: must be at most {BUTTON_URL} characters")
    return errors


def _block_errors(i: int, b: Any) -> list[str]:
    where = f"[{i}]"
    if not isinstance(b, dict) or not b.get("type"):
        return [f"{where}: a block needs a type"]
    errors = []
    if len(str(b.get("block_id", ""))) > BLOCK_ID:
        errors.append(f"{where}.block_id: must be at most {BLOCK_ID} characters")
    kind = b["type"]
    if kind == "section":
        fields = b.get("fields") or []
        if "text" not in b and not fields:
            errors.append(f"{where}: a section needs text or fields")
        if len(_text_of(b.get("text"))) > SECTION_TEXT:
            errors.append(f"{where}.text: must be at most {SECTION_TEXT} characters")
        if len(fields) > FIELDS:
            errors.append(f"{where}.fields: must have at most {FIELDS} items")
        errors += [f"{where}.fields[{j}]: must be at most {FIELD_TEXT} characters"
                   for j, f in enumerate(fields) if len(_text_of(f)) > FIELD_TEXT]
        if b.get("accessory") is not None:
            errors += _element_errors(f"{where}.accessory", b["accessory"])
    elif kind == "header":
        if len(_text_of(b.get("text"))) > HEADER_TEXT:
            errors.append(f"{where}.text: must be at most {HEADER_TEXT} characters")
    elif kind == "context":
        elements = b.get("elements") or []
        if not elements or len(elements) > CONTEXT_ELEMENTS:
            errors.append(f"{where}.elements: must have 1 to {CONTEXT_ELEMENTS} items")
        # A context's text element is a text object, whose limit is the section's.
        errors += [f"{where}.elements[{j}]: must be at most {SECTION_TEXT} characters"
                   for j, e in enumerate(elements) if len(_text_of(e)) > SECTION_TEXT]
    elif kind == "actions":
        elements = b.get("elements") or []
        if not elements or len(elements) > ACTIONS_ELEMENTS:
            errors.append(f"{where}.elements: must have 1 to {ACTIONS_ELEMENTS} items")
        for j, e in enumerate(elements):
            errors += _element_errors(f"{where}.elements[{j}]", e)
    return errors


def blocks_errors(blocks: Any, max_blocks: int = MESSAGE_BLOCKS) -> list[str]:
    """What breaks Block Kit's limits in ``blocks`` (a list of block dicts as sent), one line per
    problem in Slack's ``[index].path: why`` style; empty when Slack would accept them.
    ``max_blocks`` is 50 for a message, :data:`VIEW_BLOCKS` for a modal or Home tab."""
    if blocks is None:
        return []
    if not isinstance(blocks, list):
        return ["blocks: must be an array"]
    errors = [f"blocks: must have at most {max_blocks} items, got {len(blocks)}"] if len(blocks) > max_blocks else []
    for i, b in enumerate(blocks):
        errors += _block_errors(i, b)
    return errors


def message_error(fields: dict[str, Any]) -> dict[str, Any] | None:
    """Slack's refusal of a message (``{"text", "blocks", ...}`` as decoded), or None when it
    is within the limits: ``invalid_blocks`` with ``errors``, or ``msg_too_long`` for text over
    40,000 characters."""
    if len(str(fields.get("text") or "")) > TEXT_CHARS:
        return {"ok": False, "error": "msg_too_long"}
    errors = blocks_errors(fields.get("blocks"))
    if errors:
        return {"ok": False, "error": "invalid_blocks", "errors": errors}
    return None
