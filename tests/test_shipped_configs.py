"""Today's models named by their Hugging Face id, offline: where the id is neither cached nor a preset's, the
published config.json mha ships for it is read and said (``core.shipped_configs``; trial 407 #8: GLM, Gemma 4 and
others were refused). The files are the tests' own references, byte for byte."""

from __future__ import annotations

from mha_cli.core.shipped_configs import SHIPPED, shipped_config
from tests.conftest import HF_FIXTURES
from tests.hf_cache_fixture import add_snapshot
from tests.test_model_names import config, hub, one_line_error  # noqa: F401  (hub: a fixture)

GLM_51_BF16 = 78 * (512 + 64) * 2 + 78 * (128 + 4)
"""GLM-5.1 (GlmMoeDsa): 78 MLA layers of a 512-wide latent and a 64-wide rotary key in bf16, and DeepSeek-V3.2's
indexer key a layer (128 fp8 values and an fp32 scale): 100,152 B/token."""
QWEN36_27B_BF16 = 16 * 2 * 4 * 256 * 2
"""Qwen3.6-27B: 64 layers, a full-attention one every 4 (16), 4 KV heads of 256; its Gated DeltaNet layers hold a
fixed state, no tokens: 65,536 B/token."""


def test_every_shipped_file_is_a_test_reference_with_its_source_written_down():
    sources = (HF_FIXTURES / "SOURCES.md").read_text()
    for repo, entry in SHIPPED.items():
        path, _ = shipped_config(repo)
        assert path.read_bytes() == (HF_FIXTURES / entry.file).read_bytes(), repo
        assert f"| {entry.file} | " in sources, entry.file


def test_an_id_neither_cached_nor_a_preset_s_reads_the_shipped_config(cli, hub):  # noqa: F811
    glm = cli.json("kv", "zai-org/GLM-5.1")
    assert glm["source_kind"] == "hf-shipped" and glm["bytes_per_token"] == GLM_51_BF16
    assert glm["assumptions"][0] == (
        f"zai-org/GLM-5.1 is not in the Hugging Face cache (no models--zai-org--GLM-5.1 in {hub}): priced from the"
        " published config.json mha ships (mha_cli/data/hf_configs/glm-5.1.json, from a model report quoting the"
        " checkpoint's config.json whole, the same as ai-dynamo/aiconfigurator's model_configs)"
    )
    assert cli.json("kv", "qwen/qwen3.6-27b")["bytes_per_token"] == QWEN36_27B_BF16  # any case, as the hub
    planned = cli.json("plan", "zai-org/GLM-5.1", "--target", "2x8xh200", "--tp", "8", "--pp", "2", "--closed-form")
    assert planned["notes"][0] == glm["assumptions"][0]  # plan prints no source line: its notes say it


def test_a_cached_config_or_a_revision_is_not_answered_by_the_shipped_file(cli, hub):  # noqa: F811
    """The cache is read first (a fine-tune under the same id), and an id at a revision names another file than the
    one shipped: refused, as any id not cached. The control: an id nothing lists is refused too."""
    half = config("qwen3-8b", num_hidden_layers=18)
    add_snapshot(hub, "Qwen/Qwen3-14B", {"config.json": half})
    assert cli.json("kv", "Qwen/Qwen3-14B")["source_kind"] == "hf-cache"
    assert "is not in the Hugging Face cache" in one_line_error(cli.run("kv", "zai-org/GLM-5@v2"))
    assert "is not in the Hugging Face cache" in one_line_error(cli.run("kv", "zai-org/GLM-6"))


def test_a_shipped_id_answers_to_its_short_name_and_at_main(cli, hub):  # noqa: F811
    """Review 409 #6, #12: `kv glm-5.1` was refused with "run `mha presets`" and `zai-org/GLM-5.1@main` (the default
    revision) as not cached; both read the shipped file now, said as the id's."""
    short, at_main = cli.json("kv", "glm-5.1"), cli.json("kv", "zai-org/GLM-5.1@main")
    assert short["source_kind"] == at_main["source_kind"] == "hf-shipped"
    assert short["bytes_per_token"] == at_main["bytes_per_token"] == GLM_51_BF16
