"""The releases a plan tells to run its launch line on are those that have every word of the line.

``mha plan llama-3.1-8b --target h100 --engine vllm-v1 --kv-offload-gib 16`` wrote ``--kv-offloading-size 16`` (first
in vLLM 0.11.1) with the note "run the vllm line on a release of 0.8-0.20", the generation's range; and ``--engine
vllm@0.10 --moe-a2a-backend deepep`` wrote ``VLLM_ALL2ALL_BACKEND=deepep_low_latency`` (0.9.1 to 0.15.0, removed by
vllm-project/vllm#33535) with the same range. The range is now the generation's releases that have every word
(``core.engine.launch_forms.releases_running``, from ``core.engine.flags``); the tests below check it against the
releases' own wheels as ``benchmarks/engine_flag_history.py`` read them (``outputs/engine_flags/presence.json``)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from mha_cli.core.engine.flags import FIRST_READS, SPANS, line_words, release_key
from tests.conftest import reference_hf_config

PRESENCE = json.loads((Path(__file__).parents[1] / "outputs/engine_flags/presence.json").read_text())["vllm"]
RUN = "run the vllm line on a release of "


def _releases_read_running(line: str) -> list[str]:
    """The vLLM releases read in their wheels whose flags include every word of ``line``: a word added to the table
    after presence.json (``FIRST_READS``, checked against the releases read around its first in
    tests/test_engine_flags.py) by its span."""
    words = set(line_words("vllm", shlex.split(line)).checked)
    later = {span.word: span for span in SPANS if span.engine == "vllm" and FIRST_READS in span.source}
    return [
        release for release, had in PRESENCE.items()
        if words - later.keys() <= set(had) and all(later[w].has(release_key(release)) for w in words & later.keys())
    ]  # fmt: skip


def _printed_range(note: str) -> str:
    return note.split(RUN, 1)[1].split(";", 1)[0]


def test_a_kv_offload_line_is_told_the_releases_with_its_offload_flag(cli):
    found = cli.json("plan", "llama-3.1-8b", "--target", "h100", "--engine", "vllm-v1", "--kv-offload-gib", "16",
                     "--closed-form")  # fmt: skip
    line = found["launch"]["vllm"]
    assert "--kv-offloading-size 16" in line
    # before: "run the vllm line on a release of 0.8-0.20", which 0.8.0 to 0.11.0 cannot run
    assert _printed_range(found["launch_note"]) == "0.11.1-0.20.x"
    read = [r for r in _releases_read_running(line) if release_key(r) < (0, 21)]
    assert read[0] == "0.11.1" and read[-1] == "0.20.0"  # every V1 release read from 0.11.1, none before


def test_a_line_with_a_variable_later_removed_is_told_where_it_ends(cli):
    found = cli.json("plan", "deepseek-v3", "--isl", "1024", "--osl", "1024", "--closed-form", "--moe-a2a-backend",
                     "deepep", "--engine", "vllm@0.10", "--target", "8xh200", "--concurrency", "1024")  # fmt: skip
    line = found["launch"]["vllm"]
    assert line.startswith("VLLM_ALL2ALL_BACKEND=deepep_low_latency vllm serve")
    # before: "0.8-0.20"; vLLM 0.16.0 on has no VLLM_ALL2ALL_BACKEND (vllm-project/vllm#33535)
    assert _printed_range(found["launch_note"]) == "0.9.1-0.15.0"
    read = _releases_read_running(line)
    assert read[0] == "0.9.1" and read[-1] == "0.15.0"


def test_a_v0_line_starts_at_the_first_release_with_its_server(cli):
    """vLLM 0.5.0's line (``python -m vllm.entrypoints.openai.api_server``, no flag later than 0.2.0) runs on every V0
    release from 0.2.0, the first with that server; 0.1.x has none."""
    found = cli.json("plan", "llama-3-8b", "--target", "2xh100", "--closed-form", "--engine", "vllm@0.5.0")
    # before: "0.1-0.7" (tests/test_release_without_line.py: vLLM 0.1.x has no server line mha writes)
    assert _printed_range(found["launch_note"]) == "0.2.0-0.7.x"
    read = [r for r in _releases_read_running(found["launch"]["vllm"]) if release_key(r) < (0, 8)]
    assert read[0] == "0.2.0" and read[-1] == "0.7.0"


def test_an_sglang_line_with_ep_size_alone_is_told_the_releases_that_run_it_as_expert_parallelism(cli):
    """Trial 307 #6: sglang@0.4's DP-attention line (``--ep-size 8``, no ``--enable-ep-moe``) was told "a release of
    0.4.6.post2-0.4.x", where before 0.4.10.post2 --ep-size alone leaves the experts tp-sharded (FusedMoE); the
    exact release writes ``--enable-ep-moe`` beside it, and its note names that release alone."""
    args = ("plan", "deepseek-v3", "--target", "8xb300", "--dp", "8", "--closed-form")
    generic = cli.json(*args, "--engine", "sglang@0.4")
    assert "--ep-size 8" in generic["launch"]["sglang"] and "--enable-ep-moe" not in generic["launch"]["sglang"]
    assert "run the sglang line on a release of 0.4.10.post2-0.4.x;" in generic["launch_note"]
    early = cli.json(*args, "--engine", "sglang@0.4.6.post2")["launch"]["sglang"]
    assert "--ep-size 8 --enable-ep-moe" in early


def test_the_range_starts_at_the_first_release_that_loads_the_model(cli):
    """Trials 367 #1 and 368 #7: Qwen3 priced on vllm@0.10.0 was told "0.8.3-0.20.x" and gpt-oss on vllm-v1
    "0.8.3-0.20.x", where the same tool refuses vllm@0.8.3 for Qwen3 (no Qwen3ForCausalLM before 0.8.4) and
    vllm@0.10.0 for gpt-oss (GptOssForCausalLM first in 0.10.1): the range now starts where the registry has the
    model (``outputs/engine_flags/architectures.json``); the control, Llama 3, keeps the line's own 0.8.3."""
    args = ("--target", "2xh200", "--tp", "2", "--concurrency", "8", "--closed-form")
    qwen3 = cli.json("plan", str(reference_hf_config("qwen3-32b")), *args, "--engine", "vllm@0.10.0")
    gpt_oss = cli.json("plan", str(reference_hf_config("gpt-oss-120b")), *args, "--engine", "vllm-v1")
    llama = cli.json("plan", "llama-3-8b", *args, "--engine", "vllm-v1")
    assert _printed_range(qwen3["launch_note"]) == "0.8.4-0.20.x"
    assert _printed_range(gpt_oss["launch_note"]) == "0.10.1-0.20.x"
    assert _printed_range(llama["launch_note"]) == "0.8.3-0.20.x"
    refused = cli.run("plan", str(reference_hf_config("qwen3-32b")), *args, "--engine", "vllm@0.8.3")
    assert refused.exit_code == 2 and "first in 0.8.4" in refused.output  # the tool's own refusal agrees


def test_online_fp8_takes_the_name_each_vllm_release_asks_for(cli):
    """Trial 368 #4: vLLM 0.31.0 on deprecate ``--quantization fp8`` for online quantisation ("use --quantization
    fp8_per_tensor instead", weight_utils.py), a name first in 0.20.0: the latest and a 0.31+ line write the new
    name, 0.30 and the V1 generation (whose range reaches 0.8.3) the old; SGLang's line keeps its own ``fp8``."""
    from mha_cli.core.engine.flags import line_problems
    from mha_cli.core.engine.launch_forms import fit_line

    args = ("plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--weight-dtype", "fp8", "--closed-form")
    latest = cli.json(*args)["launch"]
    assert "--quantization fp8_per_tensor" in latest["vllm"] and "--quantization fp8 " in latest["sglang"] + " "
    assert "--quantization fp8_per_tensor" in cli.json(*args, "--engine", "vllm@0.31")["launch"]["vllm"]
    for engine in ("vllm@0.30", "vllm-v1"):
        words = shlex.split(cli.json(*args, "--engine", engine)["launch"]["vllm"])
        assert words[words.index("--quantization") + 1] == "fp8", engine
    line = shlex.split("vllm serve m --quantization fp8 --max-model-len 1280")
    assert fit_line("vllm", release_key("0.31.0"), line).words == [*line[:3], "--quantization", "fp8_per_tensor",
                                                                    *line[5:]]  # fmt: skip
    assert fit_line("vllm", release_key("0.30.0"), line).words == line
    renamed = [*line[:4], "fp8_per_tensor", *line[5:]]
    assert line_problems("vllm", release_key("0.20.0"), renamed) == []
    assert line_problems("vllm", release_key("0.19.0"), renamed) != []  # not in 0.19.0's QuantizationMethods


def test_the_range_of_an_fp8_mla_line_starts_where_vllm_starts_that_cache(cli):
    """Review 370 #7: an fp8 MLA cache priced on vllm-v1 was told "0.8.3-0.20.x", where 0.8.3-0.10.1 stop on it on
    Hopper (FlashMLA) and 0.10.2-0.17 on an A100 (Triton MLA: core.engine.mla_fp8): the range starts at 0.10.2 and
    0.18.0; the control, the bf16 cache, keeps 0.8.3."""
    config = str(reference_hf_config("deepseek-v2-lite"))
    common = ("plan", config, "--engine", "vllm-v1", "--closed-form")
    for target, start in (("h100", "0.10.2"), ("a100-80gb", "0.18.0")):
        found = cli.json(*common, "--target", target, "--kv-cache-dtype", "fp8")
        assert _printed_range(found["launch_note"]) == f"{start}-0.20.x", target
    assert _printed_range(cli.json(*common, "--target", "h100")["launch_note"]) == "0.8.3-0.20.x"


def test_a_deepep_dp_attention_line_for_sglang_before_the_auto_assertion_is_told_its_own_releases(cli):
    """Review 370 #8: sglang@0.4.4.post3's DeepEP line (--enable-deepep-moe, no --deepep-mode: post3 has none and no
    assertion) was told "0.4.9-0.4.x", past the 0.4.4.post4-0.4.8 releases that assert on auto mode, so the release
    it is written for fell outside: the range is now the span holding it. sglang-0.4 (0.4.10.post2, as sglang@0.4)
    writes --moe-a2a-backend (review 370 #4: the generation's spelling had kept the deprecated flag)."""
    args = ("plan", "deepseek-v3", "--target", "8xh200", "--dp", "8", "--closed-form", "--moe-a2a-backend", "deepep")
    early = cli.json(*args, "--engine", "sglang@0.4.4.post3")
    assert "--enable-deepep-moe" in early["launch"]["sglang"]
    assert "run the sglang line on a release of 0.4.4.post2-0.4.4.post3;" in early["launch_note"]
    later = cli.json(*args, "--engine", "sglang@0.4.9")
    assert "run the sglang line on a release of 0.4.9-0.4.x;" in later["launch_note"]
    for spelling in ("sglang-0.4", "sglang@0.4"):
        line = cli.json(*args, "--engine", spelling)["launch"]["sglang"]
        assert "--moe-a2a-backend deepep" in line and "--enable-deepep-moe" not in line, spelling


def test_the_fp8_mla_range_keeps_to_v1_and_holds_the_release_typed(cli):
    """Review 373 #1: vLLM V0's line was told "none of 0.1-0.7" once V1's fp8 MLA rule bounded every vLLM range;
    #5: a release typed where the rules do not refuse (0.13.0 on a B300, not read; 0.9.2 on a B200, V0's fallback)
    was told a range that left it out. The range is now the span around the refused releases that holds it."""
    config = str(reference_hf_config("deepseek-v2-lite"))
    cases = (("h100", "vllm-v0", "0.5.2-0.7.x"), ("b300", "vllm@0.13.0", "0.12.0-0.20.x"),
             ("b200", "vllm@0.9.2", "0.8.3-0.9.x"), ("b300", "vllm-v1", "0.12.0-0.20.x"))  # fmt: skip
    for target, engine, span in cases:
        found = cli.json("plan", config, "--target", target, "--engine", engine, "--kv-cache-dtype", "fp8",
                         "--closed-form")  # fmt: skip
        assert _printed_range(found["launch_note"]) == span, (target, engine)


def test_the_generation_name_prices_as_its_last_minor_typed(cli):
    """Review 373 #3: sglang-0.4 was priced as release (0, 4), before every 0.4.x patch, so DeepSeek-V3's 256 experts
    over 12 ranks were refused as "SGLang before 0.4.6.post5 needs --ep-size to divide", while sglang@0.4
    (0.4.10.post2) priced them; both now price alike."""
    args = ("plan", "deepseek-v3", "--target", "12xh200", "--dp", "12", "--closed-form", "--concurrency", "64")
    named, typed = cli.run(*args, "--engine", "sglang-0.4"), cli.run(*args, "--engine", "sglang@0.4")
    assert named.exit_code == typed.exit_code == 0, named.output
