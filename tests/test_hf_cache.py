"""The Hugging Face cache read by hand (``core.hf_cache``) against huggingface_hub itself, the library that writes
that cache: the same repo ids accepted, the same cache folder from the same environment, the same file found for
every revision, and the download command the error line prints finding what it promises."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mha_cli.core.hf_cache import HfId, find_cached, hub_cache, parse_hf_id
from tests.hf_cache_fixture import add_snapshot, commit_of

huggingface_hub = pytest.importorskip("huggingface_hub")  # a dev dependency (through transformers), not mha's

ID_CASES = [
    ("meta-llama/Llama-3.1-8B", HfId("meta-llama/Llama-3.1-8B")),
    ("Qwen/Qwen2.5-7B", HfId("Qwen/Qwen2.5-7B")),
    ("deepseek-ai/DeepSeek-R1@main", HfId("deepseek-ai/DeepSeek-R1", "main")),
    ("org/name@refs/pr/1", HfId("org/name", "refs/pr/1")),
    ("org/name@v1.0", HfId("org/name", "v1.0")),
    ("org/name@" + "a" * 40, HfId("org/name", "a" * 40)),
    ("org_1/x_", HfId("org_1/x_")),
    ("llama-3-8b", None),  # a name, not an id
    ("a/b/c", None),
    ("org/-name", None),
    ("org/name-", None),
    (".org/name", None),
    ("/abs/path", None),
    ("org--x/name", None),
    ("org/na..me", None),
    ("org/name.git", None),
    ("org/" + "n" * 97, None),
    ("org/näme", None),
    ("org/name@../../etc", None),
    ("org/name@", None),
    ("org/name@/x", None),
    ("configs/llama.yaml", None),  # a config file's path
    ("designs/tiny.json", None),
]


@pytest.mark.parametrize(("text", "expected"), ID_CASES, ids=[case[0][:30] for case in ID_CASES])
def test_ids_are_parsed_as_huggingface_hub_validates_them(text, expected):
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    assert parse_hf_id(text) == expected
    repo = text.split("@")[0]
    if expected is not None:
        validate_repo_id(repo)  # raises if huggingface_hub disagrees
    elif repo.count("/") == 1 and not repo.endswith((".json", ".yaml")) and "@" not in text:
        with pytest.raises(HFValidationError):
            validate_repo_id(repo)


ENVIRONMENTS = [
    {},
    {"HF_HOME": "{tmp}/home"},
    {"XDG_CACHE_HOME": "{tmp}/xdg"},
    {"HF_HOME": "{tmp}/home", "XDG_CACHE_HOME": "{tmp}/xdg"},
    {"HUGGINGFACE_HUB_CACHE": "{tmp}/legacy", "HF_HOME": "{tmp}/home"},
    {"HF_HUB_CACHE": "{tmp}/hub", "HUGGINGFACE_HUB_CACHE": "{tmp}/legacy", "HF_HOME": "{tmp}/home"},
    {"HF_HUB_CACHE": "~/elsewhere"},
]
CACHE_VARIABLES = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=[" ".join(sorted(e)) or "none" for e in ENVIRONMENTS])
def test_the_cache_folder_is_huggingface_hubs(env, tmp_path, monkeypatch):
    chosen = {name: value.replace("{tmp}", str(tmp_path)) for name, value in env.items()}
    clean = {k: v for k, v in os.environ.items() if k not in CACHE_VARIABLES}
    for name in CACHE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in chosen.items():
        monkeypatch.setenv(name, value)
    reference = subprocess.run(
        [sys.executable, "-c", "from huggingface_hub import constants; print(constants.HF_HUB_CACHE)"],
        env={**clean, **chosen}, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert hub_cache().folder == Path(reference.stdout.strip())


def test_every_revision_finds_the_file_huggingface_hub_finds(tmp_path):
    from huggingface_hub import try_to_load_from_cache

    main = add_snapshot(tmp_path, "acme/Tiny", {"config.json": {"n": 1}})
    tagged = add_snapshot(tmp_path, "acme/Tiny", {"config.json": {"n": 2}}, refs=("v2", "refs/pr/1"))
    bare = add_snapshot(tmp_path, "acme/Tiny", {"tokenizer.json": {"t": 1}}, refs=("no-config",))
    cases = [
        (None, main / "config.json"),
        ("main", main / "config.json"),
        ("v2", tagged / "config.json"),
        ("refs/pr/1", tagged / "config.json"),
        (tagged.name, tagged / "config.json"),  # a commit hash: its snapshot, no ref needed
        ("v3", None),  # not cached: never another snapshot instead
        (commit_of("unknown"), None),
        ("no-config", None),  # the snapshot is there, without a config.json
    ]
    for revision, expected in cases:
        found = find_cached(HfId("acme/Tiny", revision), cache=tmp_path)
        reference = try_to_load_from_cache("acme/Tiny", "config.json", cache_dir=tmp_path, revision=revision)
        assert found.path == expected, revision
        assert (None if not isinstance(reference, str) else Path(reference)) == expected, revision
    assert find_cached(HfId("acme/Tiny", "no-config"), cache=tmp_path).commit == bare.name
    assert find_cached(HfId("acme/Other"), cache=tmp_path).missing == "no models--acme--Other"
    v3 = find_cached(HfId("acme/Tiny", "v3"), cache=tmp_path).missing
    assert v3 == "models--acme--Tiny has no snapshot of v3 (it holds main, no-config, refs/pr/1, v2)"
    assert find_cached(HfId("acme/Tiny", "no-config"), cache=tmp_path).missing.endswith(
        "of no-config has no config.json"
    )


def test_the_printed_download_command_puts_the_config_where_it_is_looked_for(tmp_path, monkeypatch):
    """The command the error line prints, run offline (the file is put in the cache first, as the download would):
    huggingface_hub's own CLI accepts it and finds the file at the path ``find_cached`` then reads."""
    hf = Path(sys.executable).parent / "hf"
    if not hf.exists() and shutil.which("hf") is None:
        pytest.skip("huggingface_hub's `hf` command is not installed")
    hf_id = HfId("acme/Tiny", "v2")
    command = hf_id.download_command()
    assert command == "hf download acme/Tiny config.json --revision v2"
    snapshot = add_snapshot(tmp_path, "acme/Tiny", {"config.json": {"n": 2}}, refs=("v2",))
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}
    run = subprocess.run(
        [str(hf if hf.exists() else shutil.which("hf")), *command.split()[1:]], env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert str(snapshot / "config.json") in run.stdout
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert find_cached(hf_id).path == snapshot / "config.json"
