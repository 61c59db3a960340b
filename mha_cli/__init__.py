"""mha: configure transformer attention heads and price their KV cache.

Rings: ``mha_cli.core`` (pure Python, never imports torch), ``mha_cli.cli`` (typer commands),
and the torch ring (``mha_cli.nn`` and friends), imported only by the commands that need it.
"""

__version__ = "0.1.0"
