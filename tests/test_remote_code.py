"""Launch lines ask for ``--trust-remote-code`` where the checkpoint ships its tokenizer or config class as code
(``core.remote_code``), and only there: Kimi's tiktoken tokenizer, MiniMax-Text-01's config class; not MiniMax-M2 or
DeepSeek-V3, whose classes transformers has. transformers itself (a dev dependency) is the reference for which
``model_type`` it has a class for."""

from __future__ import annotations

import json

import pytest
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

from mha_cli.core.families import OLD_NAMES, known_model_types
from mha_cli.core.remote_code import (
    FAMILIES_WITHOUT_TRANSFORMERS_CLASS,
    PRESET_MODEL_TYPES,
    config_remote_code,
    remote_code_reason,
)
from mha_cli.core.sources import load_source
from tests.conftest import reference_hf_config

PLAN = ("--isl", "2000", "--osl", "500", "--closed-form")


def test_the_rule_names_the_code_each_checkpoint_ships():
    assert "tokenization_kimi.py" in remote_code_reason("kimi_k2", "configuration_deepseek.DeepseekV3Config")
    assert "tokenization_kimi.py" in remote_code_reason("kimi_linear", None)
    text01 = remote_code_reason("minimax_text_01", "configuration_minimax_text_01.MiniMaxText01Config")
    assert "model_type 'minimax_text_01'" in text01 and "configuration_minimax_text_01.MiniMaxText01Config" in text01
    assert remote_code_reason("acme_lm", "configuration_acme.AcmeConfig") is not None  # a model_type nobody knows
    # the controls: a class transformers has, or no code named to run
    assert remote_code_reason("minimax_m2", "configuration_minimax_m2.MiniMaxM2Config") is None
    assert remote_code_reason("deepseek_v3", "configuration_deepseek.DeepseekV3Config") is None
    assert remote_code_reason("llama", None) is None and remote_code_reason("acme_lm", None) is None


def test_which_model_types_lack_a_transformers_class_agrees_with_transformers():
    """The families mha registers that transformers has no config class for, and the older spellings mha reads as
    another family's, are exactly those transformers' own registry lacks."""
    lacking = {model_type for model_type in known_model_types() if model_type not in CONFIG_MAPPING_NAMES}
    assert lacking == FAMILIES_WITHOUT_TRANSFORMERS_CLASS
    assert not set(OLD_NAMES) & set(CONFIG_MAPPING_NAMES)
    for model_type, _ in PRESET_MODEL_TYPES.values():
        assert model_type not in CONFIG_MAPPING_NAMES or model_type.startswith("kimi")  # Kimi: its tokenizer


@pytest.mark.parametrize(
    ("fixture", "names"),
    [("kimi-k2-instruct", "Kimi-K2's"), ("kimi-k2.5", "Kimi-K2.5's"), ("kimi-k2.6-nvfp4", "Kimi-K2.5's"),
     ("kimi-linear-48b-a3b", "Kimi-Linear's"), ("minimax-m2", None), ("deepseek-v3", None), ("llama-3.1-8b", None)],
)  # fmt: skip
def test_a_published_config_says_whether_its_checkpoint_needs_the_flag(fixture, names):
    """The published config.json files: Kimi-K2.6's NVFP4 text model is ``deepseek_v3``, its outer ``kimi_k25``."""
    why = config_remote_code(json.loads(reference_hf_config(fixture).read_text()))
    assert (why is None) if names is None else why.startswith(names)
    assert load_source(str(reference_hf_config(fixture))).served.remote_code == why


def test_minimax_text_01s_own_config_class_is_named():
    config = json.loads(reference_hf_config("minimax-text-01").read_text())
    assert config_remote_code(config) is None  # the fixture keeps no auto_map: nothing names code to run
    config["auto_map"] = {"AutoConfig": "configuration_minimax_text_01.MiniMaxText01Config"}
    assert "configuration_minimax_text_01.MiniMaxText01Config" in config_remote_code(config)
    assert "configuration_minimax_text_01" in load_source("minimax-text-01").served.remote_code


def test_every_engines_line_trusts_the_checkpoints_code_and_says_why(cli):
    kimi = cli.json("plan", "kimi-linear-48b-a3b", "--target", "2xh100", *PLAN, "--engine", "trtllm")
    assert kimi["launch"]["vllm"].startswith("vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct ")
    assert kimi["launch"]["vllm"].split().count("--trust-remote-code") == 1
    assert kimi["launch"]["sglang"].split().count("--trust-remote-code") == 1
    assert kimi["launch"]["trtllm"].split().count("--trust_remote_code") == 1
    assert kimi["launch_note"].count("runs Python code from the checkpoint: Kimi-Linear's tokenizer") == 1
    assert "trtllm-serve's --trust_remote_code" in kimi["launch_note"]
    by_id = cli.json("plan", "moonshotai/Kimi-K2-Instruct", "--target", "8xh200", *PLAN, "--gpu-memory-utilization",
                     "0.95")  # fmt: skip
    assert by_id["launch"]["vllm"].split().count("--trust-remote-code") == 1
    control = cli.json("plan", "minimax-m2", "--target", "4xh200", *PLAN)  # its class is transformers' own
    assert control["launch"] and "trust" not in json.dumps(control["launch"]) + str(control["launch_note"])


def test_disaggregated_workers_trust_it_too(cli):
    split = cli.json("plan", "kimi-linear-48b-a3b", "--target", "4xh100", *PLAN, "--disaggregated")
    workers = [line for text in split["launch"].values() for line in text.splitlines() if "--model-path" in line
               or " serve " in line]  # fmt: skip
    assert len(workers) == 4 and all(line.split().count("--trust-remote-code") == 1 for line in workers)
    assert "runs Python code from the checkpoint: Kimi-Linear's tokenizer" in split["launch_note"]
