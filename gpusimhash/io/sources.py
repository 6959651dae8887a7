"""Input files read one after another as one corpus, more than once, checked between reads.

A `Source` numbers rows across its files (and ids, where the ids are rows), reads plain text as
UTF-8 bytes for the fingerprint pass and whole records where they are needed, and checks at the
end that no file changed while it was read (`Source.states`, `Source.check`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from gpusimhash.io.lines import LineBatch, document_batches
from gpusimhash.io.readers import DocumentBatch as Batch
from gpusimhash.io.readers import (
    FileState,
    JsonLineBatch,
    detect_format,
    read_batches,
    read_json_lines,
)
from gpusimhash.io.skipped import Skipped

# what the readers yield: parsed documents, plain-text lines as UTF-8, or JSON lines
AnyBatch = Batch | LineBatch | JsonLineBatch


@dataclass(frozen=True)
class Reading:
    """How the input files are read.

    Attributes
    ----------
    format, text_field, id_field, batch_size
        As `gpusimhash.io.readers.read_batches` (``format`` None: from each file's name).
    skip_invalid : bool
        Skip invalid records instead of stopping, counting them (`Source.skipped`).
    """

    format: str | None = None
    text_field: str = "text"
    id_field: str | None = None
    batch_size: int = 10_000
    skip_invalid: bool = False


@dataclass
class Source:
    """The input files, read one after another as one corpus (rows numbered across them)."""

    paths: tuple[Path, ...]
    reading: Reading
    id_field: str | None  # the option, else ``id`` when the first record has one
    skipped: Skipped | None = None  # the first pass's invalid records (skip_invalid)
    # how the summary names some files: standard input's temporary copy as ``<stdin>``
    shown: dict[Path, str] = dataclasses.field(default_factory=dict)
    # (first row, file) of every file begun in the read in progress, for `where`
    _begun: list[tuple[int, Path]] = dataclasses.field(default_factory=list, repr=False)

    @classmethod
    def of(
        cls,
        path: str | Path | Sequence[str | Path],
        reading: Reading,
        *,
        shown: dict[Path, str] | None = None,
    ) -> Source:
        """Name the input files; take ids from an ``id`` field when none is named and one exists.

        ``shown`` names some files in the summary otherwise than by their paths (`shown_in`).
        """
        paths = (Path(path),) if isinstance(path, str | Path) else tuple(map(Path, path))
        if not paths:
            raise ValueError("no input file")
        id_field = reading.id_field
        if id_field is None and has_id_field(paths, reading):
            id_field = "id"
        return cls(paths, reading, id_field, shown=dict(shown or {}))

    @property
    def name(self) -> str:
        """The input in messages and the summary: the file, or the first of several."""
        more = len(self.paths) - 1
        first = self.shown_in(str(self.paths[0]))
        return f"{first} (and {more} more files)" if more else first

    def shown_in(self, text: str) -> str:
        """Return a text (a path, a message) with the files of `shown` named as it says."""
        for path, name in self.shown.items():
            text = text.replace(str(path), name)
        return text

    def states(self) -> list[FileState]:
        """Take every file's state (pipes refused: the input is read more than once)."""
        return [FileState.of(path) for path in self.paths]

    def check(self, states: list[FileState]) -> None:
        """Raise InputError if a file changed since its state was taken."""
        for path, state in zip(self.paths, states, strict=True):
            state.check(path)

    def batches(self, *, records: bool) -> Iterator[Batch]:
        """Read the files in batches (with whole records when asked)."""
        batches = self._each(lambda path: self._read(path, records, self._later_skipped()))
        return cast(Iterator[Batch], batches)  # read_batches' batches, renumbered

    def record_batches(self) -> Iterator[AnyBatch]:
        """Read the files to write their records back: text and JSONL as lines, the rest whole.

        A plain-text file's record is ``{"id": row, "text": line}``: its `LineBatch` stands for
        its records (`gpusimhash.io.writers.RecordWriter.write_text_lines` writes them), with no
        dict per line. A JSONL file's records are the lines they were read from
        (`JsonLineBatch`, written back by `RecordWriter.write_lines`), parsed only where an id
        or a text is needed. With ``skip_invalid``, both are read as `batches` reads them.
        """

        def read(path: Path) -> Iterator[AnyBatch]:
            format = self.reading.format or detect_format(path)
            if self.reading.skip_invalid:
                return self._read(path, True, self._later_skipped())
            if format == "text":
                return document_batches(path, format="text", batch_size=self.reading.batch_size)
            if format == "jsonl":
                return read_json_lines(
                    path,
                    text_field=self.reading.text_field,
                    id_field=self.id_field,
                    batch_size=self.reading.batch_size,
                )
            return self._read(path, True, None)

        return self._each(read)

    def _read(self, path: Path, records: bool, skipped: Skipped | None) -> Iterator[Batch]:
        """Read one file in batches, as `read_batches` does (with whole records when asked)."""
        return read_batches(
            path,
            format=self.reading.format,
            text_field=self.reading.text_field,
            id_field=self.id_field,
            batch_size=self.reading.batch_size,
            records=records,
            skipped=skipped,
        )

    def _later_skipped(self) -> Skipped | None:
        """Where a later pass counts what it skips: apart, as in the first pass (`skipped`)."""
        return Skipped() if self.reading.skip_invalid else None

    def fingerprint_batches(self, *, records: bool) -> Iterator[Batch | LineBatch]:
        """Read the files for the first pass: plain text as UTF-8 bytes, unless records are needed.

        Invalid records skipped (``skip_invalid``) are counted in ``self.skipped``.
        """
        self.skipped = Skipped() if self.reading.skip_invalid else None
        batches = self._each(
            lambda path: (
                self._read(path, True, self.skipped)
                if records
                else document_batches(
                    path,
                    format=self.reading.format,
                    text_field=self.reading.text_field,
                    id_field=self.id_field,
                    batch_size=self.reading.batch_size,
                    skipped=self.skipped,
                )
            )
        )
        return cast(Iterator[Batch | LineBatch], batches)  # no JSON lines from these readers

    def where(self, row: int) -> str:
        """Name a row of the read in progress for messages: its file and number there (from 1).

        Parameters
        ----------
        row : int
            A row of a batch the read has yielded.

        Returns
        -------
        str
            ``"<file>, document <k>"``.
        """
        first, path = next(
            ((f, p) for f, p in reversed(self._begun) if f <= row), (0, self.paths[0])
        )
        return f"{path}, document {row - first + 1:,}"

    def _each(self, read: Callable[[Path], Iterator[AnyBatch]]) -> Iterator[AnyBatch]:
        """Chain the files' batches, rows (and ids that are rows) numbered across files."""
        offset = 0
        self._begun.clear()
        for path in self.paths:
            self._begun.append((offset, path))
            plain = (self.reading.format or detect_format(path)) == "text"
            rows = 0
            for batch in read(path):
                rows += len(batch)
                yield shifted(batch, offset, self.id_field is None, plain) if offset else batch
            offset += rows


def shifted(batch: AnyBatch, offset: int, row_ids: bool, plain: bool) -> AnyBatch:
    """Renumber a batch's rows from ``offset`` on, and its ids when they are rows.

    A plain-text file's records (``{"id": row, "text": line}``) take the new rows as ids.
    """
    rows = batch.rows + offset
    if isinstance(batch, LineBatch):
        return LineBatch(rows, batch.texts)
    if isinstance(batch, JsonLineBatch):  # its ids are parsed from the lines, or its rows
        return dataclasses.replace(batch, rows=rows)
    if not (row_ids or plain):
        return dataclasses.replace(batch, rows=rows)
    ids = rows.tolist()
    records = batch.records
    if plain and records is not None:
        records = [{"id": row, "text": r["text"]} for row, r in zip(ids, records, strict=True)]
    return dataclasses.replace(batch, rows=rows, ids=ids, records=records)


def has_id_field(paths: Sequence[Path], reading: Reading) -> bool:
    """Whether the input's first record has an ``id`` field holding an int or a str.

    The first record is in the first file that holds one: files without a record (empty, or
    blank lines only) before it are passed over, as they are when the files are read as one,
    and so are invalid records where the reading skips them (``skip_invalid``). A plain-text
    record has no fields, and what is not a regular file is not looked into.
    """
    if reading.text_field == "id":
        return False
    for path in paths:
        if not path.is_file():
            return False
        format = reading.format or detect_format(path)
        batches = read_batches(
            path,
            format=format,
            text_field=reading.text_field,
            batch_size=1,
            records=True,
            skipped=Skipped() if reading.skip_invalid else None,
        )
        first = next(batches, None)
        if first is not None:
            value = None if format == "text" else first.record(0).get("id")
            return isinstance(value, int | str) and not isinstance(value, bool)
    return False
