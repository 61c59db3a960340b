"""The torch commands (verify, probe, bench, experiment) refuse bad input before importing torch: one line, exit 2.

Each case runs ``mha`` in a fresh interpreter and reports whether ``torch`` was imported by the time it exited:
torch's import takes seconds, so a refusal that waits for it is slow. stderr must be exactly the one error line
(no blank line from a progress display, with or without --json).
"""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from rich.console import Console

PROBE = """\
import sys
from mha_cli.cli.app import main
sys.argv = ["mha", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
print("torch" in sys.modules, code)
"""

CONFIG = """\
schema_version: 1
model: {name: tiny, d_model: 64, n_layers: 2, n_heads: 8, n_kv_heads: 2, vocab_size: 1000, d_ff: 256}
deployment: {seq_len: 64, batch: 1, kv_dtype: bf16}
"""


def run_mha(*args: str) -> tuple[bool, int, list[str]]:
    """(torch imported?, exit code, stderr lines) of ``mha ARGS`` in a new interpreter."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60)
    imported, code = done.stdout.split()
    return imported == "True", int(code), done.stderr.splitlines()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["verify", "{config}", "--kv-dtype", "fp8"], "kv_dtype fp8 is priced by `mha kv` but not built in torch"),
        (
            ["verify", "{config}", "--layers", "99", "--json"],
            "--layers (99) must be between 1 and the model's 2 layers",
        ),
        (["verify", "{config}", "--tp", "3"], "n_heads (8) must be divisible by tp (3)"),
        (["verify", "{config}", "--device", "gpu"], "unknown device 'gpu': use auto, cuda, cuda:N or cpu"),
        (["verify", "missing.yaml", "--json"], "'missing.yaml' is neither a preset nor a file"),
        (["verify", "{config}", "--hook", "--hook-layers", "99"], "--hook-layers must be between 2 and"),
        (["verify", "{config}", "--hook-layers", "3"], "--hook-layers applies to the induction hook only"),
        (["probe", "a b", "--heads", "3"], "--d-model (64) must be a multiple of --heads (3)"),
        (["probe", "a", "--json"], "the sentence has 1 token"),
        (["probe", "a b", "--out", "{png}"], "exists: pass --force to overwrite it"),
        (["bench", "--kv-heads", "3"], "--kv-heads (3) must divide --heads (16)"),
        (["bench", "--heads", "2", "--d-model", "128"], "--heads 2 has no KV-head count that divides it"),  # 362 #3
        (["bench", "--dtype", "int8"], "--dtype int8 is priced by `mha kv` but not built in torch"),
        (["experiment", "mqa", "--device", "tpu"], "unknown device 'tpu'"),
        (["experiment", "heads", "--out-dir", "{config}"], "is a file, not a folder: pass a folder"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_bad_input_is_one_line_before_torch_is_imported(args, message, tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG)
    png = tmp_path / "exists.png"
    png.write_bytes(b"")
    imported, code, stderr = run_mha(*(arg.format(config=config, png=png) for arg in args))
    assert (imported, code) == (False, 2), stderr
    assert len(stderr) == 1 and stderr[0].startswith("error: ") and message in stderr[0], stderr


def test_verify_shows_a_progress_line_while_torch_imports(monkeypatch):
    """On a terminal the first stage is the torch import; on a pipe or file nothing is drawn (stderr stays clean)."""
    from mha_cli.cli import progress

    screen = io.StringIO()
    monkeypatch.setattr(progress, "stderr_console", lambda: Console(file=screen, force_terminal=True, width=80))
    with progress.stage_progress("verify", ("importing torch", "plan")) as on_stage:
        on_stage("importing torch")
    assert "verify: importing torch" in screen.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(progress, "stderr_console", lambda: Console(file=piped, force_terminal=False))
    with progress.stage_progress("verify", ("importing torch", "plan")) as on_stage:
        on_stage("importing torch")
    assert piped.getvalue() == ""


def test_tp_on_the_command_line_replaces_the_configs_target_split(tmp_path):
    """A design written for one a100 can be verified at --tp N: the target no longer decides the split, so the
    only refusal left for --tp 3 is the model's own (8 heads), not 'tp must divide the target's 1 device'."""
    config = tmp_path / "for-one-a100.yaml"
    config.write_text(CONFIG.replace("kv_dtype: bf16}", "kv_dtype: bf16, target: a100}"))
    imported, code, stderr = run_mha("verify", str(config), "--tp", "3")
    assert (imported, code) == (False, 2) and "n_heads (8) must be divisible by tp (3)" in stderr[0], stderr


def test_for_local_ranks_drops_only_the_split():
    from mha_cli.core.deployment import for_local_ranks
    from mha_cli.core.schemas import DeploymentSpec

    base = DeploymentSpec(target="8xh100", tp=8, seq_len=4096, batch=3)
    assert for_local_ranks(base, None) is base
    local = for_local_ranks(base, 2)
    assert (local.target, local.tp, local.seq_len, local.batch) == (None, None, 4096, 3)
