"""Ways out are never an empty list: group sizes that divide the heads are tried, flags are combined when one
alone is not enough, and when nothing fits the one entry says so and why."""

from __future__ import annotations

import json
import shlex

import pytest

from mha_cli.core.fit import group_sizes
from mha_cli.core.schemas import ModelSpec


def test_group_sizes_include_the_divisors_of_the_heads():
    model = ModelSpec(d_model=96 * 64, n_layers=1, n_heads=96, n_kv_heads=12, vocab_size=10, d_ff=10)
    sizes = group_sizes(model)
    assert {3, 6, 12, 24, 48, 96} <= set(sizes)  # none a power of two
    assert {2, 4, 8, 16, 32, 64, 128, 4096} <= set(sizes) and sizes == sorted(sizes)


def _paste(args: list[str], way: str) -> list[str]:
    """``args`` with every flag of a way out (``--target 12xjetson-orin --batch 1 (why)``) set."""
    words = shlex.split(way.split(" (")[0])
    pasted = list(args)
    for flag, value in zip(words[::2], words[1::2], strict=True):
        if flag in pasted:
            pasted[pasted.index(flag) + 1] = value
        else:
            pasted += [flag, value]
    return pasted


@pytest.mark.parametrize(
    "args",
    [
        ["recommend", "--params", "256B", "--target", "jetson-orin"],  # 96 heads: 12 devices fit, 16 were tried
        ["kv", "llama-3.1-405b", "--batch", "4", "--block-size", "16", "--target", "a10"],  # needs two flags
    ],
    ids=["divisor-of-heads", "combined-flags"],
)
def test_ways_out_that_were_empty_now_paste_back_and_fit(cli, args):
    data = cli.json(*args)
    fits = data["fits"] if "fits" in data else data["memory"]["fits"]
    assert fits is False and data["ways_out"]
    for way in data["ways_out"]:
        pasted = cli.json(*_paste(args, way["text"]))
        assert (pasted["fits"] if "fits" in pasted else pasted["memory"]["fits"]) is True, way
        assert way["fits"] is True, way


def test_when_nothing_fits_the_way_out_says_so_and_why(cli, tmp_path):
    path = tmp_path / "three_heads.yaml"  # 3 heads: at most 3 devices; 1.2T parameters cannot fit 3 Orins
    model = {"d_model": 6144, "n_layers": 2000, "n_heads": 3, "vocab_size": 100, "d_ff": 24576}
    path.write_text(json.dumps({"model": model}))
    data = cli.json("kv", str(path), "--target", "jetson-orin")
    assert data["memory"]["fits"] is False
    [priced] = data["ways_out"]
    way = priced["text"]
    assert priced["fits"] is False and priced["change"] == ""
    assert way.startswith("none: even 3 x jetson-orin (the largest group that splits the 3 heads) needs")
    # usable: 90% of the Orin's 59.60 GiB, less vLLM's activation peak, 0.25 GiB of non-torch memory at tp 3 (no
    # all-reduce fusion or NVLS off Hopper/Blackwell: core.engine.non_torch; 50.4 with the 2.1 GiB) and (vLLM >= 0.21)
    # its CUDA graphs (core.engine.cuda_graphs; 52.2 GiB usable at a fixed 1 GiB): 84 further graphs x 2,000 layers x
    # 191,267 B, 29.9 GiB, plus the forward at 512 tokens
    assert "in int4, more than the 23.3 GiB usable" in way
