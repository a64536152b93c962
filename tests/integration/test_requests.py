"""Requests at the protocol minimum, counted by the mount itself (the
user.aztfs.stats extended attribute): a listing answers every later stat and
read, and a whole-table walk costs one scan."""

import json
import math
import os
import signal
import subprocess
import time

import pytest

N_BIG = 2500          # one partition, three pages
P_WIDE = 12           # partitions of the wide table
N_WIDE = 1800         # entities of the wide table, spread over P_WIDE partitions
BIG = "reqBig"
WIDE = "reqWide"


@pytest.fixture(scope="module")
def seeded(sdk, seed):
    t = seed.table(sdk, BIG)
    seed.insert(t, [{"PartitionKey": "p", "RowKey": "r%05d" % i, "v": "value %d" % i}
                    for i in range(N_BIG)])
    t = seed.table(sdk, WIDE)
    seed.insert(t, [{"PartitionKey": "part%02d" % (i % P_WIDE), "RowKey": "r%05d" % i,
                     "v": "wide %d" % i} for i in range(N_WIDE)])
    return True


def stats(mnt):
    raw = os.getxattr(str(mnt), "user.aztfs.stats")
    return json.loads(raw)


def delta(before, after):
    kinds = {k: after["requests_by_kind"][k] - before["requests_by_kind"][k]
             for k in after["requests_by_kind"]}
    return after["requests"] - before["requests"], kinds


def test_stats_attribute_is_json_and_hidden(seeded, mounter, sh):
    mnt = mounter.mount()
    s = stats(mnt)
    for key in ("requests", "requests_by_kind", "retries", "transport_errors",
                "responses", "bytes_in", "bytes_out", "cache"):
        assert key in s, key
    # mounting listed the tables once: the credentials check is that listing
    assert s["requests_by_kind"]["list_tables"] == 1
    # not listed: rsync -X / cp --preserve=xattr copy nothing from the mount
    assert os.listxattr(str(mnt)) == []
    # other attributes: ENODATA for user.*, ENOTSUP for security.*/system.*
    with pytest.raises(OSError) as e:
        os.getxattr(str(mnt), "user.other")
    assert e.value.errno == 61  # ENODATA
    with pytest.raises(OSError) as e:
        os.getxattr(os.path.join(str(mnt), BIG), "security.selinux")
    assert e.value.errno == 95  # ENOTSUP


def test_ls_l_of_a_partition_then_reads_cost_nothing(seeded, mounter, sh):
    mnt = mounter.mount(options=["-o", "loglevel=debug"])
    part = os.path.join(str(mnt), BIG, "p")
    before = stats(mnt)
    names = sh(["ls", "-l", part]).lines()[1:]          # drop "total N"
    assert len(names) == N_BIG
    mid = stats(mnt)
    total, kinds = delta(before, mid)
    # the bound, plus one request per key range of -o scan_parallel
    assert total <= math.ceil(N_BIG / 1000) + 1 + mnt.ranges_made(), (total, kinds)
    assert kinds["get_entity"] == 0
    # within the cache lifetime: cat, grep, stat of every file send nothing
    sh("cat %s/* > /dev/null" % part)
    sh(["grep", "-rq", "value 2499", part])
    sh("stat %s/* > /dev/null" % part)
    total2, kinds2 = delta(mid, stats(mnt))
    assert total2 == 0, kinds2


@pytest.mark.parametrize("walk", ["grep", "find", "rsync"])
def test_whole_table_walk_is_one_scan(seeded, mounter, sh, tmp_path, walk):
    mnt = mounter.mount(options=["-o", "loglevel=debug"])
    table = os.path.join(str(mnt), WIDE)
    before = stats(mnt)
    if walk == "grep":
        r = sh(["grep", "-rl", "wide 1799", table])
        assert len(r.lines()) == 1
    elif walk == "find":
        r = sh(["find", table, "-type", "f"])
        assert len(r.lines()) == N_WIDE
    else:
        dest = tmp_path / "backup"
        sh(["rsync", "-a", table + "/", str(dest) + "/"])
        n = sum(len(files) for _, _, files in os.walk(dest))
        assert n == N_WIDE
    total, kinds = delta(before, stats(mnt))
    assert total <= math.ceil(N_WIDE / 1000) + P_WIDE + 2 + mnt.ranges_made(), (total, kinds)
    assert kinds["get_entity"] == 0, kinds


def test_sigusr1_logs_the_counters(seeded, mounter, sh):
    mnt = mounter.mount()
    sh(["ls", os.path.join(str(mnt), BIG)])
    os.kill(mnt.proc.pid, signal.SIGUSR1)
    deadline = time.time() + 5
    while time.time() < deadline and "stats {" not in mnt.stderr():
        time.sleep(0.1)
    line = [l for l in mnt.stderr().splitlines() if "stats {" in l]
    assert line, mnt.stderr()
    doc = json.loads(line[-1].split("stats ", 1)[1])
    assert doc["requests"] >= 2


def test_partition_larger_than_the_cache_streams_and_reads_ahead(sdk, seed, mounter, sh):
    """With a 1 MiB cache 2500 entities of about 800 bytes rendered cannot
    all stay cached. ls -l still gets every size from the listing, and
    grep -r, which reads them in listing order, costs a read-ahead of one
    page per run of evicted entities, never a point read per file."""
    t = seed.table(sdk, "reqFat")
    seed.insert(t, [{"PartitionKey": "p", "RowKey": "r%05d" % i,
                     "v": "value %d " % i + "x" * 600} for i in range(N_BIG)])
    mnt = mounter.mount(options=["-o", "cache_size=1,loglevel=debug"])
    part = os.path.join(str(mnt), "reqFat", "p")
    before = stats(mnt)
    lines = sh(["ls", "-l", part]).lines()[1:]
    assert len(lines) == N_BIG
    assert all(int(l.split()[4]) > 0 for l in lines), "a size missing from ls -l"
    total, kinds = delta(before, stats(mnt))
    assert total <= math.ceil(N_BIG / 1000) + 1 + mnt.ranges_made(), (total, kinds)
    assert stats(mnt)["cache"]["evictions"] > 0, "the cache was not too small"
    mid = stats(mnt)
    r = sh(["grep", "-rc", "value", part])
    counts = [l.rsplit(":", 1)[1] for l in r.lines()]
    assert len(counts) == N_BIG and set(counts) == {"1"}
    total2, kinds2 = delta(mid, stats(mnt))
    assert kinds2["get_entity"] == 0, kinds2
    # one read-ahead page per evicted run; a page is a quarter of the cache
    # at 1 KiB an entity (256 here), and a run may be cut short by eviction
    assert total2 <= 2 * math.ceil(N_BIG / 256), (total2, kinds2)
    assert stats(mnt)["cache"]["bytes"] <= 1 << 20


@pytest.mark.parametrize("walk", ["find", "grep", "rsync"])
def test_table_larger_than_the_cache_is_walked_within_the_bound(sdk, seed, mounter, sh,
                                                                tmp_path, walk):
    """A table that does not fit in the cache: the table scan stops once it
    has filled half of it and names the remaining partitions one query each
    ("PartitionKey gt LAST", $top=1), so that no partition is fetched twice.
    find, grep -r and rsync stay within ceil(N/1000) + P + 2 requests, and
    see every entity exactly once."""
    T, P, per = "reqHuge", 10, 1000        # about 7 MiB cached, in a 3 MiB cache
    if walk == "find":      # seeded once for the three walks
        t = seed.table(sdk, T)
        seed.insert(t, [{"PartitionKey": "q%d" % p, "RowKey": "r%05d" % i,
                         "v": "huge %d.%d " % (p, i) + "y" * 300}
                        for p in range(P) for i in range(per)])
    mnt = mounter.mount(options=["-o", "cache_size=3,loglevel=debug"])
    top = os.path.join(str(mnt), T)
    before = stats(mnt)
    if walk == "find":
        files = sh(["find", top, "-type", "f"]).lines()
        assert len(files) == len(set(files)) == P * per
    elif walk == "grep":
        r = sh(["grep", "-rc", "huge", top])
        counts = [l.rsplit(":", 1)[1] for l in r.lines()]
        assert len(counts) == P * per and set(counts) == {"1"}
    else:
        dest = tmp_path / "copy"
        sh(["rsync", "-a", top + "/", str(dest) + "/"])
        got = sorted(str(f.relative_to(dest)) for f in dest.rglob("*.json"))
        assert got == sorted("q%d/r%05d.json" % (p, i) for p in range(P) for i in range(per))
    total, kinds = delta(before, stats(mnt))
    assert kinds["get_entity"] == 0, kinds
    assert total <= math.ceil(P * per / 1000) + P + 2 + mnt.ranges_made(), (total, kinds)
    assert "naming the remaining partitions one query each" in mnt.stderr()
    assert stats(mnt)["cache"]["evictions"] > 0, "the cache was not too small"
