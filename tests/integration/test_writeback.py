"""Write-behind (-o writeback, issue 15): changes acknowledged once the
journal holds them, sent in entity group transactions of up to 100 per
partition; reads see queued changes; failed changes are kept and reported;
a crash loses nothing acknowledged. Checked through the official SDK and the
mount's own request counters (user.aztfs.stats)."""

import errno
import hashlib
import hmac
import json
import math
import os
import signal
import subprocess
import time

import pytest

from harness import FaultProxy, conn_str_for, fsync_dir, unmount_path
from test_restore import P, PER, SRC, backup, delta, kinds, rsync, sdk_state, writes

LONG = "writeback=60000"        # nothing goes out before an fsync or the unmount


def wb_options(tmp_path, extra=LONG):
    jdir = tmp_path / "journal"
    return ["-o", "%s,journal_dir=%s" % (extra, jdir)], jdir


def pending(mnt):
    return json.loads(os.getxattr(str(mnt), "user.aztfs.pending"))


def sync_all(mnt):
    """fsync of the mount's root: every queued change sent (or EIO)."""
    fsync_dir(mnt)


def sync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def put(path, obj):
    with open(path, "w") as f:
        f.write(json.dumps(obj))


def test_restore_sends_batches_and_sdk_sees_it_all(sdk, seed, mounter, tmp_path):
    bk = backup(sdk, seed, mounter, tmp_path)
    dst = "wbDst"
    # a delay that a partition's 70 files fit in however slow the writer
    # (the default 200 ms cut them into two or three batches under ASan)
    opts, _ = wb_options(tmp_path, "writeback=3000")
    mnt = mounter.mount(options=opts)
    n = P * PER
    before = kinds(mnt)
    os.mkdir(os.path.join(str(mnt), dst))
    rsync(bk, os.path.join(str(mnt), dst))
    sync_all(mnt)
    d = delta(before, kinds(mnt))
    assert pending(mnt)["queued"] == 0 and pending(mnt)["failed"] == 0
    # entity group transactions only: at most ceil(N/100) + P of them
    assert d.get("insert", 0) == 0 and d.get("get_entity", 0) == 0, d
    assert d.get("batch", 0) <= math.ceil(n / 100) + P, d
    assert sum(d.values()) <= math.ceil(n / 100) + 2 * P + 5, d
    mnt.unmount()
    want = {k: v[0] for k, v in sdk_state(sdk, SRC).items()}
    got = {k: v[0] for k, v in sdk_state(sdk, dst).items()}
    assert got == want          # types included
    # again through a fresh mount: nothing to write
    mnt = mounter.mount(options=opts)
    before = kinds(mnt)
    rsync(bk, os.path.join(str(mnt), dst))
    sync_all(mnt)
    assert writes(delta(before, kinds(mnt))) == 0


def test_reads_see_queued_changes_and_two_saves_merge(sdk, seed, mounter, tmp_path):
    t = seed.table(sdk, "wbSee")
    t.upsert_entity({"PartitionKey": "p", "RowKey": "old", "v": 1})
    opts, _ = wb_options(tmp_path)
    mnt = mounter.mount(options=opts)
    pdir = os.path.join(str(mnt), "wbSee", "p")
    assert os.listdir(pdir) == ["old.json"]     # listed: edited by the changes below
    put(os.path.join(pdir, "new.json"), {"v": 1})
    put(os.path.join(pdir, "new.json"), {"v": 2})      # merged with the first
    put(os.path.join(pdir, "old.json"), {"v": 5})
    os.unlink(os.path.join(pdir, "old.json"))           # a replace then a delete
    assert json.load(open(os.path.join(pdir, "new.json")))["v"] == 2
    assert sorted(os.listdir(pdir)) == ["new.json"]
    assert not os.path.exists(os.path.join(pdir, "old.json"))
    p = pending(mnt)
    assert p["queued"] == 2 and p["failed"] == 0, p
    # not sent yet: the service still has the old state
    assert [e["RowKey"] for e in t.list_entities()] == ["old"]
    before = kinds(mnt)
    sync_path(os.path.join(pdir, "new.json"))
    d = delta(before, kinds(mnt))
    assert d == {"batch": 1}, d
    assert [(e["RowKey"], e["v"]) for e in t.list_entities()] == [("new", 2)]
    # after it is sent the file keeps working: edit it again
    put(os.path.join(pdir, "new.json"), {"v": 3})
    sync_all(mnt)
    assert t.get_entity("p", "new")["v"] == 3


def new_partition(sdk, seed, mounter, tmp_path, table):
    """Table TABLE (made with the SDK), a write-behind mount with a long
    delay, and a partition directory made in it: (table client, mount,
    partition path)."""
    t = seed.table(sdk, table)
    mnt = mounter.mount(options=wb_options(tmp_path)[0])
    pdir = os.path.join(str(mnt), table, "p")
    os.mkdir(pdir)
    return t, mnt, pdir


def kill_mount(mnt):
    """kill -9 the daemon of MNT, then unmount what it left."""
    mnt.proc.send_signal(signal.SIGKILL)
    mnt.proc.wait(10)
    unmount_path(str(mnt))
    mnt.closed = True


def entities(t):
    return {e["RowKey"]: e.get("v") for e in t.list_entities()}


def test_kill_9_then_remount_sends_every_acknowledged_change(sdk, seed, mounter, tmp_path):
    t, mnt, pdir = new_partition(sdk, seed, mounter, tmp_path, "wbKill")
    for i in range(60):
        put(os.path.join(pdir, "r%03d.json" % i), {"v": i})
    sync_all(mnt)                               # these are on the service
    for i in range(60, 150):
        put(os.path.join(pdir, "r%03d.json" % i), {"v": i})
    for i in range(10):
        put(os.path.join(pdir, "r%03d.json" % i), {"v": 1000 + i})     # replaces
    os.unlink(os.path.join(pdir, "r020.json"))
    for i in range(150, 170):                   # inserts, in a listed partition
        put(os.path.join(pdir, "r%03d.json" % i), {"v": i})
    # (a listing fetched meanwhile sends its directory's queue first)
    assert pending(mnt)["queued"] >= 21
    kill_mount(mnt)                             # acknowledged, never sent
    want = {"r%03d" % i: (1000 + i if i < 10 else i) for i in range(170) if i != 20}
    assert entities(t) != want
    mnt2 = mounter.mount(options=wb_options(tmp_path)[0])     # sends the journal first
    assert entities(t) == want
    assert pending(mnt2) == dict(pending(mnt2), queued=0, failed=0)
    assert "90" not in "".join(mnt2.stderr().split("damaged")[1:])     # nothing torn
    mnt2.unmount()
    assert entities(t) == want                  # nothing sent twice or lost


def crash_with_the_batch_out(mnt, px, t, want):
    """Send MNT's queue through proxy PX, whose next batch the service
    applies but whose answer never comes; once table T holds WANT (the
    batch applied), kill -9 the daemon."""
    px.set_faults(rate=1.0, kinds=["stall_after"], methods=["POST"])
    fd = os.open(str(mnt), os.O_RDONLY | os.O_DIRECTORY)
    pid = os.fork()
    if pid == 0:                                # the fsync hangs on the stalled batch
        try:
            os.fsync(fd)
        finally:
            os._exit(0)
    deadline = time.monotonic() + 20
    while entities(t) != want and time.monotonic() < deadline:
        time.sleep(0.1)
    assert entities(t) == want                  # applied; the answer is stalled
    kill_mount(mnt)
    os.waitpid(pid, 0)
    os.close(fd)


def test_crash_while_a_batch_is_out_is_settled_not_doubled(sdk, seed, mounter, azurite,
                                                           tmp_path):
    """The service applied the batch but the answer never came (stall after
    forwarding), and the daemon was killed: the next mount sends it again,
    meets 409, and settles it as applied by reading the entities back."""
    t = seed.table(sdk, "wbStall")
    opts, _ = wb_options(tmp_path)
    with FaultProxy(azurite.port, rate=0.0, stall=30) as px:
        mnt = mounter.mount(conn_str=conn_str_for(px.port), options=opts)
        pdir = os.path.join(str(mnt), "wbStall", "p")
        os.mkdir(pdir)
        for i in range(30):
            put(os.path.join(pdir, "r%03d.json" % i), {"v": i})
        crash_with_the_batch_out(mnt, px, t, {"r%03d" % i: i for i in range(30)})
        port = px.port
    # the journal is the endpoint's: the same address again, without faults
    with FaultProxy(azurite.port, listen_port=port, rate=0.0):
        mnt2 = mounter.mount(conn_str=conn_str_for(port), options=opts)
        p = pending(mnt2)
        assert p["queued"] == 0 and p["failed"] == 0, (p, mnt2.stderr()[-3000:])
        assert entities(t) == {"r%03d" % i: i for i in range(30)}
        assert "already holds" in mnt2.stderr()
        mnt2.unmount()


def test_crash_while_a_mixed_batch_is_out_reports_no_false_conflict(sdk, seed, mounter,
                                                                    azurite, tmp_path):
    """Issue 29, item 2: a batch of a delete, a replace and an insert is
    applied, its answer lost, the daemon killed. The next mount's resend
    meets 404 (the delete), then 412 and 409: all three are ours, settled
    as applied, none reported failed (they used to be: ENOENT, ESTALE,
    EEXIST, and sync EIO until discarded)."""
    t = seed.table(sdk, "wbMixed")
    t.upsert_entity({"PartitionKey": "p", "RowKey": "a0", "v": 0})
    t.upsert_entity({"PartitionKey": "p", "RowKey": "b0", "v": 0})
    opts, _ = wb_options(tmp_path)
    with FaultProxy(azurite.port, rate=0.0, stall=30) as px:
        mnt = mounter.mount(conn_str=conn_str_for(px.port), options=opts)
        pdir = os.path.join(str(mnt), "wbMixed", "p")
        assert sorted(os.listdir(pdir)) == ["a0.json", "b0.json"]
        os.unlink(os.path.join(pdir, "a0.json"))
        put(os.path.join(pdir, "b0.json"), {"v": 2})
        put(os.path.join(pdir, "n3.json"), {"v": 3})
        want = {"b0": 2, "n3": 3}
        crash_with_the_batch_out(mnt, px, t, want)
        port = px.port
    with FaultProxy(azurite.port, listen_port=port, rate=0.0) as px:
        mnt2 = mounter.mount(conn_str=conn_str_for(port), options=opts)
        p = pending(mnt2)
        assert p["queued"] == 0 and p["failed"] == 0, (p, mnt2.stderr()[-3000:])
        sync_all(mnt2)
        assert entities(t) == want
        assert "batch of 3 on wbMixed/p: the service already holds it" in mnt2.stderr()
        mnt2.unmount()


def test_conflict_in_a_batch_fails_only_that_entity(sdk, seed, mounter, tmp_path):
    t = seed.table(sdk, "wbConflict")
    for i in range(5):
        t.upsert_entity({"PartitionKey": "p", "RowKey": "e%d" % i, "v": i})
    opts, _ = wb_options(tmp_path)
    mnt = mounter.mount(options=opts)
    pdir = os.path.join(str(mnt), "wbConflict", "p")
    for i in range(5):
        open(os.path.join(pdir, "e%d.json" % i)).read()
        put(os.path.join(pdir, "e%d.json" % i), {"v": 100 + i})
    t.update_entity({"PartitionKey": "p", "RowKey": "e2", "v": -2})  # someone else
    with pytest.raises(OSError) as ei:
        sync_all(mnt)
    assert ei.value.errno == errno.EIO
    # the others landed, the SDK's change survived
    assert entities(t) == {"e0": 100, "e1": 101, "e2": -2, "e3": 103, "e4": 104}
    p = pending(mnt)
    assert p["failed"] == 1 and p["failures"][0]["path"] == "/wbConflict/p/e2.json", p
    assert p["failures"][0]["error"] == "ESTALE", p
    assert p["failures"][0]["message"] == os.strerror(errno.ESTALE), p
    assert p["failures"][0]["why"] == ("The update condition specified in the request was "
                                       "not satisfied. (HTTP 412, "
                                       "UpdateConditionNotSatisfied)"), p
    assert ("e2.json: the queued replace failed: ESTALE (Stale file handle): The update "
            "condition specified in the request was not satisfied. (HTTP 412, "
            "UpdateConditionNotSatisfied)") in mnt.stderr()
    with pytest.raises(OSError) as ei:
        sync_path(os.path.join(pdir, "e2.json"))
    assert ei.value.errno == errno.EIO
    sync_path(os.path.join(pdir, "e1.json"))    # not concerned
    # the file shows the service's entity; writing it again deals with it
    assert json.load(open(os.path.join(pdir, "e2.json")))["v"] == -2
    put(os.path.join(pdir, "e2.json"), {"v": 202})
    sync_all(mnt)
    assert entities(t)["e2"] == 202 and pending(mnt)["failed"] == 0
    # or the failed change is discarded (a documented command)
    put(os.path.join(pdir, "e3.json"), {"v": 303})
    t.update_entity({"PartitionKey": "p", "RowKey": "e3", "v": -3})
    with pytest.raises(OSError):
        sync_all(mnt)
    subprocess.run(["setfattr", "-n", "user.aztfs.discard", "-v", "/wbConflict/p/e3.json",
                    str(mnt)], check=True)
    assert pending(mnt)["failed"] == 0
    sync_all(mnt)
    assert entities(t)["e3"] == -3


def test_failed_change_stays_in_journal_across_unmount(sdk, seed, mounter, tmp_path):
    t = seed.table(sdk, "wbKeep")
    t.upsert_entity({"PartitionKey": "p", "RowKey": "a", "v": 1})
    opts, _ = wb_options(tmp_path)
    mnt = mounter.mount(options=opts)
    path = os.path.join(str(mnt), "wbKeep", "p", "a.json")
    open(path).read()
    put(path, {"v": 2})
    t.update_entity({"PartitionKey": "p", "RowKey": "a", "v": 9})
    err = mnt.unmount(check=False)
    assert mnt.exit_status == 1, err[-3000:]    # a change is left in the journal
    assert "/wbKeep/p/a.json: the queued replace failed" in err
    assert "it stays in the journal" in err
    mnt = mounter.mount(options=opts)
    p = pending(mnt)
    assert p["failed"] == 1 and p["failures"][0]["path"] == "/wbKeep/p/a.json", p
    assert entities(t) == {"a": 9}
    subprocess.run(["setfattr", "-n", "user.aztfs.discard", "-v", "/wbKeep/p/a.json",
                    str(mnt)], check=True)
    mnt.unmount()                               # nothing left: exit 0


def test_answers_lost_after_the_service_applied_them(sdk, seed, mounter, azurite, tmp_path):
    """503 or a reset after the service applied a batch: retried, the 409
    settled by the entities; nothing lost, nothing doubled."""
    t = seed.table(sdk, "wbLost")
    t.upsert_entity({"PartitionKey": "p", "RowKey": "x", "v": 0})
    opts, _ = wb_options(tmp_path, "writeback=60000,timeout=5,retries=6")
    with FaultProxy(azurite.port, rate=0.0, seed=15) as px:
        mnt = mounter.mount(conn_str=conn_str_for(px.port), options=opts)
        pdir = os.path.join(str(mnt), "wbLost", "p")
        open(os.path.join(pdir, "x.json")).read()
        for rnd, kind in enumerate(["503_after", "reset_after"]):
            for i in range(20):
                put(os.path.join(pdir, "r%d_%02d.json" % (rnd, i)), {"v": i})
            put(os.path.join(pdir, "x.json"), {"v": rnd + 1})       # a replace too
            px.set_faults(rate=1.0, kinds=[kind], methods=["POST"], limit=1)
            sync_all(mnt)
            assert px.counts().get(kind, 0) == 1, px.counts()
        p = pending(mnt)
        assert p["failed"] == 0 and p["queued"] == 0, p
        mnt.unmount()
    want = {"r%d_%02d" % (r, i): i for r in range(2) for i in range(20)}
    want["x"] = 2
    assert entities(t) == want
    assert "already holds" in mnt.stderr()


def test_queue_full_writers_wait_and_nothing_fails(sdk, seed, mounter, tmp_path):
    t = seed.table(sdk, "wbFull")
    opts, _ = wb_options(tmp_path, "writeback=60000,writeback_queue=1")
    mnt = mounter.mount(options=opts)
    pdir = os.path.join(str(mnt), "wbFull", "p")
    os.mkdir(pdir)
    pad = "x" * 600
    before = kinds(mnt)
    for i in range(2500):                       # about 3 MiB queued at 1 MiB
        put(os.path.join(pdir, "r%04d.json" % i), {"v": i, "pad": pad})
    sent = delta(before, kinds(mnt)).get("batch", 0)
    assert sent >= 10, sent                     # the full queue sent, long before the delay
    sync_all(mnt)
    assert len(entities(t)) == 2500


def journal_key(jpath):
    """The journal's HMAC key (JOURNAL.key: 64 hex digits)."""
    with open(jpath + ".key") as f:
        return bytes.fromhex(f.read().strip())


def journal_record(obj, key=None):
    """OBJ as a journal line: keyed (HMAC-SHA256 of KEY, 16 bytes in hex),
    or with KEY None the unkeyed format of aztfs before keys (SHA-256, 8)."""
    text = json.dumps(obj, separators=(",", ":"))
    if key is None:
        mac = hashlib.sha256(text.encode()).hexdigest()[:16]
    else:
        mac = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()[:32]
    return "%s %s\n" % (mac, text)


def journal_op(seq, rk, v=1, table="wbTorn"):
    return {"t": "op", "seq": seq, "path": "/%s/p/%s.json" % (table, rk), "table": table,
            "pk": "p", "rk": rk, "k": "insert", "e": {"v": v}, "dep": 0, "g": 0,
            "replaces": 0}


def empty_journal(mounter, opts):
    """Mount and unmount once: the journal's path (empty) and key."""
    mnt = mounter.mount(options=opts)
    jpath = pending(mnt)["journal"]
    mnt.unmount()
    assert os.path.getsize(jpath) == 0
    return jpath, journal_key(jpath)


def test_torn_journal_replays_whole_records_only(sdk, seed, mounter, tmp_path):
    """Issue 29, item 4: a damaged record in the middle does not end the
    reading (intact records after it are applied), the damage is reported
    honestly (it may have held an acknowledged change, named when its path
    is still readable), a record not made with the journal's key is refused,
    a torn end is skipped, and the damaged journal is kept for inspection."""
    t = seed.table(sdk, "wbTorn")
    opts, _ = wb_options(tmp_path)
    jpath, key = empty_journal(mounter, opts)
    damaged = bytearray(journal_record(journal_op(2, "b"), key).encode())
    damaged[damaged.index(b'"k":"insert"') + 5] = 0              # one zero byte
    nl_gone = bytearray(journal_record(journal_op(4, "d"), key).encode())
    nl_gone[-1] = ord("x")                                        # its newline damaged
    forged = journal_record(journal_op(6, "f"), b"not the key" * 3)
    with open(jpath, "wb") as f:
        f.write(journal_record(journal_op(1, "a"), key).encode() + bytes(damaged) +
                journal_record(journal_op(3, "c"), key).encode() + bytes(nl_gone) +
                journal_record(journal_op(5, "e"), key).encode() + forged.encode() +
                journal_record(journal_op(7, "g"), key).encode()[:40] + b"\0" * 4096)
    mnt = mounter.mount(options=opts)
    assert entities(t) == {"a": 1, "c": 1, "e": 1}
    err = mnt.stderr()
    assert "hold no whole record, and whole records follow (they are applied): if they held " \
           "an acknowledged change (it names /wbTorn/p/b.json), it is lost" in err, err
    assert "(it names /wbTorn/p/d.json), it is lost" in err, err
    assert "(it names /wbTorn/p/f.json) does not match the key" in err, err
    assert "is cut short: a write a crash interrupted, never acknowledged" in err, err
    p = pending(mnt)
    assert p["queued"] == 0 and p["failed"] == 0 and p["damaged"] == 3, p
    kept = [n for n in os.listdir(os.path.dirname(jpath)) if ".damaged-" in n]
    assert len(kept) == 1 and "kept as it was in" in err, (kept, err)
    errors = json.loads(os.getxattr(str(mnt), "user.aztfs.errors"))
    assert {"/wbTorn/p/b.json", "/wbTorn/p/d.json", "/wbTorn/p/f.json"} <= \
        {e["path"] for e in errors["recent"]}, errors


def test_journal_of_the_unkeyed_format_is_read_once(sdk, seed, mounter, tmp_path):
    """A journal left by aztfs before keys (no key file, unkeyed records)
    is read under the ownership rule and rewritten keyed."""
    t = seed.table(sdk, "wbTorn")
    opts, _ = wb_options(tmp_path)
    jpath, _ = empty_journal(mounter, opts)
    os.unlink(jpath + ".key")
    with open(jpath, "w") as f:
        f.write(journal_record(journal_op(1, "old")) + journal_record(journal_op(2, "er", 2)))
    mnt = mounter.mount(options=opts)
    assert entities(t) == {"old": 1, "er": 2}
    assert os.path.exists(jpath + ".key")
    mnt.unmount()


def test_tools_on_queued_files(sdk, seed, mounter, tmp_path):
    """cp, mv (one batch with both halves), rm -r of a partition whose
    deletes are queued, grep of queued files: as on a local disk."""
    t = seed.table(sdk, "wbTools")
    opts, _ = wb_options(tmp_path)
    mnt = mounter.mount(options=opts)
    tdir = os.path.join(str(mnt), "wbTools")
    os.mkdir(os.path.join(tdir, "p"))
    os.mkdir(os.path.join(tdir, "q"))
    for i in range(5):
        put(os.path.join(tdir, "p", "a%d.json" % i), {"v": i, "s": "needle%d" % i})
    subprocess.run(["cp", os.path.join(tdir, "p", "a0.json"), os.path.join(tdir, "p", "c.json")],
                   check=True)
    subprocess.run(["mv", os.path.join(tdir, "p", "a1.json"), os.path.join(tdir, "p", "m.json")],
                   check=True)
    put(os.path.join(tdir, "q", "x.json"), {"v": 9})
    out = subprocess.run(["grep", "-rl", "needle", tdir], check=True, capture_output=True,
                         text=True).stdout.split()
    assert sorted(os.path.relpath(x, tdir) for x in out) == [
        "p/a0.json", "p/a2.json", "p/a3.json", "p/a4.json", "p/c.json", "p/m.json"]
    sync_all(mnt)
    got = {(e["PartitionKey"], e["RowKey"]): e["v"] for e in t.list_entities()}
    assert got == {("p", "a0"): 0, ("p", "a2"): 2, ("p", "a3"): 3, ("p", "a4"): 4,
                   ("p", "c"): 0, ("p", "m"): 1, ("q", "x"): 9}
    # a rename of a sent entity: both halves in one batch
    before = kinds(mnt)
    os.rename(os.path.join(tdir, "p", "m.json"), os.path.join(tdir, "p", "n.json"))
    sync_all(mnt)
    assert delta(before, kinds(mnt)) == {"batch": 1}
    # rm -r of a partition whose deletes are still queued
    subprocess.run(["rm", "-r", os.path.join(tdir, "q")], check=True)
    assert sorted(os.listdir(tdir)) == ["p"]
    assert not list(t.query_entities("PartitionKey eq 'q'"))


def test_merge_mode_batches_merges(sdk, seed, mounter, tmp_path):
    """-o merge with -o writeback: the batch's operation is a Merge, so a
    property the file leaves out stays on the service."""
    t = seed.table(sdk, "wbMerge")
    t.upsert_entity({"PartitionKey": "p", "RowKey": "a", "keep": "yes", "v": 1})
    opts, _ = wb_options(tmp_path, LONG + ",merge")
    mnt = mounter.mount(options=opts)
    path = os.path.join(str(mnt), "wbMerge", "p", "a.json")
    open(path).read()
    put(path, {"v": 2})
    put(path, {"v": 3, "w": 4})          # merged onto the queued merge
    sync_all(mnt)
    e = t.get_entity("p", "a")
    assert (e["keep"], e["v"], e["w"]) == ("yes", 3, 4)


def test_sync_of_the_mount_root_with_sync_1(sdk, seed, mounter, tmp_path):
    """`sync /mnt` (coreutils: fsync of the directory) sends the queue."""
    t, mnt, pdir = new_partition(sdk, seed, mounter, tmp_path, "wbSync")
    put(os.path.join(pdir, "a.json"), {"v": 1})
    assert entities(t) == {}
    subprocess.run(["sync", str(mnt)], check=True)
    assert entities(t) == {"a": 1}


def test_handle_saves_again_after_its_change_was_sent(sdk, seed, mounter, tmp_path):
    """A file kept open across the send of its first save saves again
    (its ETag was the queued change's token, now resolved to the service's)."""
    t, mnt, pdir = new_partition(sdk, seed, mounter, tmp_path, "wbAgain")
    fd = os.open(os.path.join(pdir, "x.json"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, b'{"v": 1}')
        os.fsync(fd)                    # saved and sent
        assert entities(t) == {"x": 1}
        os.ftruncate(fd, 0)
        os.pwrite(fd, b'{"v": 2}', 0)
        os.fsync(fd)
    finally:
        os.close(fd)
    assert entities(t) == {"x": 2}
    assert pending(mnt)["failed"] == 0


def test_service_unreachable_sync_fails_then_sends_later(sdk, seed, mounter, azurite,
                                                         tmp_path):
    """While every send fails (503 before the service), sync returns EIO
    after the send's own retries instead of hanging, the changes stay
    queued, a listing is still answered; once the service answers, the
    next sync sends them."""
    t = seed.table(sdk, "wbDown")
    opts, _ = wb_options(tmp_path, LONG + ",retries=1,retry_time=2,timeout=5")
    with FaultProxy(azurite.port, rate=0.0) as px:
        mnt = mounter.mount(conn_str=conn_str_for(px.port), options=opts)
        pdir = os.path.join(str(mnt), "wbDown", "p")
        os.mkdir(pdir)
        for i in range(5):
            put(os.path.join(pdir, "r%d.json" % i), {"v": i})
        px.set_faults(rate=1.0, kinds=["503"], methods=["POST"])
        t0 = time.monotonic()
        with pytest.raises(OSError) as ei:
            sync_all(mnt)
        assert ei.value.errno == errno.EIO and time.monotonic() - t0 < 30
        assert pending(mnt)["queued"] == 5 and pending(mnt)["failed"] == 0
        assert "not sent" in mnt.stderr()
        assert sorted(os.listdir(pdir)) == ["r%d.json" % i for i in range(5)]
        os.statvfs(str(mnt))                    # the mount answers meanwhile
        px.set_faults(rate=0.0)
        sync_all(mnt)                           # tries again now
        assert entities(t) == {"r%d" % i: i for i in range(5)}
        mnt.unmount()


def test_saving_the_other_writers_version_clears_the_failed_change(sdk, seed, mounter,
                                                                   tmp_path):
    """Issue 29, item 15: after a conflict the file shows the other writer's
    entity; saving exactly that is the user choosing it: the failed change
    is dropped (it used to stay, and sync failed until discarded)."""
    t = seed.table(sdk, "wbResolve")
    t.upsert_entity({"PartitionKey": "p", "RowKey": "x", "v": 1})
    mnt = mounter.mount(options=wb_options(tmp_path)[0])
    path = os.path.join(str(mnt), "wbResolve", "p", "x.json")
    open(path).read()
    put(path, {"v": 2})
    t.update_entity({"PartitionKey": "p", "RowKey": "x", "v": 9})     # someone else
    with pytest.raises(OSError) as ei:
        sync_all(mnt)
    assert ei.value.errno == errno.EIO and pending(mnt)["failed"] == 1
    with open(path) as f:
        shown = f.read()
    assert json.loads(shown)["v"] == 9
    with open(path, "w") as f:                  # saved as it is shown
        f.write(shown)
    sync_all(mnt)
    assert pending(mnt)["failed"] == 0
    assert "x.json: the failed replace is dropped from the journal: the file was saved " \
           "as the service holds it" in mnt.stderr()
    assert entities(t) == {"x": 9}


def test_o_excl_create_has_one_winner_across_mounts(sdk, seed, mounter, tmp_path):
    """Issue 29, item 11: under write-behind an O_EXCL create is decided by
    the service at the open (an empty entity inserted, the content queued
    as its replace): of two mounts, one open wins, the other gets EEXIST;
    the shell's noclobber too. (Both used to succeed.)"""
    t = seed.table(sdk, "wbExcl")
    t.upsert_entity({"PartitionKey": "p", "RowKey": "gone", "v": 0})
    m1 = mounter.mount(options=wb_options(tmp_path / "1")[0])
    m2 = mounter.mount(options=wb_options(tmp_path / "2")[0])
    names = [os.path.join(str(m), "wbExcl", "p", "lock.json") for m in (m1, m2)]
    fd = os.open(names[0], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with pytest.raises(FileExistsError):
        os.open(names[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b'{"owner": 1}')
    os.close(fd)
    sync_all(m1)
    assert t.get_entity("p", "lock")["owner"] == 1
    for m in (m1, m2):                          # the shell's lock-file idiom
        subprocess.run(["bash", "-c", "set -o noclobber; echo '{\"m\": %d}' > %s" % (
            1 if m is m1 else 2, os.path.join(str(m), "wbExcl", "p", "sh.json"))])
    sync_all(m1)
    sync_all(m2)
    assert t.get_entity("p", "sh")["m"] == 1
    # a queued delete of the name is sent before the create asks the service
    gone = os.path.join(str(m2), "wbExcl", "p", "gone.json")
    os.unlink(gone)
    fd = os.open(gone, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b'{"v": 5}')
    os.close(fd)
    sync_all(m2)
    assert t.get_entity("p", "gone")["v"] == 5
    assert pending(m1)["failed"] == 0 and pending(m2)["failed"] == 0


def test_refused_o_excl_create_leaves_nothing(sdk, seed, mounter, tmp_path):
    """Issue 46, item 1: the empty entity an O_EXCL open inserts (so that a
    second creator gets EEXIST) stayed on the service when the content was
    refused. It is removed now, guarded by its own ETag."""
    t = seed.table(sdk, "wbExclBad")
    t.upsert_entity({"PartitionKey": "p", "RowKey": "seed", "v": 0})
    m1 = mounter.mount(options=wb_options(tmp_path / "1")[0])
    m2 = mounter.mount(options=wb_options(tmp_path / "2")[0])
    d = os.path.join(str(m1), "wbExclBad", "p")
    f = os.path.join(d, "new.json")
    fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with pytest.raises(FileExistsError):    # a second creator still loses
            os.open(os.path.join(str(m2), "wbExclBad", "p", "new.json"),
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"not json")
    finally:
        with pytest.raises(OSError) as ei:
            os.close(fd)
    assert ei.value.errno == errno.EINVAL
    sync_all(m1)
    assert entities(t) == {"seed": 0}
    assert "new.json" not in os.listdir(d) and not os.path.exists(f)
    for bad in ("not json", '{"g": "x", "g@odata.type": "Edm.Guid"}'):   # the shell's noclobber
        subprocess.run(["bash", "-o", "noclobber", "-c", "echo '%s' > %s" % (bad, f)])
        sync_all(m1)
        assert entities(t) == {"seed": 0}
        assert "new.json" not in os.listdir(d) and not os.path.exists(f)
    # a plain O_CREAT flushed before its write queues the empty entity's
    # insert: the refusal undoes it, nothing is sent
    fd = os.open(f, os.O_WRONLY | os.O_CREAT, 0o644)
    os.close(os.dup(fd))
    assert pending(m1)["queued"] == 1
    os.write(fd, b"not json")
    with pytest.raises(OSError):
        os.close(fd)
    assert pending(m1)["queued"] == 0
    assert "new.json" not in os.listdir(d) and not os.path.exists(f)
    # the name is free: a valid noclobber create works
    subprocess.run(["bash", "-o", "noclobber", "-c", "echo '{\"v\": 1}' > %s" % f], check=True)
    sync_all(m1)
    assert entities(t) == {"seed": 0, "new": 1}
    # another writer's entity is never removed
    g = os.path.join(d, "race.json")
    fd = os.open(g, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    t.upsert_entity({"PartitionKey": "p", "RowKey": "race", "v": 7})
    os.write(fd, b"not json")
    with pytest.raises(OSError):
        os.close(fd)
    sync_all(m1)
    assert entities(t) == {"seed": 0, "new": 1, "race": 7}
    assert pending(m1)["failed"] == 0 and pending(m2)["failed"] == 0


def test_a_rename_refused_whole_is_never_cut_in_two(sdk, seed, mounter, azurite, tmp_path):
    """Found after issue 29's items (a unit test of the batch split): a
    batch that is one rename, refused by the service as a whole (a 400 that
    names no operation), was cut between its halves to find the culprit.
    The write then went alone and failed (its target created meanwhile),
    the delete went alone and was applied: the renamed entity was gone from
    the service, the rename reported failed. Now the rename fails as a
    whole: both names reported, the source kept."""
    t = seed.table(sdk, "wbRenameWhole")
    t.upsert_entity({"PartitionKey": "p", "RowKey": "s", "v": 1})
    opts, _ = wb_options(tmp_path)
    with FaultProxy(azurite.port, rate=0.0) as px:
        mnt = mounter.mount(conn_str=conn_str_for(px.port), options=opts)
        pdir = os.path.join(str(mnt), "wbRenameWhole", "p")
        assert os.listdir(pdir) == ["s.json"]
        os.rename(os.path.join(pdir, "s.json"), os.path.join(pdir, "t.json"))
        t.create_entity({"PartitionKey": "p", "RowKey": "t", "v": 2})   # someone else
        px.set_faults(rate=1.0, kinds=["400"], methods=["POST"], limit=1)
        with pytest.raises(OSError) as ei:
            sync_all(mnt)
        assert ei.value.errno == errno.EIO
        assert px.counts().get("400") == 1, px.counts()
        assert entities(t) == {"s": 1, "t": 2}, mnt.stderr()[-3000:]
        p = pending(mnt)
        assert sorted(f["path"] for f in p["failures"]) == \
            ["/wbRenameWhole/p/s.json", "/wbRenameWhole/p/t.json"], p
        assert "the other half of its rename failed" in mnt.stderr()
        subprocess.run(["setfattr", "-n", "user.aztfs.discard", "-v", "*", str(mnt)],
                       check=True)
        assert pending(mnt)["failed"] == 0
        assert sorted(os.listdir(pdir)) == ["s.json", "t.json"]
        assert json.load(open(os.path.join(pdir, "s.json")))["v"] == 1
        mnt.unmount()
