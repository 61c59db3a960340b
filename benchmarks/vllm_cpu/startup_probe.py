"""Initialise the real vLLM engine once on one model directory and print how it sized its KV cache.

Runs inside the vLLM venv (started by ``startup_families.py``), with the engine core in this process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``) so that its KV cache configuration can be read back after start-up.
vLLM itself logs "KV cache size: N tokens, Maximum concurrency for L tokens per request: Yx" while the
``LLM`` object is built; this script adds one line, ``STARTUP_PROBE {json}``, with the groups vLLM formed
(kind, block size, page bytes, layers) and its block count.  No request is run.

Usage: python startup_probe.py MODEL_DIR SETTINGS_JSON
   SETTINGS_JSON: {"max_model_len": .., "max_num_seqs": .., "max_num_batched_tokens": .., "block_size": ..|null,
                   "enable_prefix_caching": false|true|null (null: vLLM's default; absent: false)}
"""

import json
import sys


def _group_record(group) -> dict:
    spec = group.kv_cache_spec
    inner = getattr(spec, "kv_cache_specs", None)  # UniformTypeKVCacheSpecs: one spec per layer
    one = next(iter(inner.values())) if inner else spec
    return {
        "spec": type(one).__name__,
        "layers": len(group.layer_names),
        "first_layer": group.layer_names[0] if group.layer_names else None,
        "block_size": getattr(one, "block_size", None),
        "page_size_bytes": getattr(one, "page_size_bytes", None),
        "sliding_window": getattr(one, "sliding_window", None),
        "attention_chunk_size": getattr(one, "attention_chunk_size", None),
    }


def main(model_dir: str, settings: dict) -> None:
    from vllm import LLM

    llm = LLM(
        model=model_dir,
        tokenizer=model_dir,
        load_format="dummy",
        dtype="bfloat16",
        max_model_len=settings["max_model_len"],
        max_num_seqs=settings["max_num_seqs"],
        max_num_batched_tokens=settings["max_num_batched_tokens"],
        block_size=settings.get("block_size"),
        enable_prefix_caching=settings.get("enable_prefix_caching", False),
        enforce_eager=True,
        seed=0,
    )
    record: dict = {}
    try:
        core = llm.llm_engine.engine_core.engine_core
        config = core.scheduler.kv_cache_config
        cache = llm.llm_engine.vllm_config.cache_config
        record = {
            "num_blocks": config.num_blocks,
            "groups": [_group_record(g) for g in config.kv_cache_groups],
            "cache_block_size": cache.block_size,
            "mamba_block_size": getattr(cache, "mamba_block_size", None),
            "enable_prefix_caching": getattr(cache, "enable_prefix_caching", None),
            "mamba_cache_mode": getattr(cache, "mamba_cache_mode", None),
            "kv_cache_size_tokens": getattr(cache, "kv_cache_size_tokens", None),
            "kv_cache_max_concurrency": getattr(cache, "kv_cache_max_concurrency", None),
        }
    except AttributeError as error:  # internals moved: the log lines still carry the figures
        record = {"error": f"could not read the KV cache config: {error}"}
    print("STARTUP_PROBE " + json.dumps(record), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
