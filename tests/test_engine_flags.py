"""Every launch-line word exists in the engine release it is written for (``core.engine.flags``,
``core.engine.launch_forms``): the table against the releases' own sources, the lines of every generation (and a
few exact releases) over a grid of deployments against the table, and controls the check must catch."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from mha_cli.core.cost.plan import plan_serving
from mha_cli.core.cost.priors import datasheet_profile, prior_profile
from mha_cli.core.cost.search import launch_commands
from mha_cli.core.deployment import merge_deployment
from mha_cli.core.engine.flags import (
    FIRST_READS,
    LATEST,
    SPANS,
    format_release,
    line_problems,
    release_key,
    release_meant,
)
from mha_cli.core.engine.generations import generation
from mha_cli.core.engine.launch_forms import fit_line
from mha_cli.core.errors import BadInputError
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.served_model import by_preset
from mha_cli.core.speculative import build_spec
from mha_cli.core.targets import resolve_target

PRESENCE = Path(__file__).parents[1] / "outputs" / "engine_flags" / "presence.json"
LATEST_RELEASE = (LATEST, 0, 0, 0)


def test_release_numbers_compare_as_pypi_orders_them():
    assert release_key("0.4.4") < release_key("0.4.4.post1") < release_key("0.4.5") < release_key("0.4")
    assert release_key("0.10.1") < release_key("0.10.1.1") < release_key("0.10.2") and release_key("v0.11.0")
    assert release_key("0.5.0rc0") < release_key("0.5.0") and release_key("0.10") == (0, 10, LATEST, 0)


def test_a_release_is_shown_as_written():
    """vLLM's 0.10.1.1 and the .postN form share a key (they sort alike) but each is shown as typed; a minor alone as
    its latest patch; a key built here, not read from text, in the .postN form."""
    assert release_key("0.10.1.1") == release_key("0.10.1.post1") and release_key("0.10.1.1") > release_key("0.10.1")
    assert format_release(release_key("0.10.1.1")) == "0.10.1.1"
    assert format_release(release_key("0.10.1.post1")) == "0.10.1.post1"
    assert format_release(release_key("v0.10.2")) == "0.10.2" and format_release(release_key("1.0.0rc4")) == "1.0.0rc4"
    assert format_release(release_key("0.10")) == "0.10.x" and format_release((0, 10, 1, 1)) == "0.10.1.post1"
    assert {release_key("0.10.1.1"): 1}[(0, 10, 1, 1)] == 1  # hashed as the plain key
    _, notes = _lines("vllm@0.10.1.1", "prefix-on")[1]
    assert "the vllm line is written for vllm 0.10.1.1" in notes and "post1" not in str(notes)


def test_the_table_agrees_with_every_release_read():
    """``benchmarks/engine_flag_history.py`` read each release's argument parser in its wheel: every word of the
    table is in the releases the table gives it and in no other release read."""
    presence = json.loads(PRESENCE.read_text())
    read = 0
    for span in SPANS:
        if span.engine not in presence or not span.read_in_wheels:
            continue  # TensorRT-LLM, and a word read in one release only: not in the wheels (sources in the table)
        for release, words in presence[span.engine].items():
            assert span.has(release_key(release)) == (span.word in words), (span.engine, span.word, release)
            read += 1
    assert len(presence["vllm"]) >= 40 and len(presence["sglang"]) >= 90 and read > 5_000


def test_the_words_added_later_agree_with_the_releases_read_around_their_first():
    """The words read after presence.json (``FIRST_READS``: vLLM --block-size 0.2.0, --kv-cache-memory-bytes 0.10.2,
    VLLM_CPU_KVCACHE_SPACE 0.4.1, --disable-hybrid-kv-cache-manager 0.9.1, --trust-remote-code 0.2.0; SGLang --page-size 0.4.4,
    --enable-ep-moe 0.4.0.post1 to 0.5.2, refused from 0.5.3, --trust-remote-code 0.4.0):
    in every release read in their span, in none read outside it."""
    reads = json.loads((PRESENCE.parent / "first_reads.json").read_text())
    later = [span for span in SPANS if FIRST_READS in span.source]
    assert {(span.engine, span.word, span.first) for span in later} == {
        ("vllm", "--block-size", "0.2.0"), ("vllm", "--kv-cache-memory-bytes", "0.10.2"),
        ("vllm", "VLLM_CPU_KVCACHE_SPACE", "0.4.1"), ("sglang", "--page-size", "0.4.4"),
        ("sglang", "--enable-ep-moe", "0.4.0.post1"), ("sglang", "--attn-dp-size", "0.5.22"),
        ("vllm", "--disable-hybrid-kv-cache-manager", "0.9.1"), ("vllm", "--trust-remote-code", "0.2.0"),
        ("sglang", "--trust-remote-code", "0.4.0"),
    }  # fmt: skip
    for span in later:
        releases = reads[span.engine]
        earlier = [r for r in releases if release_key(r) < release_key(span.first)]
        oldest = {"vllm": "0.2.0", "sglang": "0.4.0"}[span.engine]  # the oldest release the table reads
        assert span.first in releases and (earlier or span.first == oldest)
        for release, words in releases.items():
            assert span.has(release_key(release)) == (span.word in words), (span.engine, span.word, release)


def test_a_made_up_flag_and_a_flag_before_its_release_fail_the_check():
    """The controls: the check must catch a word no release has and a real flag asked of a release without it."""
    line = shlex.split("vllm serve m --tensor-parallel-size 2 --all2all-backend deepep_low_latency")
    assert line_problems("vllm", release_key("0.11.1"), line) == []
    assert any("--made-up-flag" in p for p in line_problems("vllm", release_key("0.11.1"), [*line, "--made-up-flag"]))
    assert any("not in 0.10.2" in p for p in line_problems("vllm", release_key("0.10.2"), line))
    assert any(
        "'--quantization awq'" in p for p in line_problems("vllm", LATEST_RELEASE, [*line, "--quantization", "awq"])
    )


def test_older_forms_are_written_where_the_release_has_them():
    """vLLM 0.9.1-0.11.0 take the all-to-all backend as a variable (PR #26732 made it a flag); SGLang 0.4.4.post2 to
    0.4.10 take DeepEP as --enable-deepep-moe; vLLM before ``vllm serve`` runs its OpenAI server module."""
    vllm = shlex.split(
        "vllm serve m --data-parallel-size 8 --enable-expert-parallel --all2all-backend deepep_low_latency"
    )
    assert fit_line("vllm", release_key("0.10.2"), vllm).words == [
        "VLLM_ALL2ALL_BACKEND=deepep_low_latency", "vllm", "serve", "m", "--data-parallel-size", "8",
        "--enable-expert-parallel",
    ]  # fmt: skip
    assert fit_line("vllm", release_key("0.11.1"), vllm).words == vllm
    old = fit_line("vllm", release_key("0.8.5"), vllm)  # expert parallelism, but no DeepEP backend to name
    assert old.words is None and "VLLM_ALL2ALL_BACKEND" not in str(old) and "--all2all-backend" in str(old.note)
    sglang = shlex.split("python -m sglang.launch_server --model-path m --tp-size 8 --moe-a2a-backend deepep")
    assert fit_line("sglang", release_key("0.4.6"), sglang).words == [*sglang[:7], "--enable-deepep-moe"]
    assert fit_line("sglang", release_key("0.4.3"), sglang).words is None
    assert fit_line("vllm", release_key("0.4.2"), shlex.split("vllm serve m --max-model-len 9")).words == shlex.split(
        "python -m vllm.entrypoints.openai.api_server --model m --max-model-len 9"
    )


def test_sglang_before_ep_size_alone_takes_enable_ep_moe_beside_it():
    """SGLang 0.4.0.post1 to 0.4.10.post1 run the experts expert-parallel only under --enable-ep-moe (its
    __post_init__ sets ep_size = tp_size); 0.4.10.post2 on follow --ep-size alone, 0.5.3 refuses --enable-ep-moe.
    DeepEP's --enable-deepep-moe sets the size itself; an --ep-size other than --tp-size cannot be run before."""
    line = shlex.split("python -m sglang.launch_server --model-path m --tp-size 8 --enable-dp-attention --ep-size 8")
    with_flag = [*line, "--enable-ep-moe"]
    for release in ("0.4.0.post1", "0.4.6", "0.4.9.post3", "0.4.10.post1"):
        assert fit_line("sglang", release_key(release), line).words == with_flag, release
        assert line_problems("sglang", release_key(release), with_flag) == [], release
    for release in ("0.4.10.post2", "0.5.2", "0.5.23"):
        assert fit_line("sglang", release_key(release), line).words == line, release
    assert fit_line("sglang", LATEST_RELEASE, line).words == line
    assert any(
        "'--enable-ep-moe' is not in 0.5.3" in p for p in line_problems("sglang", release_key("0.5.3"), with_flag)
    )
    assert fit_line("sglang", release_key("0.4.0"), line).words is None  # no --ep-size before 0.4.0.post1
    deepep = [*line, "--moe-a2a-backend", "deepep"]
    assert fit_line("sglang", release_key("0.4.9"), deepep).words == [*line, "--enable-deepep-moe"]
    # 0.4.4.post4-0.4.8 stop on DeepEP's auto mode with DP attention (trial 368 #1); a mode set, they run it
    assert fit_line("sglang", release_key("0.4.6"), deepep).words is None
    moded = [*deepep, "--deepep-mode", "low_latency"]
    assert fit_line("sglang", release_key("0.4.6"), moded).words == [*line, "--enable-deepep-moe", *moded[-2:]]
    followed = [*line[:-1], "2", "--mem-fraction-static", "0.8"]  # the flag goes after --ep-size's value
    unequal = fit_line("sglang", release_key("0.4.6"), followed)
    assert unequal.words is None and "runs --ep-size 2 only as --tp-size" in str(unequal.note)
    assert fit_line("sglang", release_key("0.4.10.post2"), followed).words == followed
    mid = [*line, "--mem-fraction-static", "0.8"]
    assert fit_line("sglang", release_key("0.4.6"), mid).words == [*line, "--enable-ep-moe", *mid[-2:]]
    one = [*line[:-1], "1"]
    assert fit_line("sglang", release_key("0.4.6"), one).words == one


def test_the_plans_sglang_line_asks_for_expert_parallelism_in_its_release():
    """DeepSeek-V2-Lite with experts split (the grid's ``ep``): SGLang 0.4.6's line carries --enable-ep-moe, 0.5.2's
    and the latest's not (--ep-size alone there)."""
    assert "--enable-ep-moe" in _lines("sglang@0.4.6", "ep")[1][0]["sglang"]
    assert "--enable-ep-moe" not in _lines("sglang@0.5.2", "ep")[1][0]["sglang"]
    assert "--enable-ep-moe" not in _lines("sglang", "ep")[1][0]["sglang"]


def test_multimodal_limits_take_the_key_value_form_before_json():
    line = shlex.split('vllm serve m --limit-mm-per-prompt \'{"image":2,"video":0}\'')
    assert fit_line("vllm", release_key("0.8.5"), line).words == line  # JSON read from 0.8.5 on
    assert fit_line("vllm", release_key("0.6.0"), line).words == [*line[:3], "--limit-mm-per-prompt", "image=2,video=0"]
    assert fit_line("vllm", release_key("0.5.4"), line).words is None  # no --limit-mm-per-prompt read before 0.5.5


def test_a_default_flag_the_release_lacks_is_left_out_and_anything_else_leaves_no_line():
    one = shlex.split("python -m sglang.launch_server --model-path m --tp-size 2 --pp-size 1 --dp-size 2")
    assert fit_line("sglang", release_key("0.4.3"), one).words == [*one[:7], "--dp-size", "2"]
    two = fit_line("sglang", release_key("0.4.3"), [*one[:7], "--pp-size", "2"])
    assert two.words is None and "has no --pp-size" in str(two.note)


# --- every generation's lines over a grid of deployments ---------------------------------------------------------

ENGINES = ["vllm@0.4.2", "vllm@0.6.0", "vllm@0.7", "vllm-v0", "vllm@0.8.0", "vllm@0.10.2", "vllm@0.11.1", "vllm-v1",
           "vllm@0.21.0", "vllm", "sglang@0.4.0", "sglang@0.4.3", "sglang@0.4.6", "sglang@0.4.9", "sglang-0.4",
           "sglang@0.5.2", "sglang", "trtllm@0.18.0", "trtllm-cpp", "trtllm"]  # fmt: skip
DEPLOYMENTS = {
    "tp2-pp2": ("llama-3-8b", "8xh100", {"tp": 2, "pp": 2}, {}),
    "fp8-no-prefix": ("llama-3-8b", "4xh100", {"tp": 1}, {"weight_dtype": "fp8", "kv_dtype": "fp8",
                                                          "prefix_caching": False}),
    "prefix-on": ("llama-3-8b", "h100", {"tp": 1}, {"prefix_caching": True}),
    "ep": ("deepseek-v2-lite", "4xh100", {"tp": 1}, {"expert_parallel": True}),
    "dp-attention": (  # 1,024 tokens a rank: SGLang's line asks 8 x 1,024, which its reserve starts
        "deepseek-v3", "8xh200", {"tp": 1},
        {"dp": 8, "weight_dtype": "fp8", "moe_a2a_backend": "deepep", "max_num_batched_tokens": 1024},
    ),
    "mtp": ("deepseek-v3", "8xh200", {"tp": 8}, {"weight_dtype": "fp8", "speculative": "mtp"}),
    "eagle3": ("llama-3-8b", "h100", {"tp": 1}, {"speculative": "eagle3"}),
    "offload": ("llama-3-8b", "h100", {"tp": 1}, {"kv_offload_bytes": 200 * 2**30}),
    "two-nodes": ("llama-3-70b", "2x8xh100", {"tp": 8, "pp": 2}, {}),
}  # fmt: skip


def _lines(engine: str, case: str):
    name, target_text, layout, fields = DEPLOYMENTS[case]
    model, target = get_preset(name), resolve_target(target_text)
    method = fields.get("speculative")
    fields = {key: value for key, value in fields.items() if key != "speculative"}
    deployment = merge_deployment(None, model=model, engine=engine, target=target.spec, **fields)
    if method is not None:
        spec = build_spec(model, origin=name, kind="preset", method=method)
        deployment = deployment.model_copy(update={"speculative": spec})
    profile, ceiling = prior_profile(target.target, deployment.weight_dtype), datasheet_profile(target.target)
    plan = plan_serving(model, target, deployment, profile, ceiling, isl=1000, osl=200, concurrency=4, **layout)
    return deployment, launch_commands(by_preset(f"org/{name}"), plan, deployment, model)


@pytest.mark.parametrize("engine", ENGINES)
def test_every_line_of_every_generation_checks_against_the_table(engine):
    """Each generation (and exact releases) over the grid: every server line's command, flags, tracked values and
    variables are in the release it is written for (the priced engine's release meant, the others' latest); a line
    left out is said in a note."""
    written = 0
    for case in DEPLOYMENTS:
        try:
            deployment, (lines, notes) = _lines(engine, case)
        except BadInputError:
            continue  # the generation refuses the deployment (vLLM V0's offload, DP attention): no line to check
        meant = release_meant(generation(deployment.engine_generation, deployment.engine), deployment.engine_version)
        for name, text in lines.items():
            line_engine = name.split("_")[0]
            release = meant if line_engine == deployment.engine else LATEST_RELEASE
            words = shlex.split(text)
            if words[:1] == ["ray"]:
                continue  # the Ray cluster's own command, not the engine's
            assert line_problems(line_engine, release, words) == [], (engine, case, text)
            written += 1
        for engine_name in ("vllm", "sglang"):
            if engine_name not in lines:
                assert any(engine_name in note for note in notes), (engine, case, notes)
    assert written >= 5, engine  # vLLM before 0.7.1 refuses DeepSeek's MLA (core.engine.mla_latent_release)


def test_the_lines_take_each_releases_form_for_dp_attention():
    """DeepSeek-V3's DP attention: vLLM 0.10.2 names DeepEP by its variable, 0.11.1 and later by its flag; vLLM 0.8.5
    has no DeepEP backend (refused), and 0.8.0 refuses DP attention (--data-parallel-size is first in 0.8.3); SGLang 0.4.9 by
    --enable-deepep-moe, 0.4.10.post2 by --moe-a2a-backend, 0.4.4.post4-0.4.8 refuse it with DP attention, 0.4.0 not
    at all."""
    lines = _lines("vllm@0.10.2", "dp-attention")[1][0]
    assert lines["vllm"].startswith("VLLM_ALL2ALL_BACKEND=deepep_low_latency vllm serve ")
    assert "--all2all-backend" not in lines["vllm"] and "--moe-a2a-backend deepep" in lines["sglang"]
    assert "--all2all-backend deepep_low_latency" in _lines("vllm@0.11.1", "dp-attention")[1][0]["vllm"]
    with pytest.raises(BadInputError, match=r"vLLM 0\.8\.5 has no DeepEP backend"):  # review 384 #6: not priced
        _lines("vllm@0.8.5", "dp-attention")
    for release in ("0.16.0", "0.29.0", "0.33.0"):  # review 386 #1: --all2all-backend, the variable gone
        assert "--all2all-backend deepep_low_latency" in _lines(f"vllm@{release}", "dp-attention")[1][0]["vllm"]
    with pytest.raises(BadInputError, match=r"vLLM 0\.8\.0 has no --data-parallel-size \(first in 0\.8\.3\)"):
        _lines("vllm@0.8.0", "dp-attention")  # refused, not priced as a layout it cannot launch (test_dp_attention)
    # SGLang 0.4.9 by --enable-deepep-moe; 0.4.10.post2 (sglang@0.4) by --moe-a2a-backend, which deprecates it
    assert "--enable-deepep-moe" in _lines("sglang@0.4.9", "dp-attention")[1][0]["sglang"]
    newer = _lines("sglang@0.4", "dp-attention")[1][0]["sglang"]
    assert "--moe-a2a-backend deepep" in newer and "--enable-deepep-moe" not in newer
    # 0.4.4.post4-0.4.8 assert at start-up that DeepEP's default auto mode is not run with DP attention: no line
    for release in ("0.4.4.post4", "0.4.6", "0.4.8"):
        lines, notes = _lines(f"sglang@{release}", "dp-attention")[1]
        assert "sglang" not in lines and "vllm" in lines, release
        assert any("'DeepEP MoE `auto` mode is not supported with DP Attention.'" in n for n in notes), release
    # SGLang 0.5.22 deprecates --dp-size N --enable-dp-attention for --attn-dp-size N: each release its own form
    for release, new in (("0.5.21", False), ("0.5.22", True), ("0.5.23", True), ("0.5.2", False)):
        words = shlex.split(_lines(f"sglang@{release}", "dp-attention")[1][0]["sglang"])
        assert ("--attn-dp-size" in words) is new and ("--enable-dp-attention" in words) is not new, release
        ranks = words[words.index("--attn-dp-size" if new else "--dp-size") + 1]
        assert ranks == "8" and words[words.index("--dp-size") + 1] == ("1" if new else "8"), release
    lines, notes = _lines("sglang@0.4.0", "dp-attention")[1]
    assert "sglang" not in lines and "vllm" in lines and any("SGLang 0.4.0 has no" in n for n in notes)


def _disaggregated(engine: str):
    from mha_cli.core.cost.disaggregated_launch import disaggregated_with_launch

    model, target = get_preset("llama-3-8b"), resolve_target("8xh100")
    deployment = merge_deployment(None, model=model, engine=engine, target=target.spec)
    profiles = (prior_profile(target.target), datasheet_profile(target.target))
    plan = disaggregated_with_launch(model, by_preset("org/llama-3-8b"), target, deployment, profiles, isl=1000,
                                     osl=200, rate=2.0, simulate=None)  # fmt: skip
    return deployment, plan


@pytest.mark.parametrize("engine", ["vllm", "vllm@0.8.5", "vllm@0.10.2", "sglang", "sglang@0.4.3", "sglang@0.4.9"])
def test_disaggregated_lines_check_against_the_table(engine):
    """Disaggregated serving: every worker line in its release; NixlConnector (vLLM 0.9.0 on) and SGLang's nixl
    transfer backend (0.4.5.post3 on, read in the wheels) decide whether a release gets lines at all."""
    deployment, plan = _disaggregated(engine)
    meant = release_meant(generation(deployment.engine_generation, deployment.engine), deployment.engine_version)
    for name, text in plan.launch.items():
        release = meant if name == deployment.engine else LATEST_RELEASE
        for line in text.splitlines():
            words = shlex.split(line)
            if "launch_server" in line or " serve " in line:
                assert line_problems(name, release, words) == [], line
    left_out = {"vllm@0.8.5": "vllm", "sglang@0.4.3": "sglang"}.get(engine)
    assert (left_out is None) == (set(plan.launch) == {"vllm", "sglang"}), plan.launch_note
    if left_out is not None:
        assert f"no {left_out} line" in str(plan.launch_note)


def test_the_release_typed_is_kept_on_the_deployment():
    """``--engine vllm@0.10.2`` keeps 0.10.2 beside the generation; a minor alone, as typed; an engine alone or a
    generation id, none (the latest meant); another --engine over a config's drops the config's release."""
    typed = merge_deployment(None, engine="vllm@v0.10.2")
    assert (typed.engine_generation, typed.engine_version) == ("vllm-v1", "0.10.2")
    assert merge_deployment(None, engine="sglang==0.4.6.post1").engine_version == "0.4.6.post1"
    assert merge_deployment(None, engine="vllm@0.10").engine_version == "0.10"
    assert merge_deployment(None, engine="vllm").engine_version is None
    assert merge_deployment(None, engine="vllm-v1").engine_version is None
    assert merge_deployment(typed, engine="sglang").engine_version is None
    assert merge_deployment(typed).engine_version == "0.10.2"  # a config's release stays when --engine is not given
    alone = merge_deployment(DeploymentSpec(engine="vllm", engine_version="0.15.1"))  # a config file's, no generation
    assert (alone.engine_generation, alone.engine_version) == ("vllm-v1", "0.15.1")


@pytest.mark.parametrize("engine", ["vllm", "vllm@0.10.2", "vllm@0.11.1", "sglang@0.4.6", "sglang@0.4.3"])
def test_disaggregated_deepep_workers_check_against_the_table(engine):
    """DeepSeek-V3's data-parallel workers over two nodes with DeepEP: vLLM 0.10.2 takes the backend as a variable
    (deepep_high_throughput on a prefill line), 0.11.1 as --all2all-backend; SGLang 0.4.3 has no DeepEP at all."""
    from mha_cli.core.cost.disaggregated_launch import disaggregated_with_launch

    model, target = get_preset("deepseek-v3"), resolve_target("2x8xh200")
    # 1,024 tokens a rank on vLLM: the sglang workers beside its plan ask a chunk SGLang starts (review 373 #2)
    budget = {"max_num_batched_tokens": 1024} if engine.startswith("vllm") else {}
    deployment = merge_deployment(None, model=model, engine=engine, target=target.spec, weight_dtype="fp8",
                                  moe_a2a_backend="deepep", **budget)  # fmt: skip
    profiles = (prior_profile(target.target, "fp8"), datasheet_profile(target.target))
    plan = disaggregated_with_launch(model, by_preset("org/deepseek-v3"), target, deployment, profiles, isl=2000,
                                     osl=500, rate=20.0, simulate=None)  # fmt: skip
    meant = release_meant(generation(deployment.engine_generation, deployment.engine), deployment.engine_version)
    checked = 0
    for name, text in plan.launch.items():
        for line in text.splitlines():
            if "launch_server" in line or " serve " in line:
                release = meant if name == deployment.engine else LATEST_RELEASE
                assert line_problems(name, release, shlex.split(line)) == [], line
                checked += 1
    assert checked >= 2
    vllm = plan.launch.get("vllm", "")
    assert ("VLLM_ALL2ALL_BACKEND=deepep_high_throughput " in vllm) == (engine == "vllm@0.10.2")
    assert ("sglang" in plan.launch) == (engine != "sglang@0.4.3")


def test_sglang_takes_enable_deepep_moe_only_before_it_refuses_it():
    """SGLang 0.5.3 and 0.5.4 declare --enable-deepep-moe with ``action=DeprecatedAction``, whose ``__call__``
    raises ValueError (``server_args.py``; 0.5.2's still stores True and sets ``moe_a2a_backend = "deepep"``), 0.5.5
    drops it: a line with it is refused from 0.5.3, and a release with --moe-a2a-backend is never written the old
    flag."""
    line = shlex.split("python -m sglang.launch_server --model-path m --tp-size 8 --enable-deepep-moe")
    assert line_problems("sglang", release_key("0.5.2"), line) == []
    for release in ("0.5.3", "0.5.4", "0.5.5"):
        assert any("--enable-deepep-moe" in p for p in line_problems("sglang", release_key(release), line)), release
    new = shlex.split("python -m sglang.launch_server --model-path m --tp-size 8 --moe-a2a-backend deepep")
    for release in ("0.4.10.post2", "0.5.0", "0.5.2", "0.5.3", "0.5.23"):
        assert fit_line("sglang", release_key(release), new).words == new, release


def test_sglang_attention_ranks_take_the_old_form_before_0_5_22():
    """``--dp-size 1 --attn-dp-size N`` (SGLang 0.5.22 on: ``arg_groups/fields/parallel.py``) is ``--dp-size N
    --enable-dp-attention`` before (``parallel_hook.handle_deprecated_dp_attention`` maps the one to the other), with
    or without a --dp-size on the line."""
    line = shlex.split(
        "python -m sglang.launch_server --model-path m --tp-size 8 --dp-size 1 --attn-dp-size 8 --port 1"
    )
    assert fit_line("sglang", release_key("0.5.22"), line).words == line
    old = "python -m sglang.launch_server --model-path m --tp-size 8 --dp-size 8 --enable-dp-attention --port 1"
    assert fit_line("sglang", release_key("0.5.21"), line).words == shlex.split(old)
    bare = shlex.split("python -m sglang.launch_server --model-path m --tp-size 8 --attn-dp-size 4 --port 1")
    assert fit_line("sglang", release_key("0.4.6"), bare).words == shlex.split(
        "python -m sglang.launch_server --model-path m --tp-size 8 --dp-size 4 --enable-dp-attention --port 1"
    )
    assert any("'--attn-dp-size' is not in 0.5.21" in p for p in line_problems("sglang", release_key("0.5.21"), line))


def test_vllm_s_emulated_quark_mxfp4_step_is_refused_on_amd_before_cdna4(cli):
    """Trial 397 #3: Quark's MXFP4 linear layers were priced faster than bf16 on an MI300X (11.40 against 13.94 ms),
    where vLLM emulates them (no ``supports_mx``: ``EmulationMxfp4LinearKernel``, every weight dequantised to bf16 each
    step). The step is refused there, pinned or searched, and kv says why it has no latency; on an MI355X (AITER) and
    on an H100 (vLLM 0.33's Marlin W4A16 kernel, review 398 #1) it is priced, the controls."""
    said = "emulates them, dequantising every weight to bf16 each step"
    for layout in (("--tp", "8"), ()):
        refused = cli.run("plan", "llama-3.1-70b", "--target", "8xmi300x", *layout, "--weight-dtype", "mxfp4-linear",
                          "--concurrency", "1", "--closed-form")  # fmt: skip
        assert refused.exit_code == 2 and said in " ".join(refused.stderr.split())
    for target in ("8xmi355x", "8xh100"):
        priced = cli.json("plan", "llama-3.1-70b", "--target", target, "--tp", "8", "--weight-dtype", "mxfp4-linear",
                          "--concurrency", "1", "--closed-form")  # fmt: skip
        assert priced["itl_ms"] > 0
    split = cli.run("plan", "llama-3.1-70b", "--target", "16xmi300x", "--disaggregated", "--weight-dtype",
                    "mxfp4-linear", "--closed-form")  # review 398 #2: once, before its workers  # fmt: skip
    assert split.exit_code == 2 and "more nodes" not in split.stderr and said in " ".join(split.stderr.split())
    memory_only = cli.json("kv", "llama-3.1-70b", "--target", "8xmi300x", "--weight-dtype", "mxfp4-linear")
    assert memory_only["memory"]["weights_fit"] and memory_only["latency"] is None
    assert any(said in warning for warning in memory_only["warnings"])  # review 398 #3: said, not silent
