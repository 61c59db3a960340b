"""Which spelling of an option the user typed (``--kv-cache-dtype`` or ``--kv-dtype``), so that an error about its
value names the option as it was written. click keeps only the option's destination, not the spelling."""

from __future__ import annotations

from typing import Any

META_KEY = "mha.typed_spellings"
"""The context's ``meta`` entry: option destination -> the spelling typed last."""


def record_typed_spellings() -> None:
    """Patch the option parser typer runs (its vendored click's ``_OptionParser._match_long_opt``, typer 0.2x;
    click's own ``OptionParser`` before it: no patch where neither is found) to note each long option's spelling
    in its context's ``meta``."""
    try:  # typer 0.2x runs its own copy of click; earlier typers run click itself
        from typer._click import parser
    except ImportError:
        from click import parser

    parser_class = getattr(parser, "_OptionParser", None) or getattr(parser, "OptionParser", None)
    match = getattr(parser_class, "_match_long_opt", None)
    if match is None or getattr(match, "records_spellings", False):
        return

    def match_long_opt(self: Any, opt: str, explicit_value: str | None, state: Any) -> None:
        option = self._long_opt.get(opt)
        if option is not None and self.ctx is not None:
            self.ctx.meta.setdefault(META_KEY, {})[option.dest] = opt
        state.mha_spelling = opt  # the spelling the option's value is processed under (``cli.repeated_options``)
        match(self, opt, explicit_value, state)

    match_long_opt.records_spellings = True  # type: ignore[attr-defined]
    parser_class._match_long_opt = match_long_opt  # type: ignore[union-attr]


def typed_spelling(ctx: Any, param: Any) -> str:
    """The spelling of ``param`` the user typed; every spelling (``--kv-dtype/--kv-cache-dtype``) when none was noted
    (the value came from elsewhere, or the parser was not patched)."""
    typed = ctx.meta.get(META_KEY, {}).get(param.name) if ctx is not None else None
    return typed or "/".join(param.opts)


def spellings_typed() -> dict[str, str]:
    """Each option's destination -> the spelling typed, in the command running now (empty outside one)."""
    try:  # typer 0.2x keeps its own copy of click's context stack, as ``record_typed_spellings`` patches its parser
        from typer._click.globals import get_current_context
    except ImportError:
        from click import get_current_context

    ctx = get_current_context(silent=True)
    return dict(ctx.meta.get(META_KEY, {})) if ctx is not None else {}
