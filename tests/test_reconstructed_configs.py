"""Qwen3.8-27B's config.json (hf_configs/SOURCES.md, configs2): not a stored copy but Qwen3.6-27B's verbatim file
with the one line two published notes give as the whole diff of the two hub files (``120c120``, transformers_version
4.57.1 -> 5.8.0.dev0). The fixture must stay exactly that, and price exactly as Qwen3.6-27B does."""

from mha_cli.core.kv import kv_footprint
from tests.conftest import reference_hf_config
from tests.test_kv_zoo import ENGINE_COUNTS, imported


def test_qwen38_is_qwen36_with_the_published_one_line_diff():
    old = reference_hf_config("qwen3.6-27b").read_text().splitlines(keepends=True)
    new = reference_hf_config("qwen3.8-27b").read_text().splitlines(keepends=True)
    assert len(old) == len(new)
    changed = [i + 1 for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    assert changed == [120]
    assert old[119].strip() == '"transformers_version": "4.57.1",'
    assert new[119].strip() == '"transformers_version": "5.8.0.dev0",'


def test_qwen38_prices_as_qwen36():
    """16 gated-attention layers of 4 KV heads x 256 (65,536 B a token in bf16) and 48 Gated DeltaNet states, the
    engine's count; the same model spec as Qwen3.6-27B's, so the same weights (27,356,728,560 parameters with the
    vision tower, `mha kv`)."""
    qwen38, qwen36 = imported("qwen3.8-27b").model, imported("qwen3.6-27b").model
    footprint = kv_footprint(qwen38, seq_len=8192)
    assert (footprint.bytes_per_token, footprint.state_bytes_per_seq) == ENGINE_COUNTS["qwen3.6-27b"]
    assert footprint.bytes_per_token == 16 * 2 * 4 * 256 * 2
    assert qwen38.model_copy(update={"name": qwen36.name}) == qwen36
