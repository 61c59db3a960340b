"""The engine's share of device memory typed under one engine's own name: SGLang's ``--mem-fraction-static``,
TensorRT-LLM's ``--free-gpu-memory-fraction``, vLLM's ``--gpu-memory-utilization``. They are one mha option, but the
three engines read them differently (vLLM's budget holds activations and CUDA graphs; SGLang keeps them outside its
fraction; TensorRT-LLM takes a fraction of the memory left free after loading), so the name typed picks the engine
where ``--engine`` is absent, and one that names another engine than ``--engine``'s is refused (trial 390 #3: an
SGLang user's 0.85 was priced as vLLM's). Pure Python."""

from __future__ import annotations

from mha_cli.core.errors import BadInputError

OWN_SPELLING = {
    "vllm": "--gpu-memory-utilization",
    "sglang": "--mem-fraction-static",
    "trtllm": "--free-gpu-memory-fraction",
}
"""Each engine's own name for its share of device memory."""
ENGINE_OF_SPELLING = {spelling: engine for engine, spelling in OWN_SPELLING.items()}


class EngineShare(float):
    """A share of device memory typed under an engine's own spelling (``OWN_SPELLING``)."""

    spelling: str

    def __new__(cls, value: float, spelling: str) -> EngineShare:
        made = super().__new__(cls, value)
        made.spelling = spelling
        return made

    @property
    def engine(self) -> str:
        """The engine whose name was typed."""
        return ENGINE_OF_SPELLING[self.spelling]


def share_engine(share: float | None, engine: str | None) -> str | None:
    """The engine a plan prices given ``engine`` (the one named by ``--engine`` or a config file; None: none named)
    and the share typed: the share's engine where none is named and its spelling is not vLLM's (the default);
    ``engine`` otherwise. A share under another engine's name than ``engine`` is refused (BadInputError)."""
    if not isinstance(share, EngineShare):
        return engine
    if engine is None:
        return None if share.engine == "vllm" else share.engine
    if engine != share.engine and share.engine != "vllm":  # vLLM's name is mha's own: every engine's share
        raise BadInputError(
            f"{share.spelling} is {share.engine}'s share of memory, which {engine} reads otherwise: give"
            f" {OWN_SPELLING[engine]} for {engine}, or --engine {share.engine}"
        )
    return engine


def engine_with_share(engine: str | None, share: float | None) -> str | None:
    """``--engine`` as typed (``sglang@0.5.9``), or where none was typed the engine the share's spelling names, for a
    command that reads no config file's engine (``recommend``, ``calibrate --from``: review 391 #6, #7); refused as
    ``share_engine`` refuses."""
    if not isinstance(share, EngineShare):
        return engine
    from mha_cli.core.engine.generations import generation_of

    picked = share_engine(share, None if engine is None else generation_of(engine).engine)
    return engine if engine is not None else picked
