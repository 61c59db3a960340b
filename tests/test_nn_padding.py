"""Padded batches: prompts of different lengths, left-padded to one length, run with transformers'
``attention_mask`` (and the ``position_ids`` derived from it).

Two independent checks, on the families the decoder equals transformers on (Llama 3, Qwen2, Qwen3, Mistral's
window, Qwen3's local:global layers, DeepSeek-V2/V3's MLA in both cache modes, Qwen3-MoE): each row of the padded
batch gives the logits of its prompt run alone (prefill and cached decode after it), and the batch equals
transformers' with the same mask and position ids. The control that must lose: without the mask, the padding
reaches the short prompt's logits.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from mha_cli.core.hf_import import import_hf_config
from mha_cli.nn import build_model
from tests import test_nn_mla_model as mla_cases
from tests import test_nn_model as dense_cases

TOLERANCE = 1e-4
SHORT, LONG, STEPS = 5, 9, 3
"""The short prompt is left-padded to the long one's length; then STEPS tokens are decoded one at a time."""

CASES = {name: (config, cls, "absorbed") for name, (config, cls) in dense_cases.CASES.items()}
CASES |= {f"{name}-{mode}": (config, cls, mode) for name, (config, cls, modes) in mla_cases.CASES.items()
          for mode in modes}  # fmt: skip


def _models(name: str) -> tuple[torch.nn.Module, torch.nn.Module]:
    config, class_name, mode = CASES[name]
    reference = mla_cases.reference_model(config, class_name)
    ours = build_model(import_hf_config(config).model, dtype=torch.float32, mla_mode=mode).eval()
    ours.load_state_dict(reference.state_dict(), strict=True)
    return reference, ours


def _batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ids (2, LONG + STEPS), attention_mask (2, LONG + STEPS), the short prompt and its continuation alone)."""
    g = torch.Generator().manual_seed(3)
    short = torch.randint(1, 128, (1, SHORT + STEPS), generator=g)
    long = torch.randint(1, 128, (1, LONG + STEPS), generator=g)
    pad = LONG - SHORT
    ids = torch.cat([torch.cat([torch.zeros(1, pad, dtype=torch.long), short], dim=1), long])  # (2, LONG + STEPS)
    mask = torch.ones_like(ids)
    mask[0, :pad] = 0
    return ids, mask, short


@pytest.mark.parametrize("name", list(CASES))
def test_each_row_of_a_padded_batch_is_its_prompt_alone_and_equals_transformers(name: str) -> None:
    reference, ours = _models(name)
    ids, mask, short = _batch()
    pad = LONG - SHORT
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # (2, t): what transformers' generate passes
    with torch.no_grad():
        batch = ours(ids[:, :LONG], attention_mask=mask[:, :LONG])  # (2, LONG, v)
        expected = reference(ids[:, :LONG], attention_mask=mask[:, :LONG], position_ids=positions[:, :LONG]).logits
        short_alone, long_alone = ours(short[:, :SHORT]), ours(ids[1:, :LONG])
        caches = ours.new_cache(batch=2, max_seq=LONG + STEPS)
        steps = [ours(ids[:, :LONG], caches, attention_mask=mask[:, :LONG])]
        for pos in range(LONG, LONG + STEPS):  # the mask grows by one real token per step
            steps.append(ours(ids[:, pos : pos + 1], caches, start_pos=pos, attention_mask=mask[:, : pos + 1]))
        short_full, long_full = ours(short), ours(ids[1:])  # each sequence whole, alone
    decoded = torch.cat(steps, dim=1)  # (2, LONG + STEPS, v)
    assert (batch[0, pad:] - short_alone[0]).abs().max() < TOLERANCE
    assert (batch[1] - long_alone[0]).abs().max() < TOLERANCE
    real = mask[:, :LONG].bool()
    assert (batch - expected).abs()[real].max() < TOLERANCE  # transformers, same mask and positions
    assert (decoded[0, pad:] - short_full[0]).abs().max() < TOLERANCE
    assert (decoded[1] - long_full[0]).abs().max() < TOLERANCE
    assert not torch.isnan(decoded).any()  # padding queries see themselves: finite rows


def test_without_the_mask_the_padding_reaches_the_short_prompt() -> None:
    _, ours = _models("llama-3")
    ids, _, short = _batch()
    pad = LONG - SHORT
    with torch.no_grad():
        unmasked = ours(ids[:, :LONG])  # the pad tokens are attended to, and positions are shifted
        alone = ours(short[:, :SHORT])
    assert (unmasked[0, pad:] - alone[0]).abs().max() > 100 * TOLERANCE


def test_a_mask_of_the_wrong_length_is_refused() -> None:
    _, ours = _models("llama-3")
    ids, mask, _ = _batch()
    with pytest.raises(ValueError, match="attention_mask must be"):
        ours(ids[:, :LONG], attention_mask=mask[:, : LONG - 1])
    with pytest.raises(ValueError, match="position_ids need the attention_mask"):
        ours(ids[:, :LONG], position_ids=torch.zeros(2, LONG, dtype=torch.long))
