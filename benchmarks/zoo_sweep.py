"""The config zoo (tests/fixtures/hf_configs and tests/fixtures/vision, real published config.json files) at full
size: does `mha` count the weights transformers builds for each?

For each file, `mha`'s importer reads it (priced, or refused with its one line) and transformers builds the same
config's model on the meta device (nothing allocated, nothing downloaded): the class its ``architectures`` names
where transformers has it (a multimodal wrapper whole, its tower and projector included), else the causal LM of
the family `mha` read it as (Kimi-K2's remote-code ``kimi_k2`` as DeepSeek-V3, as vLLM's registry resolves it).
Each file lands in one class:

- exact: `mha`'s count equals transformers' parameters;
- different, said: not equal, and what `mha kv` prints names what it leaves out (a family's note, an ``assumed:``
  line such as a tower not counted) or transformers builds weights the checkpoint does not hold;
- different, unsaid: a silent wrong weight count;
- refused: `mha` refuses the file (the line shown);
- no reference: transformers 5.24 cannot build it (a family it does not have; the error shown), so the count rests
  on the published parameter count or the hand counts in the tests.

The KV per token of these files is checked elsewhere against hand counts (tests/test_kv_zoo.py) and, family by
family, against the cache transformers allocates (benchmarks/family_sweep.py).

Run: `python benchmarks/zoo_sweep.py [--json]` (a minute or two on two cores; nothing is downloaded).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import sys
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from weights_sweep import said_uncounted  # noqa: E402

from mha_cli.core.errors import MhaError  # noqa: E402
from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.params import count_params  # noqa: E402

ZOO = (REPO / "tests" / "fixtures" / "hf_configs", REPO / "tests" / "fixtures" / "vision")
BOOKKEEPING = ("auto_map", "quantization_config", "architectures", "model_type", "transformers_version")
"""Fields not handed to the config class: remote code, the weights' format (not their count), bookkeeping."""
_MINIMAX_KINDS = {0: "linear_attention", 1: "full_attention"}
_KIMI_VISION_NAMES = {
    "vt_hidden_size": "hidden_size", "vt_num_hidden_layers": "num_hidden_layers",
    "vt_num_attention_heads": "num_attention_heads", "vt_intermediate_size": "intermediate_size",
    "init_pos_emb_height": "pos_emb_height", "init_pos_emb_width": "pos_emb_width", "init_pos_emb_time": "pos_emb_time",
    "patch_size": "patch_size", "merge_kernel_size": "merge_kernel_size",
}  # fmt: skip
"""The hub's Kimi-K2.5 vision_config fields, as transformers' ``Kimi_K25VisionConfig`` names them."""


def _kimi_k25(config: dict) -> dict:
    """Kimi-K2.5's hub config as transformers 5.25 builds it (``Kimi_K25ForConditionalGeneration``)."""
    vision = {
        _KIMI_VISION_NAMES[key]: value for key, value in config["vision_config"].items() if key in _KIMI_VISION_NAMES
    }
    return {**config, "architectures": ["Kimi_K25ForConditionalGeneration"], "vision_config": vision}


REFERENCE_SPELLINGS = {
    # MiniMax-Text-01's remote-code config lists its layers as attn_type_list (0 lightning, 1 softmax); transformers'
    # MiniMaxConfig reads layer_types and, without it, alternates the two kinds
    "minimax-text-01": lambda c: {**c, "layer_types": [_MINIMAX_KINDS[flag] for flag in c["attn_type_list"]]},
    # xLSTM-7B names a Triton kernel transformers 5.24's config class does not list; the kernel holds no weights
    "xlstm-7b": lambda c: {key: value for key, value in c.items() if key != "chunkwise_kernel"},
    # Kimi-K2.5's remote-code wrapper (KimiK25ForConditionalGeneration) is transformers 5.25's
    # Kimi_K25ForConditionalGeneration, its MoonViT fields spelled vt_* and init_pos_emb_* in the hub's file
    "kimi-k2.5": lambda c: _kimi_k25(c),
    "kimi-k2.6-nvfp4": lambda c: _kimi_k25(c),  # NVIDIA's NVFP4 of the same wrapper
    # Mistral Small 3.2: transformers 5.25's Mistral3Config ties the output head when the outer config names no
    # tie_word_embeddings (its default True); vLLM builds the text config's MistralForCausalLM untied (MistralConfig's
    # False) and the checkpoint stores lm_head: the model as served
    "mistral-small-3.2-24b-instruct": lambda c: {**c, "tie_word_embeddings": False},
}
"""The same model in the spelling transformers' config class reads, for the files written for other code."""


@dataclass(frozen=True)
class Row:
    name: str
    verdict: str
    reference: int | None = None
    counted: int | None = None
    detail: str = ""


def zoo_files() -> list[Path]:
    return sorted(path for folder in ZOO for path in folder.glob("*.json"))


def _transformers_weights(config: dict, model_type: str) -> tuple[int, str]:
    """(parameters, the class built) of transformers' model for ``config`` on the meta device; a wrapper whose towers
    need a library not installed (Gemma-3n's timm), its text model's causal LM."""
    try:
        return _built_weights(config, model_type)
    except ImportError:
        if not isinstance(config.get("text_config"), dict):
            raise
        text = config["text_config"]
        return _built_weights({**text, "architectures": None}, text["model_type"])


def _built_weights(config: dict, model_type: str) -> tuple[int, str]:
    import torch
    import transformers

    fields = {key: value for key, value in copy.deepcopy(config).items() if key not in BOOKKEEPING}
    architecture = next(iter(config.get("architectures") or []), None)
    model_class = getattr(transformers, architecture, None) if architecture else None
    written = config.get("model_type")
    config_type = written if model_class is not None and written in transformers.CONFIG_MAPPING else model_type
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()), torch.device("meta"):
        warnings.simplefilter("ignore")
        hf_config = transformers.AutoConfig.for_model(config_type, **fields)
        if model_class is None or written not in transformers.CONFIG_MAPPING:
            model = transformers.AutoModelForCausalLM.from_config(hf_config)
        else:
            model = model_class(hf_config)
    return sum(p.numel() for p in model.parameters()), type(model).__name__


def sweep_one(path: Path) -> Row:
    config = json.loads(path.read_text())
    try:
        imported = import_hf_config(copy.deepcopy(config), name=path.stem, origin=path.name)
    except MhaError as exc:
        return Row(path.stem, "refused", detail=exc.message[:200])
    counted = count_params(imported.model).total
    respelled = REFERENCE_SPELLINGS.get(path.stem, lambda c: c)(config)
    try:
        reference, built = _transformers_weights(respelled, imported.model_type)
    except Exception as exc:  # transformers has no such family, or cannot build the file
        return Row(path.stem, "no reference", None, counted, f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}")
    if counted == reference:
        return Row(path.stem, "exact", reference, counted, built)
    gap = f"{counted - reference:+,} ({(counted - reference) / reference:+.3%})"
    said = said_uncounted(imported)
    if said is not None:
        return Row(path.stem, "different, said", reference, counted, f"{gap}: {said[:110]}")
    return Row(path.stem, "different, unsaid", reference, counted, f"{gap} ({built})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="rows as JSON")
    args = parser.parse_args(argv)
    rows = [sweep_one(path) for path in zoo_files()]
    if args.json:
        print(json.dumps([asdict(row) for row in rows], indent=2))
    else:
        for row in rows:
            reference = "" if row.reference is None else f"{row.reference:,}"
            counted = "" if row.counted is None else f"{row.counted:,}"
            print(f"{row.name:34} {row.verdict:18} {reference:>17} {counted:>17}  {row.detail}")
        tally: dict[str, int] = {}
        for row in rows:
            tally[row.verdict] = tally.get(row.verdict, 0) + 1
        print(f"{len(rows)} configs: " + ", ".join(f"{count} {verdict}" for verdict, count in sorted(tally.items())))
    return 1 if any(row.verdict == "different, unsaid" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
