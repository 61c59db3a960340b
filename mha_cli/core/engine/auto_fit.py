"""vLLM's auto-fit of ``--max-model-len auto`` (or -1): where one request of the derived length does not fit.

From 0.14.0 vLLM reads ``auto`` and -1 as "the model's length if one request of it fits the KV pool, else the longest
that does" (``utils/argparse_utils.py`` ``human_readable_int_or_auto``; ``v1/core/kv_cache_utils.py``
``_auto_fit_max_model_len``, called when ``original_max_model_len == -1``: read in the 0.14.0, 0.15.0, 0.16.0 and
0.29.0 wheels; 0.13.0's has neither, and its ``--max-model-len`` takes whole numbers only). It runs after the memory
profile, on the pool the profile left, with the length the start-up error would have named ("the estimated maximum
model length"), and logs "Auto-fit max_model_len: reduced from X to Y to fit in available GPU memory". The profile
itself does not depend on max_model_len (its dummy run is max_num_batched_tokens long), so pricing the engine again
at Y gives the pool vLLM allocates, but on an integrated GPU, whose host token tables mha sizes by the length
(``core.engine.uma_token_tables``): there the pool is a little larger than vLLM's (review 386 #10). Under pipeline
stages vLLM fits the length over every stage's worker and takes the shortest (``ServingPlan._stages_fitted``): from
0.17 each worker's own layers against its pool, in 0.14-0.16 a request of the whole model against the least pool
(``core.engine.vllm_rule_releases.checks_whole_model``, whose stage plans price the whole model's request). Not
modelled: ``--disaggregated`` (its lines write one context for both pools). The log line's words are by release
(``core.engine.vllm_words``). Pure Python.
"""

from mha_cli.core.schemas import DeploymentSpec

AUTO_FIT_FROM = (0, 14)
"""The first vLLM release whose ``--max-model-len auto`` fits the length to the pool."""


def auto_fits(deployment: DeploymentSpec) -> bool:
    """Whether ``deployment``'s engine lowers a derived max_model_len that does not fit: vLLM 0.14+ started with
    ``--max-model-len auto`` (``DeploymentSpec.max_model_len_auto``)."""
    from mha_cli.core.engine.settings import release_in_force

    if not deployment.max_model_len_auto or (deployment.engine or "vllm") != "vllm":
        return False
    release = release_in_force(deployment)
    return release is None or tuple(release[:2]) >= AUTO_FIT_FROM
