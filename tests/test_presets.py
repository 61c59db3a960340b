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
