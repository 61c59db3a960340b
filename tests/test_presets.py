def test_a_float16_preset_is_priced_as_its_config_json():
    """meta-llama/Llama-2-7b-hf's config.json names float16: the file was priced fp16 and the preset bf16, with a bf16
    warning on a V100 the file did not get (trial 270 #1). Both fp16 now, the same bytes."""
    from mha_cli.core.sources import load_source
    from tests.conftest import reference_hf_config

    preset, file = load_source("llama-2-7b"), load_source(str(reference_hf_config("llama-2-7b")))
    assert (preset.deployment.weight_dtype, preset.deployment.kv_dtype) == ("fp16", "fp16")
    assert (file.deployment.weight_dtype, file.deployment.kv_dtype) == ("fp16", "fp16")
    assert load_source("llama-2-13b").deployment is None or load_source("llama-2-13b").deployment.weight_dtype == "bf16"
