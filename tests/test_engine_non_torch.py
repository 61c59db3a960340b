"""Non-torch memory at tp > 1 by part and vLLM release (``core.engine.non_torch``): bytes by hand, and the KV budget
they move."""

from mha_cli.core.engine.generations import BY_ID
from mha_cli.core.engine.non_torch import fused_allreduce_part, non_torch_bytes, non_torch_how
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import load_targets, resolve_target

GIB = 2**30


def _target(name: str):
    return resolve_target(name).target


def test_nvswitch_hopper_at_tp_4_pays_the_measured_2_1_gib():
    # 2.1 GiB = 2,254,857,830.4 B, rounded: the figure vLLM 0.19's H100 logs print at tp 2 and 4 (2.07-2.21)
    assert non_torch_bytes(4, _target("h100-sxm")) == 2_254_857_830
    assert non_torch_bytes(8, _target("b200")) == 2_254_857_830
    assert "H100 logs" in non_torch_how(4, _target("h100-sxm"))


def test_pcie_ada_at_tp_2_pays_the_one_rank_quarter_gib():
    # 0.25 GiB = 268,435,456 B: no FlashInfer all-reduce fusion (capability 8.9) and no NVLS (no NVSwitch)
    assert non_torch_bytes(2, _target("l4")) == 268_435_456
    assert non_torch_bytes(8, _target("l40s")) == 268_435_456
    assert non_torch_bytes(2, _target("a100-80gb")) == 268_435_456
    assert "no all-reduce fusion" in non_torch_how(2, _target("l4"))
    # trial 402 #7: an MI300X's line named NVLS and NCCL; it says the figure is NVIDIA's and RCCL's is not measured
    amd = non_torch_how(8, _target("mi300x"))
    assert non_torch_bytes(8, _target("mi300x")) == 268_435_456 and "NVLS" not in amd and "RCCL" in amd


def test_one_rank_is_the_same_everywhere():
    assert non_torch_bytes(1, _target("h100-sxm")) == non_torch_bytes(1, _target("l4")) == 268_435_456


def test_hopper_and_blackwell_datacenter_parts_only():
    assert all(fused_allreduce_part(_target(t)) for t in ("h100-sxm", "h100-pcie", "h200", "h20", "b300", "gb200"))
    # RTX 50xx and RTX PRO Blackwell are capability 12.0: vLLM 0.19 leaves the fusion off there
    assert not any(fused_allreduce_part(_target(t)) for t in ("rtx-5090", "rtx-pro-6000-ws", "l40s", "a100-80gb"))
    assert not fused_allreduce_part(_target("mi300x"))


def test_the_pool_gains_what_the_pcie_rule_stops_charging():
    model = get_preset("llama-3-8b")
    kv = kv_footprint(model, seq_len=8192, tp=2)
    l40s = _target("l40s")
    settings = resolve_settings(DeploymentSpec(), l40s, 2)
    plan = plan_engine(model, kv, l40s, settings, weights_bytes_per_rank=8 * 10**9, sequences_per_replica=1)
    assert plan.non_torch_bytes == 268_435_456
    line = next(line for line in plan.budget if line.label == "non-torch memory")
    assert line.bytes == -268_435_456


def test_a_target_file_is_judged_by_its_compute_capability_not_its_name():
    """Trial 338 #2: files with the same figures priced 0.25 or 2.1 GiB of non-torch memory by a word of their name
    ("Acme B200 144GB" in, "Acme X144" out, an 8.0 part named "H100-like" in). vLLM decides by capability."""
    h100 = load_targets()["h100-sxm"]
    named_anything = h100.model_copy(update={"id": "x144.yaml", "name": "Acme X144 144GB"})
    ada_named_h100 = h100.model_copy(
        update={"id": "gpu.yaml", "name": "Acme H100-like part", "compute_capability": 8.9}
    )
    ultra = h100.model_copy(update={"id": "u.yaml", "name": "Acme U", "compute_capability": 10.3})
    assert fused_allreduce_part(named_anything) and not fused_allreduce_part(ada_named_h100)
    assert fused_allreduce_part(ultra) and not fused_allreduce_part(ultra, (0, 18))  # the 10.x family from 0.19
    for row in load_targets().values():  # the table's rows as the names read them before
        named = row.vendor == "NVIDIA" and row.id.split("-")[0] in ("h100", "h200", "h20", "h800", "gh200", "b200",
                                                                     "gb200", "b300", "gb300")  # fmt: skip
        assert fused_allreduce_part(row) == named, row.id


def test_the_fusion_is_a_default_from_vllm_0_17():
    """vLLM 0.11-0.16 leave the all-reduce fusion off at every level (``enable_fi_allreduce_fusion: bool = False``,
    ``fuse_allreduce_rms: False``); 0.17 turns it on at O2 on capability 9.0 and 10.0 (vllm-project/vllm#34299)."""
    h100 = _target("h100-sxm")
    assert non_torch_bytes(2, h100, (0, 10)) == 268_435_456
    assert non_torch_bytes(2, h100, (0, 11)) == 268_435_456
    assert non_torch_bytes(4, h100, (0, 16)) == 268_435_456
    assert non_torch_bytes(2, h100, (0, 17)) == 2_254_857_830
    assert non_torch_bytes(2, h100, (0, 19)) == 2_254_857_830
    assert non_torch_bytes(2, h100, (0, 32)) == 2_254_857_830
    assert "vLLM 0.11 leaves the all-reduce fusion off on h100-sxm" in non_torch_how(2, h100, (0, 11))


def test_b300_joins_in_vllm_0_19():
    """0.17-0.18 test ``is_device_capability(100)``, exactly 10.0; 0.19 the 10.x family (vllm-project/vllm#37755)."""
    b200, b300 = _target("b200"), _target("b300")
    assert non_torch_bytes(2, b200, (0, 17)) == 2_254_857_830
    assert non_torch_bytes(2, b300, (0, 17)) == non_torch_bytes(2, b300, (0, 18)) == 268_435_456
    assert non_torch_bytes(2, b300, (0, 19)) == 2_254_857_830
    assert not fused_allreduce_part(_target("l40s"), (0, 19))


def _h100_tp2_plan(**deployment):
    model = get_preset("llama-3-8b")
    kv = kv_footprint(model, seq_len=8192, tp=2)
    h100 = _target("h100-sxm")
    settings = resolve_settings(DeploymentSpec(**deployment), h100, 2)
    return plan_engine(model, kv, h100, settings, weights_bytes_per_rank=8 * 10**9, sequences_per_replica=1)


def test_the_plan_takes_the_typed_release_else_the_generations_last():
    """``--engine vllm@0.11.0`` pays the one-rank figure on two H100s; ``vllm-v1`` alone is its last release, 0.20
    (fused); ``vllm-v0`` is 0.7 (none)."""
    typed = _h100_tp2_plan(engine="vllm", engine_generation="vllm-v1", engine_version="0.11.0")
    assert typed.non_torch_bytes == 268_435_456
    line = next(line for line in typed.budget if line.label == "non-torch memory")
    assert line.bytes == -268_435_456 and "vLLM 0.11" in line.how
    assert _h100_tp2_plan(engine="vllm", engine_generation="vllm-v1", engine_version="0.17.1").non_torch_bytes == (
        2_254_857_830
    )
    assert _h100_tp2_plan(engine="vllm", engine_generation="vllm-v1").non_torch_bytes == 2_254_857_830
    assert _h100_tp2_plan(engine="vllm", engine_generation="vllm-v0").non_torch_bytes == 268_435_456
    assert _h100_tp2_plan().non_torch_bytes == 2_254_857_830  # the latest vLLM
    # with the sampler held (0.11 sorts in PyTorch, 0.17 in Triton), the pool gains the bytes no longer charged
    older, newer = (
        _h100_tp2_plan(engine="vllm", engine_generation="vllm-v1", engine_version=release, vllm_sampler="triton")
        for release in ("0.16.0", "0.17.0")
    )
    assert older.available_kv_bytes - newer.available_kv_bytes == 2_254_857_830 - 268_435_456


def test_a_release_outside_the_generation_is_not_its_own():
    """A release typed for another generation (the log table's control column) leaves the generation's last."""
    assert _h100_tp2_plan(engine="vllm", engine_generation="vllm-0.21", engine_version="0.11.0").non_torch_bytes == (
        2_254_857_830
    )


def test_a_generations_last_release():
    assert BY_ID["vllm-v0"].last == (0, 7) and BY_ID["vllm-v1"].last == (0, 20)
    assert BY_ID["vllm-0.21"].last is None and BY_ID["trtllm-cpp"].last is None


def test_another_engine_s_plan_says_the_non_torch_figure_is_vllm_s(cli):
    """Trial 354 #10: SGLang's and TensorRT-LLM's plans read "measured in vLLM's logs" as their own measurement."""

    def non_torch(*engine: str) -> str:
        budget = cli.json("kv", "llama-3-8b", "--target", "h100", *engine)["engine"]["budget"]
        return next(line["how"] for line in budget if line["label"] == "non-torch memory")

    for engine in ("sglang", "trtllm"):
        assert non_torch("--engine", engine).startswith(f"vLLM's figure, charged to {engine} too")
    assert non_torch().startswith("measured in vLLM's logs, tp 1")
