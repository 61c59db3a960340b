"""Python's cycle collector kept off the objects that live until exit: start-up's, and at exit the command's.

Start-up (importing typer, rich, pydantic and our modules, building the command) makes about 40,000 objects that
live until exit: modules, classes, functions, pydantic's field records. The collector pays for them twice without
freeing anything: about 90 collections while they are made (10 ms of a ``mha kv --target`` run, timed with
``gc.callbacks``), and the whole-heap collection Python runs at exit (a ``gc.collect()`` after a ``mha kv
--target`` run: 14-22 ms over 40,914 objects; 2.5 ms over the 8,645 left once start-up's are frozen; Python 3.11,
this 2-core machine). Most of that is pydantic's validators, whose traversal walks each one's whole tree.

``pause`` turns the collector off for start-up. ``resume`` moves everything made so far to the permanent
generation (``gc.freeze``: skipped by every later collection) and turns the collector back on with a young
generation of ``YOUNG_OBJECTS`` instead of Python's 700, so a table command (some 15,000 new objects, about half
of them its pydantic validators) runs without a collection while a deployment search still collects its cyclic
garbage every ``YOUNG_OBJECTS`` objects. ``finish`` freezes what the command made before Python's exit
collection would traverse it; no file or other resource of ours waits on a collection to be closed (each is
closed by a ``with`` block). The cost: garbage cycles made at start-up are kept until exit (max RSS +0.4 MB for
``mha kv --target``).

Only the console entry pauses; an in-process run (tests, library use) keeps the collector as it finds it.
"""

import gc

YOUNG_OBJECTS = 20_000
"""New objects between two young-generation collections while a command runs (Python's default: 700)."""

_paused_by_entry = False


def pause() -> None:
    """Turn the cycle collector off until ``resume``."""
    global _paused_by_entry
    _paused_by_entry = True
    gc.disable()


def resume() -> None:
    """Freeze what start-up made and turn the collector back on; nothing when it was not paused (in-process runs)."""
    if not _paused_by_entry or gc.isenabled():
        return
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])
    gc.enable()


def finish() -> None:
    """Freeze what the command made, before Python's exit collection traverses it; nothing in in-process runs."""
    if _paused_by_entry:
        gc.freeze()
