"""Pipeline stages (``nn.pipeline``, ``core.pipeline``): chained on one device they are the whole decoder, each
stage's weights are exactly the layout's count, and each stage's cache its layers' (``core.kv``)."""

from __future__ import annotations

import pytest
import torch

from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import kv_footprint
from mha_cli.core.pipeline import stage_layout, stage_model, stage_params
from mha_cli.core.schemas import ModelSpec
from mha_cli.nn.model import build_model
from mha_cli.nn.pipeline import build_stage
from mha_cli.nn.tensor_parallel import seeded_tensor

SPECS = {
    "llama-like": ModelSpec(d_model=64, n_layers=4, n_heads=4, n_kv_heads=2, vocab_size=97, d_ff=128),
    "local-global": ModelSpec(d_model=64, n_layers=4, n_heads=4, n_kv_heads=2, vocab_size=97, d_ff=128,
                              sliding_window=5, layer_pattern=["local", "global"], n_norms_per_layer=4),
    "moe, dense first": ModelSpec(d_model=64, n_layers=4, n_heads=4, vocab_size=97, d_ff=128,
                                  moe=dict(n_experts=4, n_active_experts=2, d_ff_expert=32, n_dense_layers=1)),
    "gpt2-like, tied": ModelSpec(d_model=64, n_layers=4, n_heads=4, vocab_size=97, d_ff=128, mlp="plain",
                                 norm="layernorm", tied_embeddings=True, position_embeddings=64, qkv_bias=True,
                                 o_bias=True, mlp_bias=True),
    "gemma-like arithmetic": ModelSpec(d_model=64, n_layers=4, n_heads=4, n_kv_heads=2, vocab_size=97, d_ff=128,
                                       sliding_window=5, layer_pattern=["local", "global"], n_norms_per_layer=4,
                                       qk_norm=True, tied_embeddings=True, norm_weight_offset=1.0,
                                       scale_embeddings=True, activation="gelu_tanh", attn_scale=0.2,
                                       attn_logit_softcap=5.0, final_logit_softcap=3.0, rope=dict(theta=1e6),
                                       rope_local=dict(theta=1e4)),
    "mla": ModelSpec(d_model=64, n_layers=4, n_heads=4, vocab_size=97, d_ff=128,
                     mla=dict(kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16)),
}  # fmt: skip
SEED = 3


def _whole(spec: ModelSpec) -> torch.nn.Module:
    model = build_model(spec, dtype=torch.float32)
    model.load_state_dict({n: seeded_tensor(n, t.shape, SEED) for n, t in model.state_dict().items()}, strict=True)
    return model.eval()


def _stages(spec: ModelSpec, pp: int) -> list:
    stages = []
    for s in range(pp):
        stage = build_stage(spec, pp, s, dtype=torch.float32)
        weights = {n: seeded_tensor(stage.whole_model_name(n), t.shape, SEED) for n, t in stage.state_dict().items()}
        stage.load_state_dict(weights, strict=True)
        stages.append(stage.eval())
    return stages


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("pp", [2, 3, 4])  # 3: vLLM's uneven split of the 4 layers, 1 + 2 + 1
def test_chained_stages_are_the_whole_decoder(name, pp):
    spec = SPECS[name]
    whole, stages = _whole(spec), _stages(spec, pp)
    ids = torch.randint(0, spec.embeddings.vocab_size, (2, 12), generator=torch.Generator().manual_seed(0))  # (b, s)
    with torch.inference_mode():
        caches = whole.new_cache(2, 16)
        stage_caches = [stage.new_cache(2, 16) for stage in stages]
        expected = [whole(ids[:, :8], caches, 0)]  # prefill, then decode steps
        got = []
        x = ids[:, :8]
        for stage, cache in zip(stages, stage_caches, strict=True):
            x = stage(x, cache, 0)
        got.append(x)
        for pos in range(8, 12):
            expected.append(whole(ids[:, pos : pos + 1], caches, pos))
            x = ids[:, pos : pos + 1]
            for stage, cache in zip(stages, stage_caches, strict=True):
                x = stage(x, cache, pos)
            got.append(x)
    for want, have in zip(expected, got, strict=True):
        torch.testing.assert_close(have, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("pp", [2, 3])
def test_each_stage_holds_the_layouts_weights_and_its_layers_cache(name, pp):
    spec = SPECS[name]
    for stage_index, stage in enumerate(_stages(spec, pp)):
        layout = stage_layout(spec, pp, stage_index)
        assert sum(p.numel() for p in stage.parameters()) == stage_params(spec, layout)
        expected = kv_footprint(stage_model(spec, layout), seq_len=16, batch=2, kv_dtype="fp32").total_bytes
        assert sum(cache.nbytes for cache in stage.new_cache(2, 16, dtype=torch.float32)) == expected
    whole = sum(p.numel() for p in build_model(spec, device="meta").parameters())
    copy = (
        spec.embeddings.vocab_size * spec.d_model if spec.embeddings.tied else 0
    )  # a tied head's copy on the last stage
    assert sum(stage_params(spec, stage_layout(spec, pp, s)) for s in range(pp)) == whole + copy


def test_stages_that_do_not_split_are_refused():
    spec = SPECS["llama-like"]
    with pytest.raises(BadInputError, match="pp 5 exceeds the 4 layers"):
        stage_layout(spec, 5, 0)
    with pytest.raises(BadInputError, match="not one of the 2 stages"):
        stage_layout(spec, 2, 2)
