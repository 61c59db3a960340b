"""The verbatim configs added for the engine start-up logs of logs17 and logs21 (hf_configs/SOURCES.md, "Start-up log
models, fourteenth group" and "eighteenth group"), each priced against a reference independent of the importer: the KV bytes a token by hand and
the logs' own memory over their tokens, the weights against the checkpoint's tensor listing."""

from __future__ import annotations

import json

from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from tests.conftest import reference_hf_config

GIB = 2**30


def _imported(name: str):
    return import_hf_config(json.loads(reference_hf_config(name).read_text())).model


def test_qwen2_5_1_5b_instruct_matches_the_h200_logs():
    """Qwen/Qwen2.5-1.5B-Instruct: 28 layers of 2 KV heads x 128, 28,672 B a token, which is the 120.53 GiB over
    4,513,888 tokens of engine_logs.yaml 1601 (within the log's 0.01 GiB rounding); 1.54B parameters with tied
    embeddings, 2.88 GiB in bf16."""
    model = _imported("qwen2.5-1.5b-instruct")
    per_token = kv_footprint(model, seq_len=1, batch=1, kv_dtype="bf16").total_bytes
    assert per_token == 28 * 2 * 128 * 2 * 2 == 28_672
    assert abs(4_513_888 * per_token / GIB - 120.53) < 0.005
    params = count_params(model).total
    assert params == 1_543_714_304
    assert round(params * 2 / GIB, 2) == 2.88  # the log's load step measures 2.89 GiB


def test_qwen2_5_72b_instruct_counts_as_its_checkpoint():
    """Qwen/Qwen2.5-72B-Instruct: the report that holds the raw file lists 72,706,203,648 parameters in 37 files;
    80 layers of 8 KV heads x 128 are 81,920 B a token a rank at tp 4, the 5.11 GiB over 67,024 tokens of 1607."""
    model = _imported("qwen2.5-72b-instruct")
    assert count_params(model).total == 72_706_203_648
    per_token = kv_footprint(model, seq_len=1, batch=1, kv_dtype="bf16").total_bytes
    assert per_token == 80 * 8 * 128 * 2 * 2 == 327_680
    assert abs(67_024 * per_token // 4 / GIB - 5.11) < 0.005


def test_qwen3_4b_matches_the_h100_sglang_log():
    """Qwen/Qwen3-4B (logs20, hf_configs/SOURCES.md "seventeenth group"): 36 layers of 8 KV heads x 128, 147,456 B a
    token, whose K half over the 430,067 + 1 slots of engine_logs.yaml 1905 is the log's 29.53 GiB; the parameters by
    hand (tied embedding, q/k norms of 128), 4.02B."""
    model = _imported("qwen3-4b")
    per_token = kv_footprint(model, seq_len=1, batch=1, kv_dtype="bf16").total_bytes
    assert per_token == 36 * 8 * 128 * 2 * 2 == 147_456
    assert abs(430_068 * per_token / 2 / GIB - 29.53) < 0.005
    layer = 2560 * 4096 + 2 * 2560 * 1024 + 4096 * 2560 + 2 * 128 + 3 * 2560 * 9728 + 2 * 2560
    assert count_params(model).total == 151_936 * 2560 + 36 * layer + 2560 == 4_022_468_096


def test_qwen3_4b_matches_the_h200_logs_and_the_hub_count():
    """Qwen/Qwen3-4B: 36 layers of 8 KV heads x 128, 147,456 B a token: the 45.92 GiB over 334,352 tokens of
    engine_logs.yaml 2004 and the 66.89 GiB over 487,056 tokens of 2002; 4,022,468,096 parameters, the BF16 count the
    hub's model API gives (index id 70224730754), 7.49 GiB in bf16 (the logs' load step measures 7.56)."""
    model = _imported("qwen3-4b")
    per_token = kv_footprint(model, seq_len=1, batch=1, kv_dtype="bf16").total_bytes
    assert per_token == 36 * 8 * 128 * 2 * 2 == 147_456
    assert abs(334_352 * per_token / GIB - 45.92) < 0.005
    assert abs(487_056 * per_token / GIB - 66.89) < 0.005
    assert count_params(model).total == 4_022_468_096


def test_deepseek_r1_distill_qwen_1_5b_matches_the_h200_logs():
    """deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B: 28 layers of 2 KV heads x 128, 28,672 B a token, the 50.16 GiB over
    1,878,400 tokens of engine_logs.yaml 2005; embeddings of 151,936 x 1,536 (a loader's tensor shapes, index id
    61920139880), untied as the config says; 1.78B parameters, 3.31 GiB in bf16 (the log's load step measures 3.35)."""
    model = _imported("deepseek-r1-distill-qwen-1.5b")
    per_token = kv_footprint(model, seq_len=1, batch=1, kv_dtype="bf16").total_bytes
    assert per_token == 28 * 2 * 128 * 2 * 2 == 28_672
    assert abs(1_878_400 * per_token / GIB - 50.16) < 0.005
    params = count_params(model).total
    assert params == 1_777_088_000
    assert round(params * 2 / GIB, 2) == 3.31


def test_mistral_7b_instruct_v0_3_matches_the_rtx_pro_6000_log():
    """mistralai/Mistral-7B-Instruct-v0.3 (logs22, hf_configs/SOURCES.md "nineteenth group"): 32 layers of 8 KV heads x
    128 and no sliding window, 131,072 B a token, the 27.95 GiB over 228,960 tokens of engine_logs.yaml 2104; the
    parameters by hand from the source's tensor shapes (a 32,768-row vocabulary, an untied head), 13.50 GiB in bf16
    (the log's load step measures 13.51)."""
    model = _imported("mistral-7b-instruct-v0.3")
    per_token = kv_footprint(model, seq_len=1, batch=1, kv_dtype="bf16").total_bytes
    assert per_token == 32 * 8 * 128 * 2 * 2 == 131_072
    assert abs(228_960 * per_token / GIB - 27.95) < 0.005
    layer = 2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 4096 * 14336 + 2 * 4096
    params = count_params(model).total
    assert params == 2 * 32_768 * 4096 + 32 * layer + 4096 == 7_248_023_552
    assert round(params * 2 / GIB, 2) == 13.50
