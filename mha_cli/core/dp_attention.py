"""DP attention with expert parallelism: how SGLang (``--enable-dp-attention``) and vLLM (``--data-parallel-size``
with ``--enable-expert-parallel``) run DeepSeek-like MoE models. Pure Python.

With ``dp`` data-parallel ranks of ``tp`` devices each (tp 1 in the engines' recipes):

- attention runs on each rank for its own requests: its weights are whole on every rank (sharded over the rank's
  tp devices), and each rank's KV cache holds only its own requests, so the requests held at once grow dp-fold;
- the routed experts spread whole over all tp x dp devices (expert parallelism); how an MoE layer's tokens reach
  them is the deployment's ``moe_a2a_backend`` (below): gathered to every device (the engines' default) or sent
  to the devices holding the experts each picks (DeepEP), no all-reduce either way;
- the embedding, the LM head, the dense layers and the shared experts are priced as vLLM holds them: whole on each
  rank (its data-parallel ranks are tp 1 engines; vLLM ``docs/serving/data_parallel_deployment.md``). SGLang
  shards the dense MLPs over all ranks instead ("DP for attention, TP for FFN", its server arguments'
  ``enable_dp_attention``), so for SGLang the plan holds a little more than it does (DeepSeek-V3 in fp8: about
  1.2 GB a device, its 3 dense layers' MLPs less their 1/8).

Both engines step the data-parallel ranks together (a rank with nothing to run still runs a dummy step), so the
cost model prices one rank's step at its share of the requests.

**Gather and scatter** (``none``: SGLang's default ``--moe-a2a-backend none``, vLLM's default ``--all2all-backend
allgather_reducescatter``). Before an MoE layer every rank's tokens are all-gathered to all the ranks sharing the
experts; each computes its experts over all of them; the experts' partial sums are reduce-scattered back, each rank
keeping its own tokens' (SGLang ``layers/dp_attention.py``: ``_dp_gather_via_all_gather`` and
``dp_reduce_scatter_tensor``; vLLM ``AgRsAll2AllManager``). SGLang pads every rank to the largest rank's tokens under
CUDA graphs (``DpPaddingMode.MAX_LEN``), and the cost model prices each rank at the same share of the requests, so
one rank's gathered buffer is ``dp x tokens`` rows. A ring all-gather and a ring reduce-scatter each move
``(N - 1) / N`` of that buffer through every one of the N ranks: ``(dp - 1) x tokens x d_model x 2 B`` at tp 1 (a
rank receives the other ranks' tokens in the gather and sends them their sums in the scatter), whatever the
routing.

**DeepEP** (``deepep``: SGLang ``--moe-a2a-backend deepep``, vLLM ``--all2all-backend deepep_low_latency``).
Bytes a device sends per MoE layer, each way: ``tokens x d_model x 2 B x remote destinations``, where a token goes
once to every other device holding at least one of its top-k experts. With experts routed uniformly, a device
holding E / N of the E experts holds none of a token's k with probability C(E - E / N, k) / C(E, k), so a token
reaches ``(N - 1) x (1 - C(E - E / N, k) / C(E, k))`` other devices. Top-1 routing gives (N - 1) / N; 256
experts, top 8, over 8 devices, 4.62. Group-limited routing counts groups for experts (``remote_destinations``):
DeepSeek-V3's 4 of 8 groups over 8 devices, 7 x (1 - C(7, 4) / C(8, 4)) = 3.5. Activations in bf16 both ways
(DeepEP's low-latency dispatch can send fp8: then the dispatch is about half this). Against the gather's
``dp - 1`` = 7 a token, DeepEP sends DeepSeek-V3's tokens 3.5 times at dp 8, half the bytes at any batch: it wins
wherever the bytes count (large batches) and costs as many collective launches, so at a handful of tokens (where
the latency of the two collectives dominates) the two are about even.

Not priced here: SGLang also gathers the dense layers' tokens and runs those MLPs tensor-parallel over all ranks
(its ``moe_dense_tp_size`` default), and shards the shared experts over all ranks without DeepEP; the plan holds
them whole on each rank, as vLLM does (DeepSeek-V3: 3 dense layers of 61).
"""

from math import comb

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import DeploymentSpec, EngineName, GenerationId, ModelSpec, MoeA2aBackend
from mha_cli.core.tensor_parallel import ExpertLayout, tp_shard_problem

DP_ATTENTION_ENGINES = ("vllm", "sglang")
"""Engines that run DP attention with expert parallelism (TensorRT-LLM's replicas here are separate servers)."""


DEEPEP_VENDOR = "NVIDIA"
"""vLLM's DeepEP all-to-all runs over NVSHMEM on NVIDIA GPUs alone (ROCm has its own MoRI backends, not priced):
refused elsewhere, and a companion vLLM line asks no backend there. SGLang's DeepEP dispatcher has ROCm (AITER)
paths, so SGLang is priced with it on AMD too."""


def a2a_backend_on(vendor: str) -> MoeA2aBackend:
    """The dispatch a DP-attention layout the search builds is priced with on ``vendor``'s GPUs: DeepEP's on NVIDIA's,
    as the launch lines ask, else the default all-gather."""
    return "deepep" if vendor == DEEPEP_VENDOR else "none"


def without_data_parallel(deployment: DeploymentSpec) -> DeploymentSpec:
    """``deployment`` with ``--data-parallel-size 1`` typed, the engines' default that every launch line writes: no
    dp, and none of the expert parallelism a config file's ``dp`` implied (trial 390 #1, review 393 #1)."""
    implied = deployment.dp is not None
    return deployment.model_copy(
        update={"dp": None, "expert_parallel": None if implied else deployment.expert_parallel}
    )


def dense_dp_as_replicas(
    model: ModelSpec, dp: int | None, tp: int | None, n_devices: int | None, pp: int = 1
) -> tuple[int | None, int | None]:
    """(tp, dp) with vLLM's ``--data-parallel-size`` (SGLang's ``--dp-size``) on a dense model read as plain
    replicas, by ``mha plan`` and ``mha kv`` alike: tp from the target's ``n_devices`` and dp gone; as given
    otherwise (an MoE model's dp is DP attention; no target: the refusal stands). Trial 357 #4: kv refused the
    flags plan accepts and writes in its lines."""
    if dp is None or model.block.moe is not None or n_devices is None:
        return tp, dp
    return dp_tp(dp, tp, n_devices, pp, sglang_hint=False), None


def dp_tp(dp: int, tp: int | None, n_devices: int, pp: int = 1, *, sglang_hint: bool = True) -> int:
    """The tp of each of ``dp`` data-parallel ranks on ``n_devices``: n_devices / (dp x pp), or ``tp`` when given,
    checked to use every device (``BadInputError``, one line, otherwise; ``sglang_hint``: naming
    --enable-dp-attention where ``tp`` takes every GPU, as SGLang's --tp counts them)."""
    if dp < 1:
        raise BadInputError(f"--dp {dp}: give 2 or more data-parallel ranks")
    if tp is None:
        if n_devices % (dp * pp):
            divisors = [str(d) for d in range(n_devices, 1, -1) if n_devices % (d * pp) == 0]
            hint = f" such as {', '.join(divisors[:3])}" if divisors else ""
            if pp > 1:  # dp x pp GPUs at least, in a count that divides the target's
                raise BadInputError(
                    f"--dp {dp} x --pp {pp} must divide the {n_devices} GPU(s) of the target: pick a --dp{hint}"
                )
            raise BadInputError(f"--dp {dp} must divide the {n_devices} GPU(s) of the target: pick a divisor{hint}")
        return n_devices // (dp * pp)
    if tp * dp * pp != n_devices:
        counts_all = sglang_hint and tp * pp == n_devices
        sglang = " or, for SGLang's --tp counting every GPU, add --enable-dp-attention" if counts_all else ""
        raise BadInputError(
            f"--tp {tp} x --dp {dp}{f' x --pp {pp}' if pp > 1 else ''} must equal the {n_devices} GPU(s) of the"
            f" target: leave out --tp (it follows from --dp){sglang}"
        )
    return tp


DATA_PARALLEL_WORDS = {"vllm": "--data-parallel-size", "sglang": "--enable-dp-attention"}
"""The flag each engine's data-parallel ranks sharing the experts are started with (``core.engine.flags``: vLLM's
from 0.8.3, SGLang's in every release read from 0.4.0)."""


def dp_attention_runs_on(engine: str | None, generation: str | None, release: str | None = None) -> bool:
    """Whether ``engine`` (of ``generation``; None: its latest) at ``release`` (the one typed; None: the
    generation's latest) runs DP attention: where its flag (``DATA_PARALLEL_WORDS``) is in the flags table at that
    release, so vLLM from 0.8.3 (``--data-parallel-size``, read in the wheels; V0 and 0.8.0-0.8.2 have none) and
    SGLang."""
    from mha_cli.core.engine.flags import has, release_meant
    from mha_cli.core.engine.generations import generation as resolve

    engine = engine or "vllm"
    if engine not in DP_ATTENTION_ENGINES:
        return False
    chosen = resolve(generation, engine)  # type: ignore[arg-type]
    if not chosen.data_parallel_flag:
        return False
    return has(engine, release_meant(chosen, release), DATA_PARALLEL_WORDS[engine])


def data_parallel_missing(engine: str | None, generation: str | None, release: str | None) -> str:
    """Why ``engine``'s ``release`` (None: the latest of ``generation``) runs no DP attention: ``vLLM 0.8.0 has no
    --data-parallel-size (first in 0.8.3)``, its ``DATA_PARALLEL_WORDS`` flag (``core.engine.flags``)."""
    from mha_cli.core.engine.flags import release_named, span
    from mha_cli.core.engine.generations import generation as resolve

    engine = engine or "vllm"
    word = DATA_PARALLEL_WORDS[engine]
    named = release_named(engine, resolve(generation, engine), release)  # type: ignore[arg-type]
    return f"{named} has no {word} (first in {span(engine, word).first})"


def dp_attention_problem(
    model: ModelSpec,
    engine: str | None,
    tp: int,
    dp: int,
    replicas: int,
    generation: str | None = None,
    release: str | None = None,
) -> str | None:
    """Why ``dp`` data-parallel ranks of tp ``tp`` (the layout's ``replicas``) cannot run ``model``'s attention apart
    with its experts spread over all of them, or None when they can (one line: what is wrong and what to do)."""
    if dp != replicas:
        return f"--dp {dp} with tp {tp} leaves {replicas} replica(s): give --dp alone (tp follows from it)"
    if model.block.moe is None:
        return (
            f"DP attention spreads routed experts over the data-parallel ranks and {model.name} has none (a dense"
            " model): leave out --dp; --tp with fewer devices than the target's makes plain replicas"
        )
    if (engine or "vllm") not in DP_ATTENTION_ENGINES:
        return (  # TensorRT-LLM has it too: NVIDIA/TensorRT-LLM docs/source/features/parallel-strategy.md
            f"mha prices DP attention for vLLM and SGLang only, not {engine} (TensorRT-LLM's enable_attention_dp, an"
            " --extra_llm_api_options key, is not priced): use --engine vllm or sglang, or leave out --dp"
        )
    if not dp_attention_runs_on(engine, generation, release):
        from mha_cli.core.engine.flags import span

        first = span(engine or "vllm", DATA_PARALLEL_WORDS[engine or "vllm"]).first
        return (
            f"{data_parallel_missing(engine, generation, release)}, so no DP attention: use --engine"
            f" {engine or 'vllm'}@{first} or later, or leave out --dp"
        )
    if dp < 2:
        return f"--dp {dp}: DP attention needs 2 or more data-parallel ranks (without it: --tp alone)"
    problem = tp_shard_problem(model, tp, dp_attention_experts(tp, dp))
    return None if problem is None else f"DP attention over {dp} ranks of tp {tp}: {problem}"


STAGES_FIRST = {"sglang": "0.5.2"}
"""The first release of each engine that runs DP attention with pipeline stages (``--pp-size`` over DP-attention
ranks). SGLang: accepted by ``server_args.py`` ``check_server_args`` in every 0.4/0.5 release read (its pp check
refuses only overlap scheduling, speculative decoding and mixed chunks), but before 0.5.2 the server started and
crashed on its warmup request (sgl-project/sglang#9805, ``--tp-size 4 --pp-size 2 --dp-size 4
--enable-dp-attention``), fixed by #10100 (merged 2025-09-06, with a ``--pp-size 2 --enable-dp-attention`` test;
0.5.2's wheel was built 2025-09-11). vLLM: none needed: ``ParallelConfig`` and ``arg_utils.py`` have no check
joining ``--data-parallel-size`` and ``--pipeline-parallel-size`` in any wheel read (0.8.5, 0.10.2, 0.11.0, 0.13.0,
0.16.0, 0.19.1, 0.20.0); each data-parallel engine core runs its tp x pp workers with a batch queue pp deep
(``v1/engine/core.py``), and its expert group joins the same stage of every rank (``parallel_state.py``:
``all_ranks.transpose(1, 2)``, dp x tp ranks a stage). TensorRT-LLM: DP attention is not priced
(``dp_attention_problem``)."""


def dp_attention_stages_problem(engine: str | None, generation: str | None, release: str | None, pp: int) -> str | None:
    """Why ``engine``'s release meant (``release``; None: the latest of ``generation``) cannot run DP attention with
    ``pp`` pipeline stages (``STAGES_FIRST``), in one line, or None when it can."""
    from mha_cli.core.engine.flags import release_key, release_meant, release_named
    from mha_cli.core.engine.generations import generation as resolve

    engine = engine or "vllm"
    first = STAGES_FIRST.get(engine)
    if pp < 2 or first is None:
        return None
    chosen = resolve(generation, engine)  # type: ignore[arg-type]
    if release_meant(chosen, release) >= release_key(first):
        return None
    return (
        f"{release_named(engine, chosen, release)} crashes DP attention with pipeline stages (--pp {pp} over"
        f" data-parallel ranks sharing the experts: sgl-project/sglang#9805, fixed in {first} by #10100): use"
        f" --engine {engine}@{first} or later, or --pp 1, or a --tp that fills the stage's GPUs"
    )


A2A_DEFAULTS: dict[GenerationId, MoeA2aBackend] = {
    "vllm-v1": "none",  # VLLM_ALL2ALL_BACKEND ("naive", then "allgather_reducescatter"); the flag from 0.11.1
    "vllm-0.21": "none",  # --all2all-backend allgather_reducescatter (vllm/config/parallel.py, ParallelConfig)
    "sglang-0.4": "none",  # --enable-deepep-moe off
    "sglang-0.5": "none",  # --moe-a2a-backend none (python/sglang/srt/server_args.py)
}
"""How each generation that runs DP attention reaches the experts unless told: none uses DeepEP by default (it is an
extra package, used when asked). vLLM's first ``naive`` backend combines by an all-reduce (up to twice the
reduce-scatter's bytes): priced as the gather and scatter all the same."""


def default_a2a_backend(engine: EngineName | None, generation: GenerationId | None = None) -> MoeA2aBackend:
    """How ``engine`` (of ``generation``; None: its latest) reaches DP attention's experts unless told
    (``A2A_DEFAULTS``)."""
    from mha_cli.core.engine.generations import generation as resolve

    return A2A_DEFAULTS.get(resolve(generation, engine).id, "none")


def a2a_backend_of(
    backend: MoeA2aBackend | None, engine: EngineName | None, generation: GenerationId | None
) -> MoeA2aBackend:
    """``backend`` as asked, else the engine's default (``default_a2a_backend``)."""
    return backend if backend is not None else default_a2a_backend(engine, generation)


SGLANG_A2A_BACKEND_FROM = (0, 4, 10, 2)
"""The first SGLang release read with ``--moe-a2a-backend deepep`` (``core.engine.flags``), which deprecates
``--enable-deepep-moe`` ("NOTE: --enable-deepep-moe is deprecated", 0.4.10.post2 ``server_args.py``)."""


def sglang_deepep_flags(release: tuple[int, ...] | None) -> list[str]:
    """SGLang's words for DeepEP in ``release`` (a ``release_key``; None: the latest): ``--moe-a2a-backend deepep``
    from ``SGLANG_A2A_BACKEND_FROM``, ``--enable-deepep-moe`` before (trial 368 #7: sglang@0.4, 0.4.10.post2, was
    written the deprecated word)."""
    if release is not None and tuple(release) < SGLANG_A2A_BACKEND_FROM:
        return ["--enable-deepep-moe"]
    return ["--moe-a2a-backend", "deepep"]


def dp_attention_experts(tp: int, dp: int, a2a_backend: MoeA2aBackend = "none") -> ExpertLayout:
    """The routed experts under DP attention: whole over all tp x dp devices, reached by ``a2a_backend``."""
    return ExpertLayout(tp * dp, whole=True, dp_attention=True, a2a_backend=a2a_backend)


def remote_destinations(model: ModelSpec, ranks: int) -> float:
    """Other devices one token's hidden state goes to in an MoE layer (see the module docstring): every device
    holding at least one of its top-k experts, its own aside, with experts routed uniformly. Group-limited routing
    (DeepSeek-V3: top 8 of the experts of 4 of 8 groups) whose groups sit whole on the devices counts the groups
    instead: a token reaches the devices of its ``topk_group`` groups (each chosen group, picked by its best
    scores, takes some of the token's experts)."""
    moe = model.block.moe
    assert moe is not None
    units, picked = moe.n_experts, moe.n_active_experts
    if moe.topk_method != "greedy" and moe.n_group > 1 and moe.n_group % ranks == 0:
        units, picked = moe.n_group, moe.topk_group
    elsewhere = units - -(-units // ranks)  # the experts (groups) not on a given device
    untouched = comb(elsewhere, picked) / comb(units, picked)  # that device holds none of the token's
    return (ranks - 1) * (1 - untouched)


def dispatch_bytes(model: ModelSpec, tokens: int, ranks: int, activation_bytes: int) -> float:
    """Bytes one device sends to the others to dispatch ``tokens`` tokens to their experts (and, as many, receives
    back in the combine): tokens x d_model x ``activation_bytes`` x ``remote_destinations``."""
    return tokens * model.d_model * activation_bytes * remote_destinations(model, ranks)


def dispatch_note(layout: ExpertLayout) -> str:
    """How DP attention's tokens reach the experts of ``layout``, in words, with the flag that chose it."""
    if layout.deepep:
        return (
            "reached by DeepEP's all-to-all (--moe-a2a-backend deepep): each token sent to its experts' GPUs; DeepEP's"
            " own buffers (vLLM: VLLM_DEEPEP_BUFFER_SIZE_MB, 1,024 MB by default) are not in the memory plan"
        )
    return (
        "reached by all-gather and reduce-scatter (--moe-a2a-backend none, the engines' default: every rank's tokens"
        " gathered to all before each MoE layer, the sums scattered back; --moe-a2a-backend deepep prices DeepEP, on"
        " NVIDIA GPUs for vLLM)"
    )


def lockstep_note(dp: int, users: int, osl: int) -> str:
    """What DP attention's pricing simplifies, in words. The ranks step together, and the cost model prices them in
    the same phase (one rank's step at its share, every rank's tokens as many as its own: their prefills in the same
    steps); in the engine each rank's prefills fall in steps of their own and hold every rank's decodes there.
    ``users`` closed-loop users of ``osl`` output tokens each start a new request about every ``osl`` steps:
    ``users / osl`` prefills a step over all ranks, ``1 / dp`` of them on one."""
    everywhere, here = users / osl, users / osl / dp
    return (
        f"priced as if the {dp} ranks' prefills fell in the same steps: in the engine each falls in a step of its own"
        f" and holds every rank's decodes for it ({users} users of {osl} output tokens start about {everywhere:.2g}"
        f" prefill(s) a step over all ranks, {here:.2g} on one), so the measured ITL can sit above this plan's"
    )
