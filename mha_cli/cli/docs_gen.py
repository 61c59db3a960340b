"""The generated blocks of ``docs/``: each command's options, ``check``'s JSON keys, the support tables.

``python -m mha_cli.cli.docs_gen`` rewrites every block in place (the prose around it stays);
``python -m mha_cli.cli.docs_gen --check`` exits 1 naming each stale block, as ``tests/test_docs.py`` does. An
options table is read from the command's own parameters (names, type, default, help), so a new option or a changed
help that was not regenerated fails the test. No command imports this module: the app is introspected, never run,
and torch is not imported.
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mha_cli.core.markdown import cell, markdown_table, read_block, replace_block
from mha_cli.core.schema_export import attribute_docstrings
from mha_cli.core.skill_doc import REPO_ROOT

REGENERATE = "python -m mha_cli.cli.docs_gen"
"""The command that rewrites the blocks (what a stale block's message tells the reader to run)."""
DOCS = Path("docs")
SUPPORTED_PAGE = DOCS / "supported.md"

Block = tuple[Path, str]
"""A generated block: the page (relative to the repository) and the block's name in it."""


def command_tree() -> Any:
    """The click command of the whole ``mha`` app, every command registered (introspected only)."""
    import typer.main

    from mha_cli.cli.app import build_app

    return typer.main.get_command(build_app())


def command_page(name: str) -> Path:
    return DOCS / "commands" / f"{name}.md"


def _leaves(command: Any, words: list[str]) -> list[tuple[list[str], Any]]:
    """(words, command) for ``command`` or, for a group (``mha experiment``), each of its sub-commands."""
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        return [(words, command)]
    return [leaf for name in sorted(subcommands) for leaf in _leaves(subcommands[name], [*words, name])]


def _annotations(command: Any) -> dict[str, Any]:
    """The command function's parameter types (Annotated and None stripped by the readers below)."""
    return typing.get_type_hints(inspect.unwrap(command.callback))


def _without_none(annotation: Any) -> Any:
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    is_union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return args[0] if is_union and len(args) == 1 else annotation


def option_type(annotation: Any, is_flag: bool) -> str:
    """What an option takes, in words: ``flag``, ``integer``, ``number``, ``text``, ``path``, ``path, repeatable``."""
    if is_flag:
        return "flag"
    annotation = _without_none(annotation)
    if typing.get_origin(annotation) is list:
        return f"{option_type(typing.get_args(annotation)[0], False)}, repeatable"
    if typing.get_origin(annotation) is typing.Literal:
        return " \\| ".join(str(choice) for choice in typing.get_args(annotation))
    names = {int: "integer", float: "number", str: "text", bool: "true/false", Path: "path"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def option_default(param: Any) -> str:
    """The default as a reader needs it: ``required``, ``off`` for a flag, ``-`` when unset (the help says what
    applies), a path inside the repository relative to it."""
    default = param.default
    if param.required:
        return "required"
    if getattr(param, "is_flag", False):
        return "-" if default is None else "on" if default else "off"  # None: an on/off pair left to its help
    if default is None or default == () or default == []:
        return "-"
    if isinstance(default, Path):
        return f"`{default.relative_to(REPO_ROOT).as_posix() if default.is_relative_to(REPO_ROOT) else default}`"
    if isinstance(default, float):
        return f"`{default:g}`"
    return f"`{default}`"


def options_table(words: list[str], command: Any) -> str:
    """One command's usage line, its help and a table of its arguments and options."""
    hints = _annotations(command)
    rows, usage = [], ["mha", *words]
    for param in command.params:
        if param.param_type_name == "argument":
            shown = param.name.upper()
            usage.append(shown if param.required else f"[{shown}]")
            names = f"`{shown}` (argument)"
        else:
            names = ", ".join(f"`{opt}`" for opt in [*param.opts, *param.secondary_opts])
        kind = option_type(hints[param.name], getattr(param, "is_flag", False))
        rows.append([names, kind, option_default(param), cell(getattr(param, "help", None) or "")])
    summary = cell((command.help or "").split("\n\n")[0])
    table = markdown_table(["option", "takes", "default", "meaning"], rows)
    return f"`{' '.join(usage)} [OPTIONS]`: {summary}\n\n{table}"


def options_block(name: str, command: Any) -> str:
    """The options block of ``docs/commands/NAME.md``: one table, or one per sub-command of a group."""
    leaves = _leaves(command, [name])
    if len(leaves) == 1:
        return options_table(*leaves[0])
    return "\n".join(f"#### `mha {' '.join(words)}`\n\n{options_table(words, leaf)}" for words, leaf in leaves)


def attribute_docs(model: type) -> dict[str, str]:
    """Each field's docstring in ``model``'s source, on one line (a table cell)."""
    return {field: " ".join(doc.split()) for field, doc in attribute_docstrings(model).items()}


def json_type(annotation: Any) -> str:
    """A field's type as it reads in JSON: ``string``, ``integer``, ``array of Finding``, ``object (ModelSpec)``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(json_type(arg) for arg in args)
    if origin is list:
        return f"array of {json_type(args[0])}"
    if origin is dict:
        return "object"
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{choice}`" for choice in args)
    names = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
    if annotation in names:
        return names[annotation]
    return f"object ({annotation.__name__})"


def json_keys_table(model: Any) -> str:
    """The keys of ``model``'s JSON, its fields then its computed fields, each with its type and docstring.

    A key without a docstring is refused: a new key is documented where it is defined, or the docs fail."""
    docs = attribute_docs(model)
    rows = []
    for name, field in model.model_fields.items():
        if name not in docs:
            raise ValueError(f"{model.__name__}.{name} has no docstring: write one under the field")
        rows.append([f"`{name}`", json_type(field.annotation), cell(docs[name].replace("``", "`"))])
    for name, field in model.model_computed_fields.items():
        returns = typing.get_type_hints(field.wrapped_property.fget)["return"]
        rows.append([f"`{name}`", json_type(returns), cell((field.description or "").replace("``", "`"))])
    return markdown_table(["key", "type", "meaning"], rows)


def check_json_block() -> str:
    from mha_cli.core.check import CheckResult
    from mha_cli.core.rules.engine import Finding

    return "Top level:\n\n" + json_keys_table(CheckResult) + "\nEach of `findings`:\n\n" + json_keys_table(Finding)


def hard_rules_block() -> str:
    """The hard rules ``mha check`` applies (a finding of one fails the check), from the rules catalog."""
    from mha_cli.core.rules import RULES

    rows = [
        [f"`{rule.id}`", f"`{rule.name}`", cell(rule.condition), cell(rule.action)]
        for rule in RULES
        if rule.severity == "hard" and rule.scope in ("check", "both")
    ]
    return markdown_table(["rule", "name", "applies when", "what recommend and check do"], rows)


def block_generators(tree: Any | None = None) -> dict[Block, Callable[[], str]]:
    """Every generated block of ``docs/``, by page and name, with the function that writes it."""
    from mha_cli.core.supported_doc import SUPPORTED_BLOCKS

    tree = tree if tree is not None else command_tree()
    blocks: dict[Block, Callable[[], str]] = {
        (command_page(name), "options"): (lambda name=name, command=command: options_block(name, command))
        for name, command in tree.commands.items()
    }
    blocks[(command_page("check"), "hard-rules")] = hard_rules_block
    blocks[(command_page("check"), "json-keys")] = check_json_block
    blocks.update({(SUPPORTED_PAGE, name): generate for name, generate in SUPPORTED_BLOCKS.items()})
    return blocks


def stale_blocks(root: Path = REPO_ROOT, tree: Any | None = None) -> list[str]:
    """One line per block whose committed text differs from what the code generates (empty: all current)."""
    stale = []
    for (page, name), generate in block_generators(tree).items():
        path = root / page
        committed = read_block(path.read_text(encoding="utf-8"), name) if path.is_file() else None
        if committed is None:
            stale.append(f"{page}: no generated block {name!r} (add its markers, then run `{REGENERATE}`)")
        elif committed != generate():
            stale.append(f"{page}: block {name!r} is stale: run `{REGENERATE}`")
    return stale


def write_blocks(root: Path = REPO_ROOT) -> list[Path]:
    """Rewrite every block in place; the pages that changed."""
    from mha_cli.core.config_io import write_text_atomic

    pages: dict[Path, str] = {}
    for (page, name), generate in block_generators().items():
        text = pages.get(page) or (root / page).read_text(encoding="utf-8")
        pages[page] = replace_block(text, name, generate(), REGENERATE)
    changed = [page for page, text in pages.items() if text != (root / page).read_text(encoding="utf-8")]
    for page in changed:
        write_text_atomic(root / page, pages[page], force=True)
    return changed


def main(argv: list[str], root: Path = REPO_ROOT) -> int:
    """``--check``: exit 1 and name each stale block; otherwise rewrite them and name the pages changed."""
    if argv not in ([], ["--check"]):
        print(f"usage: {REGENERATE} [--check]", file=sys.stderr)
        return 2
    if argv == ["--check"]:
        stale = stale_blocks(root)
        for line in stale:
            print(line, file=sys.stderr)
        return 1 if stale else 0
    for page in write_blocks(root):
        print(f"wrote {page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
