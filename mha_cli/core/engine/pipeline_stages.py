"""The first release of each engine whose launch line, as mha writes it, starts with pipeline stages (pp > 1).

- vLLM: every release has ``--pipeline-parallel-size``, but 0.2-0.5.0 refuse a size above 1 at start-up
  (``config.py`` ``ParallelConfig._verify_args``: "Pipeline parallelism is not supported yet.", read in the
  0.5.0.post1 wheel) and 0.5.1-0.5.2 refuse it on the multiprocessing executor a one-node server defaults to
  ("Pipeline parallelism is not supported yet with multiprocessing.", read in the 0.5.1 and 0.5.2 wheels; the line
  would need ``--distributed-executor-backend ray``, which mha does not write). 0.5.3 drops the condition (its
  ``_verify_args`` read). Those releases also limit pipeline stages to the architectures in ``_PP_SUPPORTED_MODELS``
  (Llama, Mistral, Phi-3, GPT-2, ... in 0.5.1-0.5.3): not checked here.
- SGLang: ``--pp-size`` first in 0.4.6.post2 (``core.engine.flags``, read in the wheels; sgl-project/sglang#5724).
- TensorRT-LLM: ``--pp_size`` in every trtllm-serve modelled (``core.engine.flags``): nothing refused.

A ``--pp`` asked for on an earlier release is refused in one line; a layout search leaves such a layout out, its
trace saying why (the engine would not start on it, or its launch line could not ask for it).
"""

from __future__ import annotations

from mha_cli.core.engine.release_numbers import release_key

VLLM_FIRST = "0.5.3"
"""The first vLLM whose default (one-node, multiprocessing) executor runs pipeline stages."""


def first_with_stages(engine: str) -> str | None:
    """The first release of ``engine`` that runs ``pp`` > 1 from mha's launch line; None when every modelled one does."""
    from mha_cli.core.engine.flags import span

    if engine == "vllm":
        return VLLM_FIRST
    if engine == "sglang":
        return span("sglang", "--pp-size").first
    return None


def pipeline_refusal(engine: str | None, generation_id: str | None, typed: str | None, pp: int) -> str | None:
    """Why ``engine``'s release meant (the one typed, else the generation's latest: ``flags.release_meant``) cannot
    run ``pp`` pipeline stages, in one line; None where it can (or ``pp`` is 1)."""
    engine = engine or "vllm"
    first = first_with_stages(engine)
    if pp <= 1 or first is None:
        return None
    from mha_cli.core.engine.flags import release_meant, release_named
    from mha_cli.core.engine.generations import generation

    chosen = generation(generation_id, engine)  # type: ignore[arg-type]
    if release_meant(chosen, typed) >= release_key(first):
        return None
    why = (
        "has no --pp-size" if engine == "sglang" else "refuses --pipeline-parallel-size above 1 on its default executor"
    )
    return (
        f"--pp {pp}: {release_named(engine, chosen, typed)} {why} (pipeline stages first in {first}): use --pp 1,"
        f" or --engine {engine}@{first} or later"
    )
