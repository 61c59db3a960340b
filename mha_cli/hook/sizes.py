"""How big the hook's scaled copy is and how it is trained: one ``HookSize`` per use.

``DEFAULT_SIZE`` is what ``mha verify CONFIG --hook`` runs: chosen so that a 2-layer copy of a
7B-class design (32 query heads, GQA-8) solves the task in a few hundred steps, about a minute per
model on 2 busy CPU cores, while a 1-layer copy stays far below the threshold. Sequences are 40 tokens: at 32 the
repeat's offsets were few (8 held 90% of the scored tokens) and a 1-layer copy learnt them, 78% at seed 0; at 48
the 7B config's copy learnt nothing in 1,500 steps. The residual is 128 wide: the second layer matches the current
token against the previous token the first layer copied beside each key, two tokens in one residual; at 64 the
125M config's copy stalled at 87% (seed 0). See docs/commands/verify.md (hook reliability). ``QUICK_SIZE`` is a
smaller task and model for the test suite (seconds, not minutes); its results are not the hook's.

Pure Python: the CLI reads these before it imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HookSize:
    """Sizes of the induction task, of the scaled copy, and of its training."""

    name: str
    vocab_size: int
    """Tokens of the task (each sequence draws distinct ones, so >= seq_len)."""
    seq_len: int
    """Tokens per sequence."""
    min_segment: int
    """Shortest repeated segment (tokens)."""
    max_segment: int
    """Longest repeated segment (tokens); at most seq_len / 2."""
    d_model: int
    """Residual width of the copy."""
    d_ff: int
    """MLP width of the copy (dense)."""
    max_query_width: int
    """Cap on n_heads x head_dim: head width shrinks until the heads fit (the cost of a step)."""
    min_head_dim: int
    """Head width never goes below this (even: RoPE rotates pairs)."""
    min_latent_rank: int
    """MLA: the scaled kv_lora_rank (and q_lora_rank) never goes below this."""
    batch: int
    """Training sequences per step."""
    learning_rate: float
    """AdamW peak learning rate, after a linear warm-up."""
    warmup_steps: int
    max_steps: int
    """Training stops here if the validation accuracy never reaches the stop target."""
    eval_every: int
    """Steps between validation measurements (the early-stopping check)."""
    n_validation: int
    """Held-out sequences that decide when to stop."""
    n_test: int
    """Other held-out sequences on which the reported accuracy is measured."""
    mla_learning_rate: float | None = None
    """AdamW peak learning rate of an MLA copy; None: ``learning_rate``. At 3e-3 the copy of ``mha recommend
    --params 50M --seq 2048 --target a100 --variant MLA`` (5 heads, 34 nope + 16 rope, latent 133) learnt nothing in
    1,500 steps (seed 0: 15.7%, seed 1: 3.0%; even widths, 32 + 16 and 128: 7.0%); at 1e-3 it passed (99.1% after
    400 steps, 98.5% after 950)."""

    def learning_rate_for(self, mla: bool) -> float:
        """The peak learning rate of a copy: ``mla_learning_rate`` for an MLA copy where set."""
        return self.mla_learning_rate if mla and self.mla_learning_rate is not None else self.learning_rate


DEFAULT_SIZE = HookSize(
    name="default",
    vocab_size=48,
    seq_len=40,
    min_segment=8,
    max_segment=16,
    d_model=128,
    d_ff=128,
    max_query_width=256,
    min_head_dim=8,
    min_latent_rank=32,
    batch=32,
    learning_rate=3e-3,
    warmup_steps=20,
    max_steps=1500,
    eval_every=25,
    n_validation=256,
    n_test=512,
    mla_learning_rate=1e-3,
)

QUICK_SIZE = HookSize(
    name="quick",
    vocab_size=40,
    seq_len=32,
    min_segment=6,
    max_segment=10,
    d_model=64,
    d_ff=128,
    max_query_width=128,
    min_head_dim=8,
    min_latent_rank=16,
    batch=128,
    learning_rate=3e-3,
    warmup_steps=20,
    max_steps=400,
    eval_every=10,
    n_validation=128,
    n_test=256,
)

SIZES = {size.name: size for size in (DEFAULT_SIZE, QUICK_SIZE)}

MAX_HOOK_LAYERS = 8
"""Deepest copy ``--hook-layers`` builds: induction needs 2; more only costs time."""
