"""``mha probe`` through the CLI: JSON matrices that are real causal softmax rows, the variants,
one-line errors, and the summary arithmetic on a hand-made matrix."""

from __future__ import annotations

import json
import math

import pytest
import torch
from typer.testing import CliRunner

from mha_cli.cli.app import app
from mha_cli.core.torch_inputs import tokenize
from mha_cli.nn import Attention
from mha_cli.nn.probe import embed, summarise

runner = CliRunner()
SENTENCE = "the cat sat on the mat"


def probe_json(*args: str) -> dict:
    result = runner.invoke(app, ["probe", SENTENCE, *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_gives_tokens_and_one_causal_softmax_matrix_per_head() -> None:
    data = probe_json("--heads", "4", "--kv-heads", "2")
    assert data["tokens"] == ["the", "cat", "sat", "on", "the", "mat"]
    assert data["variant"] == "GQA" and data["n_kv_heads"] == 2 and data["head_dim"] == 16
    heads = torch.tensor(data["heads"])  # (n_h, N, N)
    assert heads.shape == (4, 6, 6)
    torch.testing.assert_close(heads.sum(-1), torch.ones(4, 6), atol=1e-5, rtol=0)
    assert torch.all(heads.triu(1) == 0)  # nothing attends to the future
    assert heads[0, 0, 0] == 1.0
    assert [s["kv_head"] for s in data["summaries"]] == [0, 0, 1, 1]
    assert not torch.allclose(heads[0], heads[1])  # heads sharing K/V still differ by their queries


def test_the_matrices_are_the_seeded_layers_by_hand_with_rope() -> None:
    """The same seed's projections, attention computed here: q and k rotated by RoPE (theta 10,000, rotate-half over
    the whole head), scaled by 1/sqrt(head_dim), causal softmax. Every variant rotates (trial 400 #1: MHA, GQA and MQA
    had no RoPE while MLA's key had one, so the variants' maps differed by more than their caches)."""
    data = probe_json("--heads", "2", "--d-model", "16", "--seed", "3")
    torch.manual_seed(3)
    layer = Attention(16, 2, 2, 8)
    with torch.no_grad():
        for param in layer.parameters():
            param.normal_(0.0, 16**-0.5)
        x = embed(tokenize(SENTENCE), 16, 3)[0]  # (N, 16)
        n = x.shape[0]
        q = (x @ layer.q_proj.weight.T).view(n, 2, 8).transpose(0, 1)  # (h, N, 8)
        k = (x @ layer.k_proj.weight.T).view(n, 2, 8).transpose(0, 1)
        inv_freq = 10_000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float32) / 8)  # (4,)
        angles = torch.arange(n, dtype=torch.float32)[:, None] * inv_freq  # (N, 4)
        cos, sin = angles.cos().repeat(1, 2), angles.sin().repeat(1, 2)  # (N, 8): halves share a frequency

        def rotated(t: torch.Tensor) -> torch.Tensor:
            first, second = t[..., :4], t[..., 4:]
            return t * cos + torch.cat([-second, first], dim=-1) * sin

        scores = rotated(q) @ rotated(k).transpose(-1, -2) / math.sqrt(8)  # (h, N, N)
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        by_hand = scores.softmax(-1)
    torch.testing.assert_close(torch.tensor(data["heads"]), by_hand, atol=1e-5, rtol=0)
    unrotated = (q @ k.transpose(-1, -2) / math.sqrt(8)).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -1e9)
    assert not torch.allclose(torch.tensor(data["heads"]), unrotated.softmax(-1), atol=1e-3)  # the control: no RoPE


def test_an_odd_head_width_runs_unrotated_and_the_json_says_what_rotates() -> None:
    """Review 401 #5: with RoPE in every variant, 2 heads of 9 were refused, naming fields probe has none of; RoPE
    pairs its dimensions, so an odd head runs unrotated and says so. The JSON names the rotated width and theta."""
    odd = runner.invoke(app, ["probe", SENTENCE, "--heads", "2", "--d-model", "18"])
    assert odd.exit_code == 0 and "head width 9, no RoPE (an odd head width)" in " ".join(odd.stdout.split())
    assert probe_json("--heads", "2", "--d-model", "18")["rope_width"] is None
    even = probe_json("--heads", "4")
    assert (even["rope_width"], even["rope_theta"]) == (16, 10_000.0)
    mla = probe_json("--heads", "4", "--variant", "MLA")
    assert mla["rope_width"] == mla["mla_rope_dim"] and mla["rope_theta"] == 10_000.0


@pytest.mark.parametrize(("variant", "n_kv"), [("MQA", 1), ("MLA", None), ("GQA", 2)])  # MLA: no KV heads
def test_variants_run(variant: str, n_kv: int) -> None:
    data = probe_json("--heads", "4", "--variant", variant)
    assert data["variant"] == variant and data["n_kv_heads"] == n_kv
    assert len(data["heads"]) == 4


def test_seed_changes_the_matrices_and_repeats_them() -> None:
    assert probe_json("--seed", "1")["heads"] == probe_json("--seed", "1")["heads"]
    assert probe_json("--seed", "1")["heads"] != probe_json("--seed", "2")["heads"]


def test_human_output_shows_token_labels_and_the_summary() -> None:
    result = runner.invoke(app, ["probe", SENTENCE, "--heads", "2"])
    assert result.exit_code == 0, result.output
    assert "head 1" in result.stdout and "mat" in result.stdout and "entropy" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["   "], "the sentence has no tokens"),
        ([SENTENCE, "--heads", "4", "--kv-heads", "3"], "--heads (4) must be divisible by --kv-heads (3)"),
        ([SENTENCE, "--heads", "3", "--kv-heads", "2"], "--heads (3) must be divisible by --kv-heads (2)"),
        ([SENTENCE, "--heads", "3"], "--d-model (64) must be a multiple of --heads (3)"),
        ([SENTENCE, "--heads", "0"], "--heads must be at least 1 (got 0)"),
        ([SENTENCE, "--heads", "-1"], "--heads must be at least 1 (got -1)"),
        ([SENTENCE, "--kv-heads", "0"], "--kv-heads must be at least 1 (got 0)"),
        ([SENTENCE, "--d-model", "0"], "--d-model must be at least 1 (got 0)"),
        (
            [SENTENCE, "--variant", "GQA", "--heads", "2"],  # trial 350 #8: no GQA split of 2 heads exists
            "--variant GQA needs a KV-head count that divides --heads 2 strictly between 1 and it, and 2 has none",
        ),
        (["one"], "probe needs at least 2"),
        ([" ".join(["w"] * 40)], "at most 32"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["probe", *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_summary_of_a_previous_token_head() -> None:
    weights = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    summary = summarise(weights, head=0, kv_head=0)
    assert summary.previous_mass == 1.0 and summary.self_mass == 0.0 and summary.first_mass == 0.0
    assert summary.entropy_bits == 0.0 and summary.uniform_bits == round((1 + math.log2(3)) / 2, 4)
    assert summary.pattern == "previous" and summary.other_mass == 0.0
    uniform = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    assert summarise(uniform, 0, 0).pattern == "spread"


def test_row_ones_first_token_is_its_previous_counted_once() -> None:
    """Trial 327 #1: row 1's previous token is the first; counted under both, the shares added up to more than 1 and
    the doubled weight named this head 'first' (0.625 against previous 0.5). Counted once, as previous: previous
    0.5, self 0.275, first 0.225 (row 2's only), the four adding up to 1."""
    weights = torch.tensor([[1.0, 0.0, 0.0], [0.8, 0.2, 0.0], [0.45, 0.2, 0.35]])
    summary = summarise(weights, head=0, kv_head=0)
    shares = (summary.self_mass, summary.previous_mass, summary.first_mass, summary.other_mass)
    assert shares == (0.275, 0.5, 0.225, 0.0) and summary.pattern == "previous"
    assert sum(shares) == pytest.approx(1.0)


def test_a_one_token_summary_is_refused_not_invented() -> None:
    with pytest.raises(ValueError, match="at least 2 tokens"):
        summarise(torch.ones(1, 1), head=0, kv_head=0)


def test_mla_takes_a_latent_rank_of_its_own() -> None:
    """Trial 327 #5: the probe's MLA latent was always 4 x the head width (64 at --d-model 64 and 4 heads: no
    compression to study); --kv-lora-rank sets it, refused in one line without --variant MLA or below 1."""
    data = probe_json("--heads", "4", "--variant", "MLA", "--kv-lora-rank", "8")
    assert (data["mla_kv_lora_rank"], data["mla_rope_dim"]) == (8, 8)
    refused = runner.invoke(app, ["probe", SENTENCE, "--kv-lora-rank", "8"])
    assert refused.exit_code == 2 and refused.output.strip() == (
        "error: --kv-lora-rank sets MLA's latent and --variant is not given: give --variant MLA"
    )
    zero = runner.invoke(app, ["probe", SENTENCE, "--variant", "MLA", "--kv-lora-rank", "0"])
    assert zero.exit_code == 2 and "--kv-lora-rank: must be greater than 0 (got 0)" in zero.output


def test_mla_header_shows_the_latent_rank_and_rope_width() -> None:
    data = probe_json("--heads", "4", "--variant", "MLA")
    assert (data["mla_kv_lora_rank"], data["mla_rope_dim"]) == (64, 8)  # 4 x and 1/2 x the head width 16
    result = runner.invoke(app, ["probe", SENTENCE, "--heads", "4", "--variant", "MLA"], terminal_width=200)
    assert "4 query heads reading one shared latent of rank 64 + RoPE key width 8" in result.stdout
    assert "KV head" not in result.stdout.splitlines()[0]
    assert probe_json("--heads", "4")["mla_kv_lora_rank"] is None


def test_mla_labels_no_kv_heads_every_query_head_reads_the_latent(tmp_path) -> None:
    """MLA caches one latent all query heads read (absorbed: MQA over [c ; k_rope]), not per-head K/V: no "KV head
    0..3" in the JSON, the summary table, the heat maps' titles or the PNG's (4 query heads, 4 "KV heads" before)."""
    from mha_cli.cli.probe_plot import probe_figure
    from mha_cli.nn.probe import ProbeResult

    data = probe_json("--heads", "4", "--variant", "MLA")
    assert data["n_kv_heads"] is None and [s["kv_head"] for s in data["summaries"]] == [None] * 4
    result = runner.invoke(app, ["probe", SENTENCE, "--heads", "4", "--variant", "MLA"], terminal_width=200)
    assert result.exit_code == 0 and "KV head" not in result.stdout
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["head", "reads"])  # the summary's header
    rows = lines[at + 2 : at + 6]  # under its rule: one row a head
    assert [row.split()[1] for row in rows] == ["latent"] * 4
    figure = probe_figure(ProbeResult.model_validate(data), "mha probe")
    assert "4 query heads, one shared latent of rank 64 + RoPE key width 8" in figure.get_suptitle()
    assert all("KV head" not in axis.get_title() for axis in figure.axes)


def test_one_kv_head_is_singular() -> None:
    result = runner.invoke(app, ["probe", SENTENCE, "--heads", "2", "--kv-heads", "1"], terminal_width=200)
    assert "2 query heads, 1 KV head, head width 32" in result.stdout


def test_column_labels_show_whole_words_and_number_columns_when_too_wide() -> None:
    result = runner.invoke(app, ["probe", "hello world, hello again", "--heads", "1"], terminal_width=80)
    header = next(line for line in result.stdout.splitlines() if "hello" in line and "world" in line)
    assert header.split() == ["hello", "world", ",", "hello", "again"]
    long = "the quick brown fox jumps over the lazy dog and then the internationalization sleeps"
    result = runner.invoke(app, ["probe", long, "--heads", "1"], terminal_width=80)
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.split()[:3] == ["0", "1", "2"])
    assert header.split() == [str(i) for i in range(14)] and "…" not in result.stdout
    assert max(len(line.rstrip()) for line in lines if line.strip().startswith(("0 the", "13 sleeps"))) <= 80


def test_out_writes_the_heat_maps_as_a_png_titled_with_the_command(tmp_path) -> None:
    from mha_cli.cli.probe_plot import probe_figure, typed_probe_command
    from mha_cli.nn.probe import ProbeResult

    out = tmp_path / "probe.png"
    result = runner.invoke(app, ["probe", SENTENCE, "--heads", "4", "--kv-heads", "2", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not list(tmp_path.glob(".*.tmp"))
    data = json.loads(result.stdout)
    typed = ["/venv/bin/mha", "probe", SENTENCE, "--heads", "4", "--out", "p.png"]
    command = typed_probe_command(typed)
    assert command == "mha probe 'the cat sat on the mat' --heads 4 --out p.png"
    figure = probe_figure(ProbeResult.model_validate(data), command)
    assert figure.get_suptitle().startswith(command)
    panels = [axis for axis in figure.axes if axis.get_title()]
    assert [axis.get_title().split(":")[0] for axis in panels] == [f"head {h} (KV head {h // 2})" for h in range(4)]
    image = panels[0].get_images()[0].get_array()  # (N, N): the weights, the future masked
    assert image[2, 1] == pytest.approx(data["heads"][0][2][1]) and bool(image.mask[1, 2])
    again = runner.invoke(app, ["probe", SENTENCE, "--out", str(out)])
    assert again.exit_code == 2 and "exists: pass --force to overwrite it" in again.output
    assert runner.invoke(app, ["probe", SENTENCE, "--out", str(out), "--force"]).exit_code == 0


def test_out_must_name_a_png_in_an_existing_folder(tmp_path) -> None:
    for out, message in ((tmp_path / "p.jpg", "name the file .png"), (tmp_path / "no" / "p.png", "no such folder")):
        result = runner.invoke(app, ["probe", SENTENCE, "--out", str(out)])
        assert result.exit_code == 2 and message in result.output and not out.exists()


def test_a_bad_variant_names_the_option_typed(cli):
    """It named the schema's ``attention.variant`` where recommend names ``--variant`` (newuser trial 241)."""
    result = cli.run("probe", "the cat sat", "--variant", "XYZ")
    assert result.exit_code == 2
    assert "--variant: must be one of 'MHA', 'GQA', 'MQA' or 'MLA' (got 'XYZ')" in result.output
    assert "attention." not in result.output


def test_other_is_what_self_previous_and_first_leave() -> None:
    """Row i's weight on none of i, i-1 and 0 (row 1's previous is its first, counted once): here row 2 puts 0.5 on
    token 1 (its previous) and row 3 0.6 on token 1 (no one of the three), so other = (0 + 0 + 0.6) / 3 = 0.2. Three
    tokens leave no other token: 0, never the -0.0 a float sum a hair under 0 printed (review 305 #8)."""
    weights = torch.tensor(
        [[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.2, 0.5, 0.3, 0.0], [0.1, 0.6, 0.1, 0.2]]
    )  # (4, 4)
    summary = summarise(weights, head=0, kv_head=0)
    assert summary.other_mass == 0.2 and summary.pattern != "other"
    three = summarise(torch.tensor([[1.0, 0, 0], [0.3, 0.7, 0], [0.1, 0.2, 0.7]]), head=0, kv_head=0)
    assert three.other_mass == 0.0 and str(three.other_mass) == "0.0"
