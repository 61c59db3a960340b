"""The first vLLM release that caches an MLA model's latent, read in the released wheels (``pip download vllm==X
--no-deps``, ``vllm/config.py``): 0.7.1 adds ``ModelConfig.use_mla`` and caches the latent (its ``get_head_size``:
kv_lora_rank + qk_rope_head_dim). Before it, DeepSeek-V2 and V3 are cached as plain attention, K and V per KV head at
one head size: 256 to 0.6.6.post1 ("we need to pad head_size 192 to 256", for FlashAttention), qk_nope_head_dim +
qk_rope_head_dim in 0.7.0. Those caches are not priced: such a release is refused for an MLA model (review 317 #4).
Pure Python."""

from __future__ import annotations

from mha_cli.core.engine.release_numbers import release_key
from mha_cli.core.schemas import ModelSpec

LATENT_CACHED_FROM = release_key("0.7.1")
PADDED_FAMILIES = frozenset({"deepseek_v2", "deepseek_v3"})
"""The model types ``get_head_size`` pads (the MLA models those releases serve; a design with MLA is not one)."""


def mla_before_latent_refusal(release: str | None, model: ModelSpec) -> str | None:
    """Why vLLM ``release`` (as typed; None: the generation's last, which caches it) is refused for ``model``, a
    DeepSeek-V2 or V3; None where it caches the latent or the model is another."""
    if model.family not in PADDED_FAMILIES or release is None or release_key(release) >= LATENT_CACHED_FROM:
        return None
    padded = "256" if release_key(release) < release_key("0.7.0") else "qk_nope_head_dim + qk_rope_head_dim"
    return (
        f"vLLM {release} caches {model.name}'s MLA as plain attention, K and V for every KV head at head size"
        f" {padded} (vllm/config.py get_head_size; the latent is cached from 0.7.1): that cache is not priced: use"
        " --engine vllm@0.7.1 or later"
    )
