"""Training data that needs no download: a synthetic gather task and Python's own documentation.

- Gather task: k streams of L symbols, then L query positions; query i's target is the tuple
  (stream_1[i], ..., stream_k[i]) as one token of n_symbols**k classes (``gather_task_batch``).
  Chance loss: k ln(n_symbols) nats.
- Text: the prose of ``pydoc_data.topics`` (the help topics shipped with every CPython), bytes of
  its UTF-8 encoding (vocabulary 256, no tokenizer to train). Topics are split whole, every tenth
  (in sorted order) held out for validation, so no passage is in both splits. The text differs
  a little between Python versions: reports state the version and the corpus sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

IGNORE_INDEX = -100
"""Target value ``cross_entropy`` skips (positions that are not scored)."""

VALIDATION_EVERY = 10
"""Every tenth topic (sorted by name, from the first) goes to the validation split."""


# Gather task -----------------------------------------------------------------------------------


def gather_vocab_size(streams: int, n_symbols: int) -> int:
    """Symbols, the query token, then one class per tuple: n + 1 + n**k token ids."""
    return n_symbols + 1 + n_symbols**streams


def gather_task_batch(
    batch: int, streams: int, length: int, n_symbols: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs (b, (k + 1) L), targets (b, (k + 1) L)) of the gather task, k = ``streams``, L = ``length``.

    Inputs: stream 1's L symbols, stream 2's, ..., stream k's (ids 0..n-1), then L query tokens (id n).
    The target at query position i (0-based) is the tuple (stream_1[i], ..., stream_k[i]) as one token,
    n + 1 + sum_j stream_j[i] * n**(k - j) (stream 1 the most significant digit); ``IGNORE_INDEX`` on
    the streams, which are random and unpredictable. Only the L query positions are scored.
    """
    symbols = torch.randint(0, n_symbols, (batch, streams, length), generator=generator)  # (b, k, L)
    queries = torch.full((batch, length), n_symbols, dtype=symbols.dtype)  # (b, L)
    inputs = torch.cat([symbols.flatten(1), queries], dim=1)  # (b, (k + 1) L)
    digits = n_symbols ** torch.arange(streams - 1, -1, -1)  # (k,): n**(k-1) .. 1
    tuples = (symbols * digits[None, :, None]).sum(dim=1)  # (b, L)
    targets = torch.full_like(inputs, IGNORE_INDEX)  # (b, (k + 1) L)
    targets[:, streams * length :] = n_symbols + 1 + tuples
    return inputs, targets


# Text ------------------------------------------------------------------------------------------


class ByteTokenizer:
    """UTF-8 bytes as tokens: vocabulary 256, offline, identical on every machine."""

    vocab_size = 256

    def encode(self, text: str) -> torch.Tensor:
        return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)  # (n,)

    def decode(self, tokens: torch.Tensor) -> str:
        return bytes(tokens.tolist()).decode("utf-8", errors="replace")


@dataclass(frozen=True)
class TextCorpus:
    """Token streams of the training and validation splits, and where they came from."""

    train: torch.Tensor
    """(n_train,) token ids."""
    validation: torch.Tensor
    """(n_val,) token ids."""
    n_train_topics: int
    n_validation_topics: int
    source: str


def load_pydoc_corpus(tokenizer: ByteTokenizer | None = None) -> TextCorpus:
    """Python's help topics as bytes, every tenth topic held out (see the module docstring)."""
    from pydoc_data.topics import topics

    tokenizer = tokenizer or ByteTokenizer()
    names = sorted(topics)
    held_out = [name for i, name in enumerate(names) if i % VALIDATION_EVERY == 0]
    kept = [name for name in names if name not in set(held_out)]
    return TextCorpus(
        train=tokenizer.encode("\n\n".join(topics[name] for name in kept)),
        validation=tokenizer.encode("\n\n".join(topics[name] for name in held_out)),
        n_train_topics=len(kept),
        n_validation_topics=len(held_out),
        source="pydoc_data.topics",
    )


def random_windows(
    tokens: torch.Tensor, batch: int, seq_len: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs (b, s), targets (b, s)) from ``batch`` windows at random offsets; targets shifted by one."""
    starts = torch.randint(0, len(tokens) - seq_len, (batch,), generator=generator)  # (b,)
    offsets = starts[:, None] + torch.arange(seq_len + 1)[None, :]  # (b, s + 1)
    windows = tokens[offsets]  # (b, s + 1)
    return windows[:, :-1], windows[:, 1:]


def evaluation_windows(tokens: torch.Tensor, seq_len: int, n_windows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs (n, s), targets (n, s)): ``n_windows`` evenly spaced windows, the same every run."""
    last_start = len(tokens) - seq_len - 1
    if last_start < 0:
        raise ValueError(f"{len(tokens)} tokens are too few for windows of {seq_len} + 1")
    starts = torch.linspace(0, last_start, n_windows).round().long()  # (n,)
    offsets = starts[:, None] + torch.arange(seq_len + 1)[None, :]  # (n, s + 1)
    windows = tokens[offsets]  # (n, s + 1)
    return windows[:, :-1], windows[:, 1:]
