def test_a_float16_preset_is_priced_as_its_config_json():
    """meta-llama/Llama-2-7b-hf's config.json names float16: the file was priced fp16 and the preset bf16, with a bf16
    warning on a V100 the file did not get (trial 270 #1). Both fp16 now, the same bytes."""
    from mha_cli.core.sources import load_source
    from tests.conftest import reference_hf_config

    preset, file = load_source("llama-2-7b"), load_source(str(reference_hf_config("llama-2-7b")))
    assert (preset.deployment.weight_dtype, preset.deployment.kv_dtype) == ("fp16", "fp16")
    assert (file.deployment.weight_dtype, file.deployment.kv_dtype) == ("fp16", "fp16")
    assert load_source("llama-2-13b").deployment is None or load_source("llama-2-13b").deployment.weight_dtype == "bf16"


def test_the_presets_table_shows_a_chunked_models_chunks(cli):
    """Trial 333 #6: llama-4-scout showed window "-", though 36 of its 48 layers cache one 8,192-token chunk
    (`mha kv` said so); a sliding-window model keeps its own cell (gemma-3-27b: 52 of 62 layers at 1,024)."""
    from mha_cli.cli.app import app

    shown = cli.runner.invoke(app, ["presets"], env={"COLUMNS": "250"}).stdout
    rows = {line.split()[0]: line for line in shown.splitlines() if line.strip()}
    assert "8,192 chunk (36/48)" in rows["llama-4-scout"]
    assert "1,024 (52/62)" in rows["gemma-3-27b"] and "chunk" not in rows["gemma-3-27b"]


def test_a_narrow_terminal_loses_columns_not_digits():
    """Trial 406 #12: at 60 columns the table cut its figures ("36,8…", "524,…"): a terminal too narrow for every
    column leaves out whole columns (window, state, layers, params, then variant) and says which; the bytes a token of every preset stay whole. The
    control: a wide terminal keeps them all. (One process a width: the console keeps the first width it reads.)"""
    import os
    import subprocess
    import sys

    def shown(width: int) -> str:
        env = {**os.environ, "COLUMNS": str(width)}
        run = subprocess.run([sys.executable, "-m", "mha_cli", "presets"], capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stderr
        return run.stdout

    for width, lost in (
        (40, "window, state, layers, params, variant"),
        (50, "window, state, layers, params"),
        (60, "window, state, layers"),
        (80, None),
    ):
        printed = shown(width)
        assert "…" not in printed and " 36,864" in printed and " 524,288" in printed
        said = " ".join(printed.split())
        assert f"d_model, head_dim{', ' + lost if lost else ''}: `mha presets --json` or a wider terminal" in said
    wide = " ".join(shown(250).split())
    assert "or a wider terminal" not in wide and "head_dim" in wide
    assert "so do 16 ids without a preset, and their short names (glm-5.1), from the published config.json" in wide
