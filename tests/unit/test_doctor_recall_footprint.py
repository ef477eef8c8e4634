"""`thoth doctor` on what recall reads on PostgreSQL against its shared_buffers."""

from bridge.health_checks import Status, recall_footprint_check
from layers.episodic.pg_search import RecallFootprint

MB = 2**20


def test_what_recall_reads_beyond_shared_buffers_is_a_warning_naming_the_setting() -> None:
    memory = RecallFootprint(hnsw_bytes=1953 * MB, rows_bytes=1432 * MB,
                          shared_buffers_bytes=128 * MB)
    check = recall_footprint_check(memory)
    assert check.status is Status.WARN
    assert "HNSW index (1953 MB) and the rows it leads to (1432 MB)" in check.detail
    assert "shared_buffers 128 MB" in check.detail
    assert "ALTER SYSTEM SET shared_buffers = '3385MB'" in check.fix


def test_it_is_ok_only_when_the_index_and_its_rows_both_fit() -> None:
    fits = RecallFootprint(hnsw_bytes=60 * MB, rows_bytes=60 * MB, shared_buffers_bytes=128 * MB)
    assert recall_footprint_check(fits).status is Status.OK and not recall_footprint_check(fits).fix
    tight = RecallFootprint(hnsw_bytes=100 * MB, rows_bytes=60 * MB, shared_buffers_bytes=128 * MB)
    assert recall_footprint_check(tight).status is Status.WARN
    assert "'160MB'" in recall_footprint_check(tight).fix
