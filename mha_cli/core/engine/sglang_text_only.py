"""What SGLang does with a multimodal model served for text alone, for ``--text-only`` (vLLM's
``--language-model-only``): SGLang's own ``--language-model-only`` (0.5.18 on) never loads the tower and skips
``adjust_mem_fraction_for_vlm`` (``server_args.py`` ``_handle_gpu_memory_settings`` 0.5.18, ``arg_groups/memory_hook.py``
``handle_gpu_memory_settings`` 0.5.19-0.5.23: ``is_multimodal and not language_only and not language_model_only``),
but only for the architectures its ``ServerArgs.LANGUAGE_MODEL_ONLY_ARCHITECTURES`` lists: ``_handle_language_model_only``
(``server_args.py`` 0.5.18-0.5.19, ``arg_groups/model_hook.py`` 0.5.20-0.5.23) raises ValueError for any other. Its
``--language-only`` (0.5.7 on) is encoder disaggregation's language server, which needs ``--encoder-urls``: not a
text-only launch. Read in the wheels of 0.5.17-0.5.23 (0.5.17 has no ``--language-model-only``). Pure Python."""

from mha_cli.core.engine.prefill_graphs import LATEST_READ, release_triple

LANGUAGE_MODEL_ONLY: tuple[tuple[tuple[int, int, int], tuple[str, ...]], ...] = (
    ((0, 5, 22), ("DeepseekV4ForCausalLM", "MuseGlimmerForConditionalGeneration", "Cosmos3ForConditionalGeneration",
                  "Cosmos3EdgeForConditionalGeneration")),
    ((0, 5, 20), ("MuseGlimmerForConditionalGeneration", "Cosmos3ForConditionalGeneration",
                  "Cosmos3EdgeForConditionalGeneration")),
    ((0, 5, 18), ("MuseGlimmerForConditionalGeneration",)),
)  # fmt: skip
"""``LANGUAGE_MODEL_ONLY_ARCHITECTURES`` by the first release that lists them, newest first."""
FIRST = "0.5.18"


def language_model_only(release: str | None) -> tuple[str, ...]:
    """The architectures SGLang ``release`` (None: the newest read) serves under ``--language-model-only``; none
    before 0.5.18, for a commit or a dev build."""
    triple = release_triple(release or LATEST_READ)  # a line (0.5): its newest patch
    return next((names for since, names in LANGUAGE_MODEL_ONLY if triple is not None and triple >= since), ())


def text_only_refusal(release: str | None, architectures: tuple[str, ...]) -> str:
    """One line refusing ``--text-only`` for SGLang ``release`` and a model served as ``architectures``: what the
    engine would do, and what to give instead."""
    name = f"SGLang {release or LATEST_READ}"
    listed = language_model_only(release)
    served = [architecture for architecture in architectures if architecture in listed]
    if served:  # no model mha reads with a vision tower is one of them (0.5.23)
        return (
            f"--text-only: {name}'s --language-model-only serves {served[0]} without its tower, which mha does not"
            " price for SGLang: leave --text-only out, or use --engine vllm"
        )
    if not listed:
        why = f"{name} has no --language-model-only (first in {FIRST})"
    else:
        model = architectures[0] if architectures else "this model"
        why = f"{name}'s --language-model-only serves only {', '.join(listed)}, not {model}"
    return (
        f"--text-only: {why}, so SGLang loads the vision tower and scales mem_fraction_static for it"
        " (adjust_mem_fraction_for_vlm), as mha prices it: leave --text-only and --limit-mm-per-prompt out, or use"
        " --engine vllm"
    )
