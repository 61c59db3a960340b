"""An engine started with a longer context than its requests (``mha plan --max-model-len 32768 --isl 1024 --osl 256``).

The engine is sized, checked and launched for its max_model_len: vLLM refuses to start unless its pool holds one
request of that many tokens and logs "Maximum concurrency for 32,768 tokens per request"; SGLang derives its running
cap and request-to-token table from its ``--context-length``; TensorRT-LLM its runtime buffers from ``max_seq_len``.
None of them reserves a request's whole context up front: vLLM's scheduler gives a request blocks as its tokens
arrive (``KVCacheManager.allocate_slots``), SGLang tokens, and TensorRT-LLM's default scheduler the blocks of the
request's own prompt and ``max_tokens``. So the pool the engine sized at max_model_len admits requests of their own
length: what ``engine_admitting`` takes from a plan priced at the requests' length.
"""

from mha_cli.core.engine.plan import SERVES_NONE, SGLANG_INPUT_MARGIN, WOULD_NOT_START, EnginePlan
from mha_cli.core.engine.window_blocks import sizer_blocks, window_groups_of
from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import DeploymentSpec, ModelSpec


def engine_context(deployment: DeploymentSpec, request_tokens: int) -> int:
    """The max_model_len the engine is sized for: ``deployment.max_model_len`` where set (at least
    ``request_tokens``, which the engine would refuse above it), else ``request_tokens`` (--isl + --osl)."""
    longest = deployment.max_model_len
    if longest is None:
        return request_tokens
    if longest < request_tokens:
        raise BadInputError(
            f"--max-model-len {longest:,}: the engine refuses requests longer than it, and --isl + --osl is"
            f" {request_tokens:,}: give at least {request_tokens}, or shorter --isl and --osl"
        )
    return longest


def derived_context(model: ModelSpec, deployment: DeploymentSpec, request_tokens: int) -> int | None:
    """``--max-model-len auto``: the context the deployment's engine derives from ``model``'s config when none is
    given (vLLM's at the release priced, SGLang's; ``core.engine.context_limit``), where longer than
    ``request_tokens``; None: --isl + --osl (TensorRT-LLM's own default is not modelled, or the config states no
    length, or it is shorter: the engine then refuses the requests, which the plan's notes say)."""
    from mha_cli.core.engine.context_limit import sglang_context_length, vllm_max_model_len
    from mha_cli.core.engine.settings import release_in_force

    engine = deployment.engine or "vllm"
    if engine == "vllm":
        derived = vllm_max_model_len(model, release_in_force(deployment))
    elif engine == "sglang":
        derived = sglang_context_length(model)
    else:
        derived = None
    return derived if derived is not None and derived > request_tokens else None


def serves_the_requests(at_context: EnginePlan, prompt_tokens: int) -> bool:
    """Whether ``at_context``, the engine's plan at its max_model_len, runs requests of ``prompt_tokens`` prompts: it
    starts, or it is SGLang, which starts with a pool under one request of its context and aborts only the prompts of
    ``max_req_input_len`` (min(context, pool) - 6, ``core.engine.plan.sglang_short_pool``) tokens or more."""
    if at_context.starts:
        return True
    return at_context.refused_as == SERVES_NONE and prompt_tokens < at_context.kv_tokens - SGLANG_INPUT_MARGIN


def engine_admitting(at_context: EnginePlan, at_requests: EnginePlan) -> EnginePlan:
    """``at_context`` (the engine's plan at its max_model_len) admitting the requests ``at_requests`` was priced at:
    as many as their own blocks take (``at_requests``' count, its windows and states included), scaled to
    ``at_context``'s pool where it is smaller (vLLM V0 profiles max_model_len tokens without chunked prefill; SGLang's
    and TensorRT-LLM's buffers grow with the context), and at most the running cap the engine set at its context
    (SGLang derives its own from it). Each holds and asks what a request of theirs does (``kv_bytes_per_request``,
    ``running_kv_bytes``), and a windowed vLLM pool is simulated as ``at_requests``' (``window_pool_blocks``)."""
    request = at_requests.max_model_len
    admitted = min(at_requests.admitted_per_replica, at_context.max_num_seqs)
    if at_requests.kv_tokens > at_context.kv_tokens:
        admitted = min(admitted, at_requests.admitted_per_replica * at_context.kv_tokens // at_requests.kv_tokens)
    note = (
        f"started at max_model_len {at_context.max_model_len:,} (its start-up check, log line and launch lines), the"
        f" engine runs requests of {request:,} tokens: its pool holds {admitted:,} of them at once, where"
        f" {at_context.admitted_per_replica:,} of {at_context.max_model_len:,} tokens would fit"
    )
    if not at_context.starts:  # SGLang, its pool under one request of its context (serves_the_requests)
        note += (
            f"; SGLang aborts a prompt of {at_context.kv_tokens - SGLANG_INPUT_MARGIN:,} tokens or more"
            " (max_req_input_len: min(context, pool) - 6)"
        )
    window_blocks = None
    if at_context.name == "vllm" and window_groups_of(
        at_context.groups, at_context.block_size, at_context.max_model_len
    ):
        window_blocks = (
            _simulated_blocks(at_requests) * at_context.kv_tokens // max(at_requests.kv_tokens, at_context.kv_tokens)
        )
    admitting = at_context.model_copy(
        update={
            "admitted_per_replica": admitted, "kv_bytes_per_request": at_requests.kv_bytes_per_request,
            "running_kv_bytes": at_requests.running_kv_bytes, "window_pool_blocks": window_blocks,
            "starts": True, "refusal": None, "refused_as": WOULD_NOT_START,
        }
    )  # fmt: skip
    planned = admitting.at_load(at_context.sequences_per_replica)  # its fit judged on what it admits now
    planned.notes.append(note)
    return planned


def _simulated_blocks(plan: EnginePlan) -> int:
    """The blocks ``core.serve.simulate.engine_limits`` gives vLLM's scheduler for ``plan``: the start-up sizer's
    (``max_concurrency`` requests of max_model_len) where it has windowed groups, else a group's share of the pool."""
    if window_groups_of(plan.groups, plan.block_size, plan.max_model_len):
        return sizer_blocks(plan.max_concurrency, plan.max_model_len, plan.block_size)
    return plan.kv_blocks // max(1, len(plan.groups))
