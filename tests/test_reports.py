"""Report files: every family's reports round-trip through Parquet and NPY with their dtype, the fingerprint is in
the Parquet metadata, and files of another mechanism or with other columns are refused."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lipdesign.errors import FormatError, ValidationError
from lipdesign.mechanisms import GRR, OUE, families, family_class
from lipdesign.reports import ReportWriter, open_reports, read_reports, schema, write_reports


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
    oue = OUE(1.0, 12)  # (n, w) uint8 rows (bits or packed bytes): one fixed-size list of w uint8 per report
    width = oue.empty_reports().shape[1]
    assert schema(oue).field("report").type == pa.list_(pa.uint8(), width)
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
    with pytest.raises(FormatError, match="format is None"):
        open_reports(tmp_path / "plain.parquet", mechanism)
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
