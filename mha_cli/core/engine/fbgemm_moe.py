"""The vLLM releases that cannot load an fbgemm fp8 checkpoint with routed experts, refused in one line.

``FBGEMMFp8Config.get_quant_method`` (``model_executor/layers/quantization/fbgemm_fp8.py``) returns a method for
linear layers only and None for a ``FusedMoE``, in every release read (0.5.5, 0.6.6, 0.7.3, 0.8.5, 0.9.2, 0.10.0,
0.10.1, 0.10.2, 0.11.0, 0.11.1, 0.29.0; the wheels, ``pip download vllm==X --no-deps``). What ``FusedMoE`` does with
that None (``fused_moe/layer.py`` ``FusedMoE.__init__``):

- up to 0.11.0 (read in each release above): ``assert quant_method is not None``: the model does not load;
- from 0.11.1 (``_get_quant_method``; ``routed_experts.py`` in 0.29.0): ``UnquantizedFusedMoEMethod``, the experts in
  the model's dtype, as mha prices them (``core.named_exclusions``).

Mixtral alone took another path up to 0.10.1: ``model_loader/utils.py`` (``get_model_architecture``, read in 0.5.5,
0.6.6, 0.7.3, 0.8.5, 0.9.2, 0.10.0 and 0.10.1; gone in 0.10.2) loads a ``MixtralForCausalLM`` whose method is not in
``mixtral_supported`` (fbgemm_fp8 never is) as ``QuantMixtralForCausalLM`` (``models/mixtral_quant.py``): every
expert a ``ReplicatedLinear`` the fbgemm method stores in fp8 on every rank, which mha does not price; refused too,
saying so. Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mha_cli.core.schemas import DeploymentSpec, ModelSpec

FIRST_LOADING = "0.11.1"
"""The first vLLM release whose ``FusedMoE`` loads a layer its quantization config has no method for (unquantised)."""
LAST_QUANT_MIXTRAL = "0.10.1"
"""The last vLLM release that loads a Mixtral of an unlisted method as ``QuantMixtralForCausalLM`` (its patch
0.10.1.1 too)."""
FIRST_MIXTRAL_FUSED = "0.10.2"
"""The first vLLM release whose Mixtral of any method is a FusedMoE."""


def fbgemm_moe_refusal(model: ModelSpec, deployment: DeploymentSpec) -> str | None:
    """Why vLLM's release priced (the one typed, else the newest read of the generation) cannot be priced for
    ``model``'s fbgemm fp8 checkpoint with routed experts (``WeightScheme.experts_unquantised``), in one line; None
    where it loads them as mha prices them, or the checkpoint is not one."""
    scheme = deployment.weight_scheme
    if model.block.moe is None or scheme is None or not scheme.experts_unquantised:
        return None
    if (deployment.engine or "vllm") != "vllm":
        return None
    from mha_cli.core.engine.architectures_served import release_priced
    from mha_cli.core.engine.flags import release_key

    release = release_priced("vllm", deployment.engine_version, deployment.engine_generation)
    if release is None or release_key(release) >= release_key(FIRST_LOADING):
        return None
    fix = f"give --engine vllm@{FIRST_LOADING} or later, which loads the routed experts unquantised (bf16)"
    if model.family == "mixtral" and release_key(release) < release_key(FIRST_MIXTRAL_FUSED):
        return (
            f"vLLM {release} loads {model.name}'s fbgemm_fp8 checkpoint as QuantMixtralForCausalLM, every expert an fp8"
            f" ReplicatedLinear on every rank (model_loader/utils.py, to {LAST_QUANT_MIXTRAL}), which mha does not"
            f" price: {fix}"
        )
    return (
        f"vLLM {release} cannot load {model.name}'s fbgemm_fp8 checkpoint: FBGEMMFp8Config has no method for its"
        f" routed experts and FusedMoE asserts one before {FIRST_LOADING} (fused_moe/layer.py): {fix}"
    )
