"""Advice on a real Prometheus holding 30 days of DCGM series built from the real H100 trace
(tests/support/advice_fleet.py says how each consumer's series were made). Every dollar figure is
worked by hand in the test from the bundled catalog's p5.48xlarge prices: on-demand $55.04/h
for 8 H100s (AWS Price List, 2026-07-20) = $6.88 per GPU-hour; spot $19.4933/h (AWS spot price
feed, 2026-08-10) = $2.4367 per GPU-hour to 4 decimals."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from actions.advice.round import AdviceResult, gather_advice
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.kube.dump import snapshot_from_kubectl_dump
from actions.sources.prometheus.api import PrometheusApi
from actions.sources.prometheus.history import AdviceHistorySource
from tests.support.advice_fleet import ADVISE_AT, POLICY, TEAMS, cluster_json, openmetrics
from tests.support.prometheus_server import running_prometheus
from tests.support.replies import text_of

pytestmark = pytest.mark.prometheus

@pytest.fixture(scope="module")
def advice_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_prometheus(openmetrics(), tmp_path_factory.mktemp("advice-prometheus")) as url:
        yield url


@pytest.fixture(scope="module")
def result(advice_prometheus: str) -> AdviceResult:
    snapshot = snapshot_from_kubectl_dump(cluster_json(), ADVISE_AT)
    source = AdviceHistorySource(PrometheusApi(advice_prometheus))
    return gather_advice(snapshot, source, PriceBook(PriceCatalog.bundled()), Policy(), POLICY, TEAMS, ADVISE_AT)


def _one(result: AdviceResult, kind: str, subject_part: str):
    found = [r for r in result.recommendations if r.kind == kind and subject_part in r.subject]
    assert len(found) == 1, [(r.kind, r.subject) for r in result.recommendations]
    return found[0]


def _usage(result: AdviceResult, name: str):
    return next(u for u in result.usages if u.name == name)


def test_an_h100_notebook_at_6_gib_and_9_percent_is_advised_mig_1g_10gb(result):
    u = _usage(result, "explore")
    assert u.peak_fb_mib == 6144 and u.peak_engine_pct == 9.0
    assert u.gpu_hours == pytest.approx(168.0)  # 2,016 five-minute steps of the week
    r = _one(result, "mig", "Notebook research/explore")
    assert "MIG 1g.10gb" in r.summary and "nvidia.com/mig-1g.10gb: 1" in r.change
    # By hand: 168 GPU-hours in 168 h -> 730 GPU-hours a month x $6.88 = $5,022.40; a 1g slice is
    # 1/7 of the GPU: $5,022.40 / 7 = $717.49; saved $5,022.40 - $717.49 = $4,304.91.
    assert r.current_usd_per_month == 5022.40
    assert r.advised_usd_per_month == 717.49
    assert r.saving_usd_per_month == 4304.91
    evidence = dict(r.evidence)
    assert evidence["peak framebuffer used (DCGM_FI_DEV_FB_USED)"] == "6.0 GiB (6,144 MiB)"
    assert evidence["peak DCGM_FI_DEV_GPU_UTIL"] == "9.0%"
    assert "bundled catalog" in r.prices[0].source and r.prices[0].as_of == "2026-07-20"


def test_an_8_gpu_job_with_2_busy_at_once_is_advised_2_gpus(result):
    u = _usage(result, "sweep")
    assert u.whole_gpus == 8 and u.busy_gpus == 2
    r = _one(result, "fewer-gpus", "Job research/sweep")
    assert "2 GPUs instead of 8" in r.summary and "nvidia.com/gpu: 2" in r.change
    # By hand: 8 GPUs x 730 h x $6.88 = $40,179.20; 2 of 8 of that = $10,044.80; saved $30,134.40.
    assert (r.current_usd_per_month, r.advised_usd_per_month, r.saving_usd_per_month) == (40179.20, 10044.80, 30134.40)
    # backoffLimit 0: a failed pod is not replaced, so no spot advice.
    assert not [x for x in result.recommendations if x.kind == "spot" and "sweep" in x.subject]


def test_an_on_demand_kueue_training_job_is_advised_spot_at_the_interruption_adjusted_price(result):
    r = _one(result, "spot", "Job research/pretrain")
    assert "Workload job-pretrain-3c1f2" in r.subject
    # By hand: spot $19.4933 / 8 = $2.4367 per GPU-hour; one interruption per 4 h with 30-minute
    # checkpoints redoes 15 min each: x 4 / 3.75 = $2.5991. 8 GPUs x 730 h = 5,840 GPU-hours:
    # on-demand $40,179.20, spot $15,178.74, saved $25,000.46.
    assert "$2.5991 instead of $6.88" in r.summary
    assert (r.current_usd_per_month, r.advised_usd_per_month, r.saving_usd_per_month) == (40179.20, 15178.74, 25000.46)
    assert dict(r.evidence)["restarts cleanly"] == "Kueue Workload job-pretrain-3c1f2: requeued when evicted"
    assert [p.capacity_type.value for p in r.prices] == ["on-demand", "spot"]
    # All 8 of its GPUs are busy at once: no fewer GPUs.
    assert _usage(result, "pretrain").busy_gpus == 8
    # Two pods of 8 busy GPUs each: counted together, server-side, as one consumer.
    serve = _usage(result, "llm-serve")
    assert (len(serve.pods), serve.whole_gpus, serve.busy_gpus) == (2, 16, 16)
    assert not [x for x in result.recommendations if x.kind == "fewer-gpus" and "pretrain" in x.subject]


def test_serving_and_notebooks_are_never_advised_spot_even_when_annotated_interruptible(result):
    for name in ("explore", "chat-api", "llm-serve"):
        assert _usage(result, name).restarts_cleanly is not None  # the annotation is there
    spot = [r.subject for r in result.recommendations if r.kind == "spot"]
    assert spot == ["Job research/pretrain, Workload job-pretrain-3c1f2"]


def test_light_serving_at_0_percent_utilization_is_not_right_sized(result):
    # GPU_UTIL reads 0% under light serving at 190-250 W (the real trace): activity alone would
    # call one GPU too many; the mean power above the idle ceiling says it works.
    chat = _usage(result, "chat-api")
    assert chat.peak_engine_pct == 0 and chat.mean_power_w > 150
    # Read through the exported_pod label convention like the others.
    assert (chat.gpu_hours, chat.busy_gpus, chat.peak_fb_mib) == (pytest.approx(168.0), 0, 21972)
    assert not [r for r in result.recommendations if "chat-api" in r.subject]


def test_a_team_busy_every_hour_is_advised_a_commitment_for_16_and_a_swinging_one_not(result):
    steady = next(b for b in result.baselines if b.team == "steady")
    assert (steady.baseline_gpus, steady.hours_in_use, steady.hours) == (16, 720, 720)
    r = _one(result, "commitment", "team steady")
    assert "commit to 16 H100 GPUs" in r.summary
    # By hand: 16 GPUs x 730 h = 11,680 GPU-hours; at $6.88 = $80,358.40, at $4.128 = $48,215.04;
    # saved $32,143.36.
    assert (r.current_usd_per_month, r.advised_usd_per_month, r.saving_usd_per_month) == (80358.40, 48215.04, 32143.36)
    assert "test figure" in r.prices[1].source and r.prices[1].as_of == "2026-11-23"
    swing = next(b for b in result.baselines if b.team == "swing")
    # 09:00-19:00 on weekdays: 10 of 24 hours on 5 of 7 days, well under 90% of the hours.
    assert swing.peak_gpus == 16 and swing.hours_in_use < 0.5 * swing.hours
    assert not [x for x in result.recommendations if x.kind == "commitment" and "swing" in x.subject]
    # research's GPUs ran one week of the 30 days: no commitment either.
    assert [x.subject for x in result.recommendations if x.kind == "commitment"] == ["team steady, H100"]


def test_reserved_gpus_idle_half_the_time_are_advice_for_the_admins_and_get_no_consumer_advice(result):
    r = _one(result, "reserved-idle", "reserved H100")
    assert r.team == "cluster-admins" and "8 reserved H100 GPUs idle 50%" in r.summary
    # By hand: 8 GPUs x 730 h x $4.128 (the committed rate) = $24,107.52 paid a month, half idle:
    # $12,053.76 paid for nothing.
    assert (r.current_usd_per_month, r.saving_usd_per_month) == (24107.52, 12053.76)
    assert dict(r.evidence)["reserved H100 GPUs"] == "8 on 1 node(s)"
    # The pod on the reserved node is paid for used or not: no right-sizing, spot or commitment.
    assert _usage(result, "embed-0").capacity.value == "reserved"
    assert not [x for x in result.recommendations if "platform" in x.subject or "embed" in x.subject]


def test_advice_is_sorted_by_saving_and_the_total_counts_each_consumer_once(result):
    savings = [r.saving_usd_per_month for r in result.recommendations]
    assert savings == sorted(savings, reverse=True)
    # notebook MIG 4,304.91 + sweep 30,134.40 + pretrain spot 25,000.46 + steady commitment 32,143.36
    # + idle reservation 12,053.76
    assert result.could_save_usd_per_month == pytest.approx(4304.91 + 30134.40 + 25000.46 + 32143.36 + 12053.76)


# --- where people see it: the CLI and /gpu advise ---------------------------------------------


CONFIG = """\
teams:
  - {name: research, namespaces: [research]}
  - {name: serving, namespaces: [serving]}
  - {name: steady, namespaces: [steady]}
  - {name: swing, namespaces: [swing]}
advice:
  commitment_rates:
    H100: {usd_per_gpu_hour: 4.128, term: "1 year, no upfront", source: "test figure: 40% under p5.48xlarge on-demand", as_of: "2026-11-23"}
"""


@pytest.fixture()
def cli_files(tmp_path):
    config, dump = tmp_path / "bot.yaml", tmp_path / "cluster.json"
    config.write_text(CONFIG)
    dump.write_bytes(cluster_json())
    return config, dump


def test_the_cli_prints_the_advice_as_json_sorted_by_saving(advice_prometheus, cli_files):
    from typer.testing import CliRunner

    from bot.cli.main import app

    config, dump = cli_files
    out = CliRunner().invoke(app, ["advise", "--json", "--config", str(config), "--prometheus-url", advice_prometheus,
                                   "--cluster-state", str(dump), "--at", "2026-11-30T00:30:00Z"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert [(a["kind"], a["saving_usd_per_month"]) for a in data["advice"]] == [
        ("commitment", 32143.36), ("fewer-gpus", 30134.40), ("spot", 25000.46), ("reserved-idle", 12053.76),
        ("mig", 4304.91)]
    assert data["could_save_usd_per_month"] == 103636.89
    mig = data["advice"][4]
    assert mig["evidence"]["peak DCGM_FI_DEV_GPU_UTIL"] == "9.0%"
    assert mig["prices"][0]["as_of"] == "2026-07-20" and len(mig["fingerprint"]) == 16


def test_the_cli_for_one_team_prints_text_and_refuses_a_bad_time(advice_prometheus, cli_files):
    from typer.testing import CliRunner

    from bot.cli.main import app

    config, dump = cli_files
    base = ["advise", "--config", str(config), "--prometheus-url", advice_prometheus, "--cluster-state", str(dump)]
    out = CliRunner().invoke(app, [*base, "--team", "steady", "--at", "2026-11-30T00:30:00Z"])
    assert out.exit_code == 0, out.output
    assert "could save $32,143.36/month" in out.stdout and "commit to 16 H100 GPUs for team steady" in out.stdout
    assert "research" not in out.stdout
    bad = CliRunner().invoke(app, [*base, "--at", "yesterday"])
    assert bad.exit_code == 2 and "2026-11-30T00:30:00Z" in bad.output
    unknown = CliRunner().invoke(app, [*base, "--team", "nobody", "--at", "2026-11-30T00:30:00Z"])
    assert unknown.exit_code == 2 and "teams: platform, research, serving, steady, swing" in unknown.output


def _runtime(url: str):
    from actions.advice.round import AdviceSetup
    from actions.executors.in_memory import InMemoryCluster
    from bot.runtime.runtime import Runtime

    return Runtime(
        store=None, chat=None, telemetry=None, writer=None,  # type: ignore[arg-type] - advice reads only
        cluster=InMemoryCluster.from_kubectl_dump(cluster_json()), prices=PriceBook(PriceCatalog.bundled()),
        teams=TEAMS, policy=Policy(), dry_run=True, clock=lambda: ADVISE_AT,
        advice_setup=AdviceSetup(AdviceHistorySource(PrometheusApi(url)), POLICY),
    )


def test_slash_gpu_advise_for_a_team_shows_each_advice_with_evidence_and_prices(advice_prometheus):
    from bot.chat.commands import CommandContext, dispatch

    rt = _runtime(advice_prometheus)
    text = text_of(dispatch("advise research", CommandContext(user="U1", prices=rt.prices, rt=rt)))
    assert "GPU advice for team research: could save $59,439.77/month" in text  # 30,134.40 + 25,000.46 + 4,304.91
    assert text.index("Fewer GPUs") < text.index("Spot") < text.index("MIG profile")
    assert "MIG 1g.10gb" in text and "peak framebuffer used (DCGM_FI_DEV_FB_USED) 6.0 GiB (6,144 MiB)" in text
    # Each price cites its source by number; each source is written once, at the end.
    spot = re.search(r"\[(\d+)\] bundled catalog: AWS EC2 spot price[^|]*as of 2026-08-10", text)
    assert spot and f"spot [{spot.group(1)}]" in text
    assert text.count("bundled catalog: AWS EC2 spot price") == 1
    assert "steady" not in text
    # Typed as people ask: the filler around the team name is read past.
    asked = text_of(dispatch("advise for team research please?", CommandContext(user="U1", prices=rt.prices, rt=rt)))
    assert "GPU advice for team research: could save $59,439.77/month" in asked
    wrong = text_of(dispatch("advise research serving", CommandContext(user="U1", prices=rt.prices, rt=rt)))
    assert "takes at most one team name; I read 'research', 'serving'" in wrong and "/gpu advise research" in wrong
    unknown = text_of(dispatch("advise reserch", CommandContext(user="U1", prices=rt.prices, rt=rt)))
    assert "I know no team 'reserch'" in unknown and "research" in unknown and "/gpu advise research" in unknown


def test_slash_gpu_advise_marks_advice_a_team_snoozed_or_exempted_and_still_shows_it(advice_prometheus, store):
    """What Snooze and Exempt on a right-sizing request leave in the store (state and ``until``,
    as ``Approvals.snooze``/``exempt`` write them): the answer still lists that advice, marked,
    because the posts leave it out."""
    from dataclasses import replace
    from datetime import timedelta

    from actions.advice.request import RIGHT_SIZE
    from bot.chat.commands import CommandContext, dispatch

    rt = replace(_runtime(advice_prometheus), store=store)
    [mig] = [r for r in rt.advice(ADVISE_AT, team="research").recommendations if r.kind == "mig"]
    req = store.create_request(
        key=mig.key, team="research", kind=RIGHT_SIZE, namespace="ml-research", name="llm-explore",
        verb=mig.action.verb, target=mig.action.target, finding_json="{}", usd_per_hour=1.0, gpus=1.0, dry_run=True,
        now=ADVISE_AT, ttl_seconds=86400, cluster="default",
    )
    marked = "not posted to the channel until that ends"
    assert marked not in text_of(dispatch("advise research", CommandContext(user="U1", prices=rt.prices, rt=rt)))
    store.transition(req.id, from_states=["proposed"], to_state="snoozed", now=ADVISE_AT, actor="U1",
                     event="snoozed", until=ADVISE_AT + timedelta(hours=4))
    text = text_of(dispatch("advise research", CommandContext(user="U1", prices=rt.prices, rt=rt)))
    assert "could save $59,439.77/month" in text  # still every piece of advice, the silenced one too
    assert text.count(marked) == 1 and text.index(marked) > text.index("MIG 1g.10gb")
    assert marked not in text[:text.index("MIG profile")]  # fewer GPUs and spot are not silenced


def test_the_weekly_digest_gains_a_could_save_section_with_the_top_three_and_the_total(advice_prometheus, store):
    import io

    from actions.cost.report import TeamReport
    from bot.chat.console import ConsoleChat
    from bot.jobs.digests import DigestsJob
    from bot.settings.model import Settings

    # The digest fires at ADVISE_AT (Monday 00:30 UTC) so the week of advice ends with the data.
    settings = Settings.model_validate({
        "teams": [{"name": "research", "namespaces": ["research"], "channel": "C0RESEARCH"}],
        "costs": {"digest_cron": "30 0 * * mon"},
    })
    rt = _runtime(advice_prometheus)
    out = io.StringIO()

    def reports(start, end):
        from actions.cost.report import CostReport

        return CostReport(start, end, {"research": TeamReport("research", start, end, 0.0, 0.0, 0.0, 0.0, None, None)})

    job = DigestsJob(store, ConsoleChat(out, clock=lambda: ADVISE_AT), settings, reports, "test", clock=lambda: ADVISE_AT,
                     advice=rt.advice)
    results = job.run(ADVISE_AT)
    assert [r.outcome for r in results] == ["sent"]
    text = out.getvalue()
    # research: fewer GPUs 30,134.40 + spot 25,000.46 + MIG 4,304.91 = 59,439.77, its top three.
    assert "Could save $59,439.77/month" in text
    assert "give Job research/sweep 2 GPUs instead of 8: saves $30,134.40/month" in text
    assert "saves $25,000.46/month" in text and "saves $4,304.91/month" in text
    assert "steady" not in text


def test_one_advice_round_serves_every_team_s_digest_each_with_only_its_own(advice_prometheus, store):
    import io

    from actions.cost.report import CostReport, TeamReport
    from bot.chat.console import ConsoleChat
    from bot.jobs.digests import DigestsJob
    from bot.settings.model import Settings

    settings = Settings.model_validate({
        "teams": [{"name": t, "namespaces": [t], "channel": f"C0{t.upper()}"} for t in ("research", "serving", "steady")],
        "costs": {"digest_cron": "30 0 * * mon"},
    })
    rt = _runtime(advice_prometheus)
    asked = []

    def advice(at, team):
        asked.append((at, team))
        return rt.advice(at, team)

    def reports(start, end):
        return CostReport(start, end, {t: TeamReport(t, start, end, 0.0, 0.0, 0.0, 0.0, None, None)
                                       for t in ("research", "serving", "steady")})

    out = io.StringIO()
    job = DigestsJob(store, ConsoleChat(out, clock=lambda: ADVISE_AT), settings, reports, "test", clock=lambda: ADVISE_AT,
                     advice=advice)
    assert [r.outcome for r in job.run(ADVISE_AT)] == ["sent"] * 3
    # Three digests, one round of advice (at 10,000 GPUs a round is seconds of CPU).
    assert asked == [(ADVISE_AT, None)]
    posts = dict(_console_posts(out.getvalue()))
    # research's part is what a round of research alone gives: the same total and top three.
    assert "Could save $59,439.77/month" in posts["C0RESEARCH"]
    assert "research/sweep" in posts["C0RESEARCH"]
    assert all("research/" not in posts[c] for c in ("C0SERVING", "C0STEADY"))
    expected = rt.advice(ADVISE_AT, "serving")
    if expected.recommendations:
        assert f"Could save ${expected.could_save_usd_per_month:,.2f}/month" in posts["C0SERVING"]
    else:
        assert "Could save" not in posts["C0SERVING"]


def _console_posts(text: str) -> list[tuple[str, str]]:
    """(channel, text) of each post ConsoleChat wrote, in order."""
    import re

    parts = re.split(r"^── new message in (\S+) at .*$", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def test_the_digest_leaves_out_advice_a_team_exempted(advice_prometheus, store):
    import io
    from datetime import timedelta

    from actions.cost.report import CostReport, TeamReport
    from bot.chat.console import ConsoleChat
    from bot.jobs.digests import DigestsJob
    from bot.settings.model import Settings

    settings = Settings.model_validate({
        "teams": [{"name": "research", "namespaces": ["research"], "channel": "C0RESEARCH"}],
        "costs": {"digest_cron": "30 0 * * mon"},
    })
    rt = _runtime(advice_prometheus)
    [sweep] = [r for r in rt.advice(ADVISE_AT, "research").recommendations if r.kind == "fewer-gpus"]
    # The team pressed Exempt on the sweep's right-sizing request (its key is the advice's).
    req = store.create_request(key=sweep.key, team="research", kind="right-size", namespace="research", name="sweep",
                               verb="", target=None, finding_json="{}", usd_per_hour=0.0, gpus=8, dry_run=True,
                               now=ADVISE_AT - timedelta(days=1), ttl_seconds=86400, cluster="default")
    store.transition(req.id, from_states=["proposed"], to_state="exempt", now=ADVISE_AT - timedelta(days=1),
                     actor="U0APPROVER", event="exempt", until=ADVISE_AT + timedelta(days=6))

    def reports(start, end):
        return CostReport(start, end, {"research": TeamReport("research", start, end, 0.0, 0.0, 0.0, 0.0, None, None)})

    out = io.StringIO()
    job = DigestsJob(store, ConsoleChat(out, clock=lambda: ADVISE_AT), settings, reports, "test", clock=lambda: ADVISE_AT,
                     advice=rt.advice)
    assert [r.outcome for r in job.run(ADVISE_AT)] == ["sent"]
    text = out.getvalue()
    # spot 25,000.46 + MIG 4,304.91 = 29,305.37: the sweep's 30,134.40 is left out.
    assert "Could save $29,305.37/month" in text and "sweep" not in text


def test_report_json_gains_the_advice_and_what_it_could_save(advice_prometheus, cli_files):
    from typer.testing import CliRunner

    from bot.cli.main import app

    config, dump = cli_files
    out = CliRunner().invoke(app, ["report", "--json", "--period", "7d", "--config", str(config), "--prometheus-url",
                                   advice_prometheus, "--cluster-state", str(dump), "--at", "2026-11-30T00:30:00Z"])
    data = json.loads(out.stdout)
    # This Prometheus holds DCGM series but no kube-state-metrics: the report says so (exit 3);
    # the advice, read from DCGM alone, is whole.
    assert out.exit_code == 3 and any("kube-state-metrics" in w for w in data["warnings"])
    assert data["could_save_usd_per_month"] == 103636.89
    assert [a["kind"] for a in data["advice"]] == ["commitment", "fewer-gpus", "spot", "reserved-idle", "mig"]
    steady = CliRunner().invoke(app, ["report", "--json", "--team", "steady", "--config", str(config), "--prometheus-url",
                                      advice_prometheus, "--cluster-state", str(dump), "--at", "2026-11-30T00:30:00Z"])
    assert json.loads(steady.stdout)["could_save_usd_per_month"] == 32143.36, steady.output


def test_new_advice_is_posted_to_each_team_once_and_again_only_when_it_changes(advice_prometheus, store):
    import io

    from actions.advice.round import AdviceSetup
    from bot.chat.console import ConsoleChat
    from bot.jobs.advice import AdviceJob

    teams = TeamDirectory([Team(name=t.name, namespaces=t.namespaces, channel=f"C0{t.name.upper()}")
                           for t in TEAMS.teams.values()])
    rt = _runtime(advice_prometheus)
    rt.teams = teams
    out = io.StringIO()
    job = AdviceJob(store, ConsoleChat(out, clock=lambda: ADVISE_AT), teams, rt.advice)
    # The idle reservation is the cluster admins' advice, and this config gives them no channel.
    assert job.run(ADVISE_AT) == {"posted": 4, "repeated": 0, "held": 0, "no-channel": 1, "requests": 0, "silenced": 0}
    first = out.getvalue()
    assert "C0RESEARCH" in first and "C0STEADY" in first and "could save $59,439.77/month" in first
    # Nothing changed: nothing is posted, here or by another replica sharing the store.
    again = AdviceJob(store, ConsoleChat(io.StringIO()), teams, rt.advice)
    assert again.run(ADVISE_AT) == {"posted": 0, "repeated": 4, "held": 0, "no-channel": 1, "requests": 0, "silenced": 0}
    # Spot interrupted every 3 h instead of 4: the spot advice changed, and only it is posted.
    rt.advice_setup = AdviceSetup(rt.advice_setup.history, POLICY.model_copy(update={"interruption_hours": 3.0}))
    out3 = io.StringIO()
    changed = AdviceJob(store, ConsoleChat(out3), teams, rt.advice)
    assert changed.run(ADVISE_AT) == {"posted": 1, "repeated": 3, "held": 0, "no-channel": 1, "requests": 0, "silenced": 0}
    assert "run Job research/pretrain" in out3.getvalue() and "sweep" not in out3.getvalue()


def test_report_json_without_a_cluster_to_read_says_why_advice_is_missing_and_stays_whole(advice_prometheus, tmp_path):
    from typer.testing import CliRunner

    from bot.cli.main import app

    config = tmp_path / "bot.yaml"
    config.write_text(CONFIG + "kubernetes: {kubeconfig: " + str(tmp_path / "missing-kubeconfig") + "}\n")
    out = CliRunner().invoke(app, ["report", "--json", "--period", "7d", "--config", str(config), "--prometheus-url",
                                   advice_prometheus, "--at", "2026-11-30T00:30:00Z"])
    data = json.loads(out.stdout)
    assert data["advice"] is None and data["could_save_usd_per_month"] is None
    assert "kube" in data["advice_unavailable"].lower()
    assert not any("advice" in w for w in data["warnings"])


def test_a_job_without_dcgm_history_is_named_and_given_no_advice_not_even_spot(advice_prometheus, tmp_path):
    from typer.testing import CliRunner

    from bot.cli.main import app
    from tests.support.advice_fleet import _node, _owner, _pod, cluster_items

    # research/nightly: an on-demand batch/v1 Job that restarts cleanly (backoffLimit defaults to 6,
    # Kubernetes API reference, Job v1) on its own 8-H100 node, but dcgm-exporter never exported its
    # GPUs: a spot saving would be priced on GPU-hours nobody measured.
    items = [*cluster_items(), _node("nl-1"),
             {"apiVersion": "batch/v1", "kind": "Job", "spec": {}, "metadata": {
                 "name": "nightly", "namespace": "research", "uid": "uid-Job-research-nightly",
                 "creationTimestamp": "2026-10-30T00:00:00Z"}},
             _pod("research", "nightly-q8r7t", "nl-1", 8, _owner("batch/v1", "Job", "research", "nightly"),
                  labels={"batch.kubernetes.io/job-name": "nightly"})]
    config, dump = tmp_path / "bot.yaml", tmp_path / "cluster.json"
    config.write_text(CONFIG)
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    out = CliRunner().invoke(app, ["advise", "--json", "--config", str(config), "--prometheus-url", advice_prometheus,
                                   "--cluster-state", str(dump), "--at", "2026-11-30T00:30:00Z"])
    assert out.exit_code == 3, out.output
    data = json.loads(out.stdout)
    assert data["warnings"] == ["1 of 7 GPU consumers have no DCGM history in the window (Job research/nightly): "
                                "no advice for them"]
    assert not [a for a in data["advice"] if "nightly" in a["subject"]]
    # The rest is the advice of the fleet without it, to the cent.
    assert [(a["kind"], a["saving_usd_per_month"]) for a in data["advice"]] == [
        ("commitment", 32143.36), ("fewer-gpus", 30134.40), ("spot", 25000.46), ("reserved-idle", 12053.76),
        ("mig", 4304.91)]
