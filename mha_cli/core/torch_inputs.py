"""The torch commands' inputs, checked without torch: ``--device``, ``mha probe``'s sentence and shape,
``mha bench``'s numbers.

The commands call these before importing torch (seconds), so bad input is refused at once; the torch
ring (``run_probe``, ``run_decode_bench``) calls them again for library callers.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

from mha_cli.core.dtypes import BUILDABLE, normalise_dtype_name
from mha_cli.core.errors import BadInputError, shown
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.validation import describe_validation_error
from mha_cli.core.variants import default_gqa_kv_heads, mla_for_shape

MAX_TOKENS = 32
MIN_TOKENS = 2
"""With one token there is nothing to choose: its row is [1.0] in every head."""
TOKEN_PATTERN = re.compile(r"\w+|[^\w\s]")
DEVICE_NAMES = ("auto", "cuda", "cpu")


def check_device_option(device: str) -> None:
    """``--device``: auto, cuda, cuda:N or cpu. Whether a CUDA device is there is torch's to say, later."""
    name = device.strip().lower()
    if name in DEVICE_NAMES or re.fullmatch(r"cuda:\d+", name):
        return
    raise BadInputError(f"unknown device {shown(device)}: use auto, cuda, cuda:N or cpu")


def tokenize(sentence: str) -> list[str]:
    """Lower-cased words and punctuation marks: 'The cat sat.' -> ['the', 'cat', 'sat', '.']."""
    tokens = TOKEN_PATTERN.findall(sentence.lower())
    if not tokens:
        raise BadInputError('the sentence has no tokens: pass some words, e.g. mha probe "the cat sat on the mat"')
    if len(tokens) < MIN_TOKENS:
        raise BadInputError(
            f"the sentence has 1 token; probe needs at least {MIN_TOKENS} to show where attention goes"
            ' (a single token can only attend to itself): e.g. mha probe "the cat sat on the mat"'
        )
    if len(tokens) > MAX_TOKENS:
        raise BadInputError(f"the sentence has {len(tokens)} tokens; probe shows at most {MAX_TOKENS}: shorten it")
    return tokens


def check_shape(n_heads: int, n_kv_heads: int | None, d_model: int) -> None:
    """Heads first, then the KV grouping, then the width: each problem gets its own one-line message."""
    if n_heads < 1:
        raise BadInputError(f"--heads must be at least 1 (got {n_heads})")
    if n_kv_heads is not None and n_kv_heads < 1:
        raise BadInputError(f"--kv-heads must be at least 1 (got {n_kv_heads})")
    if n_kv_heads is not None and n_heads % n_kv_heads:
        raise BadInputError(
            f"--heads ({n_heads}) must be divisible by --kv-heads ({n_kv_heads}): each KV head serves a whole group"
        )
    if d_model < 1:
        raise BadInputError(f"--d-model must be at least 1 (got {d_model})")
    if d_model % n_heads:
        raise BadInputError(
            f"--d-model ({d_model}) must be a multiple of --heads ({n_heads}): head width = d_model / heads"
        )


def probe_spec(
    n_heads: int, n_kv_heads: int | None, variant: str | None, d_model: int, vocab: int, kv_lora_rank: int | None = None
) -> ModelSpec:
    """The one-layer ModelSpec the probe runs (``kv_lora_rank``: MLA's latent, default 4 x the head width); bad
    combinations become one-line BadInputErrors."""
    fields: dict = {"name": "probe", "d_model": d_model, "n_layers": 1, "n_heads": n_heads, "vocab_size": vocab,
                    "d_ff": 4 * d_model, "n_kv_heads": n_kv_heads, "variant": variant}  # fmt: skip
    check_shape(n_heads, n_kv_heads, d_model)
    kind = (variant or "").upper()
    if kind == "GQA" and n_kv_heads is None:
        fields["n_kv_heads"] = default_gqa_kv_heads(n_heads)
        if fields["n_kv_heads"] is None:  # trial 350 #8: "needs n_kv_heads (a divisor ...)" where none exists
            raise BadInputError(
                f"--variant GQA needs a KV-head count that divides --heads {n_heads} strictly between 1 and it, and"
                f" {n_heads} has none: give more --heads (4 or more, not prime), or --variant MQA or MHA"
            )
    if kv_lora_rank is not None and kind != "MLA":
        raise BadInputError(
            f"--kv-lora-rank sets MLA's latent and --variant is {variant or 'not given'}: give --variant MLA"
        )
    if kind == "MLA":
        fields["mla"] = mla_for_shape(d_model // n_heads)
        if kv_lora_rank is not None:
            fields["mla"]["kv_lora_rank"] = kv_lora_rank
    try:
        return ModelSpec.model_validate(fields)
    except ValidationError as exc:
        raise BadInputError(describe_validation_error(exc, PROBE_OPTIONS)) from None


PROBE_OPTIONS = {
    "attention.variant": "--variant", "attention.n_kv_heads": "--kv-heads", "attention.n_heads": "--heads",
    "attention": "--heads / --kv-heads", "d_model": "--d-model", "attention.mla.kv_lora_rank": "--kv-lora-rank",
}  # fmt: skip
"""The probe's options by the field each sets: an error names what was typed, not ``attention.variant``."""


def validate_bench_options(
    *,
    seq_len: int,
    batch: int,
    d_model: int,
    n_heads: int,
    head_dim: int,
    gqa_kv_heads: int,
    kv_lora_rank: int | None,
    rope_dim: int | None,
    warmup: int,
    reps: int,
    threads: int | None = None,
) -> None:
    """Every number checked before anything is built: one ``BadInputError`` (exit 2) naming the option.

    ``None`` (kv_lora_rank, rope_dim, threads) means "use the default"; 0 is a value, and a bad one.
    """
    minimum = {"--seq": (seq_len, 2), "--batch": (batch, 1), "--d-model": (d_model, 1), "--heads": (n_heads, 1),
               "--head-dim": (head_dim, 1), "--kv-heads": (gqa_kv_heads, 1), "--kv-lora-rank": (kv_lora_rank, 1),
               "rope_dim": (rope_dim, 0), "--warmup": (warmup, 0), "--reps": (reps, 1),
               "--threads": (threads, 1)}  # fmt: skip
    for option, (value, least) in minimum.items():
        if value is not None and value < least:
            raise BadInputError(f"{option} must be at least {least} (got {value})")
    if n_heads % gqa_kv_heads or not 1 < gqa_kv_heads < n_heads:
        if default_gqa_kv_heads(n_heads) is None:  # trial 362 #3: no --kv-heads could satisfy it
            raise BadInputError(
                f"--heads {n_heads} has no KV-head count that divides it strictly between 1 and it, so bench's GQA row"
                f" cannot be built: give more --heads (4 or more, not prime)"
            )
        raise BadInputError(
            f"--kv-heads ({gqa_kv_heads}) must divide --heads ({n_heads}) and lie strictly between 1 and it"
        )


def check_buildable_dtype(dtype: str | None, option: str = "--dtype") -> None:
    """A dtype the torch modules build (fp32, fp16, bf16; aliases such as bfloat16 accepted), or None (default)."""
    if dtype is None:
        return
    name = normalise_dtype_name(dtype, kv=True)
    if name not in BUILDABLE:
        raise BadInputError(f"{option} {name} is priced by `mha kv` but not built in torch: use {', '.join(BUILDABLE)}")
