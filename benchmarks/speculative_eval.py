"""Published speculative-decoding speedups, predicted: each row's setup (model, GPU, engine, method, k, the
acceptance length T the source measured, the load) through ``mha plan``'s closed form with and without speculative
decoding, on the shipped GPU priors; and hand counts of the drafters' memory. No constant was fitted on these rows;
one modelling rule was chosen with the two vLLM EAGLE rows in view (each drafter pass pays the profile's step
overhead: without it those rows came out 1.64x and 1.59x), so they are not held out; the others are. Output
tokens/s with / without at the row's load is the predicted speedup.

    PYTHONPATH=. python benchmarks/speculative_eval.py [--out outputs/serving/speculative.md]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NamedTuple

from mha_cli.core.cost.priors import datasheet_profile, prior_profile
from mha_cli.core.cost.speculative_plan import compare_speculative
from mha_cli.core.deployment import merge_deployment
from mha_cli.core.sources import load_source
from mha_cli.core.speculative import build_spec, drafter_kv_bytes_per_token, drafter_weight_bytes
from mha_cli.core.targets import resolve_target

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "tests" / "fixtures" / "hf_configs"


class Published(NamedTuple):
    """One published measurement: its setup, T, and the speedup it reports (output tokens/s with / without)."""

    source: str
    url: str
    model: str
    """A preset or a config in tests/fixtures/hf_configs."""
    target: str
    engine: str
    method: str
    k: int
    acceptance_length: float
    users: int
    isl: int
    osl: int
    measured: float | None
    how: str


ROWS = [
    Published(
        "vLLM PR 16035 (EAGLE, MT-bench, max_num_seqs 1)",
        "https://github.com/vllm-project/vllm/pull/16035",
        "llama-3-8b",
        "h100",
        "vllm",
        "eagle",
        2,
        1.89,
        1,
        128,
        256,
        175.49 / 128.64,
        "output 128.64 -> 175.49 tok/s; GPU not named in the comment (the same author's runs in PR 16937 are H100)",
    ),
    Published(
        "vLLM PR 16035 (EAGLE, MT-bench, max_num_seqs 1)",
        "https://github.com/vllm-project/vllm/pull/16035",
        "llama-3-8b",
        "h100",
        "vllm",
        "eagle",
        4,
        2.08,
        1,
        128,
        256,
        165.65 / 128.64,
        "output 128.64 -> 165.65 tok/s; a longer chain accepts more but drafts more",
    ),
    Published(
        "SGLang PR 4247 + SGLang docs (EAGLE-3, MT-bench, H100, batch 1)",
        "https://github.com/sgl-project/sglang/pull/4247",
        "llama-3.1-8b",
        "h100",
        "sglang",
        "eagle3",
        5,
        4.68,
        1,
        128,
        256,
        361.70 / 158.34,
        "361.70 tok/s at num_steps 5 (AL 4.68) against 158.34 without (docs table, same model and GPU); a tree"
        " (topk > 1) verifies more than k + 1 tokens",
    ),
    Published(
        "EAGLE-3 paper (SGLang, H100, batch 64)",
        "https://arxiv.org/abs/2503.01840",
        "llama-3.1-8b",
        "h100",
        "sglang",
        "eagle3",
        5,
        4.68,
        64,
        128,
        256,
        1.38,
        "1.38x throughput at batch 64; its T at that batch is not stated: priced at the batch-1 AL above",
    ),
    Published(
        "GLM-4.7-Flash EAGLE-3 (SGLang, H100 tp 1, MT-bench)",
        "https://github.com/SafeAILab/EAGLE/pull/330",
        str(CONFIGS / "glm-4.7-flash.json"),
        "h100",
        "sglang",
        "eagle3",
        3,
        2.4,
        1,
        128,
        256,
        1.39,
        "TPOT 8.18 -> 5.89 ms at B=1; tree of topk 4, 6 draft tokens, 3 steps (priced as a chain of 3)",
    ),
    Published(
        "GLM-4.7-Flash EAGLE-3 (SGLang, H100 tp 1, MT-bench)",
        "https://github.com/SafeAILab/EAGLE/pull/330",
        str(CONFIGS / "glm-4.7-flash.json"),
        "h100",
        "sglang",
        "eagle3",
        3,
        2.4,
        32,
        128,
        256,
        1.70,
        "258.61 -> 440.15 tok/s at B=32",
    ),
    Published(
        "DeepSeek-V3 technical report (MTP, their serving)",
        "https://arxiv.org/abs/2412.19437",
        str(CONFIGS / "deepseek-v3.json"),
        "8xh200",
        "vllm",
        "mtp",
        1,
        1.875,
        1,
        1024,
        1024,
        1.8,
        "second-token acceptance 85-90%, 1.8x TPS; load and GPUs of the measurement not stated (H800 cluster)",
    ),
    Published(
        "DeepSeek-V3 technical report (MTP, their serving)",
        "https://arxiv.org/abs/2412.19437",
        str(CONFIGS / "deepseek-v3.json"),
        "8xh200",
        "vllm",
        "mtp",
        1,
        1.875,
        64,
        1024,
        1024,
        1.8,
        "the same 1.8x, read against 64 users",
    ),
]


def predict(row: Published) -> tuple[float, float, int | None]:
    """(predicted speedup in output tokens/s, ITL ratio, the first load at which it loses) for ``row``."""
    loaded = load_source(row.model)
    target = resolve_target(row.target)
    deployment = merge_deployment(
        loaded.deployment, model=loaded.model, seq_len=row.isl + row.osl, target=target.spec, engine=row.engine
    )
    spec = build_spec(
        loaded.model, origin=loaded.origin, kind=loaded.kind, method=row.method, num_speculative_tokens=row.k,
        acceptance_length=row.acceptance_length,
    )  # fmt: skip
    deployment = deployment.model_copy(update={"speculative": spec})
    profile = prior_profile(target.target, deployment.weight_dtype)
    ceiling = datasheet_profile(target.target, deployment.weight_dtype)
    compared = compare_speculative(
        loaded.model, target, deployment, profile, ceiling, isl=row.isl, osl=row.osl, concurrency=row.users,
        tp=target.n_devices,
    )  # fmt: skip
    throughput = compared.output_tokens_per_s / compared.output_tokens_per_s_without
    return throughput, compared.speedup, compared.loses_from


def hand_counts() -> list[str]:
    """The drafters' memory as the plan counts it (tests/test_speculative.py checks each against a hand count)."""
    deepseek = load_source(str(CONFIGS / "deepseek-v3.json"))
    mtp = build_spec(deepseek.model, origin=deepseek.origin, kind=deepseek.kind, method="mtp")
    llama = load_source(str(CONFIGS / "llama-3.1-70b.json")).model
    draft = build_spec(
        llama, origin="", kind="hf-config", draft=str(CONFIGS / "llama-3.2-1b.json"), acceptance_length=2
    )
    lines = ["| drafter | weights per rank | KV per token per rank |", "| --- | --- | --- |"]
    for label, spec, tp, weights, kv in (
        ("DeepSeek-V3 MTP layer (fp8-block, bf16 cache), tp 1", mtp, 1, "fp8-block", "bf16"),
        ("DeepSeek-V3 MTP layer (fp8-block, bf16 cache), tp 8", mtp, 8, "fp8-block", "bf16"),
        ("DeepSeek-V3 MTP layer, fp8 cache, tp 8", mtp, 8, "fp8-block", "fp8"),
        ("Llama-3.2-1B drafting for Llama-3.1-70B (bf16), tp 1", draft, 1, "bf16", "bf16"),
        ("Llama-3.2-1B drafting for Llama-3.1-70B (bf16), tp 8", draft, 8, "bf16", "bf16"),
    ):
        lines.append(
            f"| {label} | {drafter_weight_bytes(spec, tp, weights):,} B | {drafter_kv_bytes_per_token(spec, tp, kv):,} B |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "serving" / "speculative.md")
    args = parser.parse_args()
    lines = [
        "# Speculative decoding: published speedups against the plan's, and the drafters' memory",
        "",
        "Command: `PYTHONPATH=. python benchmarks/speculative_eval.py`. Each row: the source's setup priced by `mha plan`'s"
        " closed form with and without speculative decoding (`--speculative-config`, `--acceptance-length` T as the"
        " source measured it), on the shipped GPU priors; predicted = output tokens/s with / without at the row's"
        " users. No constant was fitted on these rows. One rule was chosen with the two vLLM EAGLE rows in view:"
        " each drafter pass pays the profile's engine step overhead (vLLM's proposer runs each pass as its own"
        " forward call); without it they came out 1.64x and 1.59x against 1.36x and 1.29x measured, so those two rows"
        " are not held out; the others are. MT-bench rows are priced at 128 prompt / 256 output tokens.",
        "",
        "| source | model | GPU | engine | method, k | T | users | measured | predicted (tok/s) | predicted ITL ratio |"
        " loses from | notes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in ROWS:
        throughput, itl, loses = predict(row)
        measured = "-" if row.measured is None else f"{row.measured:.2f}x"
        model = Path(row.model).stem if row.model.endswith(".json") else row.model
        lines.append(
            f"| [{row.source}]({row.url}) | {model} | {row.target} | {row.engine} | {row.method}, {row.k} |"
            f" {row.acceptance_length:g} | {row.users} | {measured} | {throughput:.2f}x | {itl:.2f}x |"
            f" {'-' if loses is None else f'{loses:,} users'} | {row.how} |"
        )
    lines += [
        "",
        "## The drafters' memory (hand-counted in tests/test_speculative.py)",
        "",
        *hand_counts(),
        "",
        "- DeepSeek-V3's MTP layer (`num_nextn_predict_layers: 1`): one MoE decoder layer (MLA attention, 256 routed +"
        " 1 shared experts of 2048) in fp8 with 128 x 128 block scales, plus `eh_proj` (2 x 7168 x 7168) and `enorm`,"
        " `hnorm`, `shared_head.norm` in bf16, whole on every rank (a plain `nn.Linear` in vLLM's"
        " `deepseek_mtp.py`); its embedding and head are the target's. The hand count is 1,024 B above the plan's:"
        " the router's `e_score_correction_bias` (256 fp32), which the project's weight model leaves out. Its cache:"
        " the 576-value latent (512 + 64 rope), whole on every rank: 1,152 B a token in bf16, 576 in fp8.",
        "- Llama-3.2-1B (16 layers, 8 KV heads of 64, tied 128,256 x 2048 embedding): vLLM shards a draft model with"
        " the target's tp (`_verify_and_get_draft_tp`), so at tp 8 each rank holds one KV head and 1/8 of the"
        " vocabulary; its 16 layers join the pool (32,768 B a token, 4,096 a rank at tp 8): the pool of Llama-3.1-70B"
        " at tp 8 then counts 80 x 512 + 4,096 = 45,056 B a token a rank.",
        "",
        "## Reading it",
        "",
        "- At batch 1 the held-out rows come within -7% to +13% of the measured speedups (SGLang's EAGLE-3 at T = 4.68"
        " is the widest: its tree drafts and verifies more than the chain priced). At 32 and 64 users the plan stays"
        " 11-12% above the measured speedups but follows their direction: GLM-4.7-Flash's speedup grows from batch 1"
        " to 32 in both (the baseline's step grows faster than the speculative step's per token).",
        "- DeepSeek's 1.8x comes from its own serving (H800s, load not stated); the plan's 1.68x at one user and 1.58x"
        " at 64 on 8 x H200 are 7% and 12% below it.",
        "- Where the source states T and the load is batch 1 (vLLM EAGLE rows), the plan's speedup is the step"
        " model's: (draft + verify) / T against a decode step.",
        "- SGLang's EAGLE-3 rows draft a tree (topk 4 or 8): more tokens verified per step than a chain of k, which the"
        " plan prices; the plan prices its chain of k only.",
        "- The plan says where speculative decoding stops paying (`loses from`: the first load of 1, 2, 4, ... at which"
        " its tokens/s fall below plain decoding's): the verification's k + 1 tokens per sequence turn the step"
        " compute-bound as the batch grows, and the drafter's cache leaves fewer requests room.",
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
