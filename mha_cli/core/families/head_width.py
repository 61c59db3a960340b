"""The families whose attention takes its head width from ``hidden_size / num_attention_heads`` whatever a config's
``head_dim`` says.

Their transformers models compute the width themselves (``GPT2Attention``: ``embed_dim // num_heads``; GPT-NeoX,
Persimmon and StableLM read ``head_dim`` for the rotary embedding alone, and OLMoE's q/k norms span ``hidden_size``,
so a ``head_dim`` unlike the quotient makes the model fail, not narrow its cache (vLLM 0.16's ``olmoe.py``:
``hidden_size // total_num_heads``; review 341 #3); ``FalconConfig.head_dim`` is a property a config.json cannot set), as vLLM's
model files for them do (``hidden_size // total_num_heads``). A ``head_dim`` in such a config is named as not read
and the cache priced at the quotient (trial 340 #2: a GPT-2 config with ``head_dim: 48`` was priced at 27,648 B a
token, not GPT-2's 36,864). ``tests/test_head_width.py`` builds each in transformers with a ``head_dim`` unlike the
quotient and reads the width its cache takes. Pure data.
"""

HEAD_WIDTH_DERIVED = frozenset({
    "gpt2", "gpt-sw3", "openai-gpt", "biogpt", "bloom", "ctrl", "gpt_bigcode", "gpt_neox", "gpt_neox_japanese", "gptj",
    "gpt_neo", "codegen", "mpt", "opt", "xglm", "falcon", "persimmon", "stablelm", "modernbert-decoder", "bert",
    "bert-generation", "big_bird", "camembert", "data2vec-text", "electra", "ernie", "megatron-bert", "rembert",
    "roberta", "roberta-prelayernorm", "roformer", "xlm-roberta", "xlm-roberta-xl", "olmoe",
})  # fmt: skip
"""Family names (``Family.name``) whose head width is the quotient."""
