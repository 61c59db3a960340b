"""SGLang's step defaults on a 20-35 GiB GPU by release (``core.engine.settings.SGLANG_MID_TIER``): 0.5.20's
``arg_groups/memory_hook.py`` ``handle_gpu_memory_settings`` gives a 4096-token chunked prefill and a decode
CUDA-graph batch of 48 (tp < 4) where 0.5.5-0.5.19's ``server_args.py`` gave 2048 and 24, 0.5.3-0.5.4's 2048 and 16;
``--engine sglang`` is the newest read (0.5.23)."""

from __future__ import annotations

from mha_cli.core.engine.settings import resolve_settings, sglang_default_fraction
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import load_targets

L4 = load_targets()["l4"]


def _settings(engine: str):
    _, _, release = engine.partition("@")
    return resolve_settings(DeploymentSpec(engine="sglang", engine_version=release or None), L4, 1)


def test_a_24_gib_gpu_gets_a_4096_token_chunk_from_0_5_20_and_2048_before():
    newer, older, plain = _settings("sglang@0.5.20"), _settings("sglang@0.5.19"), _settings("sglang")
    assert (newer.max_num_batched_tokens, newer.cuda_graph_bs) == (4096, 48)
    assert (older.max_num_batched_tokens, older.cuda_graph_bs) == (2048, 24)
    assert (_settings("sglang@0.5.4").max_num_batched_tokens, _settings("sglang@0.5.4").cuda_graph_bs) == (2048, 16)
    assert (plain.max_num_batched_tokens, plain.cuda_graph_bs) == (4096, 48)  # the newest read, 0.5.23
    assert newer.utilisation == sglang_default_fraction(L4, 1, 4096, 48) < older.utilisation
    four = resolve_settings(DeploymentSpec(engine="sglang"), L4, 4)
    assert (four.max_num_batched_tokens, four.cuda_graph_bs) == (4096, 160)  # tp >= 4
    h100 = resolve_settings(DeploymentSpec(engine="sglang"), load_targets()["h100-sxm"], 1)
    assert (h100.max_num_batched_tokens, h100.cuda_graph_bs) == (8192, 256)  # other tiers unchanged
