"""The RoPE cos/sin cache (``core.engine.rope_cache``): each table's bytes by hand from config.json, and the budget
line that takes it from the KV pool. The tables are vLLM's ``cos_sin_cache`` buffers: (positions, rotary_dim), cast
to the model's dtype (2 B), one per distinct RoPE, on every rank; SGLang's are the same tables kept in fp32 (4 B)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.rope_cache import SGLANG_BYTES_PER_VALUE, rope_cache_bytes, rope_tables
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.schemas import DeploymentSpec, RopeScaling
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target
from tests.spec_paths import copy_with

CONFIGS = Path(__file__).parent / "fixtures" / "hf_configs"
GIB = 2**30


def _model(name: str):
    return load_source(str(CONFIGS / f"{name}.json")).model


@pytest.mark.parametrize(
    ("config", "tables", "total"),
    [
        # llama3 scaling keeps max_position_embeddings rows: 131,072 x 128 x 2 B = 32 MiB
        ("llama-3.1-8b", [(131_072, 128)], 131_072 * 128 * 2),
        # no scaling: 40,960 x 128 x 2 B = 10 MiB
        ("qwen3-8b", [(40_960, 128)], 40_960 * 128 * 2),
        # global layers: linear factor 8, 131,072 x 8 rows of 256; local layers (theta 10,000): 131,072 rows of 256;
        # 512 MiB + 64 MiB = 0.5625 GiB, the "0.56 GiB of RoPE caches" tests/test_engine_logs.py names for log 8
        ("gemma-3-4b-it", [(1_048_576, 256), (131_072, 256)], (1_048_576 + 131_072) * 256 * 2),
        # Llama 4's 10M-token context: 10,485,760 x 128 x 2 B = 2.5 GiB, log 17's missing 2.5 GiB
        ("llama-4-scout-17b-16e", [(10_485_760, 128)], 10_485_760 * 128 * 2),
        # head_dim 64 (896 / 14), all of it rotated: 32,768 x 64 x 2 B = 4 MiB
        ("qwen2.5-0.5b", [(32_768, 64)], 32_768 * 64 * 2),
    ],
)  # fmt: skip
def test_tables_by_hand(config, tables, total):
    model = _model(config)
    assert rope_tables(model) == tables
    assert rope_cache_bytes(model) == total


def test_yarn_rows_are_the_original_context_times_the_factor():
    """YaRN precomputes original_max_position_embeddings x factor rows (``YaRNScalingRotaryEmbedding``): a
    Qwen3-8B with factor 4 over 32,768 holds 131,072 x 128 x 2 B = 32 MiB, whatever max_position_embeddings says."""
    model = _model("qwen3-8b")
    assert model.attention.rope is not None
    scaling = RopeScaling(type="yarn", factor=4.0, original_max_position_embeddings=32_768)
    scaled = copy_with(model, {"attention.rope": model.attention.rope.model_copy(update={"scaling": scaling})})
    assert rope_tables(scaled) == [(131_072, 128)] and rope_cache_bytes(scaled) == 32 * 2**20


def test_no_table_without_a_context_length():
    model = _model("qwen3-8b").model_copy(update={"context_length": None})
    assert rope_tables(model) == [] and rope_cache_bytes(model) == 0


def test_the_vllm_budget_takes_it_on_every_rank_and_the_control_loses_it():
    """Llama-4-Scout at tp 4 on H100: the 2.5 GiB table is whole on each rank, a line of its own in the budget;
    the available memory is exactly 2.5 GiB less than the same budget without it (the control)."""
    model, target = _model("llama-4-scout-17b-16e"), resolve_target("h100").target
    kv = kv_footprint(model, seq_len=8_192, tp=4)
    settings = resolve_settings(DeploymentSpec(seq_len=8_192, tp=4, engine_generation="vllm-v1"), target, 4)
    plan = plan_engine(model, kv, target, settings, weights_bytes_per_rank=50 * GIB, sequences_per_replica=1)
    line = next(line for line in plan.budget if line.label == "RoPE cos/sin cache")
    assert line.bytes == -10_485_760 * 128 * 2 and "10,485,760 positions x 128" in line.how
    without = plan_engine(
        model.model_copy(update={"context_length": None}), kv, target, settings, weights_bytes_per_rank=50 * GIB,
        sequences_per_replica=1,
    )  # fmt: skip
    assert without.available_kv_bytes - plan.available_kv_bytes == 10_485_760 * 128 * 2


def test_sglang_keeps_the_table_in_fp32():
    """Qwen3-235B-A22B at tp 4 with SGLang 0.4 (vLLM #21348's SGLang run, --mem-fraction-static 0.93): the table is
    262,144 positions x 128 x 4 B = 128 MiB on each rank, twice vLLM's bf16 one; the pool is exactly that much smaller
    than the control's without it, 2,788 tokens of 48,128 B (94 layers x 1 KV head x 128 x 2 x 2 B) fewer."""
    model, target = _model("qwen3-235b-a22b-instruct-2507"), resolve_target("h100").target
    assert rope_cache_bytes(model, SGLANG_BYTES_PER_VALUE) == 262_144 * 128 * 4 == 2 * rope_cache_bytes(model)
    kv = kv_footprint(model, seq_len=40_960, tp=4)
    spec = DeploymentSpec(
        seq_len=40_960, tp=4, engine="sglang", engine_generation="sglang-0.4", gpu_memory_utilization=0.93
    )
    settings = resolve_settings(spec, target, 4)
    plan = plan_engine(model, kv, target, settings, weights_bytes_per_rank=55 * GIB, sequences_per_replica=1)
    line = next(line for line in plan.budget if line.label == "RoPE cos/sin cache")
    assert line.bytes == -262_144 * 128 * 4 and "SGLang" in line.how
    control = plan_engine(
        model.model_copy(update={"context_length": None}), kv, target, settings, weights_bytes_per_rank=55 * GIB,
        sequences_per_replica=1,
    )  # fmt: skip
    assert control.available_kv_bytes - plan.available_kv_bytes == 262_144 * 128 * 4
    assert kv.bytes_per_token_per_rank == 94 * 128 * 2 * 2
    assert control.kv_tokens - plan.kv_tokens in (2_788, 2_789)  # 134,217,728 / 48,128 = 2,788.8, floors either side


def test_gemma4_full_layers_table_holds_the_whole_global_head_in_vllm():
    """vLLM 0.19.1/0.29.0 ``Gemma4RotaryEmbedding`` (the full layers' 'proportional' RoPE) passes head_size as
    rotary_dim, and ``Gemma4Attention`` gives the full layers global_head_dim 512: 262,144 x 512 for the full
    layers (not 512 x 0.25) and 262,144 x 256 for the sliding layers, 2 B each: 0.375 GiB. SGLang keeps the generic
    widths (its Gemma 4 tables not read): 262,144 x (64 + 256) x 4 B."""
    model = _model("gemma-4-26b-a4b")
    assert rope_tables(model) == [(262_144, 512), (262_144, 256)]
    assert rope_cache_bytes(model) == 262_144 * (512 + 256) * 2 == 0.375 * GIB
    assert rope_cache_bytes(model, SGLANG_BYTES_PER_VALUE, vllm=False) == 262_144 * (64 + 256) * 4


@pytest.mark.parametrize(
    "config", ["kimi-linear-48b-a3b", "granite-4.0-h-small", "nvidia-nemotron-3-nano-30b-a3b", "jamba-mini-1.5"]
)
def test_no_table_where_no_attention_layer_rotates(config):
    """Trial 371 #2: these hybrids' attention layers apply no RoPE (mha reads them as nope_layers global), and vLLM
    builds no rotary embedding for them (jamba.py and nemotron_h.py call no get_rope; granitemoehybrid.py only for
    position_embedding_type rope; Kimi's MLA passes rotary_emb=None), yet 32-128 MiB a rank was charged."""
    model = _model(config)
    assert model.attention.nope_layers == "global"
    assert rope_tables(model) == [] and rope_cache_bytes(model) == 0


def test_minimax_text_01s_vllm_table_is_fp32_at_the_engines_context():
    """Trial 371 #1: MiniMax-Text-01's 10,240,000 positions were priced, 2.44 GiB a rank; vLLM's minimax_text_01.py
    builds its table in fp32 at min(max_position_embeddings, max_model_len) positions: 8,192 x 128 x 4 B at 8K (the
    whole head, an upper bound: vLLM rotates the config's rotary_dim, 64). The control: Qwen3-Next keeps its table."""
    model = _model("minimax-text-01")
    assert model.context_length == 10_240_000
    assert rope_cache_bytes(model, max_model_len=8192) == 8192 * 128 * 4
    assert rope_cache_bytes(model, vllm=False, bytes_per_value=SGLANG_BYTES_PER_VALUE) == 10_240_000 * 128 * 4
    assert rope_cache_bytes(_model("qwen3-next-80b-a3b")) == 262_144 * 64 * 2
