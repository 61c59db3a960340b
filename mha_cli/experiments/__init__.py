"""The lesson's experiments as reproducible runs (torch ring; imported only by ``mha experiment``).

- ``heads``: one-layer attention on a gather task (4 lookups at once), n_heads swept at fixed d_model, 3 seeds.
- ``mqa``: MHA vs GQA vs MQA, parameters of the instantiated model and the KV cache, computed and measured.
- ``mla``: a tiny MLA language model on Python's own docs, the latent rank swept against an MHA baseline.

Each writes a markdown report (exact command and environment at the top), a PNG plot and a JSON
file of its result model into one output folder.
"""
