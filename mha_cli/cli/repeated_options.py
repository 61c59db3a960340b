"""One option given twice with two different values (``--max-model-len 131072 --seq 4096``, aliases of one option)
is refused: click keeps the last silently, and a reader of the command line cannot tell which one was priced. The
same value twice is accepted. Values are compared as their spellings read them: ``--seq 8k`` is 8,192 tokens and
``--max-model-len 8k`` 8,000, as vLLM reads it, so the two differ, where ``--seq 8192 --max-model-len 8K`` is one
value twice (trial 304 #2: the text was compared, and the last spelling decided the unit)."""

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
        spelling = getattr(state, "mha_spelling", None)  # noted by ``cli.typed_spellings`` (long options)
        spellings = state.__dict__.setdefault("mha_spellings", {})  # destination -> the spelling its value came under
        if self.action in ("store", "store_const") and self.dest in state.opts:
            before = state.opts[self.dest]
            now = value if self.action == "store" else self.const
            was = _meaning(spellings.get(self.dest), before)
            kept = _attention_ranks(spellings.get(self.dest), before, spelling, now)
            if kept is not None:  # SGLang's --dp-size 1 beside --attn-dp-size N: one value, N
                spellings[self.dest], ranks = kept
                store(self, ranks, state)
                return
            if was != _meaning(spelling, now):
                option = self.obj  # the command's option: every spelling of it, a flag's --no- form too
                names = "/".join([*option.opts, *option.secondary_opts])
                raise BadOptionUsage(
                    self.dest,
                    f"{names} given twice with different values ({_shown(spellings.get(self.dest), before)}, then"
                    f" {_shown(spelling, now)}): give it once",
                )
        spellings[self.dest] = spelling
        store(self, value, state)

    process.refuses_repeats = True  # type: ignore[attr-defined]
    option_class.process = process


def _attention_ranks(
    first_spelling: str | None, first: Any, spelling: str | None, value: Any
) -> tuple[str | None, Any] | None:
    """(the spelling kept, the DP-attention ranks) where SGLang's ``--dp-size 1`` (its router's replicas: one server)
    is given beside another spelling of N ranks (``--attn-dp-size N``, as SGLang 0.5.22+'s launch line writes them),
    in either order (trial 390 #2: refused as one option given twice; review 391 #9: whichever came first); None
    otherwise."""
    if first_spelling == "--dp-size" and str(first).strip() == "1" and spelling != "--dp-size":
        return spelling, value
    if spelling == "--dp-size" and str(value).strip() == "1" and first_spelling not in (None, "--dp-size"):
        return first_spelling, first
    return None


def _meaning(spelling: str | None, value: Any) -> Any:
    """``value`` as the option's ``spelling`` reads it where two spellings read text differently: ``--seq``'s token
    count (``8k`` = 8,192) and ``--max-model-len``'s vLLM integer (``8k`` = 8,000; ``auto`` and -1 alike); else, or
    where it does not parse (refused later, in the option's own words), the text."""
    from mha_cli.core.errors import MhaError
    from mha_cli.core.quantities import parse_token_count, parse_vllm_int

    if not isinstance(value, str) or spelling not in ("--seq", "--max-model-len"):
        return value
    try:
        if spelling == "--seq":
            return parse_token_count(value)
        return "vLLM's derived length" if value.strip().lower() in ("auto", "-1") else parse_vllm_int(value)
    except MhaError:
        return (spelling, value)  # unread: equal to nothing another spelling reads (--seq auto is no -1)


def _shown(spelling: str | None, value: Any) -> str:
    """A value as typed (a flag's constant as on or off), with what its spelling reads it as where that is another
    number (``8k = 8,192``)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    meaning = _meaning(spelling, value)
    return f"{value} = {meaning:,}" if isinstance(meaning, int) and str(meaning) != str(value) else str(value)
