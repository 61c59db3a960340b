"""An experiment's output folder: report.md, NAME.png and results.json, checked before the run, written after it.

torch-free (matplotlib is imported only to draw), so ``mha experiment`` refuses an existing file without
--force, or a folder it cannot create, before it imports torch.
"""

from __future__ import annotations

import errno
import io
from pathlib import Path
from typing import TYPE_CHECKING

from mha_cli.core.config_io import write_bytes_atomic, write_text_atomic
from mha_cli.core.errors import BadInputError, OutputError, looking_at_output
from mha_cli.core.record import Record

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DEFAULT_OUTPUT_ROOT = Path("outputs") / "experiments"


class OutputFiles(Record):
    """The three files an experiment writes (paths as given, relative to the working directory)."""

    report: str
    plot: str
    results: str


class ExperimentOutputs:
    """The output folder of one experiment: checked before the run, written after it."""

    def __init__(self, name: str, out_dir: Path | None, *, force: bool) -> None:
        self.folder = DEFAULT_OUTPUT_ROOT / name if out_dir is None else out_dir
        self.force = force
        self.report = self.folder / "report.md"
        self.plot = self.folder / f"{name}.png"
        self.results = self.folder / "results.json"
        self.made: list[Path] = []
        """The folders ``check_writable`` created, deepest last: removed again by ``remove_made_if_empty``."""

    @property
    def files(self) -> OutputFiles:
        return OutputFiles(report=str(self.report), plot=str(self.plot), results=str(self.results))

    def check_writable(self) -> None:
        """Fail before minutes of training, not after: the folder cannot be made, or a file exists without ``--force``.

        Creates the folder and any missing parent; a run that then fails or is interrupted removes those it made
        with ``remove_made_if_empty`` (never a partial file).
        """
        with looking_at_output(self.folder):
            if self.folder.exists() and not self.folder.is_dir():
                raise BadInputError(f"--out-dir {self.folder} is a file, not a folder: pass a folder")
            missing = [folder for folder in (self.folder, *self.folder.parents) if not folder.exists()]
        self.made = missing[::-1]
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            self.remove_made_if_empty()  # the parents made before the failure (review 263 #13)
            reason = error.strerror or type(error).__name__
            problem = f"cannot create --out-dir {self.folder} ({reason}): pass a writable folder"
            if error.errno in (errno.ENOTDIR, errno.EEXIST):  # a file on the path: the command line is wrong
                raise BadInputError(problem) from None
            raise OutputError(problem) from None  # no permission, read-only, full, a name too long: exit 74 as --out
        if not self.force:
            for path in (self.report, self.plot, self.results):
                if path.exists():
                    raise BadInputError(f"{path} exists: pass --force to overwrite it, or another --out-dir")

    def remove_made_if_empty(self) -> None:
        """Remove the folders ``check_writable`` made, deepest first, while each is still empty: a failed or
        interrupted run leaves the disk as it found it."""
        for folder in reversed(self.made):
            try:
                folder.rmdir()  # only an empty folder: anything written into it stays
            except OSError as error:
                if error.errno in (errno.ENOENT, errno.ENAMETOOLONG):  # never made: the failure came before it
                    continue
                return

    def write(self, report: str, figure: Figure, result: Record) -> None:
        """Write the plot, the results and the report, each whole or not at all."""
        self.folder.mkdir(parents=True, exist_ok=True)
        write_png_atomic(self.plot, figure, force=self.force)
        write_text_atomic(self.results, result.model_dump_json(indent=2) + "\n", force=self.force)
        write_text_atomic(self.report, report, force=self.force)


def write_png_atomic(path: Path, figure: Figure, *, force: bool) -> None:
    """Render ``figure`` with Agg to PNG bytes, then write them whole or not at all."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer, metadata={"Software": None})  # no version stamp: stable bytes
    write_bytes_atomic(path, buffer.getvalue(), force=force)
