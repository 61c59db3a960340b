"""The lengths ``sglang.bench_serving --dataset-name random`` draws, request by request, as its run sends them.

SGLang 0.5.8 ``sglang/bench_serving.py``: ``compute_random_lens`` draws each length as
``np.random.randint(max(int(L * range_ratio), 1), L + 1, size=num_prompts)``, so a length is uniform over the
integers [max(int(L r), 1), L]: ``--random-range-ratio`` is the low end's fraction of L (its default 0.0 spans
[1, L], mean about L / 2; 1.0 gives L exactly), not vLLM's spread around L (``core.serve.workload.drawn_lengths``).
``sample_random_requests`` draws every input length, then every output length; ``main`` seeds NumPy's global
generator with ``--seed`` (default 1) first. NumPy's legacy generator is MT19937 seeded by ``init_genrand`` and
draws a bounded integer by masked rejection on 32-bit words (``random_bounded_uint64_fill``); Python's
``random.Random`` is the same MT19937, so its state set from ``init_genrand`` replays the same words without NumPy.
"""

import random

from mha_cli.core.errors import BadInputError

SGLANG_BENCH_SEED = 1
"""``sglang.bench_serving --seed``'s default (``sglang/bench_serving.py``, 0.5.8)."""
MT_STATE_WORDS = 624


def _numpy_legacy_generator(seed: int) -> random.Random:
    """A ``random.Random`` whose 32-bit words are those of ``np.random.seed(seed)`` (MT19937 ``init_genrand``)."""
    state, word = [], seed & 0xFFFFFFFF
    for index in range(MT_STATE_WORDS):
        state.append(word)
        word = (1812433253 * (word ^ (word >> 30)) + index + 1) & 0xFFFFFFFF
    generator = random.Random()
    generator.setstate((3, (*state, MT_STATE_WORDS), None))
    return generator


def _bounded(generator: random.Random, low: int, high: int) -> int:
    """NumPy's legacy ``randint(low, high + 1)``: a 32-bit word masked to the span's bits, redrawn above it (no
    word drawn when low is high)."""
    span = high - low
    if span == 0:
        return low
    mask = (1 << span.bit_length()) - 1
    while (value := generator.getrandbits(32) & mask) > span:
        pass
    return low + value


def sglang_random_lengths(
    input_len: int, output_len: int, count: int, *, range_ratio: float = 0.0, seed: int = SGLANG_BENCH_SEED
) -> list[tuple[int, int]]:
    """The (input, output) token pairs of a ``sglang.bench_serving --dataset-name random`` run of ``count`` prompts
    (``--random-input-len``, ``--random-output-len``, ``--random-range-ratio``, ``--seed``), in the order sent."""
    if not 0 <= range_ratio <= 1:
        raise BadInputError(f"SGLang --random-range-ratio {range_ratio:g}: give a value in [0, 1]")
    if count < 1 or input_len < 1 or output_len < 1:
        raise BadInputError(f"SGLang random dataset: {count} prompts of {input_len} + {output_len} tokens")
    generator = _numpy_legacy_generator(seed)

    def lengths(full: int) -> list[int]:
        return [_bounded(generator, max(int(full * range_ratio), 1), full) for _ in range(count)]

    inputs = lengths(input_len)
    return list(zip(inputs, lengths(output_len), strict=True))
