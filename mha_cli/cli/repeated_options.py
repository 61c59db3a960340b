"""One option given twice with two different values (``--max-model-len 131072 --seq 4096``, aliases of one option)
is refused: click keeps the last silently, and a reader of the command line cannot tell which one was priced. The
same value twice is accepted."""

from __future__ import annotations

from typing import Any


def refuse_repeated_options() -> None:
    """Patch the option parser typer runs (its vendored click, ``typer._click.parser._Option.process``, typer 0.2x;
    click's own ``click.parser.Option`` before it: no patch where neither is found)
    so that a single-valued option or flag set twice to different values is a usage error: one line, exit 2
    (``mha_cli.cli.app.main``)."""
    try:  # typer 0.2x runs its own copy of click; earlier typers run click itself
        from typer._click import parser
        from typer._click.exceptions import BadOptionUsage
    except ImportError:
        from click import parser
        from click.exceptions import BadOptionUsage

    option_class = getattr(parser, "_Option", None) or getattr(parser, "Option", None)
    if option_class is None or getattr(option_class.process, "refuses_repeats", False):
        return
    store = option_class.process

    def process(self: Any, value: Any, state: Any) -> None:
        if self.action in ("store", "store_const") and self.dest in state.opts:
            before = state.opts[self.dest]
            now = value if self.action == "store" else self.const
            if before != now:
                option = self.obj  # the command's option: every spelling of it, a flag's --no- form too
                names = "/".join([*option.opts, *option.secondary_opts])
                raise BadOptionUsage(
                    self.dest,
                    f"{names} given twice with different values ({_shown(before)}, then {_shown(now)}): give it once",
                )
        store(self, value, state)

    process.refuses_repeats = True  # type: ignore[attr-defined]
    option_class.process = process


def _shown(value: Any) -> str:
    """A value as typed: text as it is, a flag's constant as on or off."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
