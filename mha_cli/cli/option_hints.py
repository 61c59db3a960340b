"""What an unknown option that names a design quantity means for a command, in place of click's guess.

``mha recommend --heads 32`` was answered "No such option: --heads (Possible options: --help)": click offers the
nearest spelling among the command's options, and for a quantity the command derives there is none. Pure Python.
"""

from __future__ import annotations

_HEADS = "the head count follows the width (head_dim 32, 64 or 128, rule MHA010): give --d-model"
_KV_HEADS = "the KV heads come from the trade-off step (rules MHA020-MHA022): give --variant MHA, GQA, MQA or MLA"
_LAYERS = "the depth spends --params at the chosen width (rule MHA001): give --d-model, or another --params"
_KV_EXPERTS = (
    "kv prices --dp N as DP attention with the routed experts spread over every GPU, as vLLM's --data-parallel-size"
    " with --enable-expert-parallel runs them: drop it (plan takes it for a deployment --tp/--pp pin)"
)
_KV_DP_ATTENTION = "give --dp N: kv prices it as DP attention (SGLang --dp N --enable-dp-attention)"
_CHECK_DP = (
    "check judges one tensor-parallel deployment; `mha plan MODEL --target T --dp N` prices data parallelism (an MoE"
    " model's DP attention, which `mha kv MODEL --target T --dp N` sizes too; a dense model's replicas)"
)  # trial 307 #7: these were answered "did you mean --tensor-parallel-size?" and "--tp?", another parallelism
_TP_SIZE = (
    "SGLang's --tp-size is --tp here, but under DP attention SGLang counts every GPU in it: there --tp is --tp-size /"
    " --dp"
)  # trial 309 #4: SGLang's own flags, which the launch lines print, were answered "No such option"
_RUNNING = (
    "SGLang's --max-running-requests is --max-num-seqs here, but under DP attention SGLang counts every rank's"
    " requests in it: there --max-num-seqs is it / --dp"
)  # review 310 #1: an alias read the launch line's server-wide figure as one rank's, dp times too many
_SGLANG_FLAGS = {
    "--tp-size": _TP_SIZE,
    "--max-running-requests": _RUNNING,
    "--dtype": "the weights' format is --weight-dtype here: bf16 or fp16 as the engines' --dtype, fp8, awq, gptq, ..."
    " as vLLM's --quantization",
}
_CONTEXT_LENGTH = "SGLang's --context-length is --max-model-len here (vLLM's name)"
_CHECK_SGLANG_FLAGS = {  # review 310 #2: check takes no --dp, so its hints say nothing of it
    **_SGLANG_FLAGS,
    "--tp-size": "SGLang's --tp-size (without DP attention) is --tp here",
    "--max-running-requests": "SGLang's --max-running-requests (without DP attention) is --max-num-seqs here",
}
HINTS: dict[str, dict[str, str]] = {
    "recommend": {
        "--heads": _HEADS, "--n-heads": _HEADS, "--num-heads": _HEADS, "--num-attention-heads": _HEADS,
        "--n-head": _HEADS, "--head": _HEADS,
        "--kv-heads": _KV_HEADS, "--n-kv-heads": _KV_HEADS, "--num-key-value-heads": _KV_HEADS, "--kv-head": _KV_HEADS,
        "--num-kv-heads": _KV_HEADS, "--n-kv-head": _KV_HEADS,
        "--layers": _LAYERS, "--n-layers": _LAYERS, "--num-layers": _LAYERS, "--num-hidden-layers": _LAYERS,
        "--layer": _LAYERS, "--n-layer": _LAYERS, "--depth": _LAYERS, "--n-embd": "the width is --d-model",
        "--head-dim": "head_dim follows the width (128 from d_model 2048, 64 below, 32 under 256: rule MHA010): give"
        " --d-model",
        "--hidden-size": "the width is --d-model",
    },
    "kv": {
        "--enable-expert-parallel": _KV_EXPERTS, "--expert-parallel": _KV_EXPERTS,
        "--enable-dp-attention": _KV_DP_ATTENTION, **_SGLANG_FLAGS, "--context-length": _CONTEXT_LENGTH,
    },
    "plan": {
        **_SGLANG_FLAGS, "--context-length": _CONTEXT_LENGTH,
        # trial 406 #9: kv's --seq was answered "--seed or --users or --osl"
        "--seq": "plan sizes the engine for --isl + --osl tokens a request; kv's --seq, the engine's context, is"
        " --max-model-len here (vLLM's name)",
    },
    "check": {
        **_CHECK_SGLANG_FLAGS, "--context-length": _CONTEXT_LENGTH,
        **dict.fromkeys(("--dp", "--data-parallel-size", "--dp-size", "--attn-dp-size", "--enable-dp-attention"),
                        _CHECK_DP),
        "--enable-expert-parallel": _CHECK_DP, "--expert-parallel": _CHECK_DP,
    },
}  # fmt: skip
"""Per command, unknown options and what to give instead."""


def unknown_option_message(command: str | None, option: str, message: str, possibilities: list[str]) -> str:
    """The one line for ``option``, unknown to ``command``: its hint where listed, else click's ``message`` with
    the options it found near it, but not a bare ``--help`` (no option is near: offering it says nothing)."""
    hint = HINTS.get(command or "", {}).get(option)
    if hint is not None:
        return f"{message}: {hint}"
    near = [name for name in possibilities if name != "--help"]
    return f"{message} (did you mean {' or '.join(near)}?)" if near else message
