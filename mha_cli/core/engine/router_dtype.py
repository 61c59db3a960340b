"""The dtype a serving engine's MoE router (the gate's d_model x n_experts matmul) keeps its weights and multiplies in.

Read in vLLM 0.16.0's model code (the wheel, ``pip download vllm==0.16.0 --no-deps``):

- ``models/nemotron_h.py`` ``NemotronHMoE``: ``self.gate = ReplicatedLinear(..., params_dtype=torch.float32,
  quant_config=None)``, called as ``self.gate(hidden_states.to(dtype=torch.float32))``: an fp32 matmul (at torch's
  ``"highest"`` precision, ``core.compute_dtype``), whatever the checkpoint's format;
- ``models/deepseek_v2.py`` ``DeepseekV2MoE`` (DeepSeek-V2/V3): ``ReplicatedLinear(..., quant_config=None)`` in the
  model's dtype (only its ``e_score_correction_bias`` is fp32): bf16;
- ``models/qwen3_moe.py``, ``qwen3_next.py``, ``qwen2_moe.py``: ``ReplicatedLinear(..., quant_config=quant_config)``:
  the model's dtype unless the checkpoint quantises the gate (their FP8 releases leave it out; mha's memory plan keeps
  routers in bf16, ``core.weight_bytes``): bf16;
- ``models/gpt_oss.py`` ``MLPBlock.router``: a ``torch.nn.Linear`` in the model's dtype: bf16.

Other engines' routers are not read: they are priced as vLLM's. Pure Python.
"""

from mha_cli.core.compute_dtype import ComputeDtype

FP32_ROUTER_FAMILIES = frozenset({"nemotron_h"})
"""Families (transformers ``model_type``) whose vLLM MoE block keeps its router in fp32."""

ROUTER_BYTES: dict[ComputeDtype, int] = {"fp32": 4, "bf16": 2, "fp8": 1}
"""Bytes of one router weight (and of its input and logits) in each dtype."""


def router_dtype(family: str | None) -> ComputeDtype:
    """The dtype the router of a model of ``family`` is stored and multiplied in (vLLM 0.16.0, the module docstring)."""
    return "fp32" if family in FP32_ROUTER_FAMILIES else "bf16"
