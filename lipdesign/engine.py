"""Aggregation anywhere: report files or arrays, streamed through ``mechanism.aggregate`` in this process or on a
Dask cluster, with the same answer (docs/math.md §15).

``aggregate(mechanism, sources)`` splits the sources into pieces (Parquet row-group ranges, NPY or array row
ranges of about ``batch_rows`` rows), aggregates each piece batch by batch (memory: one batch, whatever the file
size) and adds the piece aggregates in one fixed binary tree (``tree_sum``). ``engine="dask"`` runs the same pieces
as tasks on a ``distributed.Client`` and the same tree as merge tasks, so integer statistics and floating-point sums
come out bit for bit equal to the local ones. ``perturb_blocks`` draws reports with one random stream per block of
``BLOCK_ROWS`` users (children of one ``SeedSequence``), so simulated reports do not depend on how the users are
split over batches, files or machines. ``perturb_file`` perturbs a CSV or Parquet file of values into a report
file, chunk by chunk (``lipdesign perturb`` runs it).
"""

from __future__ import annotations

import inspect
import logging
import numbers
import warnings
from concurrent.futures import CancelledError
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import EngineError, FormatError, ValidationError
from lipdesign.mechanisms.aggregate import Aggregate
from lipdesign.mechanisms.base import Mechanism
from lipdesign.reports import (
    BATCH_ROWS,
    MAX_BATCH_ROWS,
    READ_BUFFER_BYTES,
    ReportWriter,
    chunk_rows,
    first_line,
    open_reports,
)
from lipdesign.validation import choice, fmt, integer

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Iterable, Sequence

    import numpy.typing as npt

    from lipdesign.mechanisms.estimate import Estimate

    #: A source of reports: a report file (Parquet or NPY) or an array of reports.
    ReportSource = str | os.PathLike[str] | npt.NDArray[Any]

    from typing import TypeVar

    #: What ``tree_sum`` adds (Aggregates, or Dask futures of them).
    Summand = TypeVar("Summand")

ENGINES = ("local", "dask")

#: Users per random stream of ``perturb_blocks``.
BLOCK_ROWS = 1 << 16


def tree_sum(items: Iterable[Summand], add: Callable[[Summand, Summand], Summand]) -> Summand:
    """The sum of ``items`` (an iterable, consumed once) by ``add`` in the fixed tree of pairwise summation: the
    first 2^m items (2^m the largest power of two below their number) in a perfect binary tree, added to the tree
    of the rest. Holds O(log n) partial sums."""
    stack: list[tuple[int, Summand]] = []  # (leaves, partial sum), leaves strictly decreasing powers of two
    for item in items:
        leaves, value = 1, item
        while stack and stack[-1][0] == leaves:
            count, left = stack.pop()
            leaves, value = leaves + count, add(left, value)
        stack.append((leaves, value))
    if not stack:
        raise ValidationError("sources hold no reports; aggregate needs at least one file or array")
    _, value = stack.pop()
    while stack:
        value = add(stack.pop()[1], value)
    return value


def _pieces(mechanism, sources, batch_rows):
    """(piece, rows) per unit of work, none empty: ("file", absolute path, range) or ("array", rows of an array)."""
    if isinstance(sources, (str, np.ndarray)) or hasattr(sources, "__fspath__"):
        sources = [sources]
    try:
        listed = list(sources)
    except TypeError:
        listed = []
    if not listed:
        raise ValidationError(f"sources is {fmt(sources)}; it must be a non-empty list of report files (Parquet, "
                              "NPY) or report arrays")
    sources = listed
    pieces: list[tuple[tuple[Any, ...], int]] = []  # (where the rows are, their number)
    for position, source in enumerate(sources):
        if isinstance(source, str) or hasattr(source, "__fspath__"):
            report_file = open_reports(source, mechanism)
            path = str(Path(source).resolve())  # a Dask worker may run in another directory
            pieces += [(("file", path, piece), report_file.piece_rows(piece))
                       for piece in report_file.pieces(batch_rows)]
        elif isinstance(source, np.ndarray):
            pieces += [(("array", source[start:start + batch_rows]), min(batch_rows, source.shape[0] - start))
                       for start in range(0, source.shape[0], batch_rows)]
        else:
            raise ValidationError(f"sources[{position}] is {fmt(source)}; each source is a report file path or a "
                                  "numpy array of reports")
    return pieces


def _piece_aggregate(mechanism, piece, batch_rows):
    if piece[0] == "array":
        return mechanism.aggregate(piece[1])
    batches = open_reports(piece[1], mechanism).batches(piece[2], batch_rows)
    return tree_sum(map(mechanism.aggregate, batches), Aggregate.__add__)


def aggregate(mechanism: Mechanism, sources: ReportSource | Iterable[ReportSource], engine: str = "local",
              scheduler: str | None = None, progress: Callable[[int], object] | None = None,
              batch_rows: int = BATCH_ROWS) -> Aggregate:
    """The Aggregate of every report in ``sources`` (paths of Parquet or NPY report files, or report arrays).
    ``engine``: "local" (this process, streaming) or "dask" (``distributed``: the cluster at ``scheduler``, or a
    2-worker LocalCluster started for the call); ``progress``: None or a callable receiving the number of reports
    just aggregated; ``batch_rows``: the rows read at a time. Both engines give the same Aggregate exactly; sources
    that hold no reports (empty files or arrays) give the zero aggregate, ``n = 0`` (docs/math.md §15).

    The sources are split into pieces (Parquet row groups, NPY or array row ranges of about ``batch_rows`` rows),
    each aggregated batch by batch (memory: one batch, whatever the file size), and the piece aggregates are added
    in one fixed binary tree, so the result does not depend on the engine.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism whose reports these are (a report file must carry its fingerprint).
    sources : str, path, numpy.ndarray, or a list of them
        Report files (``.parquet`` or ``.npy``, as ``write_reports`` and ``perturb_file`` write them) and report
        arrays (what ``mechanism.perturb`` returns).
    engine : {"local", "dask"}, default "local"
        Where the pieces are aggregated.
    scheduler : str, optional
        ``engine="dask"`` only: the address of a running Dask scheduler (``tcp://host:8786``); default None, a
        2-worker LocalCluster started for the call.
    progress : callable, optional
        Called with the number of reports of each piece once it is aggregated.
    batch_rows : int, default BATCH_ROWS
        The rows read at a time, 1 to MAX_BATCH_ROWS.

    Returns
    -------
    Aggregate
        The sufficient statistics of every report; ``mechanism.estimate(aggregate)`` estimates from it.

    Raises
    ------
    ValidationError
        A bad ``engine``, ``batch_rows``, ``progress`` or ``scheduler`` (a scheduler without ``engine="dask"``, or
        one that cannot be reached), no sources, a source that is neither a path nor an array, or an array that is
        not of the mechanism's report format.
    FormatError
        A report file of another mechanism, with other columns, or damaged.
    EngineError
        The Dask workers died before the aggregation was complete (running it again is safe).

    See Also
    --------
    perturb_file : Perturb a file of values into a report file.
    lipdesign.mechanisms.Aggregate : What is returned.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> mechanism = ld.mechanisms.GRR(1.0, 3)
    >>> values = np.random.default_rng(0).integers(0, 3, size=1000)
    >>> reports = mechanism.perturb(values, rng=1)
    >>> ld.write_reports("first.parquet", mechanism, reports[:600])
    >>> ld.write_reports("second.npy", mechanism, reports[600:])
    >>> total = ld.aggregate(mechanism, ["first.parquet", "second.npy"])
    >>> total
    Aggregate(grr, n=1000, statistics=['support'])
    >>> total == mechanism.aggregate(reports)
    True
    >>> np.round(mechanism.estimate(total).values, 3), np.bincount(values) / 1000
    (array([0.302, 0.385, 0.313]), array([0.315, 0.33 , 0.355]))
    """
    engine = choice(engine, "engine", ENGINES)
    batch_rows = integer(batch_rows, "batch_rows", low=1, high=MAX_BATCH_ROWS)
    if progress is not None and not callable(progress):
        raise ValidationError(f"progress is {fmt(progress)}; it must be None or a callable taking a report count")
    if scheduler is not None and engine != "dask":
        raise ValidationError(f"scheduler is {scheduler!r}; it is the address of a Dask scheduler, so it needs "
                              "engine='dask'")
    pieces = _pieces(mechanism, sources, batch_rows)
    if not pieces:
        return mechanism.aggregate(mechanism.empty_reports())
    if engine == "dask":
        return _dask_aggregate(mechanism, pieces, scheduler, progress, batch_rows)

    def leaves():
        for piece, rows in pieces:
            result = _piece_aggregate(mechanism, piece, batch_rows)
            if progress is not None:
                progress(rows)
            yield result

    return tree_sum(leaves(), Aggregate.__add__)


# -- Dask ---------------------------------------------------------------------------------------------------------
#: Mechanisms rebuilt in a worker process, by fingerprint (each is re-verified once per process).
_WORKER_MECHANISMS: dict[str, Mechanism] = {}


def _worker_mechanism(document):
    from lipdesign.io import mechanism_from_dict

    if document["fingerprint"] not in _WORKER_MECHANISMS:
        _WORKER_MECHANISMS[document["fingerprint"]] = mechanism_from_dict(document, "the scheduled mechanism")
    return _WORKER_MECHANISMS[document["fingerprint"]]


def _dask_piece(document, piece, batch_rows):
    return _piece_aggregate(_worker_mechanism(document), piece, batch_rows)


def _dask_add(left, right):
    return left + right


#: What a failed Dask run says about running it again: true, because aggregating only reads its sources (each task
#: is a function of a piece of the report files or arrays and the mechanism) and returns nothing until it is complete
#: (``lipdesign aggregate`` writes its output only then).
_RETRY = "the sources are only read and nothing was written, so running the same aggregation again is safe"


def _dask_failure(error, scheduler):
    """The one-line EngineError for a Dask run whose workers died: ``error`` is the CancelledError (every worker
    holding the scattered mechanism died, so Dask cancelled the tasks that need it) or the KilledWorker (one task
    was running on each of allowed-failures + 1 workers that died) that ``Future.result`` raised."""
    where = "the 2-worker LocalCluster started for this call" if scheduler is None else f"the cluster at {scheduler!r}"
    if hasattr(error, "allowed_failures"):  # distributed.KilledWorker
        return EngineError(f"one task (a piece of the sources) was running on each of the "
                           f"{error.allowed_failures + 1} workers of {where} that died one after another (Dask's "
                           f"allowed-failures is {error.allowed_failures}), so Dask gave the aggregation up; {_RETRY}, "
                           "but the same piece may kill its workers again (if they ran out of memory, a smaller "
                           "batch_rows lowers what each task holds)")
    reason = getattr(error, "reason", None)  # distributed 2024.8 and later say why a future was cancelled
    because = f" (Dask: {reason})" if reason else ""
    if scheduler is None:
        return EngineError(f"every worker of {where} died before the aggregation was complete, and with them the "
                           f"mechanism sent to them, so Dask cancelled the tasks{because}; {_RETRY}")
    return EngineError(f"{where} cancelled the aggregation's tasks before it was complete{because}, as Dask does "
                       f"when every worker holding the mechanism sent to them has died; {_RETRY}")


def _dask_aggregate(mechanism, pieces, scheduler, progress, batch_rows):
    try:
        from distributed import Client, KilledWorker, LocalCluster, as_completed
    except ImportError:
        raise ValidationError('engine is "dask", but dask.distributed is not installed (pip install '
                              '"lipdesign[dask]")') from None
    cluster = None
    if scheduler is None:  # its scheduler and nannies log here: silenced: _dask_failure reports a failure
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.CRITICAL)
    try:
        try:
            client = Client(cluster if scheduler is None else scheduler)
        except (OSError, ValueError, TypeError) as error:  # a malformed address, or no scheduler answering there
            message = first_line(error)
            raise ValidationError(f"scheduler is {scheduler!r}; cannot connect to a Dask scheduler there "
                                  f"({message}); give a running scheduler's address, e.g. tcp://host:8786") from None
        with client:
            document = client.scatter(mechanism.to_dict(), broadcast=True)
            leaves = [client.submit(_dask_piece, document, piece, batch_rows, pure=False) for piece, _ in pieces]
            total = tree_sum(leaves, lambda left, right: client.submit(_dask_add, left, right, pure=False))
            try:
                if progress is not None:
                    rows = {leaf.key: count for leaf, (_, count) in zip(leaves, pieces)}
                    for leaf in as_completed(leaves):
                        progress(rows[leaf.key])
                return total.result()
            except (CancelledError, KilledWorker) as error:  # a task's own exception passes through unchanged
                raise _dask_failure(error, scheduler) from None
    finally:
        if cluster is not None:
            cluster.close()


# -- simulation ---------------------------------------------------------------------------------------------------
def block_generator(seed: int, block: int) -> np.random.Generator:
    """The random stream of block ``block`` of users: PCG64 keyed by ``SeedSequence(seed).spawn(n)[block]``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(block,))))


def perturb_blocks(mechanism: Mechanism, values: npt.NDArray[Any] | Sequence[Any], seed: int, *, start: int = 0,
                   user_ids: npt.NDArray[Any] | Sequence[Any] | None = None,
                   block_rows: int = BLOCK_ROWS) -> npt.NDArray[Any]:
    """Reports of ``values``, the users ``start``, ``start + 1``, ... of a simulation keyed by ``seed`` (an int):
    block b (users b * block_rows to (b + 1) * block_rows - 1) draws from ``block_generator(seed, b)``, so the reports
    are the same however the users are split, as long as each part starts on a block (docs/math.md §15). A
    simulation only: a deployment perturbs with ``rng=None`` (ChaCha20 keyed from the OS, docs/math.md §3.8).

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism that perturbs.
    values : array_like
        The users' values (as ``mechanism.perturb`` takes them), at least one.
    seed : int
        The simulation's seed (>= 0).
    start : int, default 0
        The index of the first user of ``values`` in the simulation: a multiple of ``block_rows``.
    user_ids : array_like, optional
        The users' ids, for mechanisms that key public randomness by user (``mechanism.uses_user_ids``).
    block_rows : int, default BLOCK_ROWS
        The users per random stream.

    Returns
    -------
    numpy.ndarray
        The reports, one per value, as ``mechanism.perturb`` returns them.

    Raises
    ------
    ValidationError
        A bad ``seed``, ``start`` (not a multiple of ``block_rows``) or ``block_rows``, no values, or what
        ``mechanism.perturb`` refuses.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> mechanism = ld.mechanisms.GRR(1.0, 3)
    >>> values = np.random.default_rng(0).integers(0, 3, size=1000)
    >>> whole = ld.perturb_blocks(mechanism, values, seed=7, block_rows=256)
    >>> parts = [ld.perturb_blocks(mechanism, values[:512], seed=7, block_rows=256),
    ...          ld.perturb_blocks(mechanism, values[512:], seed=7, start=512, block_rows=256)]
    >>> np.array_equal(whole, np.concatenate(parts))
    True
    >>> ld.perturb_blocks(mechanism, values[500:], seed=7, start=500, block_rows=256)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: start is 500; it must be a multiple of block_rows = 256 (a part of a
    simulation starts on a block)
    """
    seed = integer(seed, "seed", low=0)
    block_rows = integer(block_rows, "block_rows", low=1)
    start = integer(start, "start", low=0)
    if start % block_rows:
        raise ValidationError(f"start is {start}; it must be a multiple of block_rows = {block_rows} (a part of a "
                              "simulation starts on a block)")
    n = len(values)
    parts = []
    for first in range(0, n, block_rows):
        rows = slice(first, min(first + block_rows, n))
        ids = None if user_ids is None else user_ids[rows]
        parts.append(mechanism.perturb(values[rows], rng=block_generator(seed, (start + first) // block_rows),
                                       user_ids=ids))
    if not parts:
        raise ValidationError("values is empty; it must hold at least one value")
    return parts[0] if len(parts) == 1 else np.concatenate(parts)  # one block: no copy


# -- a file of values to a report file ----------------------------------------------------------------------------
#: At most this many rows of input are read, perturbed and written at a time by ``perturb_file`` (fewer when the
#: reports of that many users would exceed ``lipdesign.reports.CHUNK_BYTES``, see ``_perturb_rows``).
PERTURB_CHUNK_ROWS = 1 << 20

#: The first user of a seeded ``perturb_file`` is below this (users are numbered in int64).
MAX_START = 1 << 62


def _input_columns(mechanism):
    """The input columns ``perturb_file`` reads for ``mechanism``'s input domain."""
    domain = mechanism.input_domain
    if domain.kind in ("categorical", "strings") or domain.d == 1:
        return ["value"]
    return [f"value_{j}" for j in range(domain.d)]


def _csv_types(mechanism, memoised=False):
    """The CSV column types ``perturb_file`` reads, never inferred for what identifies a value or a user: a
    categorical ``value`` is text when the mechanism has labels (matched exactly, docs/math.md §1) and an integer
    index when it has none; ``user_id`` and ``device`` are integers."""
    import pyarrow as pa

    types = {"user_id": pa.int64()} if mechanism.uses_user_ids else {}
    if memoised:
        types["device"] = pa.int64()
    domain = mechanism.input_domain
    if domain.kind == "categorical":
        types["value"] = pa.int64() if isinstance(domain.labels, range) else pa.string()
    if domain.kind == "strings":  # "1" and "01" are strings here, never numbers
        types["value"] = pa.string()
    return types


def _invalid_utf8_line(path, error):
    """Where a CSV that pyarrow refused as invalid UTF-8 first breaks it: ``"; line L is not valid UTF-8"`` (its
    message names no line), else ""."""
    if "UTF8" not in str(error) or Path(path).suffix == ".parquet":
        return ""
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return f"; line {number} is not valid UTF-8"
    return ""


def _input_batches(path, rows, column_types=None):
    """(column names, record batches of about ``rows`` rows, the number of rows if known) of a CSV or Parquet file of
    values, a CSV's columns in ``column_types`` read as those types; a file that cannot be read, at the start or
    further on (a CSV whose type changes after the first block), is a FormatError."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import csv

    def refused(error):
        return FormatError(f"{path}: cannot read values ({first_line(error)}){_invalid_utf8_line(path, error)}")

    def guarded(batches):
        try:
            yield from batches
        except (pa.ArrowException, OSError) as error:
            raise refused(error) from None

    try:
        if Path(path).suffix == ".parquet":
            handle = pq.ParquetFile(path, buffer_size=READ_BUFFER_BYTES, pre_buffer=False)
            return handle.schema_arrow.names, guarded(handle.iter_batches(batch_size=rows)), handle.metadata.num_rows
        # an empty line is a value (refused, with its line), never skipped: a skipped user would vanish silently
        parse = csv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False)
        reader = csv.open_csv(path, parse_options=parse,
                              convert_options=csv.ConvertOptions(column_types=column_types or {}))
        return reader.schema.names, guarded(reader), None
    except pa.ArrowException as error:
        raise refused(error) from None


def _perturb_rows(mechanism, seeded):
    """Rows per chunk of ``perturb_file``: reports in about ``CHUNK_BYTES`` (at least one row), at most
    ``PERTURB_CHUNK_ROWS``; a seeded run's chunks are whole blocks of users (``BLOCK_ROWS``, docs/math.md §15), at
    least one."""
    rows = min(PERTURB_CHUNK_ROWS, chunk_rows(mechanism))
    return max(BLOCK_ROWS, rows - rows % BLOCK_ROWS) if seeded else rows


def _chunks(batches, rows):
    """Tables of exactly ``rows`` rows from ``batches`` (the last may be shorter)."""
    import pyarrow as pa

    pending, count = [], 0
    for batch in batches:
        pending.append(batch)
        count += batch.num_rows
        while count >= rows:
            table = pa.Table.from_batches(pending)
            yield table.slice(0, rows)
            rest = table.slice(rows)
            pending, count = rest.to_batches(), rest.num_rows
    if count:
        yield pa.Table.from_batches(pending)


def _check_perturb_file_arguments(mechanism, values_path, reports_path, seed, start, progress):
    """``(seed, start)`` checked (start 0 when None), or the ValidationError naming the argument."""
    if not isinstance(mechanism, Mechanism):
        raise ValidationError(f"mechanism is {fmt(mechanism)}; it must be a lipdesign Mechanism (ld.load reads one "
                              "from its JSON file)")
    if seed is not None:
        seed = integer(seed, "seed", low=0)
    if start is not None and seed is None:
        raise ValidationError(f"start is {fmt(start)}; it numbers the users of a seeded simulation, so it needs a "
                              "seed")
    start = 0 if start is None else start
    if isinstance(start, (bool, np.bool_)) or not isinstance(start, numbers.Integral) or \
            not 0 <= start < MAX_START or start % BLOCK_ROWS:  # type: ignore[operator]  # typeshed: numbers.Integral has no <
        raise ValidationError(f"start is {fmt(start)}; it must be a non-negative multiple of {BLOCK_ROWS} below 2^62 "
                              "(the users of a simulation come in blocks of that many, each with its own stream)")
    if progress is not None and not callable(progress):
        raise ValidationError(f"progress is {fmt(progress)}; it must be None or a callable taking (reports written, "
                              "rows in all or None)")
    if Path(reports_path).suffix.lower() != ".parquet":
        raise ValidationError(f"reports_path is {str(reports_path)!r}; perturb_file writes a Parquet report file, so "
                              "the name must end in .parquet")
    if Path(reports_path).exists() and Path(values_path).exists() and Path(reports_path).samefile(values_path):
        raise ValidationError(f"reports_path is {str(reports_path)!r}, which is the values file: writing it would "
                              "overwrite the input; give another name")
    return seed, int(start)


def _master_key(mechanism, keys, create=True):
    """The master key of the key file ``keys`` for ``mechanism`` (made if missing and ``create``; None if missing
    otherwise), or the ValidationError of a mechanism that does not memoise or of a file bound to another."""
    from lipdesign.io.device_keys import master_key

    if not callable(getattr(mechanism, "perturb_memoised", None)):
        raise ValidationError(f"keys is {str(keys)!r}; {mechanism.family} draws fresh reports every round and keeps "
                              "no memo (l-grr, l-ue, l-olh, dbitflip, l-table, rappor and cms-lip memoise their "
                              "permanent response)")
    if not create and not Path(keys).exists():
        return None
    return master_key(keys, mechanism, create=create)


def _memoised(mechanism, values, memo, devices, seed, first):
    """Memoised reports of a chunk: each device's key derived from the master key and its id; the instantaneous
    stage from the default cryptographic stream, or, seeded, from the generator of each block of users."""
    from lipdesign.mechanisms.memo import derived_keys

    keys = derived_keys(memo, devices)
    accepts_rng = "rng" in inspect.signature(mechanism.perturb_memoised).parameters
    if seed is None or not accepts_rng:
        return mechanism.perturb_memoised(values, keys, rng=None) if accepts_rng else \
            mechanism.perturb_memoised(values, keys)
    return np.concatenate([mechanism.perturb_memoised(values[i:i + BLOCK_ROWS], keys[i:i + BLOCK_ROWS],
                                                      rng=block_generator(seed, (first + i) // BLOCK_ROWS))
                           for i in range(0, len(values), BLOCK_ROWS)])


def _placed(mechanism, values, values_path, done):
    """The ValidationError of the first bad value of a chunk that starts after ``done`` data rows, placed in the
    file: its data row (from 1) and, in a CSV with its header line, its line."""
    low, high = 0, len(values)  # the shortest invalid prefix, by bisection (an error path: log n validations)
    while high - low > 1:
        middle = (low + high) // 2
        try:
            mechanism.input_domain.validate(values[:middle])
            low = middle
        except ValidationError:
            high = middle
    try:
        mechanism.input_domain.validate(values[high - 1:high])
        message = "values: a value breaks the input domain's rule"  # not reached: the prefix check found it
    except ValidationError as error:
        message = str(error).replace("values[0]", "values").replace(" at position 0", "")
    row = done + high
    line = f" (line {row + 1})" if Path(values_path).suffix.lower() == ".csv" else ""
    return ValidationError(f"{values_path}, data row {row}{line}: {message}")


def perturb_file(mechanism: Mechanism, values_path: str | os.PathLike[str], reports_path: str | os.PathLike[str], *,
                 seed: int | None = None, start: int | None = None,
                 progress: Callable[[int, int | None], object] | None = None,
                 keys: str | os.PathLike[str] | None = None) -> int:
    """Perturb every value of a CSV or Parquet file into a Parquet report file of ``mechanism``, one chunk of rows at
    a time (what ``lipdesign perturb`` runs).

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism (``ld.load`` reads one from its JSON file); its fingerprint goes into the report file's
        metadata (``lipdesign.reports``), so only this mechanism reads the reports back.
    values_path : str or path
        A ``.parquet`` file, or else a CSV file, with a column ``value`` (labels, matched exactly as text, or
        indices when the mechanism has no labels, docs/math.md §1; numeric mechanisms with d > 1: columns
        ``value_0`` .. ``value_{d-1}``), and ``user_id`` (int64) where the mechanism keys public randomness by user.
        Other columns are ignored.
    reports_path : str or path
        Where to write the reports (a name ending in ``.parquet``). They are written to ``<reports_path>.partial``
        first and moved there once every row is perturbed, so a failed run leaves no report file.
    seed : int >= 0 or None
        None (a deployment): the cryptographic default stream keyed from the OS (docs/math.md §3.8). An int (a
        simulation): one PCG64 stream per block of ``BLOCK_ROWS`` users, as ``perturb_blocks`` draws them, so the
        reports do not depend on how the users are split into files or chunks (docs/math.md §15, Proposition 15.2).
    start : int or None
        With ``seed``: the index of the file's first user in the simulation, a multiple of ``BLOCK_ROWS`` below
        ``MAX_START`` (None: 0). The next file of the same simulation starts at
        ``start + ceil(n / BLOCK_ROWS) * BLOCK_ROWS``; files sharing a seed and a start share random streams, so their
        reports are dependent (docs/math.md §15).
    progress : callable or None
        Called as ``progress(done, total)`` with ``done = 0`` once the file is open, then after every chunk: the
        reports written so far and the rows of the file (None for a CSV, whose length is not known in advance).
    keys : str or path, optional
        A key file (``lipdesign.io.device_keys``; made when it does not exist) for a mechanism that memoises its
        permanent response (``perturb_memoised``: ``l-grr``, ``l-ue``, ``rappor``, ...). The file then needs a
        column ``device`` (int64 ids): each device's memo key is derived from the file's master key and its id
        (docs/runtime.md §15), so the same device and value give the same permanent response in every round's
        file. A key file made for another mechanism is refused.

    Returns
    -------
    int
        The number of reports written (one per row of the file).

    Raises
    ------
    ValidationError
        A bad argument, a file without the columns the mechanism reads (naming the file, its columns and the
        missing ones), a value outside the mechanism's input domain (naming the file, the data row and the value),
        or a file with no rows.
    FormatError
        A values file that pyarrow cannot read, at its start or further on (a CSV column whose type changes).

    See Also
    --------
    aggregate : Aggregate the report file.
    read_reports : Read it back as one array.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> mechanism = ld.mechanisms.GRR(1.0, 3)
    >>> values = np.random.default_rng(0).integers(0, 3, size=1000)
    >>> np.savetxt("values.csv", values, fmt="%d", header="value", comments="")
    >>> ld.perturb_file(mechanism, "values.csv", "reports.parquet", seed=7)
    1000
    >>> reports = ld.read_reports("reports.parquet", mechanism)
    >>> np.array_equal(reports, ld.perturb_blocks(mechanism, values, seed=7))
    True
    >>> np.round(mechanism.estimate(reports).values, 3)
    array([0.335, 0.357, 0.308])

    A value outside the input domain is placed in the file:

    >>> np.savetxt("bad.csv", [0, 1, 3], fmt="%d", header="value", comments="")
    >>> ld.perturb_file(mechanism, "bad.csv", "bad.parquet")
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: bad.csv, data row 3 (line 4): values contains 3; it must be an index in 0..2
    """
    seed, start = _check_perturb_file_arguments(mechanism, values_path, reports_path, seed, start, progress)
    if keys is not None:
        _master_key(mechanism, keys, create=False)  # a key file of another mechanism is refused before any work
    rows = _perturb_rows(mechanism, seed is not None)
    names, batches, total = _input_batches(values_path, rows, _csv_types(mechanism, keys is not None))
    columns = (_input_columns(mechanism) + (["user_id"] if mechanism.uses_user_ids else []) +
               (["device"] if keys is not None else []))
    missing = [name for name in columns if name not in names]
    if missing:
        raise ValidationError(f"{values_path} has columns {names}; {mechanism.family} reads column(s) "
                              f"{', '.join(columns)} (missing: {', '.join(missing)})")
    memo = None if keys is None else _master_key(mechanism, keys)
    partial = Path(f"{reports_path}.partial")
    done = 0
    try:
        with ReportWriter(partial, mechanism) as writer:
            if progress is not None:
                progress(0, total)
            for chunk in _chunks(batches, rows):
                arrays = [chunk.column(name).to_numpy() for name in columns]
                devices = arrays.pop() if memo is not None else None
                user_ids = arrays.pop() if mechanism.uses_user_ids else None
                values = arrays[0] if len(arrays) == 1 else np.column_stack(arrays)
                try:  # checked here first, so that a bad value is placed in the file, not in a block
                    mechanism.input_domain.validate(values)
                except ValidationError:
                    raise _placed(mechanism, values, values_path, done) from None
                if memo is not None and devices is not None:  # devices: the column read with a key file
                    reports = _memoised(mechanism, values, memo, devices, seed, start + done)
                    writer.note_devices(devices)
                elif seed is None:  # a deployment: the default cryptographic stream (docs/math.md §3.8)
                    reports = mechanism.perturb(values, user_ids=user_ids)
                else:
                    reports = perturb_blocks(mechanism, values, seed, start=start + done, user_ids=user_ids)
                writer.write(reports)
                done += chunk.num_rows
                if progress is not None:
                    progress(done, total)
        if done == 0:
            raise ValidationError(f"{values_path} holds no values; it must hold at least one row")
        partial.replace(reports_path)
    finally:
        partial.unlink(missing_ok=True)
    return done


# -- estimates with standard errors -------------------------------------------------------------------------------
def estimate_with_errors(mechanism: Mechanism, aggregate: Aggregate, *, method: str | None = None,
                         consistency: str | None = None) -> Estimate:
    """Deprecated since 0.3.0, removed in 0.4.0: ``mechanism.estimate(aggregate)`` is now an ``ld.Estimate`` with
    standard errors for every family (docs/math.md §15), which this returns."""
    warnings.warn("lipdesign.estimate_with_errors is deprecated since 0.3.0 and will be removed in 0.4.0: "
                  "mechanism.estimate(aggregate) returns the same ld.Estimate", DeprecationWarning, stacklevel=2)
    return mechanism.estimate(aggregate, method=method, consistency=consistency)
