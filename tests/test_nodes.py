"""Many nodes: ``2x8xh100`` targets, collectives and pipeline sends priced on the link their group spans, each
pipeline stage's memory against hand counts, the search keeping tp inside a node, and multi-node launch lines."""

import json
import shlex

import pytest

from mha_cli.core.cost.nodes import NodePlacement, expert_groups, off_node_share, tp_groups
from mha_cli.core.cost.priors import fitted_constants, prior_profile
from mha_cli.core.cost.search import layouts
from mha_cli.core.cost.stepper import ServingCase, Stepper
from mha_cli.core.errors import EXIT_BAD_INPUT
from mha_cli.core.links import LINKS
from mha_cli.core.presets import get_preset
from mha_cli.core.targets import resolve_target


@pytest.mark.parametrize(
    ("spec", "devices", "nodes", "per_node"),
    [("2x8xh100", 16, 2, 8), ("16xh100", 16, 2, 8), ("12xh100", 12, 2, 8), ("8xh100", 8, 1, 8), ("h100", 1, 1, 1),
     ("72xgb300", 72, 1, 72), ("2x72xgb200", 144, 2, 72), ("4x4xa100", 16, 4, 4)],
)  # fmt: skip
def test_node_specs_resolve_to_devices_and_nodes(spec, devices, nodes, per_node):
    resolved = resolve_target(spec)
    assert (resolved.n_devices, resolved.n_nodes, resolved.devices_per_node) == (devices, nodes, per_node)


def test_a_count_above_a_node_is_read_as_whole_nodes_and_says_so():
    assert "read as 2 nodes of 8 (2x8xh100-sxm)" in resolve_target("16xh100").node_note
    assert "1 node of 8 and one of 4" in resolve_target("12xh100").node_note  # filled in order: 8 + 4
    assert resolve_target("8xh100").node_note is None and resolve_target("2x8xh100").node_note is None


@pytest.mark.parametrize("spec", ["2x8x", "8x", "2x2x8xh100", "0x8xh100", "2x0xh100", "2x4000xh100"])
def test_bad_node_specs_are_one_line_exit_2(cli, spec):
    result = cli.run("plan", "llama-3-8b", "--target", spec, "--tp", "1", "--closed-form")
    assert result.exit_code == EXIT_BAD_INPUT and result.stderr.count("\n") == 1, result.output


def test_inter_node_link_is_refused_on_one_node_and_for_a_non_network_link(cli):
    one = cli.run("plan", "llama-3-8b", "--target", "8xh100", "--tp", "8", "--inter-node-link", "ib-ndr")
    assert one.exit_code == EXIT_BAD_INPUT and "is one node" in one.stderr and one.stderr.count("\n") == 1
    pcie = cli.run("plan", "llama-3-8b", "--target", "2x8xh100", "--tp", "8", "--inter-node-link", "pcie5")
    assert pcie.exit_code == EXIT_BAD_INPUT and "give a network link" in pcie.stderr


@pytest.mark.parametrize(("target", "suggested"), [("h100", "2x8xh100-sxm"), ("4xa100-80gb", "2x8xa100-80gb")])
def test_inter_node_link_on_one_node_suggests_two_whole_nodes_that_run(cli, target, suggested):
    """One GPU or a part node: the way out is two nodes of the part's reference server (8 GPUs), not 2 x 1; pasted,
    it plans on the link asked."""
    one = cli.run("plan", "llama-3-8b", "--target", target, "--inter-node-link", "ib-ndr", "--closed-form")
    assert one.exit_code == EXIT_BAD_INPUT and one.stderr.strip().endswith(f"(--target {suggested})"), one.output
    assert "2x1x" not in one.stderr
    pasted = cli.json("plan", "llama-3-8b", "--target", suggested, "--inter-node-link", "ib-ndr", "--tp", "8",
                      "--closed-form")  # fmt: skip
    assert pasted["nodes"]["nodes"] == 2 and pasted["nodes"]["inter_node_link"] == "ib-ndr"


def test_groups_that_span_nodes_by_hand():
    # tp 8 on nodes of 8: every group inside a node; tp 16 on 2 nodes of 8: each rank has 8 of 15 peers away
    assert off_node_share(tp_groups(8, 2, 1), 8) == 0.0
    assert off_node_share(tp_groups(16, 1, 1), 8) == pytest.approx(8 / 15)
    # DeepSeek's DP attention over 2 x 8: the experts' group is all 16 ranks, 8 of each rank's 15 peers off its node
    assert off_node_share(expert_groups(1, 1, 16, 16), 8) == pytest.approx(8 / 15)
    assert off_node_share(expert_groups(1, 1, 8, 8), 8) == 0.0  # the control: one node


def test_the_stage_send_crosses_the_inter_node_link_by_hand():
    """Llama-3.1-405B tp 8 x pp 2 on 2 x 8 H100: the boundary between the stages is the boundary between the nodes.
    A step of T tokens sends T x 16,384 x 2 B once; over InfiniBand NDR (50 GB/s per GPU each way,
    https://www.infinibandta.org/infiniband-roadmap/) at the prior's link efficiency 0.7: 35e9 B/s, after the
    prior's collective latency (NVLink's fitted 20.23 us, cost_priors.json) plus the link's 5 us start-up."""
    model, h100 = get_preset("llama-3.1-405b"), resolve_target("h100").target
    profile = prior_profile(h100)
    constants = fitted_constants()["constants"]
    # 30.59 us until the 2026-12-03 refit of the default constants, 54.74 us before the 2026-12-03 gemmramp refit
    assert (constants["link_efficiency"], constants["all_reduce_latency_nvlink_s"]) == (0.7, 2.023e-05)
    placement = NodePlacement(8, LINKS["ib-ndr"])
    case = ServingCase(model=model, isl=1024, osl=256, concurrency=1, tp=8, pp=2, nodes=placement)
    for tokens in (1, 4096):
        sent = tokens * 16_384 * 2
        across = 2.023e-05 + 5e-06 + sent / (50e9 * 0.7)
        assert Stepper(case, profile).send_seconds(tokens) == pytest.approx(across, rel=1e-12)
        # the control: the same stages in one 16-GPU NVLink domain send over NVLink (900 GB/s both ways) and win
        inside = 2.023e-05 + sent / (450e9 * 0.7)
        assert Stepper(case._replace(nodes=None), profile).send_seconds(tokens) == pytest.approx(inside, rel=1e-12)
        assert across > inside


def test_pipeline_stages_differ_by_the_embedding_and_the_head(cli):
    """Llama-3.1-405B, tp 8 x pp 2 on 2 x 8 H100, bf16, per GPU by hand (d 16,384, 8 KV heads of 128, d_ff 53,248,
    vocab 128,256 = 2,004 x 64, so no padding; 63 layers a stage):
    a layer: q and o 16,384^2 / 8 = 33,554,432 each, k and v 16,384 x 1,024 / 8 = 2,097,152 each, MLP
    3 x 16,384 x 53,248 / 8 = 327,155,712, two norms 32,768: 398,491,648 weights, x 63 x 2 B = 50,209,947,648 B;
    the embedding (or the head): 128,256 / 8 x 16,384 x 2 B = 525,336,576 B; the final norm 32,768 B.
    Stage 0 = 50,735,284,224 B; stage 1 = 50,735,316,992 B: the plan is stage 1's, and says so."""
    plan = cli.json("plan", "llama-3.1-405b", "--target", "2x8xh100", "--tp", "8", "--pp", "2", "--closed-form")
    layers, side = 50_209_947_648, 525_336_576
    stages = plan["stages"]
    assert [(s["first_layer"], s["n_layers"], s["embedding"], s["head"]) for s in stages] == [
        (0, 63, True, False), (63, 63, False, True)
    ]  # fmt: skip
    assert stages[0]["weight_bytes_per_device"] == layers + side
    assert stages[1]["weight_bytes_per_device"] == layers + side + 32_768
    assert plan["memory"]["weight_bytes_per_device"] == layers + side + 32_768  # the limiting stage's
    assert plan["memory"]["engine"]["kv_tokens"] == min(s["kv_tokens_per_device"] for s in stages)
    assert any("stage 1 (layers 63-125, final norm and LM head)" in note for note in plan["notes"])
    assert plan["nodes"] == {"nodes": 2, "devices_per_node": 8, "last_node_devices": None, "inter_node_link": "ib-ndr"}
    assert any("1 of the 1 pipeline boundaries cross nodes" in note for note in plan["notes"])


def test_a_last_node_not_full_is_said_as_it_is(cli):
    """12 H100s are a node of 8 and one of 4: the link note said "2 nodes of 8" beside the target's own "1 node of 8
    and one of 4", and the JSON implied 16 GPUs (found by newuser trial 232)."""
    plan = cli.json("plan", "llama-3.1-70b", "--target", "12xh100", "--tp", "4", "--pp", "3", "--concurrency", "16",
                    "--closed-form")  # fmt: skip
    assert plan["nodes"] == {"nodes": 2, "devices_per_node": 8, "last_node_devices": 4, "inter_node_link": "ib-ndr"}
    assert any(note.startswith("1 node of 8 and one of 4: between nodes") for note in plan["notes"])
    assert not any("2 nodes of 8" in note for note in plan["notes"])


def test_a_tied_head_is_a_copy_of_the_embedding_on_the_last_stage(cli):
    """Llama-3.2-1B (tied), tp 1 x pp 2, bf16, by hand: a layer 2 x 2,048^2 + 2 x 2,048 x 512 + 3 x 2,048 x 8,192
    + 2 x 2,048 = 60,821,504 weights; 8 a stage: 973,144,064 B; the embedding 128,256 x 2,048 x 2 B = 525,336,576 B.
    Stage 0 holds it, stage 1 a copy (as vLLM loads a tied head on a last stage) and the final norm (4,096 B)."""
    plan = cli.json("plan", "llama-3.2-1b", "--target", "2xh100", "--tp", "1", "--pp", "2", "--closed-form")
    weights = [s["weight_bytes_per_device"] for s in plan["stages"]]
    assert weights == [973_144_064 + 525_336_576, 973_144_064 + 525_336_576 + 4_096]
    assert plan["nodes"] is None  # one node: nothing over a network


def test_the_search_keeps_tp_inside_a_node():
    model = get_preset("llama-3.1-405b")
    assert max(tp for tp, _ in layouts(model, 16, 8)) == 8
    assert (16, 1) in layouts(model, 16)  # the control: one 16-device domain offers tp 16


def test_a_tp_group_across_nodes_is_priced_on_the_network_and_said(cli):
    """--tp 16 asked on 2 x 8: every all-reduce crosses InfiniBand; the same layout in one 16-GPU NVLink domain
    (1x16xh100) spends less on collectives."""
    args = ("plan", "llama-3.1-405b", "--tp", "16", "--closed-form")
    across = cli.json(*args, "--target", "2x8xh100")
    inside = cli.json(*args, "--target", "1x16xh100")
    # 1.12x since the 2026-12-03 refit raised the fitted NVLink latency (30.6 -> 54.7 us), 1.2x and more before
    assert across["decode_step"]["collective_s"] > 1.1 * inside["decode_step"]["collective_s"]
    assert any("--tp 16 spans nodes" in note for note in across["notes"])
    assert inside["nodes"] is None


def test_the_inter_node_link_moves_the_send(cli):
    """RoCE 100 GbE (12.5 GB/s) against InfiniBand NDR (50 GB/s) under the same pipeline: a slower prefill."""
    args = ("plan", "llama-3.1-405b", "--target", "2x8xh100", "--tp", "8", "--pp", "2", "--closed-form")
    args += ("--isl", "8192")
    ndr, roce = cli.json(*args), cli.json(*args, "--inter-node-link", "roce-100")
    assert roce["nodes"]["inter_node_link"] == "roce-100"
    assert roce["prefill_ms"] > ndr["prefill_ms"]


VLLM_0_32_FLAGS = {
    "--distributed-executor-backend", "--nnodes", "--node-rank", "--master-addr", "--master-port", "--headless",
    "--data-parallel-size", "--data-parallel-size-local", "--data-parallel-address", "--data-parallel-rpc-port",
    "--data-parallel-start-rank",
}  # fmt: skip
"""vLLM 0.32's ``vllm serve`` multi-node flags as ``EngineArgs.add_cli_args`` registers them
(``vllm/engine/arg_utils.py``; ``--headless`` in ``vllm/entrypoints/cli/serve.py``)."""
SGLANG_FLAGS = {"--nnodes", "--node-rank", "--dist-init-addr"}
"""SGLang's ``ServerArgs`` multi-node fields (``nnodes``, ``node_rank``, ``dist_init_addr``) as flags."""


def _flags(line: str) -> set[str]:
    return {word for word in shlex.split(line) if word.startswith("--")}


def test_pipeline_across_nodes_launches_with_each_engines_multi_node_flags(cli):
    found = cli.json("plan", "llama-3.1-405b", "--target", "2x8xh100", "--closed-form")
    pick = found["candidates"][found["chosen"]]["deployment"]
    # 405B in bf16 needs both nodes: tp stays in one, pp crosses (126 layers: pp 4 and 8 split unevenly)
    assert pick["tp"] * pick["pp"] == 16 and pick["tp"] <= 8 and pick["pp"] >= 2
    launch = found["launch"]
    assert set(launch) == {"vllm", "vllm_workers", "sglang", "sglang_workers"}
    head, worker = shlex.split(launch["vllm"]), shlex.split(launch["vllm_workers"])
    assert head[head.index("--nnodes") + 1] == "2" and head[head.index("--node-rank") + 1] == "0"
    assert worker[worker.index("--node-rank") + 1] == "NODE_RANK" and "--headless" in worker
    assert "--headless" not in head and head[head.index("--distributed-executor-backend") + 1] == "mp"
    new = (_flags(launch["vllm"]) | _flags(launch["vllm_workers"])) - _flags(launch["vllm"].split(" --distributed")[0])
    assert new <= VLLM_0_32_FLAGS
    assert {"--nnodes", "--node-rank", "--dist-init-addr"} <= _flags(launch["sglang"])
    assert "--node-rank NODE_RANK" in launch["sglang_workers"]
    assert "HEAD_IP with node 0's address" in found["launch_note"]


@pytest.mark.parametrize("engine", ["vllm@0.10", "vllm@0.15"])
def test_older_vllm_launches_over_ray(cli, engine):
    """The V1 generation (0.8-0.20) launches over Ray, 0.15 too though it takes mp's --nnodes (0.11+,
    vllm-project/vllm#23691): one generation, one line that starts on all its releases (docs/commands/plan.md)."""
    found = cli.json("plan", "llama-3.1-405b", "--target", "2x8xh100", "--engine", engine, "--closed-form")
    assert found["launch"]["vllm"].endswith("--distributed-executor-backend ray")
    assert found["launch"]["vllm_workers"] == "ray start --address HEAD_IP:6379 --block"
    assert "ray start --head --port 6379" in found["launch_note"]


def test_experts_shared_over_nodes_launch_one_data_parallel_group(cli, request, monkeypatch):
    found = cli.json("plan", "deepseek-v3", "--target", "2x8xh200", "--tp", "1", "--dp", "16", "--closed-form")
    assert found["nodes"]["nodes"] == 2
    assert any("53% of each rank's dispatch goes over ib-ndr" in note for note in found["notes"])  # 8 / 15 by hand
    request.getfixturevalue("one_stage_search")  # its pick shares the experts over both nodes (tp 8 x pp 2 beats it)
    from mha_cli.core.cost import search as searching

    every = searching._variants  # separate servers (trial 275 #1) left out: the launch of shared experts is tested
    monkeypatch.setattr(searching, "_variants", lambda *args: [v for v in every(*args) if not v.separate_servers])
    # 1,024 tokens a rank: SGLang's line asks 16 x 1,024, which its reserve starts (16 x 8,192: 192 GiB, review 370)
    search = cli.json("plan", "deepseek-v3", "--target", "2x8xh200", "--closed-form", "--concurrency", "64",
                      "--max-num-batched-tokens", "1024")  # fmt: skip
    pick = search["candidates"][search["chosen"]]["deployment"]
    launch = search["launch"]
    assert pick["expert_ranks"] == 16  # shared over both nodes: one group, the worker node headless from rank 8
    worker = shlex.split(launch["vllm_workers"])
    assert worker[worker.index("--data-parallel-size-local") + 1] == str(16 // pick["tp"] // 2)
    assert "--data-parallel-start-rank" in worker and "--headless" in worker
    assert "--data-parallel-start-rank" not in launch["vllm"]  # the head runs vLLM's internal load balancer
    assert _flags(launch["vllm_workers"]) - _flags(launch["vllm"]) <= VLLM_0_32_FLAGS
    assert _flags(launch["sglang"]) >= SGLANG_FLAGS
    assert "--node-rank NODE_RANK" in launch["sglang_workers"]


def test_a_part_filled_last_node_runs_fewer_replicas_and_says_so():
    """12 x H100 = 8 + 4, tp 4: two replicas on node 0, one on node 1, whose line of its own (``ENGINE_last_node``)
    runs one: the head's two would not start on four GPUs (trial 294 #1: it was said in prose only, the JSON's
    ``launch`` held no line for it). Shared experts there get no line (vLLM's --data-parallel-size-local is one figure
    for every node)."""
    from mha_cli.core.cost.launch_nodes import node_launch, node_shape, sglang_lines, vllm_lines

    shape = node_shape(2, 8, 4, 1, 3, None)
    assert (shape.replicas_per_node, shape.last_node_replicas) == (2, 1)
    vllm = vllm_lines(["vllm", "serve", "m", "--data-parallel-size", "3"], shape, "vllm-0.21")
    assert vllm.head[-2:] == ["--data-parallel-size", "2"] and vllm.last[-2:] == ["--data-parallel-size", "1"]
    assert "vllm_last_node (--data-parallel-size 1) on node 1" in vllm.note
    sglang = sglang_lines(["python", "--dp-size", "3"], shape)
    assert sglang.last == ["python", "--dp-size", "1"] and "sglang_last_node (--dp-size 1) on node 1" in sglang.note
    lines, _ = node_launch(
        {"vllm": ["vllm", "--data-parallel-size", "3"]}, node_shape(3, 8, 4, 1, 5, None), "vllm-0.21"
    )
    assert lines == {
        "vllm": ["vllm", "--data-parallel-size", "2"],
        "vllm_last_node": ["vllm", "--data-parallel-size", "1"],
    }
    full, _ = node_launch({"vllm": ["vllm", "--data-parallel-size", "4"]}, node_shape(2, 8, 4, 1, 4, None), "vllm-0.21")
    assert list(full) == ["vllm"]  # control: whole nodes run one line
    v0 = vllm_lines(["vllm", "serve", "m"], shape, "vllm-v0")  # no data parallelism: a server per replica
    assert "2 servers on node 0 and 1 on node 1, which is not full" in v0.note  # 3 replicas, not 4 (review 295 #1)
    shared = vllm_lines(["vllm", "--data-parallel-size", "3"], node_shape(2, 8, 4, 1, 3, 12), "vllm-0.21")
    assert shared.head == [] and "not full" in shared.note


def test_a_replica_straddling_two_nodes_unevenly_gets_no_line():
    """Qwen3-8B tp 2 x pp 3 x 4 replicas on 3 x 8 (36 layers, 3 stages): replica 1 sits on GPUs 6-11, 2 on node 0 and
    4 on node 1; the same line on each node would run one 6-GPU replica a node (3, not 4). 12 GPUs a replica on
    8 + 4 likewise (vLLM and SGLang split a replica evenly over --nnodes). Controls: 4 a node, 16 over 2 nodes."""
    from mha_cli.core.cost.launch_nodes import STRADDLING, node_shape, sglang_lines, vllm_lines

    for shape in (node_shape(3, 8, 2, 3, 4, None), node_shape(2, 8, 4, 3, 1, None)):
        assert shape.straddles
        assert vllm_lines(["vllm", "serve", "m"], shape, "vllm-0.21") == ([], None, STRADDLING, None)
        assert sglang_lines(["python", "--dp-size", "1"], shape) == ([], None, STRADDLING, None)
    assert not node_shape(2, 8, 4, 1, 4, None).straddles and not node_shape(2, 8, 8, 2, 1, None).straddles


def test_kv_names_the_nodes_and_a_tp_that_spans_them(cli):
    notes = cli.json("kv", "llama-3-70b", "--target", "16xh100")["memory"]["engine"]["notes"]
    assert any("read as 2 nodes of 8" in note for note in notes)
    assert any("tp 16 spans nodes of 8" in note for note in notes)
    inside = cli.json("kv", "llama-3-70b", "--target", "16xh100", "--tp", "8")["memory"]["engine"]["notes"]
    assert not any("spans nodes" in note for note in inside)  # the control: tp 8 stays in a node


def test_recommend_shows_a_tp_that_spans_nodes_in_its_short_report(cli):
    """400B on 2 x 8 H100: 747 GiB of bf16 weights need all 16 GPUs, tp 16 over two nodes of 8. The short report (not
    only --json's engine notes) warns; the control, 8B on 8 GPUs, stays in a node and is not warned."""
    report = cli.run("recommend", "--params", "400B", "--target", "2x8xh100")
    assert report.exit_code == 0, report.output
    assert "warning: tp 16 spans nodes of 8" in " ".join(report.output.split())
    found = cli.json("recommend", "--params", "400B", "--target", "2x8xh100")
    assert found["memory"]["tp"] == 16 and any("tp 16 spans nodes of 8" in w for w in found["warnings"])
    inside = cli.run("recommend", "--params", "8B", "--target", "8xh100")
    assert inside.exit_code == 0 and "spans nodes" not in inside.output


def test_an_nvl72_rack_is_launched_tray_by_tray():
    """``--target 16xgb300``: NVLink joins the 16 GPUs, but each compute tray is a host of 4 (GB300 NVL72 datasheet);
    a server of 8 GPUs was written as one line for one host, which cannot start (found by newuser trial 236)."""
    from typer.testing import CliRunner

    from mha_cli.cli.app import app

    result = CliRunner().invoke(app, ["plan", "llama-3.1-405b", "--target", "16xgb300", "--closed-form", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    head = shlex.split(data["launch"]["vllm"])
    tp, pp = (int(head[head.index(flag) + 1]) for flag in ("--tensor-parallel-size", "--pipeline-parallel-size"))
    assert tp * pp == 8 and head[head.index("--nnodes") + 1] == "2"  # 8 GPUs: two trays of 4
    assert "--headless" in data["launch"]["vllm_workers"]
    assert "one of the rack's compute trays, a host of 4 GPUs" in data["launch_note"]
    one_tray = json.loads(CliRunner().invoke(app, ["plan", "llama-3.1-8b", "--target", "4xgb300", "--json"]).stdout)
    assert "--nnodes" not in one_tray["launch"]["vllm"] and "compute trays" not in (one_tray["launch_note"] or "")


def test_two_nvl72_racks_are_launched_tray_by_tray_too(cli):
    """Trial 394 #2: on ``2x72xgb200`` (two racks, each one NVLink domain of 18 hosts of 4 GPUs) the lines were one
    server line per 72-GPU "node" (tp 8 x dp 9), which no host can start; they are written tray by tray, as on one
    rack: a tp 8 server spans 2 trays."""
    data = cli.json("plan", "llama-3.1-70b", "--target", "2x72xgb200", "--tp", "8", "--concurrency", "8",
                    "--closed-form")  # fmt: skip
    head = shlex.split(data["launch"]["vllm"])
    assert head[head.index("--data-parallel-size") + 1] == "1" and "--headless" in data["launch"]["vllm_workers"]
    assert "a host of 4 GPUs (NVLink joins each rack's 72 GPUs) and a server spans trays" in data["launch_note"]
    # review 396 #3, #4: tp 16 puts a replica in both racks (no line, as before); H100 nodes have no trays
    crossing = cli.run("plan", "llama-3.1-70b", "--target", "2x72xgb200", "--tp", "16", "--concurrency", "8",
                       "--closed-form")  # fmt: skip
    assert "straddles two nodes unevenly" in " ".join(crossing.output.split())
    h100 = cli.json(
        "plan", "llama-3.1-70b", "--target", "2x16xh100", "--tp", "8", "--concurrency", "8", "--closed-form"
    )
    assert "compute trays" not in (h100["launch_note"] or "")


def test_an_nvl72_racks_disaggregated_and_trtllm_lines_keep_to_trays_of_4():
    """``--disaggregated`` on 8 x GB200 placed a decode worker on GPUs 3 and 4 of one host, and TensorRT-LLM's
    replicas note named CUDA_VISIBLE_DEVICES=4,5 on a 4-GPU tray (found by the review of this change)."""
    import re

    from typer.testing import CliRunner

    from mha_cli.cli.app import app

    def plan(*args):
        result = CliRunner().invoke(app, ["plan", *args, "--target", "8xgb200", "--closed-form", "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    split = plan("llama-3.1-70b", "--disaggregated")
    devices = [int(gpu) for line in split["launch"]["vllm"].splitlines()
               for found in re.findall(r"CUDA_VISIBLE_DEVICES=([\d,]+)", line) for gpu in found.split(",")]  # fmt: skip
    assert devices and max(devices) < 4
    assert "one of the rack's compute trays, a host of 4 GPUs" in split["launch_note"]
    trtllm = plan("llama-3.1-8b", "--engine", "trtllm")
    assert "CUDA_VISIBLE_DEVICES=4" not in trtllm["launch_note"]
    assert "a server spans trays" not in trtllm["launch_note"]  # tp 1 replicas: each on one tray


def test_the_search_leaves_out_layouts_no_engine_launches(cli):
    """llama-3.1-70b on 12xh100 (8 + 4 GPUs) picked tp 2 x pp 3 x 2, whose replicas straddle the nodes unevenly:
    launch {} (found by newuser trial 257). Such layouts are left out of the search, saying why; the pick has lines."""
    found = cli.json("plan", "llama-3.1-70b", "--target", "12xh100", "--closed-form")
    pick = found["candidates"][found["chosen"]]["deployment"]
    assert found["launch"].get("vllm") and (pick["tp"], pick["pp"]) != (2, 3)
    assert any(line.startswith("tp 2 x pp 3 x 2 replica(s): left out (no launch line") for line in found["layouts"])


def test_one_server_a_node_is_one_server():
    """Trial 351 #10: "1 servers on each of the 2 nodes"."""
    from mha_cli.core.cost.launch_nodes import _servers_per_node, node_shape

    note = _servers_per_node(node_shape(2, 8, 8, 1, 2, 8), "trtllm", "why")
    assert "the line once per replica, 1 server on each of the 2 nodes, each on its own 8 GPUs" in note


def test_the_placeholders_note_names_only_the_lines_kept(cli):
    """Trial 351 #10: vLLM 0.8.5 has no --data-parallel-size-local, so its lines are dropped; the note told the user
    to replace START_RANK, which only the dropped vllm_workers line held."""
    found = cli.json("plan", "deepseek-v3", "--target", "2x8xh200", "--engine", "vllm@0.8.5", "--dp", "16",
                     "--max-num-batched-tokens", "1024", "--closed-form")  # fmt: skip  # a chunk SGLang starts
    assert "vllm" not in found["launch"] and "NODE_RANK" in found["launch"]["sglang_workers"]
    assert found["launch_note"].endswith("replace HEAD_IP with node 0's address, NODE_RANK with the node's index")


def test_a_bad_kv_link_is_refused_where_no_split_fits(cli):
    """Trial 351 #3: on one node of 8 H200s no disaggregated split of DeepSeek-V3 fits, and --kv-link foo passed."""
    result = cli.run("plan", "deepseek-v3", "--target", "8xh200", "--disaggregated", "--kv-link", "foo")
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.output.strip().startswith("error: unknown link 'foo': one of pcie4, pcie5")
