"""A SOURCE that names a preset and a folder or file in the working directory too: the preset is read, as the
source order says (``core.sources``), and the output says the folder is there and how to read it (trial 304 #5:
``hf download ... --local-dir gpt2; mha kv gpt2`` priced GPT-2 with no word of the Qwen3 config beside it)."""

from __future__ import annotations

import shutil

from mha_cli.core.sources import load_source
from tests.conftest import reference_hf_config


def test_a_preset_named_like_a_folder_here_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_source("gpt2").assumptions == []  # nothing here: no word
    (tmp_path / "gpt2").mkdir()
    shutil.copy(reference_hf_config("qwen3-8b"), tmp_path / "gpt2" / "config.json")
    read = load_source("gpt2")
    assert (read.kind, read.model.n_layers) == ("preset", 12)  # GPT-2's 12 layers, not Qwen3-8B's 36
    assert read.assumptions == ["preset gpt2 read; a folder 'gpt2' is here too: give ./gpt2 to read it"]
    assert load_source("./gpt2").model.n_layers == 36


def test_plan_which_prints_no_source_line_says_it_too(cli, tmp_path, monkeypatch):
    """Review 305 #7: kv and check showed the line; plan, which prints no source line, priced GPT-2 unsaid."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gpt2").mkdir()
    shutil.copy(reference_hf_config("qwen3-8b"), tmp_path / "gpt2" / "config.json")
    said = "preset gpt2 read; a folder 'gpt2' is here too: give ./gpt2 to read it"
    pinned = ("--tp", "1", "--concurrency", "4")
    base = ("plan", "gpt2", "--target", "h100", "--isl", "512", "--osl", "64", "--closed-form")
    assert said in cli.json(*base, *pinned)["notes"]
    assert said in cli.json(*base)["layouts"]
