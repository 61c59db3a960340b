"""Weights of every hybrid pattern against transformers: each hybrid family's config class with small widths and a
layout of its layers (which layers attend, which keep a fixed state, which carry MoE, which no MLP at all), its
causal LM built on the meta device (nothing allocated, nothing downloaded), its parameters counted. ``count_params``
must equal it exactly.

Nemotron-H is the case that was wrong: its blocks are each one mixer or one feed-forward, and NVIDIA-Nemotron-3-Nano-
30B-A3B's pattern puts a Mamba-2 block straight before each attention block, so 23 of its 29 mixers carry an MoE
block, not all 29 (39.1B weights instead of 31.6B), and its experts are plain (up, down), not SwiGLU.
"""

from __future__ import annotations

import json
import warnings

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mha_cli.core.errors import BadInputError  # noqa: E402
from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.params import count_params  # noqa: E402
from tests.conftest import reference_hf_config  # noqa: E402

NEMOTRON_H = dict(
    hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128, mamba_num_heads=8,
    mamba_head_dim=16, ssm_state_size=8, n_groups=2, n_routed_experts=4, num_experts_per_tok=2,
    moe_intermediate_size=32, moe_shared_expert_intermediate_size=48, intermediate_size=40,
)  # fmt: skip
"""A small Nemotron-H: every width distinct, so a block counted in the wrong place cannot add up by chance."""
JAMBA = dict(
    hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96, mamba_d_state=8,
    mamba_expand=2, mamba_dt_rank=8, num_experts=4, num_experts_per_tok=2, vocab_size=128,
)  # fmt: skip
GRANITE_H = dict(
    hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=32, shared_intermediate_size=48,
    num_local_experts=4, num_experts_per_tok=2, vocab_size=128, mamba_n_heads=8, mamba_d_head=16, mamba_d_state=8,
)  # fmt: skip
QWEN3_NEXT = dict(
    hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=96,
    moe_intermediate_size=16, shared_expert_intermediate_size=24, num_experts=4, num_experts_per_tok=2,
    linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8, vocab_size=128,
)  # fmt: skip
LFM2 = dict(
    hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=192, vocab_size=128,
    block_multiple_of=32, layer_types=None,
)  # fmt: skip


def _transformers_count(config) -> int:
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def _weights(model_type: str, fields: dict) -> tuple[int, int]:
    """(transformers' parameters, ours) for ``model_type``'s config class with ``fields``."""
    config = transformers.AutoConfig.for_model(model_type, **fields)
    return _transformers_count(config), count_params(import_hf_config(config.to_dict()).model).total


NEMOTRON_PATTERNS = [
    "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",  # NVIDIA-Nemotron-3-Nano-30B-A3B's own
    "M-M-M-MM-M-M*-M-M*-M-",  # dense MLPs, consecutive Mamba-2 blocks (Nemotron-H / Nano-v2 style)
    "M-ME*-M*E",  # dense and MoE blocks among one model's layers, in no period
    "MM*",  # mixers only: no layer has an MLP
    "*EM",  # attention first, a lone Mamba-2 block last
    "MEM*E",  # the lone mixer between two MoE layers
]


@pytest.mark.parametrize("pattern", NEMOTRON_PATTERNS)
def test_every_nemotron_h_pattern_weighs_what_transformers_builds(pattern):
    reference, ours = _weights("nemotron_h", NEMOTRON_H | {"hybrid_override_pattern": pattern})
    assert ours == reference


def test_a_pattern_written_as_blocks_is_the_same_model():
    """The older hybrid_override_pattern and transformers 5's layers_block_type describe the same model."""
    letters = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
    config = transformers.AutoConfig.for_model(
        "nemotron_h", **NEMOTRON_H, layers_block_type=[letters[c] for c in NEMOTRON_PATTERNS[2]]
    )
    spelled = import_hf_config({**config.to_dict(), "layers_block_type": None,
                                "hybrid_override_pattern": NEMOTRON_PATTERNS[2]}).model  # fmt: skip
    assert import_hf_config(config.to_dict()).model == spelled


@pytest.mark.parametrize("pattern", ["E*M", "M-E", "MEE*"])
def test_a_feed_forward_block_that_follows_no_mixer_is_refused(pattern):
    """A feed-forward block first, or two in a row: no mixer block of its own to pair with, so refused, in one
    line naming the block."""
    with pytest.raises(BadInputError, match=r"block \d \((mlp|moe)\) follows no mixer block") as refused:
        import_hf_config({"model_type": "nemotron_h", **NEMOTRON_H, "hybrid_override_pattern": pattern})
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("layers", [3, 5])
def test_a_pattern_whose_length_is_not_num_hidden_layers_is_refused(layers):
    """vLLM's NemotronHConfig asserts ``len(hybrid_override_pattern) == num_hidden_layers``; transformers 5 would
    take the pattern's 4 blocks. Before: priced silently as the pattern's blocks."""
    config = {"model_type": "nemotron_h", **NEMOTRON_H, "hybrid_override_pattern": "M-*-", "num_hidden_layers": layers}
    with pytest.raises(BadInputError, match=rf"lists 4 blocks but num_hidden_layers is {layers}") as refused:
        import_hf_config(config)
    assert "\n" not in str(refused.value)
    assert import_hf_config(config | {"num_hidden_layers": 4}).model.n_layers == 2


def test_no_pattern_beside_a_layer_count_other_than_the_default_s_is_refused():
    """Nemotron-3-Nano without its pattern was priced as transformers' 4-block default (2 mixers, 2.07B) though the
    file says 52 layers, silently (newuser trial 243); vLLM's NemotronHConfig has a default pattern of its own. A file
    without the count is the default model, as transformers reads it."""
    config = json.loads(reference_hf_config("nvidia-nemotron-3-nano-30b-a3b").read_text())
    del config["hybrid_override_pattern"]
    with pytest.raises(BadInputError, match="no layers_block_type or hybrid_override_pattern but num_hidden_layers"):
        import_hf_config(config)
    del config["num_hidden_layers"]
    assert import_hf_config(config).model.n_layers == 2  # the default's 2 mixer blocks, each with its feed-forward


def test_nemotron_3_nano_weighs_its_published_31_6b():
    """The real config: 52 blocks, 23 Mamba-2 + 6 attention mixers, 23 MoE blocks (128 plain experts and a shared
    one each). transformers builds 31,577,937,344 parameters; NVIDIA publishes 31.6B (model card; also
    https://replicate.com/nvidia/nemotron-3-nano-30b-a3b/readme). Before: 39.1B and more (MoE on all 29 mixers,
    SwiGLU experts)."""
    config = json.loads(reference_hf_config("nvidia-nemotron-3-nano-30b-a3b").read_text())
    model = import_hf_config(config).model
    kinds = [model.mlp_kind(i) for i in range(model.n_layers)]
    assert model.n_layers == 29 and kinds.count("moe") == 23 and kinds.count("none") == 6
    assert model.count_layers("linear") == 23 and model.count_layers("global") == 6
    fields = {k: v for k, v in config.items() if k not in ("auto_map", "architectures", "model_type")}
    reference = _transformers_count(transformers.AutoConfig.for_model("nemotron_h", **fields))
    assert count_params(model).total == reference == 31_577_937_344
    assert round(reference / 1e9, 1) == 31.6


@pytest.mark.parametrize(
    ("attention", "experts"), [((8, 4), (2, 1)), ((2, 1), (1, 0)), ((4, 0), (3, 2)), ((3, 2), (2, 0))]
)  # fmt: skip
def test_every_jamba_period_weighs_what_transformers_builds(attention, experts):
    """Attention every attn_layer_period-th layer from its offset, MoE every expert_layer_period-th from its."""
    fields = JAMBA | {"num_hidden_layers": 8, "attn_layer_period": attention[0], "attn_layer_offset": attention[1],
                      "expert_layer_period": experts[0], "expert_layer_offset": experts[1]}  # fmt: skip
    reference, ours = _weights("jamba", fields)
    assert ours == reference


@pytest.mark.parametrize(
    ("change", "refused"),
    [({"attn_layer_period": 4, "attn_layer_offset": 4}, "attn_layer_offset 4 is not below attn_layer_period 4"),
     ({"expert_layer_period": 2, "expert_layer_offset": 3}, "expert_layer_offset 3 is not below expert_layer_period 2"),
     ({"layer_types": ["mamba"] * 8}, "layer_types is set, which JambaConfig derives")],
)  # fmt: skip
def test_a_jamba_config_transformers_refuses_is_refused(change, refused):
    """An offset not below its period left no attention layer (0 attention, 32 Mamba) and a layer_types list was
    read, where JambaConfig raises on the first and has no setter for the second (trial 358 #2)."""
    transformers = pytest.importorskip("transformers")
    from mha_cli.core.errors import BadInputError
    from mha_cli.core.hf_import import import_hf_config

    fields = JAMBA | {"num_hidden_layers": 8} | change
    with pytest.raises(Exception, match=r"must be smaller than|has no setter"):  # a validation error or AttributeError
        transformers.JambaConfig(**fields)
    with pytest.raises(BadInputError, match=refused):
        import_hf_config({"model_type": "jamba", **fields})


@pytest.mark.parametrize(
    "layer_types",
    [["mamba", "attention", "mamba", "mamba"], ["attention", "mamba", "mamba", "attention"], ["mamba"] * 4],
)
def test_every_granite_4_h_layout_weighs_what_transformers_builds(layer_types):
    reference, ours = _weights("granitemoehybrid", GRANITE_H | {"num_hidden_layers": 4, "layer_types": layer_types})
    assert ours == reference


@pytest.mark.parametrize(
    "layer_types",
    [["linear_attention", "linear_attention", "linear_attention", "full_attention"],
     ["full_attention", "linear_attention", "full_attention", "linear_attention"]],
)  # fmt: skip
def test_every_qwen3_next_layout_weighs_what_transformers_builds(layer_types):
    reference, ours = _weights("qwen3_next", QWEN3_NEXT | {"num_hidden_layers": 4, "layer_types": layer_types})
    assert ours == reference


@pytest.mark.parametrize("full_attn_idxs", [[1], [0, 3], []])
def test_every_lfm2_layout_weighs_what_transformers_builds(full_attn_idxs):
    reference, ours = _weights("lfm2", LFM2 | {"num_hidden_layers": 4, "full_attn_idxs": full_attn_idxs})
    assert ours == reference


def test_scattered_dense_layers_weigh_what_transformers_builds():
    """Qwen3-MoE with its layer 1 dense (mlp_only_layers): no period describes it, each layer's kind is listed.
    Before, read as all MoE (weights overstated, said)."""
    fields = {"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
              "intermediate_size": 96, "moe_intermediate_size": 16, "num_experts": 4, "num_experts_per_tok": 2,
              "vocab_size": 128, "mlp_only_layers": [1]}  # fmt: skip
    reference, ours = _weights("qwen3_moe", fields)
    assert ours == reference
