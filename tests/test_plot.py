"""``--plot``: the plotted numbers are the calculator's own (core.plot_data), and the CLI writes a titled PNG."""

from __future__ import annotations

import pytest

from mha_cli.core.deployment import merge_deployment
from mha_cli.core.kv_report import build_kv_report
from mha_cli.core.plot_data import (
    alternatives_against_context,
    kv_against_context,
    memory_against_batch,
    powers_of_two,
)
from mha_cli.core.recommend import RecommendRequest, recommend
from mha_cli.core.sources import load_source
from tests.test_fast_imports import heavy_modules

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _report(name: str, **overrides):
    source = load_source(name)
    return source.model, build_kv_report(source, merge_deployment(source.deployment, model=source.model, **overrides))


def test_context_axis_is_powers_of_two_with_the_asked_context():
    assert powers_of_two(256, 4 * 3000, 3000) == [256, 512, 1024, 2048, 3000, 4096, 8192, 16384]


def test_kv_curves_match_a_hand_count_without_a_target():
    # Llama 3 8B: 32 layers x 8 KV heads x head_dim 128 x (K and V) x 2 bytes = 131,072 B per token in bf16.
    model, report = _report("llama-3-8b", seq_len=8192, batch=8)
    data = kv_against_context(model, report.deployment)
    curves = {s.label: dict(zip(s.x, s.y, strict=True)) for s in data.series}
    assert curves["GQA-8"][8192] == 8 * 8192 * 131_072  # 8 GiB for the batch
    assert curves["MHA"][8192] == 4 * curves["GQA-8"][8192]  # 32 KV heads
    assert curves["MQA"][1024] == 8 * 1024 * 131_072 // 8  # one KV head
    assert data.limit_bytes is None and [s.label for s in data.series if s.is_current] == ["GQA-8"]


@pytest.mark.parametrize(("name", "target", "batch"), [("llama-3-8b", "h100", 8), ("deepseek-v2-lite", "2xa100", 4)])
def test_kv_curves_agree_with_the_kv_report_at_the_asked_context(name, target, batch):
    model, report = _report(name, target=target, batch=batch)
    data = kv_against_context(model, report.deployment)
    current = next(s for s in data.series if s.is_current)
    assert current.y[current.x.index(report.deployment.seq_len)] == report.memory.kv_bytes_per_device
    assert data.limit_bytes == report.memory.usable_bytes - report.memory.weight_bytes_per_device
    rows = {row.label: row for row in report.variants}
    for s in data.series:  # the variants table prices the batch on one rank; with one replica it is per device
        if report.memory.replicas == 1:
            assert s.y[s.x.index(report.deployment.seq_len)] == rows[s.label].total_bytes


def test_memory_against_batch_crosses_the_limit_where_the_plan_says():
    model, report = _report("llama-3-8b", target="a100", batch=4, seq_len=32768)
    data = memory_against_batch(model, report.deployment)
    weights, together = data.series
    at_asked = together.x.index(4)
    assert together.y[at_asked] == report.memory.weight_bytes_per_device + report.memory.kv_bytes_per_device
    assert set(weights.y) == {report.memory.weight_bytes_per_device}
    fitting = [b for b, y in zip(together.x, together.y, strict=True) if y <= data.limit_bytes]
    assert max(fitting) <= report.memory.max_sequences < min(b for b in together.x if b not in fitting)
    assert memory_against_batch(model, _report("llama-3-8b")[1].deployment) is None  # no target, no panel


def test_kv_and_recommend_write_a_png_titled_with_the_command(cli, tmp_path, monkeypatch):
    import mha_cli.cli.plot as plot

    titles = []
    draw = plot.write_plot
    monkeypatch.setattr(plot, "write_plot", lambda *a, **k: (titles.append(k["title"]), draw(*a, **k)))
    out = tmp_path / "kv.png"
    result = cli.run("kv", "llama-3-8b", "--target", "h100", "--plot", str(out), "--json")
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(PNG_MAGIC)
    assert titles[-1] == f"mha kv llama-3-8b --target h100 --plot {out} --json"
    again = cli.run("kv", "llama-3-8b", "--plot", str(out))
    assert again.exit_code == 2 and "pass --force" in again.stderr
    assert cli.run("kv", "llama-3-8b", "--plot", str(out), "--force").exit_code == 0
    rec = tmp_path / "rec.png"
    assert cli.run("recommend", "--params", "1B", "--plot", str(rec), "--json").exit_code == 0
    assert rec.read_bytes().startswith(PNG_MAGIC) and titles[-1].startswith("mha recommend --params 1B")
    bad = cli.run("kv", "llama-3-8b", "--plot", str(tmp_path / "kv.jpg"))
    assert bad.exit_code == 2 and "name the file .png" in bad.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kv.png", "rec.png"]  # no temporary file left


def test_matplotlib_is_imported_only_with_plot(tmp_path):
    loaded = heavy_modules(["kv", "gpt2", "--json", "--plot", str(tmp_path / "p.png")])
    assert "matplotlib" in loaded and "torch" not in loaded  # without --plot: tests/test_fast_imports.py


@pytest.mark.parametrize(
    "args",
    [
        ["kv", "llama-3-8b", "--target", "h100"],
        ["recommend", "--params", "1B"],
        ["plan", "llama-3-8b", "--target", "h200", "--tp", "1", "--closed-form"],
        ["plan", "llama-3-8b", "--target", "2xh200", "--closed-form"],
    ],
    ids=["kv", "recommend", "plan", "plan-search"],
)
def test_every_plot_says_it_wrote_its_file_the_same_way(cli, tmp_path, args):
    """One line on stderr, ``wrote PATH`` (``Output.wrote``), once the PNG is there; stdout stays the JSON."""
    out = tmp_path / "p.png"
    result = cli.run(*args, "--plot", str(out), "--json")
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(PNG_MAGIC)
    assert f"wrote {out}\n" in result.stderr and result.stdout.lstrip().startswith("{")


def test_curves_that_coincide_at_tp_8_are_one_line_naming_both():
    """Llama 3 8B at tp 8: GQA-8 and MQA both cache one KV head per rank, 32 layers x 128 x (K, V) x 2 B = 16,384 B
    per token per rank; at tp 1 (the control) they differ by 8x and stay two lines."""
    from mha_cli.cli.plot import legend_label

    model, report = _report("llama-3-8b", seq_len=8192, tp=8)
    data = kv_against_context(model, report.deployment)
    assert [s.label for s in data.series] == ["MHA", "GQA-8 = MQA at tp 8", "MLA"]
    shared = data.series[1]
    assert shared.y[shared.x.index(8192)] == 8192 * 16_384 and shared.is_current
    assert legend_label(shared, mark_current=True) == "GQA-8 = MQA at tp 8 (1 KV head per rank; this design)"
    single = kv_against_context(model, _report("llama-3-8b", seq_len=8192)[1].deployment)
    assert [s.label for s in single.series] == ["MHA", "GQA-8", "MQA", "MLA"]


def test_legends_sit_outside_the_axes_so_they_cover_no_line():
    """Each panel's legend is drawn beneath it: its box and the panel's plotting area do not overlap."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from mha_cli.cli.plot import plot_figure

    model, report = _report("llama-3-8b", tp=8, target="8xh100")
    panels = [kv_against_context(model, report.deployment), memory_against_batch(model, report.deployment)]
    figure = plot_figure(panels, title="t")
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    plotted = [axes for axes in figure.axes if axes.lines]
    legends = [axes.get_legend() for axes in figure.axes if axes.get_legend() is not None]
    assert len(plotted) == len(legends) == 2
    for axes in plotted:
        area = axes.get_window_extent(renderer)
        assert not any(legend.get_window_extent(renderer).overlaps(area) for legend in legends)
    labels = [text.get_text() for text in legends[0].get_texts()]
    assert labels[1] == "GQA-8 = MQA at tp 8 (1 KV head per rank; this design)" and len(plotted[0].lines) == 5


RECOMMENDATIONS = {
    "7b-8k": ["--params", "7B", "--seq", "8192", "--target", "a100"],  # MHA solved at 24 layers, the design 28
    "7b-128k-windowed": ["--params", "7B", "--seq", "128k", "--target", "a100", "--priority", "inference"],
    "70b-8xh100": ["--params", "70B", "--seq", "32k", "--target", "8xh100"],  # rows at tp 4 and tp 2
}


@pytest.mark.parametrize("args", list(RECOMMENDATIONS.values()), ids=list(RECOMMENDATIONS))
def test_recommend_curves_pass_through_the_alternatives_table(cli, args):
    """Every row of the alternatives (its JSON ``kv_bytes_per_device``) is a curve's value at the asked context,
    coinciding rows one curve; the pick, windowed or not, is the design's curve and in the legend."""
    table = cli.json("recommend", *args)
    options = dict(zip(args[::2], args[1::2], strict=True))
    request = RecommendRequest.parse(params=options["--params"], seq_len=options["--seq"], target=options["--target"],
                                     priority=options.get("--priority", "balanced"))  # fmt: skip
    result = recommend(request)
    data = alternatives_against_context(result.config.deployment, result.alternatives)
    seq = table["request"]["seq_len"]
    rows = table["alternatives"]
    drawn = {row["label"]: [s for s in data.series if row["label"] in _members(s.label)] for row in rows}
    assert all(len(curves) == 1 for curves in drawn.values()), drawn  # each row is one curve
    for row in rows:
        assert drawn[row["label"]][0].y[data.series[0].x.index(seq)] == row["kv_bytes_per_device"], row["label"]
    pick = next(row["label"] for row in rows if row["is_recommended"])
    assert [s.label for s in data.series if s.is_current] == [pick]
    assert drawn[pick][0].y[data.series[0].x.index(seq)] == table["memory"]["kv_bytes_per_device"]
    assert len(data.series) == len({tuple(s.y) for s in data.series})  # no two lines on top of each other


def _members(label: str) -> list[str]:
    """The rows a curve's label names: ``GQA-4 = GQA-2 at tp 2`` names GQA-4 and GQA-2."""
    return [name.split(" at tp ")[0] for name in label.split(" = ")]
