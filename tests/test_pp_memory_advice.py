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
    _check_memory(loaded.model, deployment, pp=2, tp=1, layers=2, device_type="cpu", free=16 * GIB)


def test_a_batch_too_large_is_answered_with_a_smaller_batch():
    with pytest.raises(OutOfMemoryError, match=r"usable: try a smaller --batch or a shorter --seq") as refused:
        check(100_000)
    assert "embedding and head alone" not in str(refused.value)


def test_a_batch_that_fits_passes():
    check(1)
