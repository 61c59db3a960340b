"""Hints name options the command has (every command that prices vLLM's CPU pool takes --kv-cache-gib), and a
release past the newest read is priced as that one, said in a notice line and ``priced_as_release``."""

from __future__ import annotations

import json

import pytest

from mha_cli.cli.app import app
from mha_cli.core.engine.releases_read import NEWEST_READ

CPU_HINT = "--kv-cache-gib (VLLM_CPU_KVCACHE_SPACE) sets it exactly"


PRICING_THE_POOL = {
    "kv": ["kv", "llama-3.2-1b", "--target", "cpu"],
    "check": ["check", "llama-3.2-1b", "--target", "cpu"],
    "recommend": ["recommend", "--params", "1b", "--target", "cpu"],
    "plan": ["plan", "llama-3.2-1b", "--target", "cpu", "--tp", "1", "--profile", "h100-sxm-prior", "--closed-form"],
}
"""Every command that prices vLLM's CPU pool, and so may print the hint."""


@pytest.mark.parametrize("command", sorted(PRICING_THE_POOL))
def test_the_cpu_pool_hint_names_an_option_the_command_has(cli, command):
    args = PRICING_THE_POOL[command]
    shown = cli.runner.invoke(app, [*args, "--json"])
    assert shown.exit_code in (0, 1), shown.output  # check: 1 on a failed rule, the hint printed all the same
    assert CPU_HINT in shown.stdout
    help_text = cli.runner.invoke(app, [command, "--help"], env={"COLUMNS": "250"}).stdout
    assert "--kv-cache-gib" in help_text
    sized = cli.runner.invoke(app, [*args, "--kv-cache-gib", "4", "--json"])
    assert sized.exit_code in (0, 1), sized.output
    assert CPU_HINT not in sized.stdout and "4294967296" in sized.stdout  # 4 x 2**30 B, the pool set


@pytest.mark.parametrize(
    ("engine", "newest"), [("vllm@0.99", "vllm"), ("sglang@0.9", "sglang"), ("trtllm@9.0", "trtllm")]
)
@pytest.mark.parametrize("mode", ["search", "tp"])
def test_a_release_past_the_newest_read_is_said_and_named(cli, engine, newest, mode):
    args = ["plan", "llama-3.1-8b", "--target", "h100", "--engine", engine, "--closed-form"]
    args += ["--tp", "1"] if mode == "tp" else []
    release = NEWEST_READ[newest].release  # type: ignore[index]
    shown = cli.runner.invoke(app, [*args, "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["priced_as_release"] == release
    said = [line for line in shown.stderr.splitlines() if "is newer than the newest release read" in line]
    assert len(said) == 1 and f"its launch flags are priced as {release}'s" in said[0]
    rules = NEWEST_READ[newest].rules  # type: ignore[index]
    assert (f"its memory and step rules those of {rules}" if rules != release else "its rules too") in said[0]
    human = cli.runner.invoke(app, args)
    assert human.exit_code == 0 and f"its launch flags are priced as {release}'s" in human.stderr


def test_a_release_read_gets_no_such_note(cli):
    shown = cli.runner.invoke(app, ["plan", "llama-3.1-8b", "--target", "h100", "--engine", "vllm@0.32.0",
                                    "--closed-form", "--json"])  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert "priced_as_release" not in json.loads(shown.stdout) and "newer than" not in shown.stderr


@pytest.mark.parametrize("command", ["kv", "check", "recommend"])
def test_kv_check_and_recommend_say_too_that_a_later_release_was_priced_as_the_newest_read(cli, command):
    args = ["kv", "llama-3.1-8b"] if command == "kv" else ["check", "llama-3.1-8b"]
    args = ["recommend", "--params", "1b"] if command == "recommend" else args
    release = NEWEST_READ["sglang"].release
    shown = cli.runner.invoke(app, [*args, "--target", "h100", "--engine", "sglang@0.9", "--json"])
    assert shown.exit_code in (0, 1), shown.output  # check: 1 on a failed rule, the notice all the same
    said = [line for line in shown.stderr.splitlines() if "is newer than the newest release read" in line]
    assert len(said) == 1 and f"its launch flags are priced as {release}'s" in said[0]
    read = cli.runner.invoke(app, [*args, "--target", "h100", "--engine", f"sglang@{release}", "--json"])
    assert "newer than" not in read.stderr


@pytest.mark.parametrize(
    ("major", "minor"), [("vllm@99", "vllm@99.0"), ("trtllm@2", "trtllm@9.9"), ("sglang@1", "sglang@0.9")]
)
def test_a_major_alone_past_the_newest_read_is_priced_as_a_later_minor_is(cli, major, minor):
    """Before, `--engine vllm@99` was refused ("not a release number") while `trtllm@9.9` was priced as 1.2 with a
    notice: one rule now for every engine. A major past the newest read is read as its first minor, and priced, JSON
    and notice alike, as a later minor typed in full is: as the newest release read."""
    engine = major.split("@")[0]
    args = ["plan", "llama-3.1-8b", "--target", "h100", "--closed-form", "--tp", "1", "--json"]
    by_major = cli.runner.invoke(app, [*args, "--engine", major])
    by_minor = cli.runner.invoke(app, [*args, "--engine", minor])
    assert by_major.exit_code == by_minor.exit_code == 0, by_major.output
    shown, twin = json.loads(by_major.stdout), json.loads(by_minor.stdout)
    assert shown["priced_as_release"] == twin["priced_as_release"] == NEWEST_READ[engine].release  # type: ignore[index]
    # the rules' release beside the flags': vLLM's were read to 0.33 while its flags go to 0.34.0 (trial 245)
    assert shown["priced_rules_release"] == twin["priced_rules_release"] == NEWEST_READ[engine].rules  # type: ignore[index]
    named = [plan["memory"]["engine"].pop("engine_release", None) for plan in (shown, twin)]  # a major: its first minor
    assert named == ([major.split("@")[1] + ".0", minor.split("@")[1]] if engine != "trtllm" else [None, None])
    assert (shown["memory"], shown["itl_ms"]) == (twin["memory"], twin["itl_ms"])
    said = [line for line in by_major.stderr.splitlines() if "is newer than the newest release read" in line]
    assert len(said) == 1 and said[0].split(" is newer")[0].endswith(f" {major.split('@')[1]}.0")


@pytest.mark.parametrize(
    ("engine", "newest"), [("vllm@0", "0.34.0"), ("trtllm@1", "1.2"), ("trtllm@0", "1.2"), ("sglang@0", "0.5.23")]
)
def test_a_major_alone_within_the_releases_read_is_refused_in_one_line(cli, engine, newest):
    """vLLM 0.x spans three generations, TensorRT-LLM 1.x releases priced apart: a major alone there names no one
    release to price, so it is refused (exit 2), naming a release to give."""
    assert NEWEST_READ[engine.split("@")[0]].release == newest  # type: ignore[index]
    shown = cli.runner.invoke(app, ["plan", "llama-3.1-8b", "--target", "h100", "--engine", engine])
    assert shown.exit_code == 2 and shown.stdout == ""
    assert shown.stderr.endswith(f"names a major alone, whose releases mha prices differently: write a minor or a"
                                 f" release, as {engine.split('@')[0]}@{newest} (the newest read)\n")  # fmt: skip
    assert len(shown.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("typed", "generation"), [("vllm@v1", "vllm-v1"), ("vllm@V1", "vllm-v1"), ("vllm@v0", "vllm-v0")]
)
def test_vllm_v1_names_the_engine_generation_and_is_refused_not_read_as_release_1(cli, typed, generation):
    """`vllm@v1` was read as release 1.0 and priced as the newest release read (0.21 and later rules), while vLLM's
    V1 engine (0.8-0.20, the generation vllm-v1) is what "vLLM V1" names: refused in one line naming both."""
    shown = cli.runner.invoke(app, ["plan", "llama-3.1-8b", "--target", "h100", "--engine", typed])
    assert shown.exit_code == 2 and shown.stdout == ""
    assert f"(--engine {generation})" in shown.stderr and len(shown.stderr.splitlines()) == 1
    assert cli.runner.invoke(app, ["plan", "llama-3.1-8b", "--target", "h100", "--engine", generation]).exit_code == 0
