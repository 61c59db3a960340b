"""A decode step with speculative decoding: k drafted tokens, one verification of k + 1, T tokens out.

One engine step of ``running`` sequences (vLLM V1's ``EagleProposer`` / ``DraftModelProposer`` order):

- verify: the target runs k + 1 tokens per sequence (the last accepted token and the k drafts) over its cache, a
  prefill-like shape scored by the decode kernels (``StepShape.verify``), logits for every position;
- draft: the drafter's first pass over the k + 1 verified positions of each sequence (and over the step's prefill
  chunks: the drafter caches every prompt too), then k - 1 passes of one
  token each (the MTP/EAGLE layer or the draft model, each with the LM head), each its own forward call with the
  profile's step overhead (``draft_seconds``).

Each sequence gains T tokens a step on average (the acceptance length), so the time per output token is
(draft + verify) / T. At a small batch the verification costs about what a decode does (both read the weights
once): T tokens for little more than one step. At a large batch the step is bound by compute and k + 1 tokens per
sequence cost about k + 1 times a decode's: past the point where (draft + verify) / T exceeds a plain decode step,
speculative decoding loses. Pure Python.
"""

from pydantic import Field

from mha_cli.core.cost.step import StepTime
from mha_cli.core.cost.stepper import Stepper, chunked_prefill
from mha_cli.core.cost.work import StepShape, decode_shape
from mha_cli.core.record import Record, empty_list
from mha_cli.core.schemas import SpeculativeSpec


def verify_shape(sequences: int, k: int, context: int) -> StepShape:
    """The target's verification of k drafts: k + 1 tokens for each of ``sequences`` after ``context`` cached ones,
    logits for each of them."""
    tokens = k + 1
    return StepShape(
        sequences=sequences, new_tokens=tokens, context=context, logits_tokens=sequences * tokens, verify=True
    )


def decode_shapes(stepper: Stepper, sequences: int, context: int) -> list[StepShape]:
    """What ``sequences`` decodes put in a step: one token each, or k + 1 to verify under speculative decoding."""
    if sequences < 1:
        return []
    spec = stepper.case.speculative
    if spec is None:
        return [decode_shape(sequences, context)]
    return [verify_shape(sequences, spec.num_speculative_tokens, context)]


def tokens_per_step(stepper: Stepper) -> float:
    """Tokens a decoding sequence gains per step: the acceptance length T, or 1."""
    spec = stepper.case.speculative
    return 1.0 if spec is None else spec.acceptance_length


def draft_stepper(stepper: Stepper) -> Stepper:
    """The drafter's steps on ``stepper``'s profile and tp (made once, kept on ``stepper``)."""
    spec = stepper.case.speculative
    assert spec is not None, "no drafter without speculative decoding"
    if stepper.draft is None:
        # a pass runs the draft model whole, or one MTP / EAGLE layer (an MTP layer's experts spread as the target's,
        # in the target's format and MXFP4 kernel; a draft model is bf16, no such kernel)
        model = spec.drafter if spec.drafter_is_model else spec.drafter.model_copy(update={"n_layers": 1})
        experts = stepper.case.experts if spec.method == "mtp" else None
        case = stepper.case._replace(
            model=model, pp=1, speculative=None, weight_dtype=_drafter_format(spec, stepper), experts=experts,
            drafts_for=spec.method, expert_kernel=None if spec.drafter_is_model else stepper.case.expert_kernel,
        )  # fmt: skip
        stepper.draft = Stepper(case, stepper.profile)
    return stepper.draft


def _drafter_format(spec: SpeculativeSpec, stepper: Stepper) -> str:
    """A draft model runs in bf16 (its own checkpoint); MTP and EAGLE layers in the target's format."""
    return "bf16" if spec.drafter_is_model else stepper.case.weight_dtype


def draft_seconds(stepper: Stepper, sequences: int, context: int, *chunks: StepShape) -> float:
    """The drafter's k passes for ``sequences`` decoding (see the module docstring), each a forward step of its own
    with the profile's step overhead: vLLM's proposer calls the drafter once a pass, each with its attention metadata
    built on the host and its CUDA graph launched (``v1/spec_decode/llm_base_proposer.py``), as an engine step does.
    Its first pass runs over every token the target ran in the step, prefill ``chunks`` too (the drafter keeps its own
    cache of each prompt)."""
    spec = stepper.case.speculative
    if spec is None or (sequences < 1 and not chunks):
        return 0.0
    draft, k = draft_stepper(stepper), spec.num_speculative_tokens
    verified = [StepShape(sequences, k + 1, context, sequences)] if sequences else []
    first = draft.step(*chunks, *verified).seconds
    rest = draft.step(decode_shape(sequences, context + k + 1)).seconds if k > 1 and sequences else 0.0
    return first + (k - 1) * rest


def draft_prefill_seconds(stepper: Stepper, tokens: int, chunk_tokens: int, start: int) -> float:
    """The drafter's passes over a prompt of ``tokens`` in chunks of the engine's budget (0 without speculative
    decoding): what each of the prompt's steps adds (``draft_seconds``' first pass)."""
    if stepper.case.speculative is None or tokens < 1:
        return 0.0
    return chunked_prefill(draft_stepper(stepper), tokens, chunk_tokens, [], start=start)[0]


def decode_step(stepper: Stepper, sequences: int, context: int, *chunks: StepShape) -> StepTime:
    """One engine step of ``sequences`` decodes (and prefill ``chunks`` riding it): a plain decode step, or under
    speculative decoding the verification with the drafting's seconds added (to ``seconds``, and to ``memory_s`` or
    ``compute_s`` as the verification is bound)."""
    step = stepper.step(*chunks, *decode_shapes(stepper, sequences, context))
    drafting = draft_seconds(stepper, sequences, context, *chunks)
    if not drafting:
        return step
    update = {"seconds": step.seconds + drafting}
    update["compute_s" if step.bound == "compute" else "memory_s"] = (
        step.compute_s if step.bound == "compute" else step.memory_s
    ) + drafting
    return step.model_copy(update=update)


class SpeculativePoint(Record):
    """One load, with and without speculative decoding."""

    concurrency: int
    itl_ms: float
    itl_ms_without: float
    output_tokens_per_s: float
    output_tokens_per_s_without: float


class SpeculativeComparison(Record):
    """Speculative decoding's plan beside the plain one, at the plan's load and along a load curve."""

    method: str
    num_speculative_tokens: int
    acceptance_length: float
    """T: tokens per verification step (mean)."""
    acceptance_source: str
    drafter_weight_bytes_per_device: int
    kv_tokens_per_device: int
    """The KV pool's tokens with the drafter's layers holding their share."""
    kv_tokens_per_device_without: int
    itl_ms: float
    itl_ms_without: float
    output_tokens_per_s: float
    output_tokens_per_s_without: float
    speedup: float
    """ITL without / ITL with, at the plan's load (above 1: it pays)."""
    pays: bool
    """Output tokens/s with it at least those without, at the plan's load."""
    loses_from: int | None
    """The first load on the curve at which it loses (tokens/s below plain decoding's); None if none does."""
    curve: list[SpeculativePoint] = Field(default_factory=empty_list)
