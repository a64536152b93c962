"""-o scan_parallel=N: listings read as key ranges in parallel (src/table/split.c)
and partition listings fetched ahead of a walk (src/store/prefetch.c).

Checked against the official SDK (azure.data.tables): every listing
complete and in the service's order with the default, request counts with
scan_parallel=1 those of one sequential scan and with the default within
the documented bound (one request more per range made), no request left
running after a walk is abandoned, nothing lost under injected faults."""

import ctypes
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aztfs_names import dir_name, file_name
from conftest import conn_str_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import FaultProxy  # noqa: E402

# Also against the Cosmos DB for Table model (issue 42; conftest.py backend).
pytestmark = pytest.mark.backends

BIG = "spBig"           # 6 partitions of 2100 entities: named one query each
ONE = "spOne"           # 1 partition of 2500 entities
MANY = "spMany"         # 500 partitions of 2 entities: one full scan
TWENTY = "spTwenty"     # 20 partitions, the first of 2000 entities (so they are
                        # named one query each and fetched ahead), then 60 each
ODD = "spOdd"           # awkward keys, one long shared prefix
EDGE = "spEdge"         # 4 partitions of 1000 entities, awkward keys: every
                        # page ends where a partition does
LONG = "spLong"         # 14 partitions with 240-character names (the first
                        # of 2000 entities, the others of 300): one readdir
                        # of 1 KiB holds 3 of them
P_BIG, PER_BIG = 6, 2100
ODD_PKS = ["a b", "caf\u00e9 %41", "x'y~z", "\u00fc\u00f1-\u4e2d"]
PREFIX = "k" * 180


@pytest.fixture(scope="module")
def tables(sdk, seed):
    t = seed.table(sdk, BIG)
    seed.insert(t, [{"PartitionKey": "p%02d" % p, "RowKey": "r%05d" % i, "v": "big %d.%d" % (p, i)}
                    for p in range(P_BIG) for i in range(PER_BIG)])
    t = seed.table(sdk, ONE)
    seed.insert(t, [{"PartitionKey": "only", "RowKey": "r%05d" % i, "v": i} for i in range(2500)])
    t = seed.table(sdk, TWENTY)
    seed.insert(t, [{"PartitionKey": "t%02d" % p, "RowKey": "r%05d" % i, "v": i}
                    for p in range(20) for i in range(2000 if p == 0 else 60)])
    t = seed.table(sdk, MANY)
    seed.insert(t, [{"PartitionKey": "m%03d" % p, "RowKey": "r%d" % i, "v": p}
                    for p in range(500) for i in range(2)])
    t = seed.table(sdk, LONG)
    seed.insert(t, [{"PartitionKey": "L" * 240 + "%02d" % p, "RowKey": "r%05d" % i, "v": i}
                    for p in range(14) for i in range(2000 if p == 0 else 300)])
    t = seed.table(sdk, EDGE)
    seed.insert(t, [{"PartitionKey": pk, "RowKey": "r'%04d \u00e9" % i, "v": i}
                    for pk in ODD_PKS for i in range(1000)])
    t = seed.table(sdk, ODD)
    rows = []
    for n, pk in enumerate(ODD_PKS):
        for i in range(2000):
            rk = (PREFIX + "%04d" % i) if n == 0 else "r %04d\u00e9%s" % (i, "'!" if i % 7 else "")
            rows.append({"PartitionKey": pk, "RowKey": rk, "v": i})
    seed.insert(t, rows)
    return sdk


def read_dir_once(fd, size):
    """One getdents64(2) of SIZE bytes on FD (os.scandir reads with a buffer
    that takes a whole small directory at once); bytes returned."""
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(size)
    n = libc.syscall(217 if platform.machine() == "x86_64" else 61, fd, buf, size)
    assert n >= 0, os.strerror(ctypes.get_errno())
    return n


def stats(mnt):
    return json.loads(os.getxattr(str(mnt), "user.aztfs.stats"))


def sdk_tree(sdk, table):
    """[(partition dir name, [file names in order])] in the service's order."""
    out = []
    for e in sdk.get_table_client(table).list_entities():
        d, f = dir_name(e["PartitionKey"]), file_name(e["RowKey"])
        if not out or out[-1][0] != d:
            out.append((d, []))
        out[-1][1].append(f)
    return out


def mount_tree(top):
    """The same, as readdir hands the names out (os.listdir keeps its order)."""
    return [(d, os.listdir(os.path.join(top, d))) for d in os.listdir(top)]


@pytest.mark.parametrize("table", [ONE, BIG, TWENTY, MANY, ODD, EDGE])
def test_default_listings_are_complete_and_in_the_sdks_order(tables, mounter, table, backend):
    mnt = mounter.mount(options=["-o", "loglevel=debug"])
    top = os.path.join(str(mnt), table)
    assert mount_tree(top) == sdk_tree(tables, table)
    # more than a page: cut into ranges, where the service sorts (Cosmos DB
    # does not: one query following its continuation, never a cut)
    if table in (ONE, BIG, TWENTY, ODD, EDGE) and not backend.cosmos:
        assert "fetched in parallel" in mnt.stderr()
    else:                       # one page: one request
        assert "fetched in parallel" not in mnt.stderr()
    # the second walk is answered from the cache
    before = stats(mnt)["requests"]
    assert mount_tree(top) == sdk_tree(tables, table)
    assert stats(mnt)["requests"] == before


@pytest.mark.azurite_only(reason="the key-range split it counts is made only where the "
                          "service sorts (Cosmos DB does not: table_client_ordered)")
def test_one_big_partition_is_read_as_row_ranges(tables, mounter, sh):
    """A table of one partition of three pages: after its first page the
    rest of the partition is cut into RowKey ranges fetched in parallel; one
    request more per range made, no page read twice."""
    counts, logs = [], []
    for opts in ("scan_parallel=1", "scan_parallel=4"):
        mnt = mounter.mount(options=["-o", opts + ",loglevel=debug"])
        before = stats(mnt)["requests"]
        assert len(sh(["find", os.path.join(str(mnt), ONE), "-type", "f"]).lines()) == 2500
        counts.append(stats(mnt)["requests"] - before)
        made = mnt.ranges_made()
        mnt.unmount(check=True)
        logs.append(mnt.stderr())
    assert "fetched in parallel" not in logs[0]
    assert "RowKey%20gt%20%27r00999%27%20and%20RowKey%20lt%20%27r02000%27" in logs[1]
    assert counts[0] < counts[1] <= counts[0] + made, (counts, made)


@pytest.mark.azurite_only(reason="the key-range split it counts is made only where the "
                          "service sorts (Cosmos DB does not: table_client_ordered)")
def test_pages_ending_with_a_partition_send_no_empty_query(tables, mounter, sh):
    """Pages that end where a partition does (4 partitions of 1000): the
    rest of that partition and the partitions up to the next cut are one
    range, "PartitionKey ge P and PartitionKey lt Q and (PartitionKey gt P
    or RowKey gt R)" (quotes doubled in P and R), not a query for the rest
    of P alone (an empty answer). The walk lists what the SDK lists, with at
    most one request a range made more than scan_parallel=1 sends."""
    counts = []
    for opts in ("scan_parallel=1", "scan_parallel=4"):
        mnt = mounter.mount(options=["-o", opts + ",loglevel=debug"])
        before = stats(mnt)["requests"]
        top = os.path.join(str(mnt), EDGE)
        assert mount_tree(top) == sdk_tree(tables, EDGE)
        counts.append(stats(mnt)["requests"] - before)
        made = mnt.ranges_made()
        mnt.unmount(check=True)
    log = mnt.stderr()
    # the first page ends with "a b": the keys after ("a b", "r'0999 e")
    assert ("%20and%20%28PartitionKey%20gt%20%27a%20b%27%20or%20RowKey%20gt%20%27r%27%270999"
            in log), log
    assert "PartitionKey%20eq" not in log
    assert 0 < made and counts[1] <= counts[0] + made, (counts, made)


def test_scan_parallel_1_is_one_sequential_scan(tables, mounter, sh):
    mnt = mounter.mount(options=["-o", "scan_parallel=1,loglevel=debug"])
    before = stats(mnt)["requests"]
    files = sh(["find", os.path.join(str(mnt), BIG), "-type", "f"]).lines()
    assert len(files) == P_BIG * PER_BIG
    total = stats(mnt)["requests"] - before
    # one scan of the table (its pages, maybe one empty last page) and the
    # existence check of the table
    assert total <= math.ceil(P_BIG * PER_BIG / 1000) + 2, total
    assert "fetched in parallel" not in mnt.stderr()


def test_default_walk_stays_within_the_documented_bound(tables, mounter, sh, backend):
    mnt = mounter.mount(options=["-o", "loglevel=debug"])
    before = stats(mnt)
    files = sh(["find", os.path.join(str(mnt), BIG), "-type", "f"]).lines()
    assert len(files) == len(set(files)) == P_BIG * PER_BIG
    after = stats(mnt)
    total = after["requests"] - before["requests"]
    assert after["requests_by_kind"]["get_entity"] == before["requests_by_kind"]["get_entity"]
    # one sequential scan (ceil(N/1000) + 2) plus the documented cost of
    # the ranges: one request more per range made, 64 ranges at most
    made = mnt.ranges_made()
    assert made == 0 if backend.cosmos else 0 < made <= 64, made   # Cosmos DB: no cut
    assert total <= math.ceil(P_BIG * PER_BIG / 1000) + 2 + made, (total, made)


def test_two_walkers_share_the_fetches(tables, mounter):
    """The table's listing, read as ranges in parallel, caches every
    partition's: two finds of the table at once then send nothing."""
    mnt = mounter.mount(options=["-o", "loglevel=debug"])
    top = os.path.join(str(mnt), BIG)
    os.listdir(top)                    # the table's listing: both walkers share it
    before = stats(mnt)["requests"]
    procs = [subprocess.Popen(["find", top, "-type", "f"], stdout=subprocess.PIPE)
             for _ in range(2)]
    outs = [p.communicate(timeout=60)[0].decode().split() for p in procs]
    assert all(len(o) == P_BIG * PER_BIG for o in outs)
    assert stats(mnt)["requests"] == before


def test_abandoned_walk_leaves_no_request_running(tables, mounter, azurite):
    """A directory closed after one small readdir (2-3 of its partitions
    handed out), its ranges still being fetched (0.2 s a request): the
    requests under way finish, nothing more is sent."""
    with FaultProxy(azurite.port, rate=0.0, delay=0.2) as px:
        mnt = mounter.mount(conn_str=conn_str_for(px.port), options=["-o", "loglevel=debug"])
        top = os.path.join(str(mnt), LONG)
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
        try:
            n = read_dir_once(fd, 1024)
        finally:
            os.close(fd)               # closed before the end: the query stops
        assert n > 0
        time.sleep(1.0)                # a page under way finishes
        settled = stats(mnt)["requests"]
        time.sleep(2)
        assert stats(mnt)["requests"] == settled
        log = mnt.stderr()
        assert "query stopped before its end" in log, "\n".join(
            l[:60] + l[-90:] for l in log.splitlines())
        # and the walk after it still sees everything, in the service's order
        assert mount_tree(top) == sdk_tree(tables, LONG)


@pytest.mark.parametrize("table", [BIG, EDGE])
def test_faults_during_parallel_fetches_lose_nothing(tables, mounter, sh, azurite, table):
    px = FaultProxy(azurite.port, rate=0.0, seed=20261123, weights={"stall": 0, "stall_after": 0})
    px.start()
    try:
        m = mounter.mount(conn_str=conn_str_for(px.port),
                          options=["-o", "timeout=5,retries=8,scan_parallel=8"])
        px.set_faults(rate=0.2)
        top = os.path.join(str(m), table)
        got = None
        for _ in range(5):        # a walk that hit a fault after its retries is run again
            r = sh(["find", top, "-type", "f"], check=False)
            if r.returncode == 0:
                got = sorted(r.lines())
                break
        px.set_faults(rate=0.0)
        assert got is not None, "every walk failed"
        want = sorted(os.path.join(top, d, f) for d, fs in sdk_tree(tables, table) for f in fs)
        assert got == want
        assert mount_tree(top) == sdk_tree(tables, table)
        assert px.injected() > 0, "no fault was injected"
    finally:
        px.stop()


def test_unmount_while_fetching_ahead_is_clean(tables, mounter, sh, azurite):
    """ls of a table hands out its partitions, which are then fetched ahead
    (slowly: 0.3 s a request); unmounting then stops the fetch and aztfs
    exits 0 (the mounter checks the exit status and the sanitizer report)."""
    with FaultProxy(azurite.port, rate=0.0, delay=0.3) as px:
        m = mounter.mount(conn_str=conn_str_for(px.port), options=["-o", "loglevel=debug"])
        assert len(sh(["ls", os.path.join(str(m), BIG)]).lines()) == P_BIG
        t0 = time.monotonic()
        m.unmount(check=True)
        assert time.monotonic() - t0 < 5
        assert "filter=PartitionKey%20eq%20%27p0" in m.stderr()   # they were under way


@pytest.mark.parametrize("opt,value", [("scan_parallel", "0"), ("scan_parallel", "65"),
                                       ("scan_parallel", "x"), ("fetch_threads", "0"),
                                       ("fetch_threads", "1025"), ("fetch_threads", "x")])
def test_out_of_range_is_refused(azurite, tmp_path, aztfs_run, opt, value):
    from conftest import aztfs_env
    res = aztfs_run(["-f", "-o", "%s=%s" % (opt, value), str(tmp_path)],
                    aztfs_env(azurite.conn_str))
    assert res.returncode != 0
    assert opt in res.stderr, res.stderr


def test_help_names_scan_parallel(aztfs_run):
    res = aztfs_run(["--help"], dict(os.environ))
    assert "scan_parallel=N" in res.stdout + res.stderr


@pytest.mark.parametrize("ways", [2, 4, 8])
def test_walks_against_a_parallel_server_are_complete(mounter, sh, ways):
    """Against bench/memtable.py, which answers requests at once and in
    parallel (Azurite answers one at a time), pages come back out of order
    and ahead of the reader: the walk of a 20-partition, a one-partition and
    an 8-partition table (pages ending with partitions), each read three times on fresh mounts, ends and lists what a
    sequential scan (scan_parallel=1) of the same server lists, in its order."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from memtable import MemTable

    srv = MemTable({"par20": (8000, 20), "par01": (8000, 1), "par08": (8000, 8)}, delay=0.0)
    try:
        cs = conn_str_for(srv.port)
        want = {}
        seq = mounter.mount(conn_str=cs, options=["-o", "scan_parallel=1"])
        for t in ("par20", "par01", "par08"):
            want[t] = sh("find '%s/%s' -type f" % (seq, t)).stdout.split("\n")
            assert len(want[t]) == 8000 + 1, t         # the last line is empty
        for _ in range(3):
            mnt = mounter.mount(conn_str=cs, options=["-o", "scan_parallel=%d" % ways])
            for t in ("par20", "par01", "par08"):
                got = sh("find '%s/%s' -type f" % (mnt, t), timeout=60).stdout
                assert got.replace(str(mnt), str(seq)).split("\n") == want[t], (t, ways)
    finally:
        srv.close()


def test_a_partition_going_on_past_a_token_it_cannot_read_is_read_whole(mounter, sh):
    """Against memtable sending continuation tokens aztfs cannot read a key
    from (a service whose tokens are its own): pages of 1,000 end inside
    partitions of 1,500, and as the token does not name the partition, the
    rest of it goes with the partitions after it in one range ("... and
    (PartitionKey gt P or RowKey gt R)"), which reads the 500 rows left.
    The walk lists what a sequential walk of the same server lists, in its
    order, with 2, 4 and 8 ways."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from memtable import MemTable

    srv = MemTable({"opq06": (9000, 6)}, delay=0.0, opaque_tokens=True)
    try:
        cs = conn_str_for(srv.port)
        seq = mounter.mount(conn_str=cs, options=["-o", "scan_parallel=1"])
        want = sh("find '%s/opq06' -type f" % seq).stdout.split("\n")
        assert len(want) == 9000 + 1                 # the last line is empty
        for ways in (2, 4, 8):
            mnt = mounter.mount(conn_str=cs,
                                options=["-o", "loglevel=debug,scan_parallel=%d" % ways])
            got = sh("find '%s/opq06' -type f" % mnt, timeout=60).stdout
            assert got.replace(str(mnt), str(seq)).split("\n") == want, ways
            mnt.unmount(check=True)
            assert "%20or%20RowKey%20gt%20" in mnt.stderr(), ways
    finally:
        srv.close()


LISTING_THREADS = ("aztfs-split", "aztfs-page", "aztfs-prefetch")


def listing_threads(pid):
    """How many of process PID's threads fetch listings now."""
    n = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                n += f.read().strip() in LISTING_THREADS
        except OSError:         # the thread ended meanwhile
            pass
    return n


def busy_listings(mnt, out_dir):
    """Two exports and a walk at once, each of which would start threads of
    its own (a split's fetchers, a cursor's page thread, the prefetchers
    and their pipelines); samples the mount's listing threads meanwhile.
    Returns (the lines each produced, the most threads seen at once)."""
    top = str(mnt)
    cmds = [["cat", os.path.join(top, t, ".ndjson")] for t in (BIG, ONE)]
    cmds.append(["find", os.path.join(top, TWENTY), "-type", "f"])
    outs = [open(os.path.join(str(out_dir), "out%d" % i), "w+b") for i in range(len(cmds))]
    procs = [subprocess.Popen(c, stdout=o) for c, o in zip(cmds, outs)]
    most, deadline = 0, time.monotonic() + 120
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        most = max(most, listing_threads(mnt.proc.pid))
        time.sleep(0.005)
    assert [p.wait(timeout=1) for p in procs] == [0] * len(procs)
    counts = []
    for o in outs:
        o.seek(0)
        counts.append(len(o.read().splitlines()))
        o.close()
    return counts, most


def test_fetch_threads_bounds_every_listing_thread_together(tables, mounter, tmp_path):
    """-o fetch_threads=N bounds the listing threads of the whole mount,
    every kind together: a listing that finds no place free is fetched by
    its reader, so it is still complete. With the default the same work
    starts more than 3 at once."""
    want = [P_BIG * PER_BIG, 2500, 2000 + 19 * 60]
    mnt = mounter.mount(options=["-o", "scan_parallel=8,fetch_threads=3"])
    counts, most = busy_listings(mnt, tmp_path)
    th = stats(mnt)["threads"]
    assert counts == want
    assert most <= 3 and th["limit"] == 3 and th["peak"] <= 3, (most, th)
    assert th["refused"] > 0, th
    mnt = mounter.mount(options=["-o", "scan_parallel=8"])
    counts, most = busy_listings(mnt, tmp_path)
    th = stats(mnt)["threads"]
    assert counts == want
    assert th["limit"] == 128 and th["peak"] > 3 and th["refused"] == 0, th
