"""``mha probe``: one attention layer on a short sentence, and where each head's attention goes.

Offline and deterministic: lower-cased word/punctuation tokens; each distinct token gets a seeded
random embedding (the same word always gets the same vector), plus sinusoidal positions so heads
can tell tokens apart by place, and RoPE (theta 10,000) in the layer on every variant: MHA, GQA and MQA
rotate their whole heads (rotate-half, as Llama; an odd head width, which RoPE cannot pair, none), MLA
its decoupled key (interleaved, as DeepSeek), so a comparison of variants sees the same positions. The
layer's weights are seeded normals (std 1/sqrt(d_model)). The weights come from the reference path, so
they are the exact softmax rows, causal.
"""

from __future__ import annotations

import math
import zlib

import torch
from pydantic import BaseModel

from mha_cli.core.torch_inputs import MIN_TOKENS, probe_spec, tokenize
from mha_cli.nn.build import build_attention

SPREAD_FRACTION = 0.9
"""A head whose rows keep this fraction of the uniform entropy is summarised as 'spread'."""


class HeadSummary(BaseModel):
    """Where one head's attention goes, averaged over the rows that have a choice (rows 1..N-1)."""

    head: int
    kv_head: int | None
    """The KV head this query head reads (GQA/MQA share them); None for MLA, which has no KV heads: every query head
    reads the one shared latent (``ProbeResult.mla_kv_lora_rank``)."""
    entropy_bits: float
    """Mean entropy of the rows, in bits (0: each row on one token)."""
    uniform_bits: float
    """Mean entropy the rows would have if spread evenly over the tokens they can see."""
    self_mass: float
    previous_mass: float
    first_mass: float
    """The mean mass on the first token where it is not the previous one (row 1's first token is its previous: counted
    there), so that the four shares add up to 1."""
    other_mass: float
    """The mean mass on tokens that are none of self, previous and first."""
    pattern: str
    """'spread' when the rows are near-uniform (entropy >= 90% of uniform), else the largest of 'self', 'previous'
    (token), 'first' (token) and 'other', the mass on none of those three (trial 303 #4: a head with 0.35 on itself
    and 0.79 of some rows on one word was labelled 'self')."""


class ProbeResult(BaseModel):
    """Per-head (N, N) attention weights of one layer over the sentence's N tokens (row: query)."""

    sentence: str
    tokens: list[str]
    variant: str
    d_model: int
    n_heads: int
    n_kv_heads: int | None
    """None for MLA: no KV heads, one latent shared by every query head (its width: ``mla_kv_lora_rank``)."""
    head_dim: int
    """Width of a query/key head (MLA: the no-RoPE part + the RoPE part)."""
    mla_kv_lora_rank: int | None = None
    """MLA: width of the one latent all heads' K and V are decompressed from (None for other variants)."""
    mla_rope_dim: int | None = None
    """MLA: width of the decoupled RoPE key, shared by all heads (None for other variants)."""
    rope_width: int | None = None
    """The width RoPE rotates in each query/key head: MHA, GQA and MQA their whole head (rotate-half), MLA its
    decoupled key (interleaved); None where nothing rotates (an odd head width: RoPE turns pairs; review 401 #5)."""
    rope_theta: float | None = None
    """RoPE's base wavelength (10,000) where it rotates."""
    seed: int
    heads: list[list[list[float]]]
    """heads[h][i][j]: how much token i attends to token j in head h (rows sum to 1, j <= i)."""
    summaries: list[HeadSummary]

    @property
    def shares_kv_heads(self) -> bool:
        """Query heads share KV heads (GQA, MQA), so each head's is worth naming; not MHA, nor MLA (none)."""
        return self.n_kv_heads is not None and self.n_kv_heads != self.n_heads


def embed(tokens: list[str], d_model: int, seed: int) -> torch.Tensor:
    """(1, N, d_model): a seeded vector per distinct token plus sinusoidal positions."""
    rows = []
    for token in tokens:
        generator = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(token.encode()))
        rows.append(torch.randn(d_model, generator=generator))  # (d,)
    vectors = torch.stack(rows)  # (N, d)
    positions = torch.arange(len(tokens), dtype=torch.float32)[:, None]  # (N, 1)
    freqs = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)  # (ceil(d/2),)
    angles = positions * freqs  # (N, ceil(d/2))
    sinusoid = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)[:, :d_model]  # (N, d)
    return (vectors + sinusoid)[None]  # (1, N, d)


def summarise(weights: torch.Tensor, head: int, kv_head: int | None) -> HeadSummary:
    """Summary of one head's (N, N) causal weights (``kv_head``: the KV head it reads, None for MLA's latent)."""
    n = weights.shape[0]
    if n < MIN_TOKENS:
        raise ValueError(f"a summary needs at least {MIN_TOKENS} tokens (got {n}): row 0 has no choice")
    rows = range(1, n)
    plogp = torch.where(weights > 0, weights * weights.clamp_min(1e-30).log2(), torch.zeros_like(weights))  # (N, N)
    entropy = -plogp.sum(-1)  # (N,)
    self_mass = sum(float(weights[i, i]) for i in rows) / len(rows)
    previous = sum(float(weights[i, i - 1]) for i in rows) / len(rows)
    # row 1's previous token is its first: counted once, as previous, so the four shares of a row add up to 1
    # (trial 327 #1: counted twice, it named a head 'first' on the doubled weight)
    first = sum(float(weights[i, 0]) for i in rows if i > 1) / len(rows)
    # the rest of each row, on no one of those positions
    other = sum(1.0 - float(weights[i, i]) - float(weights[i, i - 1]) - (float(weights[i, 0]) if i > 1 else 0.0)
                for i in rows) / len(rows)  # fmt: skip
    masses = {"self": self_mass, "previous": previous, "first": first, "other": other}  # the table's columns
    top = max(masses, key=lambda k: masses[k])
    entropy_bits = sum(float(entropy[i]) for i in rows) / len(rows)
    uniform_bits = sum(math.log2(i + 1) for i in rows) / len(rows)
    return HeadSummary(
        head=head,
        kv_head=kv_head,
        entropy_bits=round(entropy_bits, 4),
        uniform_bits=round(uniform_bits, 4),
        self_mass=round(self_mass, 4),
        previous_mass=round(previous, 4),
        first_mass=round(first, 4),
        other_mass=round(max(0.0, other), 4),  # a float sum a hair under 0 is none (-0.0 printed, review 305 #8)
        pattern="spread" if entropy_bits >= SPREAD_FRACTION * uniform_bits else top,
    )


def run_probe(
    sentence: str,
    *,
    n_heads: int = 4,
    n_kv_heads: int | None = None,
    variant: str | None = None,
    d_model: int = 64,
    seed: int = 0,
    kv_lora_rank: int | None = None,
) -> ProbeResult:
    """Run one seeded layer on ``sentence`` and return every head's attention matrix and summary (``kv_lora_rank``:
    MLA's latent width, default 4 x the head width)."""
    tokens = tokenize(sentence)
    spec = probe_spec(n_heads, n_kv_heads, variant, d_model, vocab=len(set(tokens)), kv_lora_rank=kv_lora_rank)
    torch.manual_seed(seed)
    # every variant rotates, as MLA's key does (trial 400 #1); RoPE turns pairs, so an odd head is left unrotated
    rotated = spec.attention.mla is not None or spec.attention.head_dim % 2 == 0
    layer = build_attention(spec, with_rope=rotated)
    with torch.no_grad():
        for param in layer.parameters():
            if param.ndim == 2:  # projections; norms keep their ones
                param.normal_(0.0, d_model**-0.5)
        _, weights = layer.forward_with_weights(embed(tokens, d_model, seed))  # (1, n_h, N, N)
    weights = weights[0]  # (n_h, N, N)
    q_per_kv, mla = spec.attention.q_per_kv, spec.attention.mla
    return ProbeResult(
        sentence=sentence,
        tokens=tokens,
        variant=str(spec.attention.variant),
        d_model=d_model,
        n_heads=spec.attention.n_heads,
        n_kv_heads=None if mla is not None else spec.attention.n_kv_heads,
        head_dim=spec.attention.head_dim,
        mla_kv_lora_rank=None if mla is None else mla.kv_lora_rank,
        mla_rope_dim=None if mla is None else mla.qk_rope_head_dim,
        rope_width=(spec.attention.head_dim if mla is None else mla.qk_rope_head_dim) if rotated else None,
        rope_theta=spec.rotary.theta if rotated and spec.rotary is not None else None,
        seed=seed,
        heads=[[[round(float(w), 6) for w in row] for row in head] for head in weights],
        summaries=[
            summarise(weights[h], h, None if mla is not None else h // q_per_kv) for h in range(spec.attention.n_heads)
        ],
    )
