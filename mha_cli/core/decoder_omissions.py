"""What ``build_model`` leaves out of a family it builds only by geometry (for the verify report).

``build_model`` reproduces the Llama, Mistral, Qwen2/Qwen3 and DeepSeek-V2/V3 decoders exactly (same state-dict
names, same logits as transformers). For other families it builds the same geometry (heads, head width, windows,
MLP sizes, norms per layer, biases, tying), so weights and cache bytes are right, but some of the family's
arithmetic or parameter names differ. Each family's module in the registry lists those differences
(``Family.differences``), one sentence each.

The family is the spec's ``family`` (``hf_import`` and the presets set it), else the one its name spells
(``gemma-2-...``); a spec of no family lists nothing: the decoder builds exactly what its fields say.
"""

from __future__ import annotations

import re

from mha_cli.core.families import Family, family, family_named
from mha_cli.core.schemas import ModelSpec


def spec_family(spec: ModelSpec) -> Family | None:
    """The registered family of ``spec``: its ``family`` field, else the family its name or source spells."""
    if spec.family is not None:
        return family(spec.family)
    return family_named(f"{spec.name} {spec.source or ''}")


def omitted_details(spec: ModelSpec) -> list[str]:
    """Family details of ``spec`` that the built decoder does not reproduce (empty for Llama/Mistral/Qwen, DeepSeek-V2);
    for a config.json of a ``model_type`` no family module knows, that its decoder is only the standard fields'."""
    found = spec_family(spec)
    if found is not None:
        return list(found.differences)
    unknown = _unknown_model_type(spec)
    if unknown is None:
        return []
    return [
        f"model_type {unknown!r} is not a family mha knows: the decoder is built as a Llama-style decoder from its"
        " standard fields, and has not been compared with the family's own modeling code"
    ]


def _unknown_model_type(spec: ModelSpec) -> str | None:
    """The model_type of a spec read from a config.json whose family is not registered (``hf_import``'s source)."""
    match = re.fullmatch(r"Hugging Face config\.json \(model_type (.+)\)", spec.source or "")
    if match is None or family(match.group(1)) is not None:
        return None
    return match.group(1)
