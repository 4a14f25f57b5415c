"""Reports as files: Parquet (pyarrow) carrying the mechanism's fingerprint, or NPY for plain arrays (docs/math.md
§15).

A report file holds the reports of ONE mechanism in its own report format (``mechanism.empty_reports()``: dtype
and shape), with nothing converted:

- a vector of indices (GRR, Hadamard, designed tables) is one column ``report``;
- a 2-D uint8 array (OUE's bits or packed bytes) is one ``fixed_size_binary(width)`` column ``report``, one value
  of the row's bytes per report (a list column would store Parquet levels per byte);
- a 2-D array of another dtype (the float rows of Laplace, Duchi, Piecewise) is one fixed-size list column
  ``report`` of the array's dtype, one list of the row width per report;
- a structured array (OLH's (a, b, y), Harmony's (coordinate, sign), (row, sign), ...) is one column per field, in
  field order, each of the field's dtype.

The Parquet schema metadata names the format, the mechanism's ``family`` and ``fingerprint``; ``open_reports``
refuses a file whose fingerprint or columns are not the mechanism's. An NPY file carries no metadata, so only its
dtype and shape are checked. Row groups hold about ``CHUNK_BYTES`` of reports (``chunk_rows``), every page carries
a CRC checksum that the reader verifies, and files are read in batches of rows through a ``READ_BUFFER_BYTES``
buffer (``ReportFile.batches``): memory is bounded by the batch and the buffer, not by the row group or the file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import FormatError, ValidationError, require
from lipdesign.validation import integer

if TYPE_CHECKING:
    import os
    from collections.abc import Iterator
    from typing import Self

    import numpy.typing as npt
    import pyarrow as pa

    from lipdesign.mechanisms.base import Mechanism



def _arrow() -> tuple[Any, Any]:
    """pyarrow and pyarrow.parquet, imported when a Parquet file is read or written: reports in memory and NPY files
    need neither (the base install has no pyarrow); without them, MissingDependencyError names the extra."""
    require("Parquet report files (ld.write_reports, ld.perturb_file, ld.aggregate over files)", "files", "pyarrow")
    import pyarrow
    import pyarrow.parquet

    return pyarrow, pyarrow.parquet


FORMAT = "lipdesign.reports"
FORMAT_VERSION = 2  # 2: fixed_size_binary 2-D uint8 reports, page checksums (1 was written by no release)

#: The column of a vector or 2-D report array.
COLUMN = "report"

#: Bytes of reports per Parquet row group of ``write_reports`` and ``ReportWriter`` (and per chunk of ``lipdesign
#: perturb``): ``chunk_rows`` rows.
CHUNK_BYTES = 64 << 20

#: Rows per batch that ``ReportFile.batches`` reads by default (a batch of int64 indices is 8 MiB).
BATCH_ROWS = 1 << 20

#: The most rows read at a time (a batch of reports is held in memory: 2^24 rows is at most a few hundred MiB).
MAX_BATCH_ROWS = 1 << 24

#: Bytes that a reader buffers per column while it decodes pages (pyarrow's ``buffer_size``).
READ_BUFFER_BYTES = 1 << 20

#: The Parquet key of the digest of a memoised report file's device ids, in row order (``ReportWriter.note_devices``).
DEVICES_KEY = "lipdesign.devices"

_KEYS = {"format": b"lipdesign.format", "format_version": b"lipdesign.format_version",
         "family": b"lipdesign.family", "fingerprint": b"lipdesign.fingerprint", "layout": b"lipdesign.layout"}


def _layout(mechanism):
    """(dtype, trailing shape) of the mechanism's reports."""
    template = mechanism.empty_reports()
    return template.dtype, template.shape[1:]


def chunk_rows(mechanism: Mechanism, budget: int = CHUNK_BYTES) -> int:
    """Reports of ``mechanism`` in about ``budget`` bytes: budget // (bytes per report), at least 1."""
    dtype, shape = _layout(mechanism)
    return max(1, int(budget) // (dtype.itemsize * int(np.prod(shape, dtype=np.int64))))


def _describe(dtype, shape):
    return f"dtype {dtype.descr if dtype.names else dtype.str} and shape (n{''.join(f', {w}' for w in shape)})"


def _fields(mechanism):
    """(column name, numpy dtype, row width or None) per Parquet column (a width of uint8: fixed_size_binary)."""
    dtype, shape = _layout(mechanism)
    if dtype.names:
        return [(name, dtype.fields[name][0], None) for name in dtype.names]
    if len(shape) > 1:
        raise ValidationError(f"{mechanism.family} reports have shape (n, {', '.join(map(str, shape))}); a report "
                              "file holds vectors, 2-D arrays or structured arrays")
    return [(COLUMN, dtype, shape[0] if shape else None)]


def schema(mechanism: Mechanism) -> pa.Schema:
    """The Parquet schema of ``mechanism``'s report files, with the format, family and fingerprint as metadata."""
    pa = _arrow()[0]
    fields = []
    for name, dtype, width in _fields(mechanism):
        kind = pa.from_numpy_dtype(dtype)
        if width is not None:
            kind = pa.binary(width) if dtype == np.uint8 else pa.list_(kind, width)
        fields.append(pa.field(name, kind, nullable=False))
    dtype, shape = _layout(mechanism)
    layout = {"dtype": dtype.descr if dtype.names else dtype.str, "shape": list(shape)}
    metadata = {_KEYS["format"]: FORMAT.encode(), _KEYS["format_version"]: str(FORMAT_VERSION).encode(),
                _KEYS["family"]: mechanism.family.encode(), _KEYS["fingerprint"]: mechanism.fingerprint.encode(),
                _KEYS["layout"]: json.dumps(layout).encode()}
    return pa.schema(fields, metadata=metadata)


def checked_reports(mechanism: Mechanism, reports: npt.ArrayLike, field: str = "reports") -> npt.NDArray[Any]:
    """``reports`` as an array of the mechanism's report format (dtype and trailing shape), or ValidationError."""
    array = np.asarray(reports)
    dtype, shape = _layout(mechanism)
    if array.dtype != dtype or array.shape[1:] != shape or array.ndim != 1 + len(shape):
        raise ValidationError(f"{field} has {_describe(array.dtype, array.shape[1:])}; {mechanism.family} reports "
                              f"have {_describe(dtype, shape)} (write what mechanism.perturb returns)")
    return array


def _table(mechanism, reports, table_schema):
    pa = _arrow()[0]
    columns = []
    for name, _, width in _fields(mechanism):
        values = np.ascontiguousarray(reports[name] if reports.dtype.names else reports)
        if width is None:
            columns.append(pa.array(values))
        elif values.dtype == np.uint8:
            columns.append(pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), values.shape[0],
                                                                [None, pa.py_buffer(values)]))
        else:
            columns.append(pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), width))
    return pa.Table.from_arrays(columns, schema=table_schema)


class ReportWriter:
    """Write a mechanism's reports to a Parquet file batch by batch (``with ReportWriter(path, mech) as w:
    w.write(reports)``); each ``write`` adds row groups of at most ``row_group_rows`` rows (None: ``chunk_rows``,
    about ``CHUNK_BYTES``), with page checksums; an empty array adds nothing."""

    def __init__(self, path: str | os.PathLike[str], mechanism: Mechanism, *,
                 row_group_rows: int | None = None) -> None:
        pq = _arrow()[1]
        self.mechanism, self.path = mechanism, Path(path)
        self.row_group_rows = chunk_rows(mechanism) if row_group_rows is None else \
            integer(row_group_rows, "row_group_rows", low=1)
        self.schema = schema(mechanism)
        self.rows = 0
        self._devices: Any = None  # BLAKE2b of the device ids in row order, when memoised reports note them
        self._writer = pq.ParquetWriter(self.path, self.schema, write_page_checksum=True)

    def note_devices(self, devices: npt.ArrayLike) -> None:
        """Record the device ids of the rows just written, in order (memoised reports, docs/math.md §19.5): the file
        then carries a digest of the whole sequence, which ``lipdesign rounds`` compares across rounds (with a pyarrow
        that can add footer metadata, 17 or later; pyarrow 16 writes the file unmarked)."""
        if self._devices is None:
            self._devices = hashlib.blake2b(digest_size=16, person=b"lipdesign.rows")
        self._devices.update(np.ascontiguousarray(devices, dtype="<i8").tobytes())

    def write(self, reports: npt.ArrayLike) -> None:
        """Add ``reports`` (the mechanism's report format, else ValidationError) as row groups."""
        reports = checked_reports(self.mechanism, reports)
        if reports.shape[0] == 0:
            return
        self._writer.write_table(_table(self.mechanism, reports, self.schema), row_group_size=self.row_group_rows)
        self.rows += reports.shape[0]

    def close(self) -> None:
        """Finish the file (its footer is written here, with the device digest if devices were noted)."""
        if self._devices is not None and hasattr(self._writer, "add_key_value_metadata"):  # pyarrow 17 and later
            self._writer.add_key_value_metadata({DEVICES_KEY: self._devices.hexdigest()})
        self._writer.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_reports(path: str | os.PathLike[str], mechanism: Mechanism, reports: npt.ArrayLike, *,
                  row_group_rows: int | None = None) -> None:
    """Write ``reports`` of ``mechanism`` to ``path``: NPY if it ends in ``.npy`` (no metadata), Parquet otherwise.

    A Parquet file carries the format, the mechanism's family and fingerprint in its metadata (only this mechanism
    reads it back), in row groups of about CHUNK_BYTES with page checksums; an NPY file is the bare array, whose
    dtype and shape alone are checked when it is read (docs/math.md §15).

    Parameters
    ----------
    path : str or path
        The file written (replaced if it exists).
    mechanism : Mechanism
        The mechanism that produced the reports.
    reports : array_like
        Reports in the mechanism's report format (what ``mechanism.perturb`` returns: dtype and shape).
    row_group_rows : int, optional
        Parquet only: the rows per row group; default about CHUNK_BYTES of reports.

    Raises
    ------
    ValidationError
        Reports of another dtype or shape than the mechanism's, or a bad ``row_group_rows``.

    See Also
    --------
    read_reports : Read them back.
    aggregate : Aggregate report files of any size.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> mechanism = ld.mechanisms.GRR(1.0, 3)
    >>> reports = mechanism.perturb(np.array([0, 1, 2, 2, 1]), rng=0)
    >>> ld.write_reports("reports.parquet", mechanism, reports)
    >>> np.array_equal(ld.read_reports("reports.parquet", mechanism), reports)
    True
    >>> ld.write_reports("reports.parquet", mechanism, reports.astype(np.float64))
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: reports has dtype <f8 and shape (n); grr reports have dtype <i8 and shape (n)
    (write what mechanism.perturb returns)
    """
    reports = checked_reports(mechanism, reports)
    if Path(path).suffix == ".npy":
        np.save(path, reports, allow_pickle=False)
        return
    with ReportWriter(path, mechanism, row_group_rows=row_group_rows) as writer:
        writer.write(reports)


class ReportFile:
    """A report file of ``mechanism`` opened for reading (``open_reports``): ``rows``, ``pieces(rows)`` (ranges
    that split it for parallel work) and ``batches(piece, batch_rows)`` (the reports of a piece, batch by batch)."""

    #: The rows of each row group of a Parquet file, None for an NPY file (``kind`` says which: the methods read
    #: it only for a Parquet file, which a type checker cannot tell, hence Any).
    _sizes: Any

    def __init__(self, path: str | os.PathLike[str], mechanism: Mechanism) -> None:
        self.path, self.mechanism = Path(path), mechanism
        self.dtype, self.shape = _layout(mechanism)
        if self.path.suffix == ".npy":
            self.kind = "npy"
            try:
                array = np.load(self.path, mmap_mode="r", allow_pickle=False)
            except ValueError as error:
                raise FormatError(f"{self.path}: not an NPY array of reports ({error})") from None
            checked_reports(mechanism, array, field=str(self.path))
            self.rows, self._sizes, self.devices = array.shape[0], None, None
        else:
            self.kind = "parquet"
            pa, pq = _arrow()
            try:
                metadata = pq.read_metadata(self.path)
            except (pa.ArrowException, OSError) as error:
                raise FormatError(f"{self.path}: not a Parquet file ({first_line(error)})") from None
            self._check(metadata.schema.to_arrow_schema())
            #: The digest of the device ids in row order (memoised reports written with a key file), or None.
            self.devices = (metadata.metadata or {}).get(DEVICES_KEY.encode(), b"").decode() or None
            self.rows = metadata.num_rows
            self._sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]

    def _check(self, file_schema):
        stored = {name: file_schema.metadata.get(key, b"").decode()
                  for name, key in _KEYS.items()} if file_schema.metadata else {}
        if stored.get("format") != FORMAT:
            raise FormatError(f"{self.path}: not a lipdesign report file (its Parquet metadata has no {FORMAT!r} "
                              "format; `lipdesign perturb` and lipdesign.write_reports write report files)")
        if stored.get("format_version") != str(FORMAT_VERSION):
            raise FormatError(f"{self.path}: format is {stored.get('format')!r} version "
                              f"{stored.get('format_version')!r}; a report file has {FORMAT!r} version "
                              f"{FORMAT_VERSION} in its Parquet metadata (write it with lipdesign.reports)")
        if stored["fingerprint"] != self.mechanism.fingerprint:
            raise FormatError(f"{self.path}: reports are of mechanism {stored['fingerprint']} ({stored['family']}); "
                              f"this {self.mechanism.family} mechanism is {self.mechanism.fingerprint}: reports are "
                              "only read by the mechanism that produced them")
        expected = schema(self.mechanism)
        if not file_schema.remove_metadata().equals(expected.remove_metadata()):
            raise FormatError(f"{self.path}: columns are {file_schema.remove_metadata().to_string()!r}; "
                              f"{self.mechanism.family} report files have {expected.remove_metadata().to_string()!r}")

    def pieces(self, rows: int) -> list[tuple[int, int]]:
        """Consecutive ranges covering the file, each of at least ``rows`` rows but the last, and none empty: row
        groups ``(first, stop)`` of a Parquet file (never split; empty groups join a piece or are left out), rows
        ``(start, stop)`` of an NPY file."""
        rows = integer(rows, "rows", low=1)
        if self.kind == "npy":
            return [(start, min(start + rows, self.rows)) for start in range(0, self.rows, rows)]
        pieces, first, filled = [], 0, 0
        for group, size in enumerate(self._sizes):
            filled += size
            if filled >= rows:
                pieces.append((first, group + 1))
                first, filled = group + 1, 0
        if filled:
            pieces.append((first, len(self._sizes)))
        return pieces

    def piece_rows(self, piece: tuple[int, int]) -> int:
        """The number of reports in ``piece`` (one of ``pieces``)."""
        return piece[1] - piece[0] if self.kind == "npy" else sum(self._sizes[piece[0]:piece[1]])

    def batches(self, piece: tuple[int, int] | None = None,
                batch_rows: int = BATCH_ROWS) -> Iterator[npt.NDArray[Any]]:
        """The reports of ``piece`` (None: the whole file) in non-empty arrays of at most ``batch_rows`` rows; a
        Parquet file is read through a ``READ_BUFFER_BYTES`` buffer, its page checksums verified (FormatError
        for a damaged file)."""
        batch_rows = integer(batch_rows, "batch_rows", low=1)
        if self.kind == "npy":
            start, stop = (0, self.rows) if piece is None else piece
            array = np.load(self.path, mmap_mode="r", allow_pickle=False)
            for first in range(start, stop, batch_rows):
                yield np.array(array[first:min(first + batch_rows, stop)])
            return
        pa, pq = _arrow()
        groups = range(len(self._sizes)) if piece is None else range(*piece)
        try:
            with pq.ParquetFile(self.path, buffer_size=READ_BUFFER_BYTES, pre_buffer=False,
                                page_checksum_verification=True) as handle:
                for batch in handle.iter_batches(batch_size=batch_rows, row_groups=list(groups), use_threads=False):
                    if batch.num_rows:
                        yield self._array(batch)
        except (pa.ArrowException, OSError) as error:
            raise FormatError(f"{self.path}: cannot read reports ({first_line(error)})") from None

    def _array(self, batch):
        pa = _arrow()[0]
        columns = []
        for (name, dtype, width), column in zip(_fields(self.mechanism), batch.columns):
            values = column.flatten() if pa.types.is_fixed_size_list(column.type) else column
            if column.null_count or values.null_count:
                raise FormatError(f"{self.path}: column {name!r} has nulls; every report is a value")
            if pa.types.is_fixed_size_binary(column.type):  # the data buffer holds the rows' bytes, in order
                columns.append(np.frombuffer(column.buffers()[1], dtype=np.uint8, count=len(column) * width,
                                             offset=column.offset * width).copy())
            else:
                columns.append(values.to_numpy(zero_copy_only=False).astype(dtype, copy=False))
        if not self.dtype.names:
            return columns[0].reshape(batch.num_rows, *self.shape)
        out = np.empty(batch.num_rows, dtype=self.dtype)
        for name, values in zip(self.dtype.names, columns):
            out[name] = values
        return out


def first_line(error: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none), for one-line errors."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def open_reports(path: str | os.PathLike[str], mechanism: Mechanism) -> ReportFile:
    """The report file ``path`` of ``mechanism``, checked (fingerprint, columns; FormatError otherwise)."""
    return ReportFile(path, mechanism)


def read_reports(path: str | os.PathLike[str], mechanism: Mechanism) -> npt.NDArray[Any]:
    """Every report in ``path`` as one array (for files that fit in memory; aggregate larger ones with
    ``lipdesign.engine.aggregate``).

    Parameters
    ----------
    path : str or path
        A report file of ``mechanism``: Parquet (as ``write_reports`` and ``perturb_file`` write it) or ``.npy``.
    mechanism : Mechanism
        The mechanism that produced the reports (a Parquet file must carry its fingerprint).

    Returns
    -------
    numpy.ndarray
        The reports, in the mechanism's report format (``mechanism.empty_reports()`` for a file without any).

    Raises
    ------
    FormatError
        Not a report file, a report file of another mechanism or format version, other columns, or a damaged
        file (a page checksum fails).

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> mechanism = ld.mechanisms.GRR(1.0, 3)
    >>> ld.write_reports("reports.parquet", mechanism, mechanism.perturb(np.arange(3).repeat(4), rng=0))
    >>> reports = ld.read_reports("reports.parquet", mechanism)
    >>> reports.shape, reports.dtype
    ((12,), dtype('int64'))
    >>> ld.read_reports("reports.parquet", ld.mechanisms.GRR(2.0, 3))
    Traceback (most recent call last):
    ...
    lipdesign.errors.FormatError: reports.parquet: reports are of mechanism ... (grr); this grr mechanism is ...:
    reports are only read by the mechanism that produced them
    """
    report_file = open_reports(path, mechanism)
    parts = list(report_file.batches())
    return np.concatenate(parts) if parts else mechanism.empty_reports()


__all__ = ["BATCH_ROWS", "CHUNK_BYTES", "ReportFile", "ReportWriter", "checked_reports", "chunk_rows", "open_reports",
           "read_reports", "schema", "write_reports"]
