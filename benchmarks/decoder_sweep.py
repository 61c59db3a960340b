"""Every causal-LM family of the installed transformers: does `mha`'s torch decoder give transformers' logits?

For each family the cache sweep (benchmarks/family_sweep.py) builds, the same tiny config (its own config class,
shrunk) builds transformers' model with random weights (norms and biases moved off 1 and 0, fp32); `mha`'s
importer reads the config's ``to_dict()`` and ``build_model`` builds its decoder, which loads transformers' state
dict (every name and shape must match, after the renames, splits and transposes of the family's ``Family.weights``
for the families that store them otherwise); the logits of a batch of 2 x 12 tokens are compared, for a full prefill and for a cached decode (5
tokens, then one at a time). Each family lands in one class:

- equal: both within 1e-4;
- differs, listed: not equal, and the decoder's ``omitted`` names what it does not reproduce of the family;
- differs, unlisted: not equal and ``omitted`` empty, a silent difference (tests/test_family_sweep.py fails on
  any);
- does not load: transformers' weights do not load into ours by name or shape (the first names shown): loud, not
  silent (``load_state_dict(strict=True)`` would raise), and the logits are not compared;
- crashes: our decoder, built and loaded, fails in its forward pass (a bug; the test fails on any);
- not built: `mha` refuses to build the family (the line shown), or the cache sweep could not build it.

Run: `python benchmarks/decoder_sweep.py [--json] [--only TYPE ...]` (1-3 minutes; nothing is downloaded).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from family_sweep import BATCH, PROMPT, Built, build_tiny, failure, run_sweep  # noqa: E402

from mha_cli.core.errors import MhaError  # noqa: E402
from mha_cli.core.hf_import import import_hf_config  # noqa: E402

TOLERANCE = 1e-4
PREFILL = 5


@dataclass(frozen=True)
class Row:
    model_type: str
    verdict: str
    prefill_error: float | None = None
    decode_error: float | None = None
    detail: str = ""


def _errors(reference, ours, vocab: int) -> tuple[float, float]:
    """(prefill, cached decode) max abs logit differences from transformers' full forward."""
    import torch

    ids = torch.randint(0, min(vocab, 256), (BATCH, PROMPT), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = reference(input_ids=ids).logits  # (b, s, v)
        prefill = ours(ids)  # (b, s, v)
        caches = ours.new_cache(batch=BATCH, max_seq=PROMPT)
        steps = [ours(ids[:, :PREFILL], caches, start_pos=0)]
        steps += [ours(ids[:, pos : pos + 1], caches, start_pos=pos) for pos in range(PREFILL, PROMPT)]
    decoded = torch.cat(steps, dim=1)  # (b, s, v)
    width = min(expected.shape[-1], prefill.shape[-1])
    return (
        (prefill[..., :width] - expected[..., :width]).abs().max().item(),
        (decoded[..., :width] - expected[..., :width]).abs().max().item(),
    )


def sweep_one(model_type: str, built: Built | None = None) -> Row:
    """The family's class (``built``: its tiny model already built, shared with the cache sweep)."""
    import torch

    from mha_cli.nn import build_model

    built = build_tiny(model_type) if built is None else built
    if isinstance(built, Exception):  # transformers could not build it: not a decoder of ours to judge
        return Row(model_type, "not built", detail=f"transformers: {failure(built)}")
    config, reference = built
    try:
        spec = import_hf_config(config.to_dict(), name=model_type).model
        ours = build_model(spec, dtype=torch.float32).eval()
    except MhaError as exc:
        return Row(model_type, "not built", detail=f"mha: {exc.message[:140]}")
    except (ValueError, NotImplementedError) as exc:  # build_model's own refusals (a mixer kind not built)
        return Row(model_type, "not built", detail=f"mha: {str(exc).splitlines()[0][:140]}")
    from mha_cli.nn.hf_state_dict import load_transformers_state_dict

    try:  # converted by the family's weight layout (its registry module) where it stores weights otherwise
        result = load_transformers_state_dict(ours, reference.state_dict(), strict=False)
    except ValueError as exc:  # the layout's fused sizes do not add up for this spec
        return Row(model_type, "does not load", detail=str(exc)[:160])
    except RuntimeError as exc:  # same names, other shapes (a transposed or fused layout)
        mismatch = next((line.strip() for line in str(exc).splitlines() if "size mismatch" in line), str(exc))
        return Row(model_type, "does not load", detail=mismatch[:160])
    if result.missing_keys or result.unexpected_keys:
        names = [f"missing {k}" for k in result.missing_keys[:2]] + [f"extra {k}" for k in result.unexpected_keys[:2]]
        return Row(model_type, "does not load", detail="; ".join(names)[:160])
    try:
        prefill, decode = _errors(reference, ours, spec.embeddings.vocab_size)
    except Exception as exc:  # our decoder failed on a model it built and loaded: a bug of ours
        return Row(model_type, "crashes", detail=f"{type(exc).__name__}: {str(exc)[:140]}")
    if prefill < TOLERANCE and decode < TOLERANCE:
        return Row(model_type, "equal", prefill, decode)
    if ours.omitted:
        return Row(model_type, "differs, listed", prefill, decode, "; ".join(ours.omitted)[:160])
    return Row(model_type, "differs, unlisted", prefill, decode)


def _figures(row: Row) -> str:
    return "" if row.prefill_error is None else f"{row.prefill_error:9.1e} {row.decode_error:9.1e}"


def main(argv: list[str] | None = None) -> int:
    return run_sweep(argv, __doc__.splitlines()[0], sweep_one, _figures)


if __name__ == "__main__":
    sys.exit(main())
