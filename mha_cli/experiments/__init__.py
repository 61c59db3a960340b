"""The lesson's experiments as reproducible runs (torch ring; imported only by ``mha experiment``).

- ``heads``: one-layer attention on a gather task (4 lookups at once), n_heads swept at fixed d_model, 3 seeds.
- ``mqa``: MHA vs GQA vs MQA, parameters of the instantiated model and the KV cache, computed and measured,
  against a calculator that ignores GQA (the control that must lose).
- ``mla``: a byte-level MLA language model on Python's own docs, the latent rank swept against an MHA
  baseline, the no-attention control and count-based n-gram floors, three seeds.

Shared parts: ``lm`` (the decoder of ``mha_cli.nn`` and its no-attention control), ``train``, ``data``,
``ngram`` (Kneser-Ney floors), ``seeds`` (spread, and when a difference is called), ``jobs`` (worker
processes). Each experiment writes a markdown report (exact command and environment at the top), a PNG
plot and a JSON file of its result model into one output folder.
"""
