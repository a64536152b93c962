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
  used to fetch four at once, more than the cache holds;
- 30 partitions of two pages in a 4 MiB cache, one page at a time: the
  listings of the partitions walked used to be kept before any entity
  until they held half the cache, so rsync, which lists the next partition
  while it reads one, found the one it read evicted (131 requests for a
  bound of 90; 1,917 for 1,100 at 1M in 100 partitions and the default
  cache). A listing now stays only while entities of its directory are
  cached or read (cache_victim).

In both, the files a walk has read go first when the cache is full, not the
ones fetched ahead of it (cache_used_once)."""

import sys
from pathlib import Path

import pytest

from conftest import conn_str_for

SHAPES = {
    "one-page partitions": ("walkA", 50000, 50, []),
    "partitions of a prefetch budget": ("walkB", 40000, 8, ["-o", "cache_size=16"]),
    "listings of partitions walked": ("walkC", 60000, 30, ["-o", "cache_size=4,scan_parallel=1"]),
}


@pytest.fixture(scope="module")
def server():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from memtable import MemTable

    srv = MemTable({t: (n, p) for t, n, p, _ in SHAPES.values()}, delay=0.0)
    yield srv
    srv.close()


@pytest.mark.parametrize("walk", ["grep", "tar", "rsync"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_walk_reading_every_file_fetches_each_page_once(server, mounter, sh, tmp_path, shape,
                                                        walk):
    table, n, parts, opts = SHAPES[shape]
    # The listings' freshness (30 s by default) is longer than the walk on a
    # quick machine, not on a slow one (under ASan a walk takes minutes): a
    # listing fetched ahead that expires before the walk reaches it is fetched
    # again. What this test counts is the walk's design, not the clock, so
    # nothing expires during it.
    mnt = mounter.mount(conn_str=conn_str_for(server.port),
                        options=opts + ["-o", "cache_timeout=3600"])
    before = mnt.stats()["requests"]
    root = "%s/%s" % (mnt, table)
    if walk == "grep":
        out = sh("grep -r -c '\"PartitionKey\"' '%s' | wc -l" % root, timeout=300).stdout
        assert int(out) == n
    elif walk == "rsync":
        out = sh("rsync -a '%s/' '%s/' && find '%s' -type f | wc -l"
                 % (root, tmp_path / "copy", tmp_path / "copy"), timeout=300).stdout
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
