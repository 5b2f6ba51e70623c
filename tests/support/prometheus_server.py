"""A real Prometheus for tests: backfilled from OpenMetrics text with promtool, no scrape targets.

``running_prometheus`` starts one; the servers every test may share are fixtures in
tests/support/fixtures/prometheus.py.

When the ``prometheus``/``promtool`` binaries are missing the tests are skipped, unless
``TESTS_REQUIRE_PROMETHEUS=1`` (CI), where they fail.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from tests.support.needs import needs

REQUIRE_ENV = "TESTS_REQUIRE_PROMETHEUS"
STARTUP_DEADLINE_SECONDS = 120

# No scrape targets: the TSDB holds only what was backfilled, so query results are exact.
CONFIG = "global:\n  scrape_interval: 1m\n  evaluation_interval: 1m\nscrape_configs: []\n"


def _binaries() -> tuple[str, str]:
    found = {name: shutil.which(name) for name in ("prometheus", "promtool")}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        reason = (
            f"{' and '.join(missing)} not on PATH: install Prometheus (Debian package prometheus) "
            "to run the real-Prometheus tests"
        )
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_ENV}=1)", pytrace=False)
        pytest.skip(reason)
    return found["prometheus"], found["promtool"]  # type: ignore[return-value]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on at the time of the call."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"prometheus not ready after {STARTUP_DEADLINE_SECONDS} s:\n{log.read_text()[-4000:]}")


@contextmanager
def running_prometheus(openmetrics_text: str, tmp_path: Path) -> Iterator[str]:
    """Backfill ``openmetrics_text`` into a fresh TSDB under ``tmp_path``, serve it and yield the
    base URL (``http://127.0.0.1:<port>``); the server is terminated on exit.

    Skips the calling test when the binaries are missing (fails under
    TESTS_REQUIRE_PROMETHEUS=1). Raises subprocess.CalledProcessError when promtool
    rejects the text, RuntimeError when the server does not become ready. The calling test
    carries the ``prometheus`` marker (tests/support/needs.py).
    """
    needs("prometheus")
    prometheus, promtool = _binaries()
    tmp_path.mkdir(parents=True, exist_ok=True)
    series = tmp_path / "series.om"
    series.write_text(openmetrics_text)
    data = tmp_path / "data"
    backfill = subprocess.run(
        # One block per 800 h: promtool's default 2 h blocks make weeks of history take minutes.
        [promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=800h", str(series), str(data)],
        capture_output=True,
        text=True,
    )
    if backfill.returncode != 0:
        raise subprocess.CalledProcessError(
            backfill.returncode, backfill.args, backfill.stdout, backfill.stderr
        )
    with serving_tsdb(data, tmp_path) as url:
        yield url


@contextmanager
def serving_tsdb(data: Path, tmp_path: Path, *, extra_args: tuple[str, ...] = ()) -> Iterator[str]:
    """Serve the Prometheus data directory ``data`` (written by promtool) and yield its base URL;
    config, log and working directory go under ``tmp_path``. ``extra_args`` are more flags for
    ``prometheus``. Raises RuntimeError when the server does not become ready."""
    prometheus, _ = _binaries()
    config = tmp_path / "prometheus.yml"
    config.write_text(CONFIG)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "prometheus.log"
    with log.open("wb") as log_file:
        proc = subprocess.Popen(
            [
                prometheus,
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                # Backfilled blocks are old; retention counts from the newest block, keep them all.
                "--storage.tsdb.retention.time=100y",
                f"--web.listen-address=127.0.0.1:{port}",
                *extra_args,
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
        )
    try:
        _wait_ready(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


