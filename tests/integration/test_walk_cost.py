"""A walk that reads every file of a table larger than the cache fetches
each page once (doc/PERFORMANCE.md, "Scale"): at most ceil(N/1000) + P
requests and a few more, however the partitions compare with the cache.

Served by bench/memtable.py, which answers at once and in parallel (as the
service's many partition servers do; Azurite answers one request at a time,
and seeding it with 50,000 entities would take minutes). Two shapes:

- partitions of one page each, 50,000 entities in the default 32 MiB cache
  (about 40 MiB as cached): the partitions fetched ahead of the walk used to
  be counted without their last page, so the pool fetched every partition at
  once and the walk's own reads found them evicted, one read-ahead each;
- partitions of five pages in a 16 MiB cache (the smallest prefetch runs
  with): one partition is about the prefetch budget, and the pool's workers
  used to fetch four at once, more than the cache holds.

In both, the files a walk has read go first when the cache is full, not the
ones fetched ahead of it (cache_used_once)."""

import sys
from pathlib import Path

import pytest

from conftest import conn_str_for

SHAPES = {
    "one-page partitions": ("walkA", 50000, 50, []),
    "partitions of a prefetch budget": ("walkB", 40000, 8, ["-o", "cache_size=16"]),
}


@pytest.fixture(scope="module")
def server():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from memtable import MemTable

    srv = MemTable({t: (n, p) for t, n, p, _ in SHAPES.values()}, delay=0.0)
    yield srv
    srv.close()


@pytest.mark.parametrize("walk", ["grep", "tar"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_walk_reading_every_file_fetches_each_page_once(server, mounter, sh, shape, walk):
    table, n, parts, opts = SHAPES[shape]
    mnt = mounter.mount(conn_str=conn_str_for(server.port), options=opts)
    before = mnt.stats()["requests"]
    root = "%s/%s" % (mnt, table)
    if walk == "grep":
        out = sh("grep -r -c '\"PartitionKey\"' '%s' | wc -l" % root, timeout=300).stdout
        assert int(out) == n
    else:
        out = sh("cd '%s' && tar -cf - . | tar -tf - | grep -c 'json$'" % root,
                 timeout=300).stdout
        assert int(out) == n
    st = mnt.stats()
    sent = st["requests"] - before
    bound = -(-n // 1000) + parts
    # the table's listing stops at half the cache with key ranges still in
    # flight: the partition it stopped in is fetched again, whole
    assert sent <= bound + 12, (shape, walk, sent, bound, st["requests_by_kind"])
    assert st["requests_by_kind"]["get_entity"] == 0, st["requests_by_kind"]
