"""``verify --pp N`` refused for memory names what to shrink. Before (newuser4), ``mha verify
outputs/configs/125m-2k-4090.yaml --device cpu --pp 2 --batch 100000`` answered "the embedding and head alone (in
fp32 for the check) do not fit: a larger machine, or GPUs" for a 60 MiB model whose cache of 100,000 sequences was
what did not fit; now it says to shrink the batch (no figure: the stages' sum leaves out the prefill's activations)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mha_cli.core.errors import OutOfMemoryError
from mha_cli.core.sources import load_source
from mha_cli.parallel.pipeline_plan import _check_memory

CONFIG = Path(__file__).resolve().parents[1] / "outputs" / "configs" / "125m-2k-4090.yaml"
GIB = 2**30


def check(batch: int) -> None:
    loaded = load_source(str(CONFIG))
    deployment = loaded.deployment.model_copy(update={"batch": batch})
    _check_memory(loaded.model, deployment, pp=2, tp=1, layers=2, device_type="cpu", free=16 * GIB, prompt=128)


def test_a_batch_too_large_is_answered_with_a_smaller_batch():
    with pytest.raises(OutOfMemoryError, match=r"usable: try a smaller --batch or a shorter --seq") as refused:
        check(100_000)
    assert "embedding and head alone" not in str(refused.value)


def test_a_batch_that_fits_passes():
    check(1)


def test_the_one_device_reference_is_counted_once():
    """The last stage's first rank builds the reference, once: at tp 2 its process holds it and its partner does not
    (the reference was counted on every tp rank of the last stage, refusing CPU runs that fit: a 70B config at pp 2
    tp 4 planned 71 GiB). The 125M config's reference: every parameter of its 2 check layers, embedding and head in
    fp32, and a 32-token fp32 cache."""
    from mha_cli.core.kv import kv_footprint
    from mha_cli.core.params import count_params
    from mha_cli.parallel.pipeline_plan import _stage_needs
    from mha_cli.verify.plan import first_layers

    loaded = load_source(str(CONFIG))
    check = first_layers(loaded.model, 2)
    reference = count_params(check).total * 4 + kv_footprint(check, seq_len=32, kv_dtype="fp32").total_bytes
    short = loaded.deployment.model_copy(update={"seq_len": 16})  # the stage's own run smaller than its check
    needs = _stage_needs(loaded.model, short, pp=2, tp=2, layers=2, batch=1, prompt=16)
    assert len(needs) == 4 and needs[0] == needs[1]  # stage 0's two ranks alike
    assert needs[2] - needs[3] == reference


def test_the_prefill_activations_are_counted():
    """A stage's own run holds its prefill's activations and logits beside its weights and cache (verify's
    workspace_bytes, as single-device verify counts them): 64 sequences of 128 prompt tokens need more than 1."""
    loaded = load_source(str(CONFIG))
    from mha_cli.parallel.pipeline_plan import _stage_needs

    one, wide = (
        _stage_needs(loaded.model, loaded.deployment, pp=2, tp=1, layers=2, batch=64, prompt=prompt)
        for prompt in (1, 128)
    )
    assert all(w > o for w, o in zip(wide, one, strict=True))
