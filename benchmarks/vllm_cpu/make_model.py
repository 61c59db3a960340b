"""Write a tiny Llama-architecture model directory that vLLM can serve with
`--load-format dummy`: config.json, a local WordLevel tokenizer
(tokenizer.json + tokenizer_config.json + special_tokens_map.json) and
generation_config.json.  No weights, nothing downloaded.

Needs the `tokenizers` package (present in the vLLM venv).

Usage: python make_model.py OUT_DIR CONFIG_JSON
   CONFIG_JSON: the config.json dict as a JSON string (vocab_size included).

The tokenizer: vocab = ["<unk>", "<s>", "</s>"] + ["w0", ..., "w{N-4}"],
whitespace pre-tokenizer, no post-processor (so no BOS is added: a prompt of
N random-dataset tokens is exactly N tokens on the server), and the
default decoding (no decoder set: decode joins tokens with single spaces), so
decode -> encode round-trips exactly (vLLM's random dataset re-encodes its
decoded prompts).
"""

import json
import sys
from pathlib import Path


def build_tokenizer(vocab_size):
    from tokenizers import Tokenizer, models, pre_tokenizers

    specials = ["<unk>", "<s>", "</s>"]
    vocab = {tok: i for i, tok in enumerate(specials)}
    for i in range(vocab_size - len(specials)):
        vocab[f"w{i}"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    from tokenizers import AddedToken

    tok.add_special_tokens([AddedToken(s, special=True) for s in specials])
    return tok


def main(out_dir, config):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    vocab_size = int(config["vocab_size"])
    tok = build_tokenizer(vocab_size)
    assert tok.get_vocab_size() == vocab_size, tok.get_vocab_size()
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<s>",
                "eos_token": "</s>",
                "unk_token": "<unk>",
                "pad_token": "</s>",
                "add_bos_token": False,
                "add_eos_token": False,
                "clean_up_tokenization_spaces": False,
                "model_max_length": int(config.get("max_position_embeddings", 2048)),
            },
            indent=2,
        )
        + "\n"
    )
    (out / "special_tokens_map.json").write_text(
        json.dumps({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "</s>"}, indent=2)
        + "\n"
    )
    (out / "generation_config.json").write_text(
        json.dumps(
            {
                "bos_token_id": config.get("bos_token_id", 1),
                "eos_token_id": config.get("eos_token_id", 2),
                "do_sample": False,
            },
            indent=2,
        )
        + "\n"
    )
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    # Round-trip self-check, the property vLLM's random dataset relies on.
    ids = list(range(3, min(vocab_size, 200)))
    text = tok.decode(ids)
    assert tok.encode(text, add_special_tokens=False).ids == ids, "round trip"


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
