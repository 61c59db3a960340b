"""Checkpoint headers of real configs against mha's count from the config: does `mha kv FOLDER` price them exactly?

For each reference config (tests/fixtures/hf_configs) transformers builds the model on the meta device (nothing
allocated, nothing downloaded); its state dict's names, shapes and dtypes are written as a sharded safetensors
checkpoint whose files hold only their headers (the data a sparse hole: no disk used), with its index, as
save_pretrained shards them (a tied LM head left out). DeepSeek-V3 is also written in its published layout: routed
experts one by one, linear layers F8_E4M3 with an F32 ``weight_scale_inv`` per 128 x 128 block, router, norms,
embedding and head in BF16, the correction bias F32, and its MTP layer 61 (a copy of layer 60 with its own
embedding, ``enorm``, ``hnorm``, ``eh_proj`` and ``shared_head``). `mha kv FOLDER --json` then reads the headers: the
table gives the headers' total, the config's count in the same format, their difference, the kind that differs most,
the MTP bytes read but not counted, and the seconds `mha kv` took. The first DeepSeek-V3 row is the disagreement
note's case: a config whose quantization_config says fp8-block beside files transformers wrote in bf16.

Run: `python benchmarks/header_sweep.py [--only NAME ...]` (about a minute; nothing is downloaded).
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "tests" / "fixtures" / "hf_configs"
MODELS = {  # reference config -> transformers' auto class
    "llama-3.1-8b": "AutoModelForCausalLM",
    "qwen3-8b": "AutoModelForCausalLM",
    "gemma-3-4b-it": "AutoModelForImageTextToText",
    "llama-4-scout-17b-16e": "AutoModelForImageTextToText",
    "nvidia-nemotron-3-nano-30b-a3b": "AutoModelForCausalLM",
    "qwen3-next-80b-a3b": "AutoModelForCausalLM",
    "deepseek-v3": "AutoModelForCausalLM",
}
BITS = {"BF16": 16, "F16": 16, "F32": 32, "I64": 64, "BOOL": 8, "F8_E4M3": 8}
SHARDS = 4


def meta_state_dict(name: str, auto: str) -> tuple[dict, dict[str, tuple[str, list[int]]]]:
    """The config and transformers' state dict of ``name`` on the meta device, as {name: (dtype, shape)}."""
    import torch
    import transformers

    config = json.loads((CONFIGS / f"{name}.json").read_text())
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "config.json").write_text(json.dumps(config))
        built = transformers.AutoConfig.from_pretrained(folder)
    with torch.device("meta"):
        model = getattr(transformers, auto).from_config(built, dtype=torch.bfloat16)
    dtypes = {
        torch.bfloat16: "BF16",
        torch.float16: "F16",
        torch.float32: "F32",
        torch.int64: "I64",
        torch.bool: "BOOL",
    }
    tensors = {key: (dtypes[t.dtype], list(t.shape)) for key, t in model.state_dict().items()}
    text = built.get_text_config()
    if getattr(text, "tie_word_embeddings", False) or getattr(built, "tie_word_embeddings", False):
        tensors.pop("lm_head.weight", None)
    return config, tensors


def deepseek_fp8(tensors: dict[str, tuple[str, list[int]]], hidden: int, vocab: int) -> dict:
    """DeepSeek-V3's published layout of the bf16 state dict (see the module docstring)."""
    out: dict[str, tuple[str, list[int]]] = {}

    def linear(name: str, shape: list[int]) -> None:
        out[name] = ("F8_E4M3", shape)
        out[f"{name}_scale_inv"] = ("F32", [-(-shape[0] // 128), -(-shape[1] // 128)])

    for key, (dtype, shape) in tensors.items():
        for name in [key, *([key.replace("layers.60.", "layers.61.")] if ".layers.60." in key else [])]:
            if name.endswith("mlp.experts.gate_up_proj"):
                for e in range(shape[0]):
                    linear(name.replace("gate_up_proj", f"{e}.gate_proj.weight"), [shape[1] // 2, shape[2]])
                    linear(name.replace("gate_up_proj", f"{e}.up_proj.weight"), [shape[1] // 2, shape[2]])
            elif name.endswith("mlp.experts.down_proj"):
                for e in range(shape[0]):
                    linear(name.replace("down_proj", f"{e}.down_proj.weight"), shape[1:])
            elif name.endswith("e_score_correction_bias"):
                out[name] = ("F32", shape)
            elif ".layers." in name and len(shape) == 2 and "norm" not in name and not name.endswith("mlp.gate.weight"):
                linear(name, shape)
            else:
                out[name] = (dtype, shape)
    mtp = {"embed_tokens.weight": [vocab, hidden], "enorm.weight": [hidden], "hnorm.weight": [hidden],
           "shared_head.norm.weight": [hidden], "shared_head.head.weight": [vocab, hidden]}  # fmt: skip
    out |= {f"model.layers.61.{name}": ("BF16", shape) for name, shape in mtp.items()}
    linear("model.layers.61.eh_proj.weight", [hidden, 2 * hidden])
    return out


def write_checkpoint(folder: Path, config: dict, tensors: dict[str, tuple[str, list[int]]]) -> None:
    """``tensors`` as SHARDS header-only safetensors files (sparse data) and their index, beside ``config``."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    names, weight_map = sorted(tensors), {}
    for shard in range(SHARDS):
        file = f"model-{shard + 1:05d}-of-{SHARDS:05d}.safetensors"
        table, offset = {"__metadata__": {"format": "pt"}}, 0
        for name in names[shard::SHARDS]:
            dtype, shape = tensors[name]
            count = 1
            for size in shape:
                count *= size
            table[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + count * BITS[dtype] // 8]}
            offset += count * BITS[dtype] // 8
            weight_map[name] = file
        header = json.dumps(table).encode()
        with open(folder / file, "wb") as out:
            out.write(struct.pack("<Q", len(header)) + header)
            out.truncate(8 + len(header) + offset)
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))


def priced(folder: Path) -> tuple[dict, float]:
    """`mha kv FOLDER --json` and its seconds."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mha_cli", "kv", str(folder), "--json"], capture_output=True,
                          text=True, cwd=REPO, check=True)  # fmt: skip
    return json.loads(done.stdout), time.perf_counter() - start


def row(label: str, report: dict, seconds: float) -> str:
    headers = report["deployment"]["checkpoint_headers"]
    kinds = (set(headers["by_kind"]) | set(headers["config_by_kind"])) - {"mtp", "rotary"}
    gaps = {k: headers["by_kind"].get(k, 0) - headers["config_by_kind"].get(k, 0) for k in kinds}
    kind = max(gaps, key=lambda k: abs(gaps[k]))
    differs = f"{kind} {gaps[kind]:+,}" if gaps[kind] else "-"
    gap = headers["total_bytes"] - headers["config_bytes"]
    return (
        f"| {label} | {headers['format']} | {headers['files']} | {headers['tensors']:,} | {headers['total_bytes']:,}"
        f" | {headers['config_bytes']:,} | {gap:+,} ({gap / headers['config_bytes']:+.3%}) | {differs}"
        f" | {headers['by_kind'].get('mtp', 0):,} | {seconds:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=list(MODELS), help="reference configs to run")
    names = parser.parse_args().only
    print("| model | format | files | tensors | headers (B) | config's count (B) | difference | kind differing most"
          " (B) | MTP read, not counted (B) | `mha kv` s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            config, tensors = meta_state_dict(name, MODELS[name])
            folder = Path(scratch) / name
            write_checkpoint(folder, config, tensors)
            print(row(name, *priced(folder)), flush=True)
            if name == "deepseek-v3":
                fp8 = Path(scratch) / "deepseek-v3-fp8"
                write_checkpoint(fp8, config, deepseek_fp8(tensors, config["hidden_size"], config["vocab_size"]))
                print(row("deepseek-v3, its fp8 layout", *priced(fp8)), flush=True)


if __name__ == "__main__":
    main()
