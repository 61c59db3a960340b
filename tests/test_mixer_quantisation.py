"""Qwen3.5's split Gated DeltaNet projections are quantised as vLLM builds them (``core.mixer_quantisation``).

Hand counts on tests/fixtures/hf_configs/qwen3.5-4b.json: hidden 2560, 16 key heads and 32 value heads of 128, so a
Gated DeltaNet layer holds in_proj_qkv 8192 x 2560, in_proj_z 4096 x 2560, in_proj_b and in_proj_a 32 x 2560 each and
out_proj 2560 x 4096 (42,106,880 projection weights), beside conv1d 8192 x 4, dt_bias 32, A_log 32 and norm 128
(32,960 weights kept in bf16); 24 of its 32 layers are Gated DeltaNet.
"""

from mha_cli.core.mixer_quantisation import mixer_projections_quantised
from mha_cli.core.sources import load_source
from mha_cli.core.weight_bytes import model_bytes_by_kind
from tests.conftest import reference_hf_config

PROJECTIONS = 8192 * 2560 + 4096 * 2560 + 2 * 32 * 2560 + 2560 * 4096
REST = 8192 * 4 + 32 + 32 + 128
GDN_LAYERS = 24


def _qwen3_5_4b():
    return load_source(str(reference_hf_config("qwen3.5-4b"))).model


def test_split_projections_are_quantised_like_qwen3_next_s():
    model = _qwen3_5_4b()
    assert model.recurrent.split_projections
    assert mixer_projections_quantised(model.recurrent)


def test_a_gated_deltanet_layer_in_fp8_by_hand():
    """fp8 (``MatrixLayout(8, 4)``): a byte a weight and one fp32 scale for each of the five projections; the rest
    two bytes a weight. Before the rule (projections kept bf16) the layer was 2 x 42,106,880 + 2 x 32,960 B."""
    mixers = model_bytes_by_kind(_qwen3_5_4b(), "fp8", None)["mixer"]
    quantised_layer = PROJECTIONS * 1 + 5 * 4 + REST * 2
    assert quantised_layer == 42_172_820
    assert mixers == GDN_LAYERS * quantised_layer


def test_a_gated_deltanet_layer_in_bf16_by_hand():
    mixers = model_bytes_by_kind(_qwen3_5_4b(), "bf16", None)["mixer"]
    assert mixers == GDN_LAYERS * (PROJECTIONS + REST) * 2
