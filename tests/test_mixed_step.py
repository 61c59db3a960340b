"""A step priced layer by layer in the formats the checkpoint stores: each matmul's bytes and compute dtype from the
scheme the memory plan reads (ignored layers in bf16, a mixer's projections by its rule), an fp32 router where vLLM
keeps it so (Nemotron-H), and each dtype's rate from the target's datasheet. Every figure a hand count."""

from __future__ import annotations

import pytest

from mha_cli.core.cost.priors import datasheet_profile, fitted_constants, prior_profile
from mha_cli.core.cost.step import op_seconds
from mha_cli.core.cost.work import Op, layer_ops, layer_weights, outside_ops
from mha_cli.core.params import count_params
from mha_cli.core.sources import load_source
from mha_cli.core.targets import load_targets
from mha_cli.core.weight_bytes import rank_checkpoint_bytes, rank_weight_bytes
from mha_cli.core.weight_scheme import SchemeRule, WeightScheme

CONFIGS = "tests/fixtures/hf_configs"
FP8 = SchemeRule(name="group_0", targets=["Linear"], format="fp8", value_bits=8, scale_bytes=4)
"""fp8 e4m3 on every linear layer, one fp32 scale per matrix (4 B)."""


def model(name: str):
    return load_source(f"{CONFIGS}/{name}.json").model


def fp8_scheme(*ignore: str) -> WeightScheme:
    return WeightScheme(method="compressed-tensors", format="fp8", rules=[FP8], ignore=list(ignore))


def test_ignored_layers_are_read_and_computed_in_bf16_and_alike_matrices_split_by_format():
    """Llama-3-8B (32 layers), fp8 but layer 0's q_proj and every o_proj ignored: q_proj is one bf16 matrix
    (4096 x 4096 x 2 B) and 31 fp8 ones (4096 x 4096 x 1 B + a 4 B scale); o_proj 32 bf16; down_proj fp8."""
    weights = layer_weights(model("llama-3-8b"), 1, "fp8", scheme=fp8_scheme("model.layers.0.self_attn.q_proj",
                                                                           "re:.*o_proj"))  # fmt: skip
    found = {(m.part, dtype): (m.count, held) for m, held, _, dtype in weights.matrices}
    assert found[("q_proj", "bf16")] == (1, 4096 * 4096 * 2)
    assert found[("q_proj", "fp8")] == (31, 4096 * 4096 + 4)
    assert found[("o_proj", "bf16")] == (32, 33_554_432)
    assert ("o_proj", "fp8") not in found
    assert found[("down_proj", "fp8")] == (32, 4096 * 14336 + 4)
    ops = layer_ops(model("llama-3-8b"), 16, weight_dtype="fp8", weights=weights)
    square = sorted((op.name, op.compute, op.count) for op in ops if op.name.startswith("attention 4096x4096"))
    assert square == [
        ("attention 4096x4096", "fp8", 31),  # q_proj of layers 1-31
        ("attention 4096x4096 (bf16)", "bf16", 1),  # layer 0's q_proj
        ("attention 4096x4096 (bf16)", "bf16", 32),  # every o_proj
    ]


@pytest.mark.parametrize(("target", "dtype", "tflops"), [
    ("h100-sxm", "bf16", 989.4), ("h100-sxm", "fp8", 1978.9), ("h100-sxm", "fp32", 67),  # NVIDIA H100 datasheet
    ("b200", "fp32", 75),  # NVIDIA HGX B200 specifications, per GPU
    ("a100-80gb", "fp32", 19.5),  # NVIDIA A100 datasheet (trial 366 #4: the bf16 rate, 312, before)
    ("l40s", "fp32", 91.6), ("t4", "fp32", 8.1),  # NVIDIA L40S datasheet, T4 launch specifications
    ("a10", "fp32", 125),  # no fp32 figure entered: the bf16 rate, its floor, said in the profile's source
    ("a100-80gb", "fp8", 312),  # no fp8 tensor cores: bf16
])  # fmt: skip
def test_a_matmul_is_timed_at_the_datasheet_rate_of_the_dtype_it_multiplies_in(target, dtype, tflops):
    profile = datasheet_profile(load_targets()[target], "bf16")
    op = Op(name="m", kind="matmul", count=1, bytes=1.0, flops=2e12, tokens=4096, compute=dtype)
    seconds, compute_bound = op_seconds(op, profile, 1)
    assert compute_bound and seconds == pytest.approx(2e12 / (tflops * 1e12))


def test_the_fp32_curve_is_the_tensor_curve_capped_at_the_fp32_peak():
    """H100's prior: fp32 runs at 67 TFLOP/s x the fitted matmul efficiency at every row count, not the bf16 curve's
    989.4 TFLOP/s x it (both flat since weight GEMMs price their rows on padded tiles, gemm_tiles; before, one row was
    as slow in fp32 as in bf16 on the saturating curve)."""
    profile = prior_profile(load_targets()["h100-sxm"], "fp8")
    efficiency = fitted_constants()["constants"]["matmul_efficiency"]
    curves = profile.matmul_by_dtype
    assert curves["fp32"].at(1) == curves["fp32"].at(65536) == pytest.approx(67e12 * efficiency)
    assert curves["bf16"].at(1) == pytest.approx(989.4e12 * efficiency)
    assert profile.matmul is curves["fp8"]  # the step's own format: the same curve


def test_nemotron_h_router_is_an_fp32_matmul_as_vllm_builds_it():
    """Nemotron-3-Nano (23 MoE layers, d_model 2688, 128 experts), 8,192 tokens at tp 2: the router replicated on
    each rank, 2 x 8192 x 2688 x 128 = 5.64 GFLOP a layer (129.7 GFLOP a step), its weights, input and logits fp32."""
    nemotron = model("nvidia-nemotron-3-nano-30b-a3b")
    routers = [op for op in layer_ops(nemotron, 8192, tp=2, weight_dtype="fp8") if op.name.startswith("router")]
    assert len(routers) == 1
    (router,) = routers
    assert (router.name, router.compute, router.count, router.kernels) == ("router (fp32)", "fp32", 23, 0.0)
    assert router.flops == 2 * 8192 * 2688 * 128 == 5_637_144_576
    assert router.bytes == 128 * 2688 * 4 + 8192 * (2688 + 128) * 4


def test_deepseek_v3_router_stays_bf16():
    """vLLM's DeepseekV2MoE gate: ReplicatedLinear in the model's dtype; 58 MoE layers, 256 experts x 7168."""
    (router,) = [op for op in layer_ops(model("deepseek-v3"), 4, tp=8, weight_dtype="fp8-block")
                 if op.name.startswith("router")]  # fmt: skip
    assert (router.compute, router.count) == ("bf16", 58)
    assert router.bytes == 256 * 7168 * 2 + 4 * (7168 + 256) * 2


# Qwen3-Next's Gated DeltaNet layer (36 of 48), d_model 2048: in_proj_qkvz 12288 x 2048, in_proj_ba 64 x 2048,
# out_proj 2048 x 4096; conv1d 8192 x 4, dt_bias 32, A_log 32, norm 128.
IN_PROJ = 12288 * 2048 + 64 * 2048  # 25,296,896
OUT_PROJ = 2048 * 4096  # 8,388,608
MIXER_REST = 8192 * 4 + 32 + 32 + 128  # 32,960


def test_mixer_projections_are_read_and_computed_as_the_scheme_stores_them():
    """fp8 on every linear layer but layer 0's input projections: 35 layers' input and 36 output projections fp8
    (one 4 B scale each), layer 0's input projections and every convolution and vector bf16; per layer the mean. The
    pattern names them as Qwen3-Next's checkpoint and vLLM do, under ``linear_attn`` (``core.checkpoint_names``)."""
    qwen = model("qwen3-next-80b-a3b")
    weights = layer_weights(qwen, 1, "fp8", scheme=fp8_scheme("re:model\\.layers\\.0\\.linear_attn\\.in_proj"))
    fp8_weights = 35 * IN_PROJ + 36 * OUT_PROJ
    bf16_weights = IN_PROJ + 36 * MIXER_REST
    mixers = {dtype: (weights, held) for dtype, weights, held in weights.mixers}
    assert weights.mixer_layers == 36
    assert mixers["fp8"] == pytest.approx((fp8_weights / 36, (fp8_weights + 4 * (35 * 2 + 36)) / 36))
    assert mixers["bf16"] == pytest.approx((bf16_weights / 36, 2 * bf16_weights / 36))
    ops = {op.name: op for op in layer_ops(qwen, 100, weight_dtype="fp8", weights=weights)}
    assert ops["mixer projections"].compute == "fp8" and ops["mixer projections (bf16)"].compute == "bf16"
    assert ops["mixer projections"].flops == pytest.approx(2 * 100 * fp8_weights / 36)
    assert ops["mixer projections"].kernels + ops["mixer projections (bf16)"].kernels == 2  # in and out: 2 a layer


def test_the_memory_plan_reads_the_same_mixer_bytes():
    """The memory plan prices the mixers by the same rule: storing every projection in fp8 saves 1 B a weight less
    the scales (36 x 3 of 4 B) against the scheme that ignores them."""
    qwen = model("qwen3-next-80b-a3b")
    stored = rank_checkpoint_bytes(qwen, 1, fp8_scheme())
    kept = rank_checkpoint_bytes(qwen, 1, fp8_scheme("re:.*linear_attn\\.(in_proj|out_proj)"))
    assert kept - stored == 36 * (IN_PROJ + OUT_PROJ) - 36 * 3 * 4


def test_a_named_format_stores_the_projections_of_the_mixers_vllm_quantises():
    """--weight-dtype fp8 without a scheme: Qwen3-Next's Gated DeltaNet projections are built with the quant config
    (vLLM 0.16.0 ``Qwen3NextGatedDeltaNet``), so they are fp8 (one 4 B scale each, 3 a layer), the convolution and
    vectors bf16; the memory plan prices them alike, exactly as the scheme of fp8 on every linear layer does."""
    qwen = model("qwen3-next-80b-a3b")
    assert layer_weights(qwen, 1, "fp8").mixers == (
        ("fp8", IN_PROJ + OUT_PROJ, IN_PROJ + OUT_PROJ + 3 * 4),
        ("bf16", MIXER_REST, 2 * MIXER_REST),
    )
    assert rank_weight_bytes(qwen, 1, "fp8") == rank_checkpoint_bytes(qwen, 1, fp8_scheme())
    assert rank_weight_bytes(qwen, 1, "bf16") - rank_weight_bytes(qwen, 1, "fp8") > 36 * (IN_PROJ + OUT_PROJ)


def test_mamba_1_projections_stay_bf16_whatever_the_format():
    """vLLM 0.16.0's ``MambaMixer`` (Mamba-1: Falcon-Mamba) builds its projections without the quant config: under
    fp8 and under a scheme of fp8 on every linear layer alike, every mixer weight is read and computed in bf16."""
    mamba = model("falcon-mamba-7b")
    per_layer = count_params(mamba).mixer_per_layer
    assert layer_weights(mamba, 1, "fp8").mixers == (("bf16", per_layer, 2 * per_layer),)
    assert layer_weights(mamba, 1, "fp8", scheme=fp8_scheme()).mixers == (("bf16", per_layer, 2 * per_layer),)


def test_the_lm_head_is_computed_in_the_dtype_it_is_stored_in():
    """Quantised checkpoints keep the head bf16 (``core.weight_formats``): computed in bf16; fp32 weights in fp32."""
    qwen = model("qwen3-next-80b-a3b")
    assert {op.name: op.compute for op in outside_ops(qwen, 8, 8, weight_dtype="fp8")}["lm head"] == "bf16"
    assert {op.name: op.compute for op in outside_ops(qwen, 8, 8, weight_dtype="fp32")}["lm head"] == "fp32"


def test_a_fitted_compute_factor_scales_every_dtypes_curve():
    """``mha calibrate --from`` scales the prior's rates: the per-dtype curves the step's matmuls read move with
    ``matmul`` (a fit that left them would change nothing for a step whose every matmul names its dtype)."""
    from mha_cli.core.serve.fit import Constants, apply

    prior = prior_profile(load_targets()["h100-sxm"], "fp8")
    fitted = apply(prior, Constants(compute=0.5))
    for dtype in ("bf16", "fp8", "fp32"):
        assert fitted.matmul_in(dtype).at(4096) == pytest.approx(0.5 * prior.matmul_in(dtype).at(4096))
