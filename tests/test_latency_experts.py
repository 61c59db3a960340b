"""``mha kv`` / ``mha recommend``'s latency (``core.cost.latency``) prices an MoE model's routed experts where the memory
plan placed them, as ``mha plan``'s step does (``core.cost.plan.serving_case``: ``core.memory.expert_layout``).

Before, its case carried no expert layout: under DP attention (``--dp 8``, tp 1) each device was priced reading
the experts its own 4 sequences touch among all 256, as if it held every expert, and no gather of the ranks' tokens.
"""

from math import isclose

from mha_cli.core.cost import stepper
from mha_cli.core.cost.work import decode_shape

V3 = "tests/fixtures/hf_configs/deepseek-v3.json"
KV_DP8 = ("kv", V3, "--target", "8xh200", "--seq", "128K", "--batch", "32", "--kv-dtype", "fp8", "--dp", "8")
"""8 DP-attention ranks of tp 1, 4 sequences each (test_dp_attention's layout); DeepSeek-V3 in fp8 blocks."""


def _spied_steppers(monkeypatch) -> list:
    """Every ``Stepper`` the run builds (the prior's, then the datasheet bound's)."""
    built = []

    class Spy(stepper.Stepper):
        def __init__(self, case, profile):
            super().__init__(case, profile)
            built.append(self)

    monkeypatch.setattr(stepper, "Stepper", Spy)
    return built


def test_kv_latency_under_dp_attention_reads_each_devices_own_experts(cli, monkeypatch):
    built = _spied_steppers(monkeypatch)
    latency = cli.json(*KV_DP8)["latency"]
    case = built[0].case
    assert (case.experts.ranks, case.experts.whole, case.experts.dp_attention) == (8, True, True)
    ops = {op.name: op for op in built[0].ops(decode_shape(4, 128 * 1024 - 1))}
    # by hand: the 8 ranks' 32 tokens pick 8 of 256 experts each; expected distinct experts touched
    touched = 256 * (1 - (1 - 8 / 256) ** 32)  # 163.25 of 256
    here = touched * 32 / 256  # of them, on this device's 32 experts (20.41); was 30.4 of all 256 for 4 tokens
    rows = round(32 * 8 / touched)  # 2 rows an expert
    weight = 2048 * 7168 + (2048 // 128) * (7168 // 128) * 4  # fp8 matrix + its fp32 128 x 128 block scales
    activations = rows * (2048 + 7168) * 2  # bf16 in and out
    for name, count in (("expert 2048x7168", 2 * 58), ("expert 7168x2048", 58)):  # gate and up, then down
        assert ops[name].count == count
        assert isclose(ops[name].bytes, here * (weight + activations), rel_tol=1e-12)
    gather = ops["experts' gather and reduce-scatter"]
    assert (gather.count, gather.ranks, gather.bytes) == (2 * 58, 8, 32 * 7168 * 2)  # every rank's tokens, bf16
    assert round(latency["decode_bound_ms"], 2) == 19.11  # was 24.39 with every device reading all 256 experts
