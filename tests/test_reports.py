"""Report files: every family's reports round-trip through Parquet and NPY with their dtype, the fingerprint is in
the Parquet metadata, and files of another mechanism or with other columns are refused."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lipdesign.errors import FormatError, ValidationError
from lipdesign.mechanisms import GRR, OUE, families, family_class
from lipdesign.reports import (
    CHUNK_BYTES,
    ReportWriter,
    chunk_rows,
    open_reports,
    read_reports,
    schema,
    write_reports,
)


def reports_of(mechanism, n, seed=0):
    values = mechanism.input_domain.sample(n, np.random.default_rng(seed))
    user_ids = np.arange(n) if mechanism.uses_user_ids else None
    return mechanism.perturb(values, rng=seed + 1, user_ids=user_ids)


@pytest.mark.parametrize("family", families())
@pytest.mark.parametrize("suffix", [".parquet", ".npy"])
def test_every_family_round_trips_with_its_dtype(family, suffix, tmp_path):
    mechanism = family_class(family).example()
    reports = reports_of(mechanism, 2500)
    path = tmp_path / f"reports{suffix}"
    write_reports(path, mechanism, reports, row_group_rows=1000)
    back = read_reports(path, mechanism)
    assert back.dtype == reports.dtype and back.shape == reports.shape
    assert np.array_equal(back, reports)
    assert open_reports(path, mechanism).rows == 2500


def test_the_parquet_metadata_names_the_mechanism(tmp_path):
    mechanism = GRR(1.0, 5)
    write_reports(tmp_path / "r.parquet", mechanism, reports_of(mechanism, 10))
    metadata = pq.read_schema(tmp_path / "r.parquet").metadata
    assert metadata[b"lipdesign.fingerprint"].decode() == mechanism.fingerprint
    assert metadata[b"lipdesign.family"] == b"grr"
    assert metadata[b"lipdesign.format"] == b"lipdesign.reports"


def test_columns_keep_the_report_layout():
    oue = OUE(1.0, 12)  # (n, w) uint8 rows (bits or packed bytes): one fixed-size binary of w bytes per report
    width = oue.empty_reports().shape[1]
    assert schema(oue).field("report").type == pa.binary(width)
    duchi = family_class("duchi").example()  # (n, d) float rows: one fixed-size list of d float64 per report
    assert schema(duchi).field("report").type == pa.list_(pa.float64(), duchi.empty_reports().shape[1])
    olh = family_class("olh").example()  # structured (a, b, y): one column per field, the field's dtype
    kinds = {field.name: field.type for field in schema(olh)}
    assert kinds == {"a": pa.int64(), "b": pa.int64(), "y": pa.int32()}
    assert schema(GRR(1.0, 3)).field("report").type == pa.int64()


def test_reports_of_another_mechanism_are_refused(tmp_path):
    path = tmp_path / "r.parquet"
    write_reports(path, GRR(1.0, 5), reports_of(GRR(1.0, 5), 100))
    other = GRR(2.0, 5)
    with pytest.raises(FormatError, match=f"reports are of mechanism {GRR(1.0, 5).fingerprint}.*{other.fingerprint}"):
        open_reports(path, other)


def test_files_without_the_metadata_or_with_other_columns_are_refused(tmp_path):
    mechanism = GRR(1.0, 5)
    pq.write_table(pa.table({"report": np.zeros(4, dtype=np.int64)}), tmp_path / "plain.parquet")
    with pytest.raises(FormatError, match="plain.parquet: not a lipdesign report file"):
        open_reports(tmp_path / "plain.parquet", mechanism)
    metadata = dict(schema(mechanism).metadata)
    key = next(key for key, value in metadata.items() if value == b"2")  # the format version
    older = pa.table({"report": np.zeros(4, dtype=np.int64)}, schema=pa.schema(
        [pa.field("report", pa.int64(), nullable=False)], metadata={**metadata, key: b"1"}))
    pq.write_table(older, tmp_path / "older.parquet")
    with pytest.raises(FormatError, match="format is 'lipdesign.reports' version '1'; a report file has"):
        open_reports(tmp_path / "older.parquet", mechanism)
    renamed = pa.table({"code": np.zeros(4, dtype=np.int64)}, schema=pa.schema(
        [pa.field("code", pa.int64(), nullable=False)], metadata=schema(mechanism).metadata))
    pq.write_table(renamed, tmp_path / "renamed.parquet")
    with pytest.raises(FormatError, match="columns are"):
        open_reports(tmp_path / "renamed.parquet", mechanism)
    (tmp_path / "text.parquet").write_text("not parquet")
    with pytest.raises(FormatError, match="not a Parquet file"):
        open_reports(tmp_path / "text.parquet", mechanism)


def test_reports_of_the_wrong_format_are_refused_on_write_and_on_read(tmp_path):
    mechanism = OUE(1.0, 20)
    width = mechanism.empty_reports().shape[1]
    with pytest.raises(ValidationError, match=rf"reports has dtype <f8 and shape \(n, {width}\); oue reports have "
                                              rf"dtype \|u1 and shape \(n, {width}\)"):
        write_reports(tmp_path / "r.parquet", mechanism, np.zeros((3, width)))
    np.save(tmp_path / "r.npy", np.zeros((3, width + 1), dtype=np.uint8))
    with pytest.raises(ValidationError, match=rf"shape \(n, {width + 1}\)"):
        open_reports(tmp_path / "r.npy", mechanism)


def test_pieces_group_whole_row_groups_and_batches_are_bounded(tmp_path):
    mechanism = GRR(1.0, 4)
    reports = reports_of(mechanism, 1000)
    path = tmp_path / "r.parquet"
    with ReportWriter(path, mechanism, row_group_rows=300) as writer:
        writer.write(reports[:900])  # row groups of 300, 300, 300
        writer.write(reports[900:])  # and 100
    report_file = open_reports(path, mechanism)
    assert report_file.pieces(500) == [(0, 2), (2, 4)]
    assert [report_file.piece_rows(piece) for piece in report_file.pieces(500)] == [600, 400]
    assert report_file.pieces(1) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    batches = list(report_file.batches((2, 4), batch_rows=150))
    assert max(batch.shape[0] for batch in batches) <= 150
    assert np.array_equal(np.concatenate(batches), reports[600:])
    np.save(tmp_path / "r.npy", reports)
    assert open_reports(tmp_path / "r.npy", mechanism).pieces(400) == [(0, 400), (400, 800), (800, 1000)]


def test_row_groups_are_sized_in_bytes():
    wide = OUE(1.0, 40000)  # 40000 bits packed in 5000 bytes per report
    assert wide.empty_reports().shape[1:] == (5000,)
    assert CHUNK_BYTES == 64 * 2 ** 20
    assert chunk_rows(wide) == 64 * 2 ** 20 // 5000 == 13421
    assert chunk_rows(GRR(1.0, 5)) == 2 ** 23  # 8-byte indices
    assert chunk_rows(wide, budget=100) == 1  # never below one report
    assert ReportWriter.__init__.__kwdefaults__["row_group_rows"] is None


def test_wide_uint8_reports_are_one_binary_value_each(tmp_path):
    mechanism = OUE(1.0, 4000)  # 500 bytes per report
    reports = reports_of(mechanism, 3000)
    write_reports(tmp_path / "r.parquet", mechanism, reports, row_group_rows=1000)
    column = pq.ParquetFile(tmp_path / "r.parquet").metadata.row_group(0).column(0)
    assert column.physical_type == "FIXED_LEN_BYTE_ARRAY" and column.num_values == 1000
    table = pq.read_table(tmp_path / "r.parquet")
    assert table.column("report").chunk(0)[7].as_py() == reports[7].tobytes()
    assert np.array_equal(np.concatenate(list(open_reports(tmp_path / "r.parquet", mechanism).batches(
        (1, 3), batch_rows=333))), reports[1000:])


def test_files_of_format_version_1_are_refused(tmp_path):
    mechanism = OUE(1.0, 12)
    width = mechanism.empty_reports().shape[1]
    metadata = {**schema(mechanism).metadata, b"lipdesign.format_version": b"1"}
    old = pa.schema([pa.field("report", pa.list_(pa.uint8(), width), nullable=False)], metadata=metadata)
    values = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(4 * width, dtype=np.uint8)), width)
    pq.write_table(pa.Table.from_arrays([values], schema=old), tmp_path / "old.parquet")
    with pytest.raises(FormatError, match="version '1'; a report file has 'lipdesign.reports' version 2"):
        open_reports(tmp_path / "old.parquet", mechanism)


def test_empty_writes_add_no_row_group(tmp_path):
    mechanism = GRR(1.0, 4)
    with ReportWriter(tmp_path / "r.parquet", mechanism) as writer:
        writer.write(reports_of(mechanism, 100))
        writer.write(mechanism.empty_reports())
    assert pq.read_metadata(tmp_path / "r.parquet").num_row_groups == 1
    assert open_reports(tmp_path / "r.parquet", mechanism).pieces(50) == [(0, 1)]


def test_empty_row_groups_make_no_piece(tmp_path):
    mechanism = GRR(1.0, 4)
    reports = reports_of(mechanism, 100)
    with pq.ParquetWriter(tmp_path / "r.parquet", schema(mechanism)) as writer:  # groups of 0, 60, 0, 40, 0 rows
        for part in (reports[:0], reports[:60], reports[:0], reports[60:], reports[:0]):
            writer.write_table(pa.table({"report": part}, schema=schema(mechanism)))
    report_file = open_reports(tmp_path / "r.parquet", mechanism)
    assert pq.read_metadata(tmp_path / "r.parquet").num_row_groups == 5
    assert report_file.pieces(50) == [(0, 2), (2, 5)]  # empty groups join the piece being filled
    assert report_file.pieces(40) == [(0, 2), (2, 4)]  # or, after a full piece, are left out
    assert [report_file.piece_rows(piece) for piece in report_file.pieces(50)] == [60, 40]
    assert all(batch.shape[0] for batch in report_file.batches(batch_rows=30))


def test_page_checksums_refuse_a_corrupted_data_byte(tmp_path):
    mechanism = GRR(1.0, 5)
    reports = reports_of(mechanism, 300)
    path = tmp_path / "r.parquet"
    write_reports(path, mechanism, reports)
    column = pq.read_metadata(path).row_group(0).column(0)
    start = column.dictionary_page_offset if column.has_dictionary_page else column.data_page_offset
    raw = path.read_bytes()
    refused = 0
    for offset in range(start, start + column.total_compressed_size):  # every byte of the column chunk
        damaged = bytearray(raw)
        damaged[offset] ^= 0xFF
        (tmp_path / "c.parquet").write_bytes(bytes(damaged))
        try:
            back = read_reports(tmp_path / "c.parquet", mechanism)
        except FormatError as error:
            assert "c.parquet: cannot read reports" in str(error)
            refused += 1
        else:  # a byte that does not reach the reports (an unused page header field) may pass
            assert np.array_equal(back, reports), offset
    assert refused >= column.total_compressed_size // 2
    last = bytearray(raw)  # the last byte of the data page's values
    last[start + column.total_compressed_size - 1] ^= 0x01
    (tmp_path / "c.parquet").write_bytes(bytes(last))
    with pytest.raises(FormatError, match="cannot read reports"):
        read_reports(tmp_path / "c.parquet", mechanism)
