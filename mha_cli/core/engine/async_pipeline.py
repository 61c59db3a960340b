"""vLLM's async scheduling with pipeline parallelism, by release (read in the released wheels, ``pip download
vllm==X --no-deps``):

- 0.10.0, 0.10.1 and 0.11.0 refuse ``--async-scheduling`` with ``--pipeline-parallel-size`` > 1 (``engine/arg_utils.py``
  ``EngineArgs.create_engine_config``: "Async scheduling is not supported with pipeline-parallel-size > 1.");
- 0.11.1-0.14.1 still refuse it (``config/vllm.py`` ``VllmConfig.__post_init__``, read in 0.11.1, 0.12.0, 0.13.0,
  0.14.0 and 0.14.1: "Async scheduling is not yet compatible with pipeline_parallel_size > 1."). Their default
  (``async_scheduling`` None, from 0.14.0; False before) is turned off at pp > 1 with a warning ("... not yet
  supported with pipeline_parallel_size > 1 and will be disabled");
- 0.15.0 drops both (no pipeline condition in ``config/vllm.py``, read in 0.15.0, 0.17.0, 0.20.0, 0.26.0, 0.29.0 and
  0.33.0): async scheduling runs with any pipeline size, on by default.

mha refuses ``--async-scheduling`` at pp > 1 on the releases that refuse it: a ``--pp`` asked for is refused in one
line; a layout search leaves such a layout out, its trace saying why, as vLLM would not start on it (the user asked
for async scheduling: the search does not quietly price the layout without it). ``--no-async-scheduling`` and the
default price every layout.
"""

from __future__ import annotations

from mha_cli.core.engine.release_numbers import Release

REFUSED_FROM: Release = (0, 10, 0, 0)
"""The first vLLM with ``--async-scheduling`` (``core.engine.flags``), refusing it at pp > 1."""
ACCEPTED_FROM: Release = (0, 15, 0, 0)
"""The first vLLM that runs async scheduling at pp > 1."""


def async_pipeline_refusal(
    engine: str | None, generation_id: str | None, typed: str | None, async_scheduling: bool | None, pp: int
) -> str | None:
    """Why vLLM's release meant (the one typed, else the generation's latest: ``flags.release_meant``) would not
    start with ``--async-scheduling`` at ``pp`` pipeline stages, in one line; None where it would (or the flag is not
    asked, or the engine is not vLLM)."""
    if not async_scheduling or pp <= 1 or (engine or "vllm") != "vllm":
        return None
    from mha_cli.core.engine.flags import release_meant, release_named
    from mha_cli.core.engine.generations import generation

    chosen = generation(generation_id, "vllm")
    if not REFUSED_FROM <= release_meant(chosen, typed) < ACCEPTED_FROM:
        return None
    return (
        f"--async-scheduling at --pp {pp}: {release_named('vllm', chosen, typed)} refuses async scheduling with"
        " pipeline_parallel_size > 1 (0.10.0-0.14.x): leave out --async-scheduling (or --pp), or use --engine"
        " vllm@0.15.0 or later"
    )
