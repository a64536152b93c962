"""The reference-model test (tests/integration/model.py) on a mount that
writes behind (-o writeback, doc/USAGE.md "Write-behind"): the same random
operations, checked after every step against the model (reads and listings
show queued changes), with nothing failed in user.aztfs.pending after any
step; and, generated only here:

* sync: fsync of the mount's root mid-sequence, then nothing queued or
  failed and the service equal to the model (official SDK);
* remount: the mount taken down, then a new mount with the same
  journal_dir: nothing queued or failed once it serves, the service equal
  to the model. Taken down by a clean unmount (the service then equals the
  model) or, at a crash point (model_crash.py):
  - kill: kill -9 of the daemon;
  - lost: the service applied a batch whose answer the proxy holds (the
    first batch with a delete when one is queued, else with a replace), and
    kill -9 while an fsync of the root waits for it: the resent batch's
    404/409/412 are settled as ours, nothing fails;
  - damaged: kill -9, then one byte of a change record in the middle of the
    journal set to 0: the mount logs the record's path as lost and counts
    it in user.aztfs.pending ("damaged"); only that entity's later changes
    and the other halves of its renames may fail (discarded), the model
    takes what the service holds for them, and every other entity is as
    the model says;
  - term_wait: every batch stalled, a writer saving ~870 KB entities in a
    partition of its own until it waits for room in the 1 MiB queue, then
    SIGTERM: the daemon exits within writeback_stop (3 s) + 5 s with status
    1 and its "write-behind stopped after" line counting what was queued,
    the waiting save fails, and the next mount sends every save the writer
    saw succeed;
* ext_change (someone else changes or deletes an entity we read, then we
  save or rm it): the save is acknowledged and shown, the next fsync of
  the root returns EIO, user.aztfs.pending names the file with ESTALE (or
  ENOENT when deleted), the service keeps the other writer's entity and
  the mount shows it; the failed change is discarded (user.aztfs.discard).

At the end the root is fsynced (nothing queued or failed) and the service
compared with the model. Each seed runs on a new table and a write-behind
mount on a new journal_dir, through a fault proxy (tests/faultproxy.py, no
faults but in the crash steps; one per session, so the journal's name stays
the same); the second mount, the "someone else", saves synchronously. A
long delay (writeback=60000) keeps changes queued between steps, and the
test checks that they were. Seeds 101-112 run with aztfs' default delay
(200 ms), where batches go out while the steps run. The steps of a seed are
those it had before the crash points; a second random stream turns its
kill -9 remounts into the crash kinds and adds lost ones (model.CRASHES,
EXTRA_LOST). test_model_writeback_steps_covered checks that every kind was
carried out, and that the lost batches held a delete, an insert and a
replace. The tests at the end replay what the model found (a second crash sent
applied changes again; a save guarded by the token of a sent change
deadlocked; a rename whose source's create record was damaged).

MODEL_WB_SEEDS / MODEL_WB_DEFAULT_SEEDS / MODEL_WB_STEPS override the set;
the long mode is `model.py --writeback [MS|default] --minutes N`."""

import json
import os
import signal
import subprocess
import time

import pytest

import model
from harness import FaultProxy, conn_str_for

SEEDS = os.environ.get("MODEL_WB_SEEDS", "1-40")
# With aztfs' default delay (200 ms) batches go out while the steps run.
DEFAULT_SEEDS = os.environ.get("MODEL_WB_DEFAULT_SEEDS", "101-112")
STEPS = int(os.environ.get("MODEL_WB_STEPS", "60"))


def seed_list(spec):
    if not spec:
        return []
    a, _, b = spec.partition("-")
    return list(range(int(a), int(b or a) + 1))


def session(mounter, sdk, azurite, journal_base, delay):
    """A model.Session whose write-behind mount goes through a FaultProxy of
    its own (for the crash steps), torn down after the module's tests."""
    with FaultProxy(azurite.port, rate=0.0, stall=30) as px:
        wb = model.Remounter(
            lambda jdir: mounter.mount(conn_str=conn_str_for(px.port),
                                       options=model.wb_options(jdir, delay)),
            journal_base, px)
        yield model.Session(None, mounter.mount(options=["-o", model.MOUNT_OPTIONS]), sdk, wb)
        if wb.cur is not None:
            wb.cur.unmount()                    # while the proxy is there


@pytest.fixture(scope="module")
def long_session(module_mounter, sdk, azurite, tmp_path_factory):
    yield from session(module_mounter, sdk, azurite, tmp_path_factory.mktemp("journal-long"),
                       60000)


@pytest.fixture(scope="module")
def default_session(module_mounter, sdk, azurite, tmp_path_factory):
    yield from session(module_mounter, sdk, azurite,
                       tmp_path_factory.mktemp("journal-default"), None)


def run_seed(session, seed, delay):
    steps = model.gen_steps(seed, STEPS, wb=True)
    msg = session.attempt(steps)
    if msg:
        shrunk, smsg = session.shrink(steps, budget=90)
        pytest.fail(model.report(seed, steps, msg, shrunk, smsg,
                                 os.path.join(os.getcwd(), ".run", "model-wb"),
                                 "--writeback %s" % delay), pytrace=False)
    return session


@pytest.mark.parametrize("seed", seed_list(SEEDS))
def test_model_writeback_seed(long_session, seed):
    s = run_seed(long_session, seed, 60000)
    # changes really stayed queued between steps (reads were served from the queue)
    assert s.max_queued >= 1, "nothing was ever queued: is -o writeback in effect?"


if DEFAULT_SEEDS:
    @pytest.mark.parametrize("seed", seed_list(DEFAULT_SEEDS))
    def test_model_writeback_default_delay_seed(default_session, seed):
        run_seed(default_session, seed, "default")


def test_model_writeback_steps_covered(long_session, default_session):
    """The seeds above (run first: pytest keeps the file's order) carried
    out each write-behind step kind, not merely generated it: a change of
    the generator or of a precondition could silently drop one."""
    done = {}
    for sess in (long_session, default_session):
        for k, v in sess.wb_total.items():
            done[k] = done.get(k, 0) + v
    for kind in ("sync", "remount_clean", "remount_kill", "conflict_sdk_replace",
                 "conflict_sdk_delete", "conflict_mount2", "conflict_rm_after_change",
                 "remount_lost", "remount_damaged", "remount_term_wait", "term_wait_saved",
                 "lost_delete", "lost_insert", "lost_replace"):
        assert done.get(kind, 0) >= 1, (kind, done)


def test_model_writeback_excl_refused(long_session):
    """Issue 46, item 1, with write-behind: the O_EXCL open inserts the
    empty entity at once; its refused content removes it."""
    from test_model import excl_refused_steps

    msg = long_session.attempt(excl_refused_steps())
    assert msg is None, msg


def test_second_crash_replay_sends_nothing_already_applied(sdk, seed, mounter, tmp_path):
    """kill -9 with changes queued in several partitions; the next mount
    replays and sends them; someone else then deletes the entities; kill -9
    again (nothing queued) and mount: nothing may be sent again (no entity
    comes back, nothing fails)."""
    t = seed.table(sdk, "wbTwice")
    opts = model.wb_options(tmp_path / "journal")
    parts = ["p1", "q2", "a3", "z4", "m5"]

    def kill(m):
        m.proc.send_signal(signal.SIGKILL)
        m.proc.wait(10)
        subprocess.run(["fusermount3", "-u", str(m)], check=True, timeout=30)
        m.closed = True

    def pending(m):
        return json.loads(os.getxattr(str(m), "user.aztfs.pending"))

    mnt = mounter.mount(options=opts)
    for pk in parts:
        os.makedirs(os.path.join(str(mnt), "wbTwice", pk))
        with open(os.path.join(str(mnt), "wbTwice", pk, "x.json"), "w") as f:
            f.write('{"v": 1}')
    kill(mnt)                                   # acknowledged, not sent
    mnt = mounter.mount(options=opts)           # replayed and sent before it serves
    assert sorted(e["PartitionKey"] for e in t.list_entities()) == sorted(parts)
    assert pending(mnt)["queued"] == 0
    for pk in parts:
        t.delete_entity(pk, "x")                # someone else
    kill(mnt)
    mnt = mounter.mount(options=opts)
    assert [e["PartitionKey"] for e in t.list_entities()] == []
    p = pending(mnt)
    assert p["queued"] == 0 and p["failed"] == 0, p


def test_save_of_a_handle_opened_while_queued_after_the_send(sdk, seed, mounter, tmp_path):
    """A handle opened while its file's change is queued (its ETag is the
    local token), saved after that change was sent: the save goes through
    (the token resolves to the service's ETag) and the mount keeps
    answering. The close runs in a child; if it is still blocked after 15 s
    the daemon is killed (which frees the child) and the test fails."""
    t = seed.table(sdk, "wbDead")
    mnt = mounter.mount(options=model.wb_options(tmp_path / "journal"))
    path = os.path.join(str(mnt), "wbDead", "p", "x.json")
    os.mkdir(os.path.dirname(path))
    with open(path, "w") as f:
        f.write('{"v": 1}')
    assert os.getxattr(path, "user.aztfs.etag").startswith(b'W/"aztfs-queued-')
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    root = os.open(str(mnt), os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(root)                              # the change is sent
    os.close(root)
    os.write(fd, b'{"v": 2}')
    pid = os.fork()
    if pid == 0:
        try:
            os.close(fd)                        # the save
        finally:
            os._exit(0)
    deadline = time.monotonic() + 15
    while not os.waitpid(pid, os.WNOHANG)[0]:
        if time.monotonic() > deadline:
            mnt.proc.kill()                     # frees the blocked close
            mnt.proc.wait(10)
            os.waitpid(pid, 0)
            try:
                os.close(fd)
            except OSError:
                pass
            if subprocess.run(["fusermount3", "-u", str(mnt)], timeout=30).returncode:
                subprocess.run(["fusermount3", "-uz", str(mnt)], timeout=30)
            mnt.closed = True
            pytest.fail("the save of the handle is still blocked after 15 s: the mount hangs")
        time.sleep(0.1)
    os.close(fd)                                # (the parent's copy: the same save again)
    root = os.open(str(mnt), os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(root)
    os.close(root)
    assert t.get_entity("p", "x")["v"] == 2


def test_rename_of_a_file_whose_create_record_is_damaged(sdk, seed, mounter, tmp_path):
    """A file created and then renamed, both queued, and the journal's
    record of the create damaged after a kill -9 (what the model's long
    mode found, seed 5126): the rename cannot be sent without its source,
    so both its halves are reported failed (the damage named in the log and
    counted), nothing else fails, and the service holds neither name.
    model_crash.damage_journal names the rename's other half as depending
    on the damaged record."""
    import model_crash

    t = seed.table(sdk, "wbDmgMv")
    opts = model.wb_options(tmp_path / "journal")
    mnt = mounter.mount(options=opts)
    part = os.path.join(str(mnt), "wbDmgMv", "p")
    os.mkdir(part)
    for name in ("a", "r1"):
        with open(os.path.join(part, name + ".json"), "w") as f:
            f.write('{"v": 1}')
    os.rename(os.path.join(part, "r1.json"), os.path.join(part, "r2.json"))
    journal = json.loads(os.getxattr(str(mnt), "user.aztfs.pending"))["journal"]
    mnt.proc.send_signal(signal.SIGKILL)
    mnt.proc.wait(10)
    subprocess.run(["fusermount3", "-u", str(mnt)], check=True, timeout=30)
    mnt.closed = True

    lines, recs = model_crash.journal_lines(journal)
    alive = model_crash.live_ops(recs)
    middle = [i for i, r in enumerate(recs) if r and r.get("t") == "op" and
              0 < i < len(lines) - 1 and i in alive]
    create = [i for i in middle if recs[i]["path"].endswith("/r1.json") and
              recs[i]["k"] == "insert"]
    assert len(create) == 1, recs
    rec = model_crash.damage_journal(journal, middle.index(create[0]))
    assert rec["path"] == "/wbDmgMv/p/r1.json", rec
    assert [a["path"] for a in rec["also"]] == ["/wbDmgMv/p/r2.json"], rec

    mnt = mounter.mount(options=opts)
    root = os.open(str(mnt), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(root)
    except OSError:
        pass                                    # EIO: the failed rename
    finally:
        os.close(root)
    pending = json.loads(os.getxattr(str(mnt), "user.aztfs.pending"))
    failed = model_crash.damage_reported(mnt.stderr(), pending, rec)
    assert failed == ["/wbDmgMv/p/r1.json", "/wbDmgMv/p/r2.json"], pending
    why = {f["path"]: f["why"] for f in pending["failures"]}
    assert why["/wbDmgMv/p/r2.json"] == "the other half of its rename failed", pending
    assert sorted(e["RowKey"] for e in t.list_entities()) == ["a"]
    for path in failed:
        os.setxattr(str(mnt), "user.aztfs.discard", path.encode())
    pending = json.loads(os.getxattr(str(mnt), "user.aztfs.pending"))
    assert pending["failed"] == 0 and pending["queued"] == 0, pending
    assert not os.path.exists(os.path.join(str(mnt), "wbDmgMv", "p", "r2.json"))
