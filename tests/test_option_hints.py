"""An unknown option is answered with what to give instead (``cli.option_hints``), through the console entry."""

import subprocess
import sys

import pytest


def mha(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mha_cli", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("args", "said"),
    [(["recommend", "--params", "7B", "--heads", "32"], "No such option: --heads: the head count follows the width"),
     (["recommend", "--params", "7B", "--kv-heads", "8"], "give --variant MHA, GQA, MQA or MLA"),
     (["recommend", "--params", "7B", "--d-modle", "4096"], "No such option: --d-modle (did you mean --d-model"),
     (["recommend", "--params", "7B", "--zzz", "1"], "No such option: --zzz (see `mha recommend --help`)"),
     (["recommend", "--params", "7B", "--layer", "3"], "--layer: the depth spends --params"),
     (["recommend", "--params", "7B", "--n-head", "8"], "--n-head: the head count follows the width")],
)  # fmt: skip
def test_an_unknown_option_says_what_to_give(args, said):
    """`--heads` was answered '(Possible options: --help)' (trial 246): a bare --help is never offered now."""
    result = mha(*args)
    assert result.returncode == 2 and result.stdout == ""
    assert said in result.stderr and "Possible options: --help" not in result.stderr
    assert result.stderr.count("\n") == 1  # one line


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["kv", "deepseek-v3", "--target", "8xb300", "--dp", "8", "--enable-expert-parallel"],
         "kv prices --dp N as DP attention with the routed experts spread"),
        (["kv", "deepseek-v3", "--target", "8xb300", "--enable-dp-attention"], "give --dp N"),
        (["check", "deepseek-v3", "--target", "8xb300", "--dp", "8"], "check judges one tensor-parallel deployment"),
    ],
)  # fmt: skip
# review 308 #5: check's way out for a dense model is plan's replicas (kv --dp refuses a model with no experts)
def test_a_pasted_parallelism_flag_is_not_offered_another_parallelism(args, says):
    """Trial 307 #7: kv's --enable-expert-parallel was answered "did you mean --tensor-parallel-size?", check's --dp
    "did you mean --tp?": another kind of parallelism. The ways these commands price it, each runnable."""
    result = mha(*args)
    assert result.returncode == 2 and says in result.stderr and "did you mean" not in result.stderr
    assert result.stderr.count("\n") == 1
    for command in ("kv", "plan"):
        if f"`mha {command} MODEL --target T --dp N`" in result.stderr:  # the way out runs
            quick = ["--closed-form"] if command == "plan" else []
            way_out = mha(command, "deepseek-v3", "--target", "8xb300", "--dp", "8", *quick, "--json")
            assert way_out.returncode == 0, way_out.stderr
    if args[0] == "check":
        dense = mha("plan", "llama-3-8b", "--target", "8xh100", "--dp", "8", "--closed-form", "--json")
        assert dense.returncode == 0, dense.stderr


@pytest.mark.parametrize(
    ("args", "option"),
    [(["plan", "llama-3-8b", "--isl", "8k"], "'--isl'"), (["kv", "llama-3-8b", "--batch", "1.5"], "'--batch'")],
)
def test_a_count_typed_as_words_is_asked_for_in_digits(args, option):
    """Trial 304 #9: `--isl 8k` was answered in pydantic's words ("Input should be a valid integer, unable to parse
    string as an integer"): what to type instead, in one line."""
    result = mha(*args)
    assert result.returncode == 2 and result.stdout == "" and result.stderr.count("\n") == 1
    assert f"Invalid value for {option}: give a whole number in digits (such as 8192, not 8k or 1.5)" in result.stderr


def test_sglangs_own_flags_that_the_launch_lines_print_are_read_or_answered(cli):
    """Trial 309 #4: ``--page-size``, which the SGLang launch line prints, was "No such option" (offered
    ``--dp-size``): it is ``--block-size``'s other name, the same figure. ``--tp-size`` and ``--max-running-requests``
    (each counting every GPU or rank under DP attention, so no alias: review 310 #1), ``--context-length`` and
    ``--dtype`` name what to give instead; on check, which takes no --dp, without it."""
    args = ("kv", "llama-3-8b", "--target", "h100", "--engine", "sglang")
    assert cli.json(*args, "--page-size", "32")["engine"] == cli.json(*args, "--block-size", "32")["engine"]
    assert cli.json(*args, "--page-size", "32")["engine"]["block_size"] == 32
    launch = cli.json("plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--closed-form")["launch"]["sglang"]
    assert "--max-running-requests" in launch and "--tp-size" in launch and "--context-length" in launch
    for option, says, on_check in [
        ("--tp-size", "there --tp is --tp-size / --dp", "--tp-size (without DP attention) is --tp here"),
        ("--max-running-requests", "there --max-num-seqs is it / --dp",
         "--max-running-requests (without DP attention) is --max-num-seqs here"),
        ("--context-length", "--context-length is --max-model-len here", "--context-length is --max-model-len here"),
        ("--dtype", "the weights' format is --weight-dtype", "the weights' format is --weight-dtype"),
    ]:  # fmt: skip
        for command in ("kv", "plan", "check"):
            result = mha(command, "llama-3-8b", "--target", "h100", option, "1")
            expected = on_check if command == "check" else says
            assert result.returncode == 2 and expected in result.stderr and "did you mean" not in result.stderr
            assert result.stderr.count("\n") == 1
            assert command != "check" or "--dp" not in result.stderr


@pytest.mark.parametrize(
    ("seed", "said"), [("99999999999", "must be at most 2,147,483,647"), ("-1", "must be at least 0")]
)
def test_a_bound_is_said_as_the_other_options_say_it(seed, said):
    """Trial 350 #5: `experiment heads --seed 1e11` was answered "Input should be less than or equal to 2147483647"
    (pydantic's words) where probe says "must be between 0 and 4,294,967,295"."""
    result = mha("experiment", "heads", "--quick", "--seed", seed)
    assert result.returncode == 2 and result.stdout == "" and result.stderr.count("\n") == 1
    assert f"Invalid value for '--seed': {said} (see `mha experiment heads --help`)" in result.stderr


def test_plan_answers_kv_s_seq_with_its_own_context_option():
    """Trial 406 #9: `plan --seq 8K` (kv's option) was answered "--seed or --users or --osl", none of them a context;
    plan's is --max-model-len."""
    result = mha("plan", "llama-3-8b", "--target", "h100", "--seq", "8K")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert (
        "kv's --seq, the engine's context, is --max-model-len here" in result.stderr and "--seed" not in result.stderr
    )
