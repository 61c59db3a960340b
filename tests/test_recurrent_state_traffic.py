"""A hybrid model's step reads and writes every running sequence's fixed state once per state layer, counted by
hand (vllmeff: the hypothesis that this traffic was missing from the step, checked and found priced).

vLLM's decode runs each Mamba-2 layer's ``selective_state_update`` and ``causal_conv1d_update`` on every running
request's SSM and conv state (``model_executor/layers/mamba/mamba_mixer2.py``): each state is read and written back,
2 x its bytes per sequence per layer per step, growing with the batch as a KV read does. A prompt chunk reads its
sequence's state and writes it once, whatever its length. The state's dtype is the engine's (``core.kv``): vLLM's
``NemotronHForCausalLMConfig`` takes Nemotron-3-Nano's stated ``mamba_ssm_cache_dtype`` float32, and keeps a Gated
DeltaNet state that no config types in the model's dtype (``MambaStateDtypeCalculator._mamba_state_dtype``: auto ->
the conv state's dtype).
"""

from __future__ import annotations

import json

import pytest

from mha_cli.core.cost.work import decode_shape, forward_ops, prefill_shape
from mha_cli.core.hf_import import import_hf_config
from tests.conftest import reference_hf_config

NANO_LAYERS = 23
NANO_RANK_STATE = 32 * 64 * 128 * 4 + (64 * 64 + 2 * 8 * 128) // 2 * 3 * 2
"""Nemotron-3-Nano on one rank of tp 2: 64 / 2 Mamba heads x head dim 64 x state 128 in float32, plus the conv
state's 6,144 / 2 channels (x, B, C) x (kernel 4 - 1) columns in bf16."""
NEXT_RANK_STATE = 32 // 4 * 128 * 128 * 2 + (2 * 16 * 128 + 32 * 128) // 4 * 3 * 2
"""Qwen3-Next-80B on one rank of tp 4: 32 / 4 value heads x 128 x 128 in bf16 (vLLM's auto), plus the conv state's
(2 x 16 key heads + 32 value heads) x 128 / 4 channels x 3 columns in bf16."""


def _model(name: str):
    return import_hf_config(json.loads(reference_hf_config(name).read_text())).model


def _state_op(ops):
    (op,) = [op for op in ops if op.name == "recurrent state"]
    return op


def test_nemotron_3_nano_decode_reads_and_writes_each_sequences_state_in_every_mamba_layer():
    model = _model("nvidia-nemotron-3-nano-30b-a3b")
    assert NANO_RANK_STATE == 1_048_576 + 18_432 == 1_067_008
    op = _state_op(forward_ops(model, decode_shape(400, 2304), tp=2, weight_dtype="fp8"))
    assert op.count == NANO_LAYERS
    assert op.bytes == 2 * 400 * NANO_RANK_STATE == 853_606_400
    assert op.count * op.bytes == 19_632_947_200  # about 19.6 GB a step on each rank at 400 running requests
    wider = _state_op(forward_ops(model, decode_shape(1024, 2304), tp=2, weight_dtype="fp8"))
    assert wider.bytes == 2 * 1024 * NANO_RANK_STATE  # linear in the batch, as a KV read


def test_a_prompt_chunk_reads_and_writes_its_state_once_whatever_its_length():
    model = _model("nvidia-nemotron-3-nano-30b-a3b")
    for tokens in (1, 2048, 8192):
        op = _state_op(forward_ops(model, prefill_shape(tokens), tp=2, weight_dtype="fp8"))
        assert op.bytes == 2 * NANO_RANK_STATE


def test_qwen3_next_s_gated_deltanet_state_is_read_in_vllm_s_bf16():
    model = _model("qwen3-next-80b-a3b")
    op = _state_op(forward_ops(model, decode_shape(64, 1024), tp=4))
    assert op.count == 36  # 48 layers, every fourth full attention
    assert NEXT_RANK_STATE == 262_144 + 12_288
    assert op.bytes == 2 * 64 * NEXT_RANK_STATE


def test_sglang_keeps_an_untyped_state_in_float32_and_its_step_reads_it_so():
    """SGLang's ``mamba2_state_dtype`` defaults to float32 (``core.engine.sglang_state_pool.sglang_state_model``):
    Qwen3-Next's state, which its config does not type, is read at twice vLLM's bytes; a typed one keeps its type."""
    from mha_cli.core.engine.sglang_state_pool import sglang_state_model

    model = _model("qwen3-next-80b-a3b")
    op = _state_op(forward_ops(sglang_state_model(model), decode_shape(64, 1024), tp=4))
    assert op.bytes == 2 * 64 * (32 // 4 * 128 * 128 * 4 + 12_288) == 2 * 64 * 536_576
    nano = _model("nvidia-nemotron-3-nano-30b-a3b")  # mamba_ssm_cache_dtype float32 stated
    assert sglang_state_model(nano) is nano


def test_the_serving_case_of_an_sglang_row_reads_sglang_s_state_dtype(rows):
    """The rows' steps (``core.cost.plan.serving_case``): SGLang's Qwen3-Next page in float32 (the one row whose
    state bytes move: Kimi-Linear's KDA state was float32 by the engine convention already), vLLM's Nemotron-3-Nano
    in its stated float32."""
    states = {(row.generation, row.case.model.name): row.case.model.recurrent.state_dtype
              for row in rows if row.case.model.recurrent is not None}  # fmt: skip
    assert states[("sglang-0.5", "qwen3-next-80b-a3b")] == "fp32"
    assert states[("vllm-v1", "nvidia-nemotron-3-nano-30b-a3b")] == "fp32"


def test_the_kv_latency_on_sglang_reads_its_float32_state(cli, monkeypatch):
    """``mha kv`` prices its latency on the engine's case too: Qwen3-Next-80B on 4 H100s under SGLang, one sequence,
    its Gated DeltaNet state in float32 (``engine_state_model``) where vLLM's convention keeps bf16. Each of the 36
    linear layers (48, every 4th full) reads and writes 32 / 4 value heads x 128 x 128 values per step, 2 bytes more
    each: 36 x 2 x 8 x 128 x 128 x 2 = 18,874,368 B more a decode step, 5.634 us at the datasheet's 3,350 GB/s."""
    from mha_cli.core.engine import sglang_state_pool

    args = ("kv", "qwen3-next-80b-a3b", "--target", "4xh100", "--engine", "sglang")
    fp32 = cli.json(*args)["latency"]["decode_bound_ms"]
    monkeypatch.setattr(sglang_state_pool, "engine_state_model", lambda model, engine: model)
    as_stored = cli.json(*args)["latency"]["decode_bound_ms"]
    assert (fp32 - as_stored) * 1e-3 == pytest.approx(36 * 2 * 8 * 128 * 128 * 2 / 3350e9, rel=1e-6)


@pytest.mark.parametrize(("tp", "conv_per_rank"), [(1, 8448), (2, (8192 + 2 * 2 * 128) // 2), (8, 1280)])
def test_a_mamba2_conv_whose_groups_do_not_divide_tp_is_priced_as_vllm_replicates_them(tp, conv_per_rank):
    """Granite-4.0-H-Small: 128 heads of 64, one B/C group of state 128, conv 8192 + 2 x 1 x 128 = 8,448 channels. At
    tp 8 vLLM makes the groups 8 (``extra_groups_for_head_shards``): (8192 + 2 x 8 x 128) / 8 = 1,280 a rank, not
    1,056 (found by newuser trial 240); at tp 2, (8192 + 2 x 2 x 128) / 2 = 4,352, not 4,224."""
    from mha_cli.core.kv import sharded_conv_dim, state_bytes_per_layer
    from mha_cli.core.presets import get_preset

    model = get_preset("granite-4.0-h-small")
    assert -(-sharded_conv_dim(model.recurrent, tp) // tp) == conv_per_rank
    # a layer's state on a rank: the conv's 3 columns and the SSM state (heads / tp x 64 x 128), both bf16
    ssm = 128 // tp * 64 * 128 * 2
    assert state_bytes_per_layer(model, "bf16", tp=tp) == conv_per_rank * 3 * 2 + ssm
