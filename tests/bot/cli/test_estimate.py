"""`gpu-cost-bot estimate` and `/gpu estimate` as a person meets them: exit codes, stderr, --json,
and help whose examples survive a shell."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from typer.testing import CliRunner

from actions.estimate.request import COMPARED_MODELS
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from bot.chat.commands import CommandContext, dispatch
from bot.chat.commands import estimate as chat_estimate
from bot.cli.main import app
from tests.support.paths import ROOT

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["estimate", *args])


def test_a_question_exits_0_with_the_reading_and_the_total():
    result = run("how", "much", "would", "16", "h100", "cost", "for", "a", "week")
    assert result.exit_code == 0, result.output
    # p5.48xlarge $55.04 / 8 GPUs = $6.88 per GPU-hour x 2,688 GPU-hours = $18,493.44
    assert result.stdout.startswith("*16 H100 GPUs x 168 h (1 week) = 2,688 GPU-hours: $18,493.44 on-demand*")
    assert "$18,493.44 = $6.88/GPU-hour x 2,688 GPU-hours" in result.stdout
    assert result.stderr == ""


def test_json_of_a_comparison_has_one_object_per_model():
    result = run("what would 16 GPUs for a week cost?", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["comparison"] is True and data["gpu_hours"] == 16 * 168
    assert [o["gpu_model"] for o in data["options"]] == list(COMPARED_MODELS)
    for o in data["options"]:
        assert o["on_demand"]["total_usd"] > 0 and o["on_demand"]["quote"]["source"] and o["on_demand"]["quote"]["as_of"]
        assert o["spot"]["total_usd"] < o["on_demand"]["total_usd"]


@pytest.mark.parametrize("args,says", [
    (["16", "a100"], 'could not find a duration in "16 a100"'),
    (["--", "-4", "gpus", "1w"], "the GPU count must be at least 1"),
    (["200000 h100 1w"], "200,000 GPUs is more than 100,000"),
    (["8 h100 for 11 years"], "more than 10 years"),
    (["8 h100 for 0 days"], "the duration must be longer than zero"),
    (["8 b300 3d"], "no price known for B300"),
    (["8 h100 3d at $3"], "could not read the price"),
    (["2 nodes of h100 for 3 days"], "nodes of which instance type?"),
])
def test_bad_input_exits_2_with_two_lines_on_stderr_and_no_traceback(args, says):
    result = run(*args)
    assert result.exit_code == 2
    assert result.stdout == "" and "Traceback" not in result.output
    first, second = result.stderr.splitlines()
    assert first.startswith("error: ") and says in first
    assert second.startswith("write it like: gpu-cost-bot estimate '")
    # The example, split as a shell splits it, is itself a request that prices.
    example = shlex.split(second.removeprefix("write it like: ").split(" or gpu-cost-bot")[0])
    assert example[:2] == ["gpu-cost-bot", "estimate"]
    assert runner.invoke(app, example[1:]).exit_code == 0


def test_a_refusal_on_the_command_line_says_what_was_read():
    result = run("run -4 gpus for a week")  # as one argument: click reads a lone -4 as an option
    assert result.exit_code == 2
    assert "(I read: -4 GPUs, 168 h (1 week))" in result.stderr


def _quoted_dollars_only(text: str) -> bool:
    """Every $ sits inside single quotes, where a shell leaves it alone."""
    return "$" not in re.sub(r"'[^']*'", "", text)


def test_help_examples_keep_their_dollar_signs_from_the_shell():
    result = runner.invoke(app, ["estimate", "--help"])
    assert result.exit_code == 0
    flat = " ".join(result.stdout.split())  # help wraps lines, quotes may span them
    assert "'4 gpus 10h at $3/hr'" in flat
    assert _quoted_dollars_only(flat)
    examples = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("gpu-cost-bot estimate")]
    assert len(examples) >= 4
    for line in examples:  # each runs as a shell would pass it
        assert runner.invoke(app, shlex.split(line)[1:]).exit_code == 0, line


def test_chat_help_examples_quote_their_dollar_signs():
    for text in (chat_estimate.SUMMARY, chat_estimate.EXAMPLE):
        assert _quoted_dollars_only(text)
    assert "`'4 gpus 10h at $3/hr'`" in chat_estimate.SUMMARY
    help_text = dispatch("help", CommandContext(user="U1", prices=PriceBook(PriceCatalog.bundled()))).message.text
    assert chat_estimate.SUMMARY in help_text and chat_estimate.EXAMPLE in help_text


@pytest.mark.parametrize("typed", [
    "estimate '4 gpus 10h at $3/hr'",  # copied from the help, quotes and all
    "estimate what would 4 gpus cost for 10h at $3/hr?",
])
def test_chat_reads_a_request_copied_from_the_help(typed):
    reply = dispatch(typed, CommandContext(user="U1", prices=PriceBook(PriceCatalog.bundled())))
    assert not reply.ephemeral
    assert "$120.00 = $3.00/GPU-hour x 40 GPU-hours" in json.dumps(reply.message.blocks)  # 4 x 10 x $3


def test_chat_example_in_help_is_answered():
    reply = dispatch(chat_estimate.EXAMPLE.removeprefix("/gpu "), CommandContext(user="U1", prices=PriceBook(PriceCatalog.bundled())))
    # 16 x 168 GPU-hours on spot: p5.48xlarge spot $19.4933 / 8 = $2.4367 per GPU-hour -> $6,549.85
    assert reply.message.text == "16 H100 GPUs x 168 h (1 week) = 2,688 GPU-hours, on spot"
    assert "$6,549.85" in reply.message.blocks[0]["text"]["text"]


def test_the_readme_estimate_examples_answer_as_it_says():

    readme = (ROOT / "README.md").read_text()
    prices = PriceBook(PriceCatalog.bundled())
    chat = re.findall(r"`/gpu (estimate [^`]+)`", readme)
    assert len(chat) >= 6
    for typed in chat:
        reply = dispatch(typed, CommandContext(user="U1", prices=prices))
        assert not reply.ephemeral, typed
    reading = re.search(r"repeats how it read the request \(`([^`]+)`\)", readme).group(1)
    assert dispatch("estimate what would 16 h100 cost for a week?", CommandContext(user="U1", prices=prices)).message.text == reading
    (line,) = [ln.strip() for ln in readme.splitlines() if ln.strip().startswith("gpu-cost-bot estimate")]
    command, _, also = line.partition("#")
    assert runner.invoke(app, shlex.split(command.replace("[--json]", "--json"))[1:]).exit_code == 0
    for example in also.removeprefix(" also:").split(", "):
        assert runner.invoke(app, ["estimate", *shlex.split(example)]).exit_code == 0, example
