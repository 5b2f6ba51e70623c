"""A store of an older version, whose requests did not name their cluster, upgraded: on real
SQLite and PostgreSQL, from the schema of revision 0009 with rows as that version wrote them, through
``gpu-cost-bot migrate`` and a bot's start (bot/runtime/identity.py)."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import sqlalchemy as sa
import yaml
from alembic import command
from typer.testing import CliRunner

from actions.store.database import Store, alembic_config
from actions.store.facts import HOME_CLUSTER
from actions.store.requests import ActionRequest
from actions.store.schema import VERSION_TABLE
from bot.chat.console import ConsoleChat
from bot.cli.main import app
from bot.runtime.identity import settle_home_cluster
from bot.settings import load_settings
from bot.wiring.runtime import build_runtime
from tests.support.paths import DEMO

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
KEY = "idle-notebook/ml-research/llm-explore"
runner = CliRunner()


def _old_store(url: str) -> None:
    """The schema at revision 0009 (the version before requests named every cluster), holding
    what that version wrote: requests of its first cluster with an empty ``cluster`` (one
    proposed, one done, one expired), one of a second cluster named ``west``."""
    store = Store(url)
    with store.engine.begin() as connection:
        config = alembic_config(url)
        config.attributes["connection"] = connection
        command.upgrade(config, "0009_activity_seen")
    table = sa.Table("action_request", sa.MetaData(), autoload_with=store.engine)
    base = dict(
        team="research", kind="idle-notebook", namespace="ml-research", name="llm-explore", verb="stop-notebook",
        target_api_version="kubeflow.org/v1", target_kind="Notebook", target_name="llm-explore",
        finding_json=json.dumps({"key": KEY}), usd_per_hour=6.88, gpus=1.0, dry_run=False,
        created_at=T0, updated_at=T0, expires_at=T0 + timedelta(days=1), version=1, sync_failures=0,
    )
    rows = [
        dict(base, key=KEY, state="proposed"),  # no cluster: the column's server default, ""
        dict(base, key="idle-notebook/ml-research/other", state="done", undo_json="{}"),
        dict(base, key="idle-notebook/ml-research/gone", state="expired"),
        dict(base, key=f"west:{KEY}", state="proposed", cluster="west"),
    ]
    with store.engine.begin() as connection:
        for row in rows:
            connection.execute(table.insert().values(**row))
    store.close()


def _config(tmp_path: Path, url: str, clusters: list[str] | None = None, **more) -> Path:
    cfg: dict = {"database_url": url, **more}
    if clusters:
        cfg["clusters"] = [{"name": n, "kubernetes": {"context": n}} for n in clusters]
    path = tmp_path / f"bot-{'-'.join(clusters or ['one'])}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _clusters(store: Store) -> dict[str, str]:
    return {r.key: r.cluster for r in store.list_requests()}


def test_an_old_stores_unnamed_requests_are_named_after_the_first_cluster_at_the_upgrade_once(database_url, tmp_path):
    _old_store(database_url)
    migrated = runner.invoke(app, ["migrate", "--config", str(_config(tmp_path, database_url, ["east", "west"]))])
    assert migrated.exit_code == 0, migrated.output
    with Store(database_url) as store:
        with store.engine.connect() as connection:
            assert connection.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).all() == [("0014_advice_hours",)]
        # Made in the first cluster, as the older version read an empty name: each now says so.
        assert _clusters(store) == {
            KEY: "east", "idle-notebook/ml-research/other": "east", "idle-notebook/ml-research/gone": "east",
            f"west:{KEY}": "west",
        }
        fact = store.fact(HOME_CLUSTER)
        assert (fact.value, fact.recorded_at.tzinfo is not None) == ("east", True)
        named = [r for r in store.list_requests() if r.key != f"west:{KEY}"]
        for r in named:
            [event] = [e for e in store.events(r.id) if e.event == "cluster-named"]
            assert event.actor == "system" and event.detail()["cluster"] == "east"
            assert r.version == 1  # the same request: its message has nothing new to show
        # The open request still holds its key, under its cluster's keys.
        assert store.open_for_key(KEY).cluster == "east"

        # Recorded once: the config reordered afterwards names nothing anew and moves nothing.
        assert settle_home_cluster(store, ["west", "east"], T0 + timedelta(days=1)) == "east"
        assert store.fact(HOME_CLUSTER).recorded_at == fact.recorded_at
        assert _clusters(store)[KEY] == "east"
        # A row an older replica wrote after the upgrade (a rolling update) is named the same way.
        with store.engine.begin() as connection:
            t = ActionRequest.__table__
            connection.execute(sa.update(t).where(t.c.key == "idle-notebook/ml-research/gone").values(cluster=""))
        assert settle_home_cluster(store, ["west", "east"], T0 + timedelta(days=2)) == "east"
        assert _clusters(store)["idle-notebook/ml-research/gone"] == "east"


def test_a_bot_of_one_cluster_names_its_old_requests_after_its_cluster_name_when_it_starts(database_url, tmp_path):
    _old_store(database_url)
    config = _config(tmp_path, database_url, cluster_name="gpu-main", dry_run=True)
    rt = build_runtime(load_settings(config), chat=ConsoleChat(io.StringIO()), cluster_state=DEMO / "cluster.json",
                       telemetry_file=DEMO / "telemetry.json", clock=lambda: T0)
    assert rt.home() == "gpu-main"
    clusters = _clusters(rt.store)
    assert clusters[KEY] == clusters["idle-notebook/ml-research/other"] == "gpu-main"
    assert clusters[f"west:{KEY}"] == "west"  # named before: left as it is
    assert rt.writer_for("gpu-main") is rt.writer
    rt.store.close()
