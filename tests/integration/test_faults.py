"""Fault injection: aztfs mounted through tests/faultproxy.py, which fails
about 20% of the requests (500/503, resets, stalls, truncated answers; some
before the request reaches Azurite, some after it was applied).

What must hold (the SDK checks go straight to Azurite, not through the proxy):
  (a) rsync -a of a table through the faulty mount exits 0 and the copy is
      identical to the table as a clean mount shows it;
  (b) no read through the faulty mount fails (in particular never ENOENT for
      an entity that exists);
  (c) a write either succeeds and the entity holds exactly the new content,
      or fails and the entity is unchanged; never a success with other
      content, never a partial entity;
  (d) unmounting works while the backend stalls.
The proxy's RNG is seeded (FAULT_SEED, default 20261122) so a failing run can
be replayed; the counts of injected faults are printed with -s / on failure.
"""

import email.utils
import errno
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import conn_str_for, unmount_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import FaultProxy  # noqa: E402

TABLE = "faulty"
PARTITIONS = ["alpha", "beta", "gamma", "delta", "eps ilon"]
PER_PARTITION = 60                      # 300 entities
RATE = float(os.environ.get("FAULT_RATE", "0.2"))
SEED = int(os.environ.get("FAULT_SEED", "20261122"))
TIMEOUT = 2                             # aztfs -o timeout (seconds)
STALL = TIMEOUT + 2                     # a stall outlasts one aztfs request
# Stalls cost a whole timeout each: keep them a small part of the mix.
WEIGHTS = {"stall": 0.5, "stall_after": 0.5}
MOUNT_OPTS = ["-o", "timeout=%d,connect_timeout=2,retries=6,cache_timeout=1" % TIMEOUT]

SYSTEM = ("PartitionKey", "RowKey", "Timestamp")


def entity_props(e):
    """An SDK entity as a plain dict of its custom properties."""
    return {k: v for k, v in dict(e).items() if k not in SYSTEM}


def by_value(props):
    """PROPS with SDK values (Int64 comes back as an EntityProperty) by value."""
    return {k: (v.value if hasattr(v, "value") else v) for k, v in props.items()}


@pytest.fixture(scope="module")
def table(sdk):
    try:
        sdk.delete_table(TABLE)
    except Exception:
        pass
    from azure.data.tables import EdmType, EntityProperty
    tc = sdk.create_table(TABLE)
    ents = []
    for pk in PARTITIONS:
        for i in range(PER_PARTITION):
            ents.append({"PartitionKey": pk, "RowKey": "r%04d" % i, "n": i,
                         "name": "entity %s/%d" % (pk, i), "big": EntityProperty(2 ** 40 + i, EdmType.INT64),
                         "ratio": i / 7.0, "flag": i % 2 == 0,
                         "text": ("caf\u00e9 %d " % i) * (1 + i % 20)})
    by_pk = {}
    for e in ents:
        by_pk.setdefault(e["PartitionKey"], []).append(e)
    for pk, es in by_pk.items():
        for i in range(0, len(es), 100):
            tc.submit_transaction([("upsert", e) for e in es[i:i + 100]])
    return tc


@pytest.fixture
def proxy(azurite):
    px = FaultProxy(azurite.port, rate=0.0, seed=SEED, weights=WEIGHTS, stall=STALL)
    px.start()
    yield px
    px.stop()
    sys.stderr.write("faultproxy counts: %s\n" % px.counts())


def faulty_mount(mounter, px, opts=MOUNT_OPTS):
    """Mount through the proxy (no faults while mounting), then turn faults on."""
    px.set_faults(rate=0.0)
    m = mounter.mount(conn_str=conn_str_for(px.port), options=opts)
    px.set_faults(rate=RATE)
    return m


def tree(root):
    """{relative path: bytes} of every file under ROOT, and the dir list."""
    files, dirs = {}, []
    for dp, dn, fn in os.walk(root):
        rel = os.path.relpath(dp, root)
        dirs.append(rel)
        for f in fn:
            with open(os.path.join(dp, f), "rb") as fh:
                files[os.path.normpath(os.path.join(rel, f))] = fh.read()
    return files, sorted(dirs)


def expected_names():
    return {os.path.join(pk, "r%04d.json" % i) for pk in PARTITIONS
            for i in range(PER_PARTITION)}


# ---------------------------------------------------------------------------
def test_rsync_backup_through_faults(table, mounter, proxy, tmp_path, sh):
    clean = mounter.mount()                        # straight to Azurite
    want, want_dirs = tree(os.path.join(clean, TABLE))
    assert set(want) == expected_names()

    m = faulty_mount(mounter, proxy)
    # One table scan fills the cache with every entity, so one rsync sends
    # only a couple of requests: run passes (cache TTL 1 s expired between
    # them) until enough faults hit them. Every pass must succeed.
    passes = 0
    t_end = time.monotonic() + 60
    while passes < 3 or (proxy.injected() < 5 and time.monotonic() < t_end):
        passes += 1
        dest = tmp_path / ("backup%d" % passes)
        t0 = time.monotonic()
        r = sh(["rsync", "-a", os.path.join(m, TABLE) + "/", str(dest) + "/"],
               check=False, timeout=150)
        took = time.monotonic() - t0
        counts = proxy.counts()
        assert r.returncode == 0, ("rsync pass %d through the faulty mount failed "
                                   "(%.1f s, faults so far %s):\n%s"
                                   % (passes, took, counts, r.stderr[-3000:]))
        got, got_dirs = tree(dest)
        assert got_dirs == want_dirs
        assert sorted(got) == sorted(want)
        bad = [p for p in want if got[p] != want[p]]
        assert not bad, "%d files differ from the clean mount, e.g. %s:\n%r\nvs\n%r" % (
            len(bad), bad[0], got[bad[0]][:400], want[bad[0]][:400])
        time.sleep(1.1)
    counts = proxy.counts()
    proxy.set_faults(rate=0.0)
    # The content is the table's (SDK view): one spot check per partition.
    for pk in PARTITIONS:
        e = table.get_entity(pk, "r0007")
        doc = json.loads(got[os.path.join(pk, "r0007.json")])
        assert doc["name"] == e["name"] and doc["n"] == e["n"]
    assert proxy.injected() > 0, "the proxy injected no fault: %s" % counts


def test_reads_never_enoent(table, mounter, proxy):
    clean = mounter.mount()
    want, _ = tree(os.path.join(clean, TABLE))
    m = faulty_mount(mounter, proxy)
    failures = []
    for rel in sorted(want):
        path = os.path.join(m, TABLE, rel)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
            if data != want[rel]:
                failures.append((rel, "content differs: %r" % data[:200]))
        except OSError as e:
            failures.append((rel, "%s (%s)" % (e.strerror, e.errno)))
    counts = proxy.counts()
    proxy.set_faults(rate=0.0)
    enoent = [f for f in failures if "(2)" in f[1]]
    assert not enoent, "ENOENT for existing entities (faults %s): %s" % (counts, enoent[:10])
    assert not failures, "%d reads failed (faults %s): %s" % (len(failures), counts,
                                                              failures[:10])
    assert proxy.injected() > 0


def test_writes_all_or_nothing(table, mounter, proxy, sdk):
    m = faulty_mount(mounter, proxy)
    pk = "gamma"
    # Writes go through the mount; checks go to Azurite directly (sdk).
    outcomes = {"ok": 0, "error": 0}
    problems = []
    jobs = []
    for i in range(0, 40):
        rk = "r%04d" % i
        old = entity_props(table.get_entity(pk, rk))
        new = {"n": 1000 + i, "name": "rewritten %d" % i, "flag": True,
               "text": "x" * (100 + i)}
        jobs.append(("replace", rk, old, new))
    for i in range(15):
        jobs.append(("insert", "new%03d" % i, None, {"n": i, "name": "new %d" % i}))

    for kind, rk, old, new in jobs:
        path = os.path.join(m, TABLE, pk, rk + ".json")
        err = None
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(new, ensure_ascii=False) + "\n")
        except OSError as e:
            err = e
        try:
            cur = entity_props(table.get_entity(pk, rk))
        except Exception:
            cur = None
        cur_cmp = by_value(cur or {})
        if err is None:
            outcomes["ok"] += 1
            if cur_cmp != new:
                problems.append("%s %s: write reported success but the entity holds %r"
                                % (kind, rk, cur_cmp))
        else:
            outcomes["error"] += 1
            old_cmp = None if old is None else by_value(old)
            if cur_cmp != (old_cmp or {}) and not (old is None and cur is None):
                problems.append("%s %s: write failed (%s) but the entity changed to %r "
                                "(was %r)" % (kind, rk, err, cur_cmp, old_cmp))
    counts = proxy.counts()
    proxy.set_faults(rate=0.0)
    assert not problems, "faults %s, outcomes %s:\n%s" % (counts, outcomes,
                                                          "\n".join(problems))
    assert outcomes["ok"] > len(jobs) // 2, "too few writes succeeded: %s (faults %s)" % (
        outcomes, counts)
    assert proxy.injected() > 0


def test_unmount_while_backend_stalls(table, mounter, proxy, azurite, tmp_path):
    m = faulty_mount(mounter, proxy, ["-o", "timeout=%d,connect_timeout=2,retries=2,"
                                      "cache_timeout=1" % TIMEOUT])
    proxy.stall_secs = 60
    proxy.set_faults(rate=1.0, kinds=["stall"])
    # A reader blocked on the stalled backend.
    reader = subprocess.Popen(["cat", os.path.join(m, TABLE, "alpha", "r0001.json")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)
    t0 = time.monotonic()
    r = subprocess.run(["fusermount3", "-u", m.path], capture_output=True, timeout=30)
    if r.returncode != 0:
        # Busy (the reader holds it): a lazy unmount must still work.
        r = subprocess.run(["fusermount3", "-uz", m.path], capture_output=True, timeout=30)
    assert r.returncode == 0, "fusermount3 failed: %r" % (r.stderr,)
    try:
        m.proc.wait(20)
    except subprocess.TimeoutExpired:
        pass
    took = time.monotonic() - t0
    alive = m.proc.poll() is None
    try:
        reader.wait(20)
    except subprocess.TimeoutExpired:
        reader.kill()
        reader.wait()
    proxy.set_faults(rate=0.0)
    assert not alive, "aztfs still running %.0f s after the unmount" % took
    assert not os.path.ismount(m.path)
    m.unmount(check=True)   # exit status 0 and no sanitizer report


@pytest.mark.parametrize("retry_after", ["1", "30", "date+30"])
def test_retries_end_at_the_retry_deadline(table, mounter, proxy, retry_after):
    """With every request answered 503 + Retry-After, a read fails with EIO
    (not ENOENT) once the next retry would start past -o retry_time: after a
    few retries when Retry-After is short, at once when it is longer than the
    deadline (it is honoured, not cut short), and never after retries= ran out."""
    deadline = 3
    m = faulty_mount(mounter, proxy, ["-o", "timeout=%d,connect_timeout=2,retries=8,"
                                      "retry_time=%d,cache_timeout=1" % (TIMEOUT, deadline)])
    time.sleep(1.5)                    # the listing primed at mount has expired
    # "date+30": the HTTP-date form, 30 s from now
    proxy.retry_after = (email.utils.formatdate(time.time() + 30, usegmt=True)
                         if retry_after == "date+30" else retry_after)
    proxy.set_faults(rate=1.0, kinds=["503_retry"])
    t0 = time.monotonic()
    reader = subprocess.Popen(["cat", os.path.join(m, TABLE, "alpha", "r0001.json")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, err = reader.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        reader.kill()
        reader.communicate()
        pytest.fail("read still waiting after 20 s (retry deadline %d s)" % deadline)
    took = time.monotonic() - t0
    injected = proxy.counts().get("503_retry", 0)
    proxy.set_faults(rate=0.0)
    assert reader.returncode != 0
    assert b"Input/output error" in err, err
    log = m.stderr()
    assert "retry deadline" in log, log[-3000:]
    if retry_after == "1":
        # attempts 1 s apart while the next one starts within the deadline
        # (3 s): 3 or 4 attempts, the last about 2-3 s after the first
        assert 3 <= injected <= 8, (injected, took)
        assert deadline - 1.5 <= took < deadline + 5, (injected, took)
    else:
        # the first answer asks for 30 s, more than the deadline: no retry at all
        # (ignoring the date form would retry at once, and run into the deadline)
        assert injected == 1, (injected, took)
        assert took < deadline, (injected, took)


WRITE_METHODS = ["POST", "PUT", "MERGE", "DELETE"]


@pytest.mark.parametrize("kind", ["503_after", "reset_after"])
@pytest.mark.parametrize("op", ["insert", "replace", "delete", "rename"])
def test_applied_write_whose_answer_is_lost_succeeds(table, mounter, proxy, op, kind):
    """The service applies the write, the answer is lost (503 instead, or the
    connection reset): aztfs resends, meets 409/412/404 or a failed batch,
    reads the entity back and reports success because it holds the write."""
    pk = "settle"
    table.upsert_entity({"PartitionKey": pk, "RowKey": "old", "n": 1, "name": "before"})
    for rk in ("new", "renamed"):
        try:
            table.delete_entity(pk, rk)
        except Exception:
            pass
    m = faulty_mount(mounter, proxy)
    d = os.path.join(m, TABLE, pk)
    os.listdir(d)                                   # listed before the fault
    proxy.set_faults(rate=1.0, kinds=[kind], limit=1, methods=WRITE_METHODS)
    if op in ("insert", "replace"):
        rk = "new" if op == "insert" else "old"
        with open(os.path.join(d, rk + ".json"), "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"n": 2, "name": "after"}) + "\n")
        want = {rk: {"n": 2, "name": "after"}}
        gone = []
    elif op == "delete":
        os.unlink(os.path.join(d, "old.json"))
        want, gone = {}, ["old"]
    else:
        os.rename(os.path.join(d, "old.json"), os.path.join(d, "renamed.json"))
        want, gone = {"renamed": {"n": 1, "name": "before"}}, ["old"]
    injected = proxy.counts().get(kind, 0)
    proxy.set_faults(rate=0.0)
    assert injected == 1, proxy.counts()
    deadline = time.monotonic() + 10                # an insert commits at release
    while True:
        try:
            got = {rk: by_value(entity_props(table.get_entity(pk, rk))) for rk in want}
            missing = [rk for rk in gone if list(table.query_entities(
                "PartitionKey eq '%s' and RowKey eq '%s'" % (pk, rk)))]
            if got == want and not missing:
                break
        except Exception:
            pass
        assert time.monotonic() < deadline, "not settled: %s" % m.stderr()[-2000:]
        time.sleep(0.2)


def test_404_without_not_found_code_is_eio(table, mounter, proxy):
    """404 means ENOENT only when the service says ResourceNotFound (or
    TableNotFound, EntityNotFound); a 404 from anything else (a proxy, a
    wrong path) is EIO, and an rm answered so leaves the entity there."""
    pk = "notfound"
    table.upsert_entity({"PartitionKey": pk, "RowKey": "r", "n": 1})
    m = faulty_mount(mounter, proxy)
    d = os.path.join(m, TABLE, pk)
    os.listdir(d)
    proxy.set_faults(rate=1.0, kinds=["404"], methods=["DELETE"])
    with pytest.raises(OSError) as ei:
        os.unlink(os.path.join(d, "r.json"))
    assert ei.value.errno == errno.EIO, ei.value
    assert table.get_entity(pk, "r")["n"] == 1
    # one line: operation, path, status, the code it carried, attempts
    lines = [l for l in m.stderr().splitlines() if "error: delete" in l]
    assert len(lines) == 1, m.stderr()[-3000:]
    assert re.search(r"error: delete /%s/%s/r\.json failed: EIO \(Input/output error\) "
                     r"\(HTTP 404 InjectedFault: .*attempts 1\)$" % (TABLE, pk),
                     lines[0]), lines[0]
    time.sleep(1.5)                                 # past cache_timeout=1
    proxy.set_faults(rate=1.0, kinds=["404"])
    with pytest.raises(OSError) as ei:
        with open(os.path.join(d, "r.json"), "rb") as fh:
            fh.read()
    proxy.set_faults(rate=0.0)
    assert ei.value.errno == errno.EIO, ei.value
    assert proxy.counts().get("404", 0) >= 2
