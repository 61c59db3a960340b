"""``--limit-mm-per-prompt`` and ``--text-only``: the multimodal items one prompt may hold, as vLLM takes them.

vLLM's flag takes a JSON object, ``{"image": 2, "video": 0}`` (a modality's value may be ``{"count": 2, ...}``
with a dummy size, of which only the count is read here), and its older ``image=2,video=0`` form. ``--text-only``
is vLLM's ``--language-model-only``: every modality the model's tower reads at 0. Pure Python.
"""

from __future__ import annotations

import json
from typing import Any

from mha_cli.core.engine.encoder_profile import model_modalities
from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import ModelSpec

MODALITIES = ("image", "video", "audio", "vision_chunk")
"""The modalities vLLM's flag names: Kimi-K2.5 reads images and video chunks as one, ``vision_chunk`` (vLLM 0.34
``kimi_k25.py`` ``get_supported_mm_limits``; review 378 #2)."""
MAX_ITEMS = 1 << 20
_EXAMPLE = "write it as vLLM does: image=2,video=0 or '{\"image\": 2}'"


def parse_limits(text: str) -> dict[str, int]:
    """``text`` as modality -> most items per prompt; ``BadInputError`` naming what is wrong."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            raw: Any = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise BadInputError(f"--limit-mm-per-prompt {text!r} is not valid JSON ({exc.msg}): {_EXAMPLE}") from None
        if not isinstance(raw, dict):
            raise BadInputError(f"--limit-mm-per-prompt {text!r}: {_EXAMPLE}")
        pairs = list(raw.items())
    else:
        pairs = []
        for part in filter(None, (p.strip() for p in stripped.split(","))):
            modality, equals, count = part.partition("=")
            if not equals:
                raise BadInputError(f"--limit-mm-per-prompt {text!r}: {part!r} has no '=': {_EXAMPLE}")
            pairs.append((modality.strip(), count.strip()))
    if not pairs:
        raise BadInputError(f"--limit-mm-per-prompt {text!r} names no modality: {_EXAMPLE}")
    return {str(modality): _count(modality, value) for modality, value in pairs}


def _count(modality: Any, value: Any) -> int:
    if modality not in MODALITIES:
        raise BadInputError(
            f"--limit-mm-per-prompt: unknown modality {str(modality)[:40]!r}; use {', '.join(MODALITIES)}"
        )
    if isinstance(value, dict):  # vLLM's {"count": N, "width": ..., "height": ...}
        value = value.get("count")
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_ITEMS:
        raise BadInputError(
            f"--limit-mm-per-prompt: {modality}'s count must be a whole number from 0 to {MAX_ITEMS:,},"
            f" got {str(value)[:40]!r}"
        )
    return value


def mm_limits(model: ModelSpec, limits: str | None, text_only: bool) -> dict[str, int] | None:
    """The deployment's ``limit_mm_per_prompt`` from the two options; None when neither is given. Refused for a
    model without a listed vision tower (the options would change none of its figures) and when ``text_only``
    meets a limit above 0."""
    if limits is None and not text_only:
        return None
    flag = "--text-only" if limits is None else "--limit-mm-per-prompt"
    if model.vision is None:
        raise BadInputError(
            f"{flag}: mha lists no vision tower for {model.name} (a text model, or a tower it does not read), so the"
            " option changes none of its figures: leave it out"
        )
    parsed = parse_limits(limits) if limits is not None else {}
    if text_only:
        if any(parsed.values()):
            raise BadInputError("--text-only sets every modality's limit to 0: give it or --limit-mm-per-prompt")
        parsed = dict.fromkeys(model_modalities(model.vision), 0)  # Gemma 4's audio tower too (review 360 #3)
    return parsed
