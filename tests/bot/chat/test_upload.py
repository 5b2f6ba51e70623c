"""Sharing a file (a chart PNG): SlackChat through the real WebClient against FakeSlack, and the
console backend writing the file and printing its path."""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator

import pytest

from bot.chat.console import ConsoleChat
from bot.chat.slack.web import SlackChat, web_client
from bot.runtime.chat import ChatError
from tests.support.fakes.slack_api import FakeSlack


def _png(width: int = 32, height: int = 8) -> bytes:
    """A valid RGB PNG of a horizontal gradient, big enough to span several TCP reads."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(v for x in range(width) for v in (x * 8 % 256, 64, 255 - x * 8 % 256)) for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PNG = _png()


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server


def test_slack_upload_delivers_the_bytes_and_shares_them_in_the_channel(fake: FakeSlack) -> None:
    chat = SlackChat(web_client("xoxb-test", base_url=fake.base_url))
    chat.upload_file("C0RESEARCH", "gpu-cost-research.png", PNG, "GPU cost, research", "Weekly GPU cost")

    (file_id,) = fake.uploads
    assert fake.uploads[file_id] == PNG
    shared = fake.files[file_id]
    assert shared["channels"] == ["C0RESEARCH"]
    assert (shared["name"], shared["title"], shared["mimetype"]) == ("gpu-cost-research.png", "GPU cost, research", "image/png")
    assert shared["initial_comment"] == "Weekly GPU cost"
    assert fake.calls_to("files.getUploadURLExternal")[0]["length"] == str(len(PNG))


def test_slack_upload_failure_is_a_chat_error(fake: FakeSlack) -> None:
    chat = SlackChat(web_client("xoxb-test", base_url=fake.base_url))
    fake.fail_next("files.completeUploadExternal", error="not_in_channel")
    with pytest.raises(ChatError, match="files_upload_v2: not_in_channel"):
        chat.upload_file("C0RESEARCH", "gpu-cost.png", PNG, "GPU cost", "")
    assert fake.files == {}


def test_slack_upload_with_a_revoked_token_is_a_chat_error(fake: FakeSlack) -> None:
    fake.fail_next("files.getUploadURLExternal", error="invalid_auth")
    chat = SlackChat(web_client("xoxb-test", base_url=fake.base_url))
    with pytest.raises(ChatError, match="invalid_auth"):
        chat.upload_file("C0RESEARCH", "gpu-cost.png", PNG, "GPU cost", "")
    assert fake.uploads == {}


def test_console_writes_the_file_and_prints_its_path(tmp_path) -> None:
    out = io.StringIO()
    chat = ConsoleChat(out, files_dir=tmp_path / "charts")
    chat.upload_file("#research", "gpu-cost.png", PNG, "GPU cost, research", "Weekly *GPU* cost")
    chat.upload_file("#research", "gpu-cost.png", PNG, "again", "")

    first, second = tmp_path / "charts" / "gpu-cost.png", tmp_path / "charts" / "gpu-cost-2.png"
    assert first.read_bytes() == PNG and second.read_bytes() == PNG
    text = out.getvalue()
    assert f"(file: GPU cost, research: {first})" in text and f"(file: again: {second})" in text
    assert "Weekly GPU cost" in text and "new file in #research" in text


def test_console_defaults_to_a_temporary_directory() -> None:
    out = io.StringIO()
    chat = ConsoleChat(out)
    chat.upload_file("#ops", "../../escape.png", PNG, "chart", "")
    assert chat.files_dir is not None
    written = chat.files_dir / "escape.png"
    assert written.read_bytes() == PNG
    assert str(written) in out.getvalue()


def test_console_upload_that_cannot_be_written_is_a_chat_error(tmp_path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the directory should be")
    with pytest.raises(ChatError, match="upload of gpu-cost.png to #ops"):
        ConsoleChat(io.StringIO(), files_dir=blocker).upload_file("#ops", "gpu-cost.png", PNG, "chart", "")
