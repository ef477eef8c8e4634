"""`thoth doctor` on the HNSW index against PostgreSQL's shared_buffers."""

from bridge.doctor import Status, recall_memory_check
from layers.episodic.pg_search import IndexMemory

MB = 2**20


def test_an_index_larger_than_shared_buffers_is_a_warning_naming_the_setting() -> None:
    check = recall_memory_check(IndexMemory(index_bytes=1953 * MB, shared_buffers_bytes=128 * MB))
    assert check.status is Status.WARN
    assert "HNSW index 1953 MB, shared_buffers 128 MB" in check.detail
    # A quarter more than the index, as the README's Deployment says.
    assert "ALTER SYSTEM SET shared_buffers = '2441MB'" in check.fix


def test_an_index_with_a_quarter_to_spare_is_ok_and_one_without_is_not() -> None:
    check = recall_memory_check(IndexMemory(index_bytes=100 * MB, shared_buffers_bytes=128 * MB))
    assert check.status is Status.OK and not check.fix
    tight = recall_memory_check(IndexMemory(index_bytes=120 * MB, shared_buffers_bytes=128 * MB))
    assert tight.status is Status.WARN and "'150MB'" in tight.fix
