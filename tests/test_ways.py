"""Every way out the tool prints is run again before it is printed (issue 38, item 5): pasted into the command that
printed it, each one passes (fits, meets the targets, is accepted); a change that does not pass is never printed;
pairs are offered when no single change passes; every flag named is one of that command's options."""

from __future__ import annotations

import json
import re
import shlex

import pytest
import typer.main

from mha_cli.cli.app import app
from mha_cli.core import fit
from mha_cli.core.cost import search
from mha_cli.core.cost.search import PLAN_FLAGS
from mha_cli.core.errors import EXIT_BAD_INPUT
from mha_cli.core.fit import with_layout_ways
from mha_cli.core.memory import LayoutError
from mha_cli.core.recommend import REQUEST_FLAGS
from mha_cli.core.targets import resolve_target
from mha_cli.core.ways import FLAG_FIELDS, MAX_PAIRS_SHOWN, MAX_PAIRS_TRIED, Verdict, settle
from tests.conftest import reference_hf_config


def options_of(command: str) -> set[str]:
    """The long option names ``mha COMMAND`` takes, read from its click parameters."""
    params = typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
    return {name for param in params for name in param.opts if name.startswith("--")}


def paste(args: list[str], change: str) -> list[str]:
    """``args`` with the flags of ``change`` set, each replacing the same flag where it was given."""
    words = shlex.split(change)
    pasted = list(args)
    for flag, value in zip(words[::2], words[1::2], strict=True):
        if flag in pasted:
            pasted[pasted.index(flag) + 1] = value
        else:
            pasted += [flag, value]
    return pasted


def assert_names_options(change: str, command: str) -> None:
    """(c) every word of ``change`` in a flag's place is an option of ``command``."""
    flags = shlex.split(change)[::2]
    assert flags and set(flags) <= options_of(command), (change, command)


# (c) the flag vocabularies the judges apply are options of the commands that print them ----------------------


def test_every_flag_a_way_out_can_name_is_an_option_of_its_command():
    assert set(FLAG_FIELDS) <= options_of("kv") and set(FLAG_FIELDS) <= options_of("check")
    assert set(REQUEST_FLAGS) <= options_of("recommend")
    assert set(PLAN_FLAGS) <= options_of("plan") and {"--target", "--tp"} <= options_of("plan")  # layout ways
    assert "--isl" not in options_of("recommend")  # why recommend's search says --seq


# (a) the three cases of the review, every printed way out pasted back ---------------------------------------

SLO = ["recommend", "--params", "8B", "--seq", "128K", "--target", "h100", "--ttft-ms", "8000"]


def test_recommend_search_ways_out_are_recommend_flags_that_give_a_pick(cli):
    """The review's `--isl 65408`: recommend has no --isl; a shorter context is --seq, run through the recommender
    and the search again."""
    found = cli.json(*SLO)["deployment_search"]
    assert found["chosen"] is None
    ways = found["ways_out"]
    # fp8 weights bring one 130,816-token prompt to 6,664 ms since the refit c9a7fdd (8,036 ms in bf16); the ways
    # were ["--target 2xh100-sxm", "--seq 65536"] before the 2026-12-03 refit c9a7fdd
    assert [w["change"] for w in ways] == ["--weight-dtype fp8", "--target 2xh100-sxm", "--seq 65536"]
    for way in ways:
        assert way["fits"] and "meets them" in way["figure"]
        assert_names_options(way["change"], "recommend")
        again = cli.json(*paste(SLO, way["change"]))["deployment_search"]
        assert again["chosen"] is not None, way
        pick = again["candidates"][again["chosen"]]
        assert f"at {pick['concurrency']} user(s)" in way["figure"], way  # the figure is what the rerun picks
    out = cli.run(*SLO).stdout
    assert "--isl" not in out and "--seq 65536 (a shorter context)" in out


TP3 = ["plan", "llama-3-8b", "--target", "h100", "--tp", "3"]


@pytest.mark.parametrize("args", [TP3, ["kv", "llama-3-8b", "--target", "h100", "--tp", "3"]], ids=["plan", "kv"])
def test_a_refused_tp_names_only_targets_and_tps_that_are_accepted(cli, args):
    """The review's `--target 3xh100-sxm`: 32 heads do not split over 3, so that target fails; what is named passes."""
    refused = cli.run(*args)
    assert refused.exit_code == EXIT_BAD_INPUT
    line = refused.output.strip()
    assert "must divide the 1 device(s)" in line and "3xh100" not in line
    changes = re.search(r"use e\.g\. (.+)$", line).group(1).split(" or ")  # type: ignore[union-attr]
    assert changes == ["--tp 1", "--target 4xh100-sxm --tp 4"]  # the same target first
    for change in changes:
        assert_names_options(change, args[0])
        pasted = cli.run(*paste(args, change), "--json")
        assert pasted.exit_code == 0, (change, pasted.output)
    old_hint = cli.run(*paste(args, "--target 3xh100-sxm"))  # the control: what used to be suggested fails
    assert old_hint.exit_code == EXIT_BAD_INPUT and "divisible by tp (3)" in old_hint.output


MLA_671B = ["recommend", "--params", "671B", "--active-params", "37B", "--seq", "128K", "--batch", "32", "--target",
            "8xh200", "--variant", "MLA"]  # fmt: skip


def test_a_671b_mla_design_at_128k_x_32_gets_pairs_that_fit(cli):
    """One change (fp8 weights) is not enough on 8 x H200; pairs are tried, and each printed one fits pasted."""
    data = cli.json(*MLA_671B)
    assert data["fits"] is False
    fp8_alone = cli.json(*paste(MLA_671B, "--weight-dtype fp8"))
    assert fp8_alone["fits"] is False  # why a pair is needed: 3 sequences of 32 fit at tp 8
    assert fp8_alone["memory"]["max_sequences"] == 3
    ways = data["ways_out"]
    assert 1 <= len(ways) <= MAX_PAIRS_SHOWN
    assert all(w["change"].startswith("--weight-dtype fp8 --") and "together" in w["text"] for w in ways)
    assert {"--weight-dtype fp8 --batch 3", "--weight-dtype fp8 --kv-dtype fp8"} <= {w["change"] for w in ways}
    for way in ways:
        assert way["fits"] is True and len(shlex.split(way["change"])) == 4  # a pair: two flags
        assert_names_options(way["change"], "recommend")
        pasted = cli.json(*paste(MLA_671B, way["change"]))
        assert pasted["fits"] is True, way
        assert pasted["memory"]["max_sequences"] == way["max_sequences"], way


PLAN_PAIR = ["plan", "llama-3-8b", "--target", "h100", "--isl", "130816", "--ttft-ms", "3000", "--closed-form"]
# 3,000 ms, between the best single change and the best pairs on vLLM V1's constants (no --engine prices vLLM's
# latest generation since 2026-12-08): alone, a 65,408-token prompt is 3,635 ms on h100, fp8 weights 7,522 ms,
# 2 x H100 5,170 ms; fp8 weights with 65,408 tokens 2,525 ms, 2 x H100 with them 1,979 ms. On the default constants
# the target was 2,400 ms (2,753 ms the best single change, 2,066 and 1,526 the pairs), 3,500 ms before their
# 2026-12-03 refit c9a7fdd.


def test_plan_search_offers_pairs_when_no_single_change_gives_a_pick(cli):
    found = cli.json(*PLAN_PAIR)
    assert found["chosen"] is None
    for single in ("--weight-dtype fp8", "--kv-dtype fp8", "--target 2xh100-sxm", "--isl 65408"):
        assert cli.json(*paste(PLAN_PAIR, single))["chosen"] is None, single  # none alone
    ways = found["ways_out"]
    assert [w["change"] for w in ways] == ["--weight-dtype fp8 --isl 65408", "--target 2xh100-sxm --isl 65408"]
    for way in ways:
        assert_names_options(way["change"], "plan")
        again = cli.json(*paste(PLAN_PAIR, way["change"]))
        assert again["chosen"] is not None, way


def test_when_nothing_passes_the_one_line_says_what_was_tried(cli):
    # 1,000 ms: below the best pair (2 x H100 with 65,408 tokens, 1,979 ms; 1,526 ms on the default constants) since
    # the 2026-12-03 refit c9a7fdd; it was 2,000 ms before that refit, which that pair then met
    args = paste(PLAN_PAIR, "--ttft-ms 1000")
    assert cli.json(*paste(args, "--target 2xh100-sxm --isl 65408"))["chosen"] is None  # the best pair misses too
    [way] = cli.json(*args)["ways_out"]
    assert way["fits"] is False and way["change"] == ""
    assert way["text"] == (
        "none: tried --weight-dtype fp8, --kv-dtype fp8, --target 2xh100-sxm, --isl 65408 alone and each with the"
        " ways out from there; none meets the targets"
    )


# (b) controls: a change that does not pass is never printed ------------------------------------------------


def test_a_generated_way_that_does_not_fit_is_not_printed(cli, monkeypatch):
    args = ["kv", "llama-3-70b", "--seq", "32k", "--batch", "16", "--target", "h100"]
    honest = cli.json(*args)["ways_out"]
    generator = fit.ways_out

    def with_a_bad_one(*given, **named):
        return [*generator(*given, **named), "--batch 100000 (a way that cannot fit)"]

    monkeypatch.setattr(fit, "ways_out", with_a_bad_one)
    assert not cli.json(*paste(args, "--batch 100000"))["memory"]["fits"]  # pasted, it does not fit
    assert cli.json(*args)["ways_out"] == honest  # so it is filtered out
    assert "100000" not in cli.run(*args).stdout


def test_a_search_change_that_gives_no_pick_is_not_printed(cli, monkeypatch):
    args = ["plan", "llama-3-8b", "--target", "h100", "--isl", "130816", "--ttft-ms", "5000", "--closed-form"]
    honest = cli.json(*args)["ways_out"]
    generator = search.search_changes
    monkeypatch.setattr(search, "search_changes", lambda *a: [*generator(*a), "--isl 261632 (a longer prompt)"])
    assert cli.json(*paste(args, "--isl 261632"))["chosen"] is None
    assert cli.json(*args)["ways_out"] == honest


def test_a_way_naming_a_flag_the_command_lacks_is_never_judged_or_printed():
    calls = []

    def judge(words: list[str]) -> Verdict:
        calls.append(words)
        return Verdict(True, "passes", None, [])

    ways = settle(["--isl 65408 (a shorter prompt)", "--seq 65536 (a shorter context)"], judge, REQUEST_FLAGS)
    assert [w.change for w in ways] == ["--seq 65536"] and calls == [["--seq", "65536"]]


# settle on its own: pairs, their bound, the none line ---------------------------------------------------------


def test_pairs_are_each_failed_change_with_the_ways_from_where_it_leads_and_bounded():
    """A judge that passes only --a 1 with --b 2: the pair is found from the ways --a 1 leads to; a judge that passes
    nothing stops after MAX_PAIRS_TRIED pairs."""
    calls: list[list[str]] = []

    def judge(words: list[str]) -> Verdict:
        calls.append(words)
        set_ = dict(zip(words[::2], words[1::2], strict=True))
        ways = ["--b 2 (then)", "--a 3 (same flag: not a pair)", "none: nothing"] if set_ == {"--a": "1"} else []
        return Verdict(set_ == {"--a": "1", "--b": "2"}, f"{len(set_)} set", 7, ways)

    [pair] = settle(["--a 1 (first)", "--c 1 (second)"], judge, {"--a", "--b", "--c"})
    assert (pair.change, pair.fits, pair.figure, pair.max_sequences) == ("--a 1 --b 2", True, "2 set", 7)
    assert pair.text == "--a 1 --b 2 (together: --a 1 alone is not enough)"
    assert calls == [["--a", "1"], ["--c", "1"], ["--a", "1", "--b", "2"]]

    calls.clear()
    others = [f"--f{i} 1" for i in range(20)]

    def nothing_passes(words: list[str]) -> Verdict:
        calls.append(words)
        return Verdict(False, "no", None, others)

    [none] = settle(["--x 1", "--y 1"], nothing_passes, {"--x", "--y", *(way.split()[0] for way in others)})
    assert len(calls) == 2 + MAX_PAIRS_TRIED and none.fits is False
    assert none.text == "none: tried --x 1, --y 1 alone and each with the ways out from there; none fits"
    assert settle([], judge, {"--a"}) == []  # nothing to get out of


@pytest.mark.parametrize(("tp", "expected"), [("16", ["--tp 8", "--target 16xh100-sxm"]), ("3", ["--tp 4", "--tp 2"])])
def test_a_refused_tp_names_a_tp_on_the_same_target_first(cli, tp, expected):
    """llama-3.1-70b on 8 x H100: the simplest fix keeps the target (a tp that divides its 8 devices and the 64
    heads), then what was asked on a target that holds it; each named change runs when pasted."""
    args = ["kv", "llama-3.1-70b", "--target", "8xh100", "--tp", tp]
    refused = cli.run(*args)
    assert refused.exit_code == EXIT_BAD_INPUT
    changes = re.search(r"use e\.g\. (.+)$", refused.output.strip()).group(1).split(" or ")  # type: ignore[union-attr]
    assert changes == expected
    for change in changes:
        assert cli.run(*paste(args, change), "--json").exit_code == 0, change


def test_the_generators_none_line_is_kept_whole_and_a_refusal_nothing_fixes_says_so():
    told = "none: even 8 x t4 has no room for any weight: the engine's own reserves exceed its share (by 1 GiB)"
    [way] = settle([told], lambda words: Verdict(True, "never asked", None, []), FLAG_FIELDS)
    assert (way.text, way.fits) == (told, False)  # an apostrophe in words, not flags: never split as a command
    refused = LayoutError("tp (3) must divide the 1 device(s) of target 'h100'")
    error = with_layout_ways(refused, resolve_target("h100"), 3, lambda words: Verdict(False, "no", None, []))
    assert error.message == (
        "tp (3) must divide the 1 device(s) of target 'h100'; tried as a way out and refused too: --tp 1, --target"
        " 3xh100-sxm, --target 4xh100-sxm --tp 4"
    )  # before: "...; none: tried --tp 1, ... alone; none is accepted" (newuser trial 242)
    error = with_layout_ways(refused, resolve_target("h100"), 3, lambda words: Verdict(False, "no", None, [told]))
    assert error.message.endswith(
        "tried as a way out and refused too: --tp 1, --target 3xh100-sxm, --target 4xh100-sxm --tp 4, each with the"
        " ways out from there"
    )


@pytest.mark.parametrize("command", ["kv", "check"])
def test_a_batch_too_large_for_the_cpu_target_is_flagged_with_ways_on_this_machine(cli, command, monkeypatch):
    """``mha kv llama-3-8b --target cpu --seq 128k`` failed with "'2xcpu': the cpu target is this one machine": the ways
    out offered a group of the cpu target, which ``resolve_target`` refuses. It is one machine: no group is offered.
    The machine is set at 23 GiB (the cpu target reads /proc/meminfo), where 5 of 8 sequences of 8K fit."""
    import mha_cli.core.machine as machine

    monkeypatch.setattr(machine, "memory_bytes", lambda: 23 * 2**30)
    result = cli.run(command, "llama-3-8b", "--target", "cpu", "--seq", "8k", "--batch", "8", "--json")
    assert result.exit_code in (0, 1), result.output
    assert "2xcpu" not in result.output
    data = json.loads(result.stdout)
    ways = [way["change"] for way in data["ways_out"]] if command == "kv" else None
    if ways is not None:
        assert "--batch 5" in ways and not any("--target" in way or "--tp" in way for way in ways)


def test_the_cpu_target_says_in_words_why_nothing_fits(cli, monkeypatch):
    """Llama-3.1-405B on a 23 GiB machine: the weights do not fit in any format; it read "the weights, in every smaller
    format, fit(s)", the opposite (found by the review of this change)."""
    import mha_cli.core.machine as machine

    monkeypatch.setattr(machine, "memory_bytes", lambda: 23 * 2**30)
    data = cli.json("kv", "llama-3.1-405b", "--target", "cpu")
    text = data["ways_out"][0]["text"]
    assert text.startswith("none: the weights do not fit, in any smaller format, in this machine's")
    assert text.endswith("usable (the cpu target is this one machine): plan a GPU target")


def test_a_pool_set_past_the_device_names_the_engines_refusal_and_the_largest_that_fits(cli):
    """``recommend --kv-cache-gib 1000`` on an H100 said "the KV cache of this batch exceeds the target" (896 MiB)
    and offered no way; ``kv`` named the cause but no way either (found by newuser trial 238)."""
    kv = cli.json("kv", "llama-3-8b", "--target", "h100", "--kv-cache-gib", "1000")
    way = kv["ways_out"][0]
    assert way["change"] == "--kv-cache-gib 61.11" and way["fits"]  # what the refusal says is left: 61.11 GiB
    assert "give --kv-cache-gib 61.11 or less" in kv["memory"]["engine"]["refusal"]  # sampler tables too (trial 385 #2)
    text = " ".join(cli.run("recommend", "--params", "7B", "--seq", "8k", "--kv-cache-gib", "1000", "--target",
                            "h100").output.split())  # fmt: skip
    assert "DOES NOT FIT: the engine would not start: out of memory: the KV cache set (1000.00 GiB)" in text
    assert "- --kv-cache-gib 62.8" in text  # 62.80 once the sampler tables were counted beside it (trial 385 #2)


@pytest.mark.parametrize(
    "args",
    [["kv", "llama-3.1-8b", "--target", "v100"], ["kv", "qwen3-8b", "--target", "2xv100", "--seq", "32k", "--batch",
     "16"], ["check", "llama-3.1-8b", "--target", "v100", "--seq", "32k", "--batch", "8"]],
)  # fmt: skip
def test_a_weight_format_the_engine_refuses_on_the_gpu_is_no_way_out(cli, args):
    """kv and check on a V100 (compute capability 7.0) that did not fit died with exit 2 on "vLLM serves int4 weights
    on compute capability 7.5 or later", a format the user never asked for: the int4 way out was checked on a GPU vLLM
    refuses it on (found by newuser trial 251). Now a verdict, exit 0, and no way out names int4 there; a T4 (7.5)
    still has it."""
    result = cli.run(*args)
    assert result.exit_code == 0, result.output
    assert "does not fit" in result.output and "--weight-dtype int4" not in result.output
    assert "int4" not in fit.smaller_weight_dtypes(resolve_target("v100"), _bf16())
    assert fit.smaller_weight_dtypes(resolve_target("t4"), _bf16()) == ["int4"]  # no fp8 on a T4
    assert fit.smaller_weight_dtypes(resolve_target("h100"), _bf16()) == ["fp8", "int4"]


def _bf16():
    from mha_cli.core.schemas import DeploymentSpec

    return DeploymentSpec(seq_len=8192, weight_dtype="bf16")


def test_mha025_names_the_rope_table_a_config_sizes(cli, tmp_path):
    """check on a Llama config of 268,435,456 positions said "weights need 15.0 GiB ..., usable 4.2 GiB", blaming the
    weights for vLLM's 64 GiB RoPE table (268,435,456 x 128 x 2 B), which the config's context sizes, not --seq (the
    review of this change)."""
    config = json.loads((reference_hf_config("llama-3.1-8b")).read_text()) | {"max_position_embeddings": 268_435_456}
    path = tmp_path / "long" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    found = cli.json("check", str(path), "--target", "h100", "--seq", "8192")["findings"]
    message = next(f["message"] for f in found if f["id"] == "MHA025")
    assert "beside its RoPE cos/sin table of 64.0 GiB for the context's positions (sized by the model's context," \
        " 268,435,456 positions: a config.json's max_position_embeddings)" in message  # fmt: skip


def test_a_search_way_out_without_targets_does_not_claim_to_meet_them(cli):
    """DeepSeek-V3 on 8 x H100 (its weights do not fit) offered a way out that "at 4096 user(s) meets them" with no
    --ttft-ms or --itl-ms given (found by newuser trials 254, 257)."""
    refused = cli.run("plan", str(reference_hf_config("deepseek-v3")), "--target", "8xh100", "--closed-form")
    text = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "meets them" not in text and "user(s) is picked" in text


def test_a_dp_attention_layout_refused_names_the_ways_without_dp(cli):
    """DeepSeek-V3 on 8 H20s at --dp 2 (or 8) has no room for a KV block; tp 8 without DP attention has (trial 275
    #3: the ways were tried with --dp kept, tp 8 x dp 2 = 16 GPUs, and "--target 1xh20" offered for a 671B model).
    Each way named is tried without --dp, says so, and runs when pasted so."""
    base = ("plan", str(reference_hf_config("deepseek-v3")), "--target", "8xh20", "--isl", "2048", "--osl", "512",
            "--concurrency", "16", "--closed-form")  # fmt: skip
    for dp in ("2", "8"):
        refused = cli.run(*base, "--dp", dp)
        assert refused.exit_code == EXIT_BAD_INPUT
        said = " ".join(refused.output.split())
        assert said.endswith(
            ": use e.g. --tp 8 or --target 16xh20 --tp 16 (leaving out --dp, with --expert-parallel and --moe-a2a-backend)"
        ), said
    assert cli.json(*base, "--tp", "8")["deployment"]["tp"] == 8


def test_a_cache_more_devices_cannot_split_is_held_by_replicas_with_the_whole_batch(cli):
    """Trial 343 #2: Llama-3.1-70B at 128K x 32 on 2 x H100 was offered an fp8 cache with tp 64 over 64 GPUs and the
    batch cut to 25: past 8 ranks its 8 KV heads are copied, so a rank caches no less. 4 replicas of tp 8 hold the
    whole batch on 32 GPUs, by hand: a sequence is 80 x 8 x 128 x 2 x 2 B x 131,072 = 40 GiB, 5 GiB a rank at tp 8,
    and a rank's ~72 GiB less 16.4 GiB of weights and the engine's reserves hold 8-9, so 3 replicas are short (26)."""
    args = ("kv", "llama-3.1-70b", "--target", "2xh100", "--seq", "128k", "--batch", "32")
    (way,) = cli.json(*args)["ways_out"]
    assert way["change"] == "--target 32xh100-sxm --tp 8" and way["fits"] and way["max_sequences"] >= 32
    assert "4 replicas of tensor parallel 8" in way["text"]
    three = cli.json("kv", "llama-3.1-70b", "--target", "24xh100-sxm", "--tp", "8", "--seq", "128k", "--batch", "32")
    assert not three["memory"]["fits"] and three["memory"]["max_sequences"] < 32
    wide = cli.json("kv", "llama-3.1-70b", "--target", "64xh100-sxm", "--seq", "128k", "--batch", "32")  # tp 64
    assert not wide["memory"]["fits"]


def test_a_smaller_profiling_run_with_the_length_it_holds_is_the_way_out_of_a_sampler_peak(cli):
    """Trial 390 #5: gpt-oss-120b (MXFP4) on one H100 at 131,072 tokens on vLLM 0.10: the sampler's profiling peak (1,024
    rows x 201,088 logits x 38 B, 7.8 GB) leaves no pool, and the ways were int4 weights (a checkpoint nobody
    publishes, 4 bits against MXFP4's 4.25) or another GPU. --max-num-seqs 64 leaves a pool that holds 117,408 tokens:
    offered as the pair, and it fits when run; int4 is no longer offered (a format less than a quarter lighter)."""
    args = ("kv", "gpt-oss-120b", "--target", "h100", "--engine", "vllm@0.10", "--json")
    ways = [way["change"] for way in cli.json(*args, "--seq", "131072")["ways_out"]]
    assert ways[0] == "--max-num-seqs 64 --seq 117408" and not any("--weight-dtype" in way for way in ways)
    assert cli.json(*args, "--seq", "117408", "--max-num-seqs", "64")["memory"]["fits"]
    assert not cli.json(*args, "--seq", "117424", "--max-num-seqs", "64")["memory"]["fits"]  # a block more: the bound
    assert fit.LIGHTER_BY * fit.bytes_per_weight("mxfp4") < fit.bytes_per_weight("int4")
    assert fit.bytes_per_weight("int4") <= fit.LIGHTER_BY * fit.bytes_per_weight("fp8")  # fp8 -> int4 stays a way


def test_weights_too_large_for_any_group_of_the_batch_offer_replicas_of_one(cli, tmp_path):
    """Trial 406 #1, #2: a 70B design at 128K x 4 on one RTX 4090 was offered "--target 64xrtx-4090 --batch 3
    (together: one flag alone is not enough)": no tp group holds all 4 sequences (the 8 KV heads replicate past tp 8),
    but 2 replicas of tp 16 hold 2 each, so the target alone fits. kv of the design's file (tp 1) said none fits."""
    args = ["recommend", "--params", "70B", "--seq", "128K", "--target", "4090", "--batch", "4"]
    [way] = cli.json(*args)["ways_out"]
    assert way["change"] == "--target 32xrtx-4090 --tp 16" and way["fits"] and way["max_sequences"] == 4
    assert "(2 replicas of tensor parallel 16, each serving its share of the batch)" in way["text"]
    assert cli.json(*paste(args, way["change"]))["fits"] is True  # checked, as printed
    design = tmp_path / "r70.yaml"
    cli.run(*args, "--out", str(design))
    [from_file] = cli.json("kv", str(design))["ways_out"]
    assert from_file["change"] == way["change"] and from_file["fits"]
