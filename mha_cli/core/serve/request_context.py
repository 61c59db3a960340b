"""Whether the requests a simulated client sends fit the context the engine is launched with.

A lengths file, or ``--random-range-ratio``'s draws, can send requests longer than ``--isl + --osl``, the context the
memory plan and the launch lines' ``--max-model-len`` are sized for: the engine refuses them. ``longest_past_context``
finds the longest such request, ``context_miss`` is the miss a plan then carries (trial 377 #2) and
``longest_request_note`` the note that says so and names the flag that admits them. Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mha_cli.core.schemas import DeploymentSpec, ModelSpec
    from mha_cli.core.serve.replica import ClientSpec


def longest_request(client: ClientSpec, isl: int, osl: int, deployment: DeploymentSpec | None) -> int | None:
    """The longest request (prompt and output) the simulated client sends: a lengths file's, or the bound of
    --random-range-ratio's draws; None for fixed --isl and --osl."""
    if client.lengths is not None:
        return max(i + o for i, o in client.lengths)
    if client.range_ratio <= 0:
        return None
    from mha_cli.core.serve.workload import draw_bounds

    prefix = (deployment.shared_prefix or 0) if deployment is not None else 0  # drawn after it (``prompt_lengths``)
    longest = prefix + draw_bounds(max(1, isl - prefix), client.range_ratio)[1] * (isl > prefix)
    return longest + draw_bounds(osl, client.range_ratio)[1]


def served_context(isl: int, osl: int, deployment: DeploymentSpec | None) -> int:
    """The context the memory plan and the launch lines' --max-model-len are sized for."""
    return max(isl + osl, (deployment.max_model_len if deployment is not None else None) or 0)


def longest_past_context(client: ClientSpec, isl: int, osl: int, deployment: DeploymentSpec | None) -> int | None:
    """The longest request the client sends where it runs past the context the engine is launched with, else None."""
    longest = longest_request(client, isl, osl, deployment)
    return longest if longest is not None and longest > served_context(isl, osl, deployment) else None


def context_miss(longest: int) -> str:
    """The miss of a plan whose client sends requests the launched engine refuses (trial 377 #2)."""
    return f"context: requests of up to {longest:,} tokens, past the engine's max_model_len (give --max-model-len {longest})"


def longest_request_note(
    client: ClientSpec, isl: int, osl: int, model: ModelSpec | None = None, deployment: DeploymentSpec | None = None
) -> str | None:
    """Where the simulated client's requests (a lengths file, or --random-range-ratio's draws) run past --isl + --osl,
    the context the memory plan and the launch lines' --max-model-len are sized for: what the engine would refuse and
    the flag that admits them, and where they run past what the engines derive from ``model``'s config too. None:
    none does."""
    longest = longest_past_context(client, isl, osl, deployment)
    if longest is None:
        return None
    source = (
        "the lengths file" if client.lengths is not None else f"--random-range-ratio {client.range_ratio:g}'s draws"
    )
    context = served_context(isl, osl, deployment)
    sized = "--isl + --osl" if context == isl + osl else "--max-model-len"
    return (
        f"requests of {source} {'reach' if client.lengths is not None else 'can reach'} {longest:,} tokens, past"
        f" {sized} ({context:,}): the memory plan and the"
        f" engine's max_model_len (vLLM's --max-model-len, SGLang's --context-length, TensorRT-LLM's --max_seq_len, as"
        f" a launch line writes it) are sized for {context:,}, and the engine refuses a longer request; give"
        f" --max-model-len {longest} (the closed form prices --isl and --osl, the simulated loop the requests drawn)"
        + _past_model_context(model, longest, deployment)
    )


def _past_model_context(model: ModelSpec | None, longest: int, deployment: DeploymentSpec | None) -> str:
    """``; and past the model's context ...`` where the longest request exceeds what the deployment's engine derives
    (vLLM's at its release; trial 254: a 300,100-token request simulated on Llama-3.1-8B's 131,072)."""
    from mha_cli.core.engine.context_limit import OVERRIDES, past_derived_length
    from mha_cli.core.engine.settings import release_in_force

    engine = "vllm" if deployment is None else deployment.engine or "vllm"
    if model is None or engine not in OVERRIDES:  # TensorRT-LLM's own length is not modelled
        return ""
    release = release_in_force(deployment) if deployment is not None and engine == "vllm" else None
    past = past_derived_length(model, longest, (engine,), release)
    return "" if past is None else f"; {past}"
