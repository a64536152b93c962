"""How a write-behind mount stops (issue 29: items 1, 3, 12): after
`fusermount3 -u` or SIGTERM the daemon sends what is queued for at most
-o writeback_stop seconds, whatever the service does (stalled, resetting,
gone), then exits with one log line saying what was sent and what is left;
what is left stays in the journal and reaches the service at the next
mount. A writer waiting for room in a full queue does not hold the mount
up; a SIGTERM right after the unmount (systemd's, after ExecStop) does not
cut the send short. Checked through the official SDK."""

import os
import re
import signal
import subprocess
import threading
import time

from harness import FaultProxy, conn_str_for, fsync_dir, is_mounted, unmount_path
from test_writeback import entities, pending, put, wb_options

STOP = 3                        # -o writeback_stop= of these tests (seconds)
SLACK = 4                       # what the bound allows beyond it (process exit, compaction)


def wait_exit(mnt, timeout):
    """Wait for MNT's daemon to exit: (exit status, seconds it took)."""
    t0 = time.monotonic()
    try:
        mnt.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        mnt.proc.kill()
        mnt.proc.wait(10)
        unmount_path(str(mnt))
        mnt.closed = True
        raise AssertionError("aztfs did not exit within %d s: %s" % (
            timeout, mnt.stderr()[-3000:]))
    mnt.closed = True
    return mnt.proc.returncode, time.monotonic() - t0


def stop_line(err):
    lines = [l for l in err.splitlines() if "write-behind stopped" in l]
    assert len(lines) == 1, err[-3000:]
    return lines[0]


def test_unmount_with_a_stalled_service_exits_in_bound_and_keeps_the_change(
        sdk, seed, mounter, azurite, tmp_path):
    """Item 1: every request stalls; the unmount used to crash the daemon
    (SIGSEGV: the send's read-back asked a FUSE session already freed)."""
    t = seed.table(sdk, "wbStopStall")
    opts, _ = wb_options(tmp_path, "writeback=60000,timeout=5,retry_time=10,"
                                   "writeback_stop=%d" % STOP)
    with FaultProxy(azurite.port, rate=0.0, stall=30) as px:
        mnt = mounter.mount(conn_str=conn_str_for(px.port), options=opts)
        pdir = os.path.join(str(mnt), "wbStopStall", "p")
        os.mkdir(pdir)
        put(os.path.join(pdir, "a.json"), {"v": 1})
        px.set_faults(rate=1.0, kinds=["stall"])
        subprocess.run(["fusermount3", "-u", str(mnt)], check=True, timeout=10)
        status, took = wait_exit(mnt, 60)
        port = px.port
    err = mnt.stderr()
    assert status == 1, (status, err[-3000:])          # not 139, not 0: a change is left
    assert took < STOP + SLACK, (took, err[-3000:])
    line = stop_line(err)
    assert "1 unsent and 0 failed stay in the journal" in line, line
    assert "stopping: 1 queued change to send" in err
    last = err.rstrip("\n").splitlines()[-1]
    assert re.search(r"aztfs: error: unmounted \S+, exiting with status 1: \d+ requests sent, "
                     r"\d+ failures? logged, 1 change left in the journal$", last), last
    assert entities(t) == {}
    with FaultProxy(azurite.port, listen_port=port, rate=0.0):
        mnt2 = mounter.mount(conn_str=conn_str_for(port), options=opts)
        assert entities(t) == {"a": 1}
        assert pending(mnt2)["queued"] == 0 and pending(mnt2)["failed"] == 0
        mnt2.unmount()


def test_unmount_with_the_service_gone_exits_in_bound(sdk, seed, mounter, azurite, tmp_path):
    """Connections refused: nothing to wait for, the journal keeps it."""
    t = seed.table(sdk, "wbStopGone")
    opts, _ = wb_options(tmp_path, "writeback=60000,timeout=5,retry_time=30,"
                                   "writeback_stop=%d" % STOP)
    px = FaultProxy(azurite.port, rate=0.0).start()
    port = px.port
    mnt = mounter.mount(conn_str=conn_str_for(port), options=opts)
    pdir = os.path.join(str(mnt), "wbStopGone", "p")
    os.mkdir(pdir)
    for i in range(5):
        put(os.path.join(pdir, "r%d.json" % i), {"v": i})
    px.stop()
    subprocess.run(["fusermount3", "-u", str(mnt)], check=True, timeout=10)
    status, took = wait_exit(mnt, 60)
    assert status == 1 and took < STOP + SLACK, (status, took, mnt.stderr()[-3000:])
    assert "5 unsent and 0 failed" in stop_line(mnt.stderr())
    with FaultProxy(azurite.port, listen_port=port, rate=0.0):
        mnt2 = mounter.mount(conn_str=conn_str_for(port), options=opts)
        assert entities(t) == {"r%d" % i: i for i in range(5)}
        mnt2.unmount()


def writer(pdir, acked, errors, stop):
    """Save files in PDIR until STOP or an error: ACKED gets the names whose
    close returned 0, ERRORS the first failure."""
    i = 0
    while not stop.is_set():
        name = "w%05d" % i
        try:
            with open(os.path.join(pdir, name + ".json"), "w") as f:
                f.write('{"v": %d, "pad": "%s"}' % (i, "x" * 2000))
        except OSError as e:
            errors.append(e)
            return
        acked.append(name)
        i += 1


def test_sigterm_while_a_writer_waits_for_room(sdk, seed, mounter, azurite, tmp_path):
    """Item 3: a writer waits for room in a full queue while the service
    resets every connection; SIGTERM used to leave the daemon (and every
    access to the mount) hanging: libfuse waits for its workers, and the
    waiting writer is one of them."""
    t = seed.table(sdk, "wbStopFull")
    opts, _ = wb_options(tmp_path, "writeback=60000,writeback_queue=1,timeout=5,"
                                   "retry_time=5,writeback_stop=%d" % STOP)
    with FaultProxy(azurite.port, rate=0.0) as px:
        mnt = mounter.mount(conn_str=conn_str_for(px.port), options=opts)
        pdir = os.path.join(str(mnt), "wbStopFull", "p")
        os.mkdir(pdir)
        px.set_faults(rate=1.0, kinds=["reset"])
        acked, errors, stop = [], [], threading.Event()
        th = threading.Thread(target=writer, args=(pdir, acked, errors, stop), daemon=True)
        th.start()
        last, still = -1, time.monotonic()      # wait until the writer is stuck
        while time.monotonic() - still < 2:
            assert time.monotonic() - still < 60
            if len(acked) != last:
                last, still = len(acked), time.monotonic()
            time.sleep(0.1)
        assert th.is_alive() and not errors and len(acked) > 100, (len(acked), errors)
        mnt.proc.send_signal(signal.SIGTERM)
        status, took = wait_exit(mnt, 60)
        stop.set()
        th.join(10)
        assert not th.is_alive(), "the writer is still blocked"
        port = px.port
    err = mnt.stderr()
    assert status == 1 and took < STOP + SLACK + 5, (status, took, err[-3000:])
    assert not is_mounted(str(mnt))
    assert errors, "the waiting change was not refused"
    assert "waited for room in the write-behind queue" in err
    unsent = int(stop_line(err).split(" unsent")[0].split()[-1])
    assert unsent == len(acked), (unsent, len(acked))
    with FaultProxy(azurite.port, listen_port=port, rate=0.0):
        mnt2 = mounter.mount(conn_str=conn_str_for(port), options=opts)
        assert sorted(entities(t)) == acked     # every acknowledged change, nothing else
        mnt2.unmount()


def test_unmount_then_sigterm_at_once_sends_the_whole_queue(sdk, seed, mounter, azurite,
                                                            tmp_path):
    """Item 12: systemd sends SIGTERM right after ExecStop (fusermount3 -u).
    The daemon used to die of the signal (its handlers were gone) with the
    queue half sent, and say nothing."""
    t = seed.table(sdk, "wbStopTerm")
    opts, _ = wb_options(tmp_path, "writeback=60000,writeback_stop=60")
    with FaultProxy(azurite.port, rate=0.0, delay=0.05) as px:  # a send takes a while
        mnt = mounter.mount(conn_str=conn_str_for(px.port), options=opts)
        for p in range(4):      # 75 each: none is a full batch, all wait
            pdir = os.path.join(str(mnt), "wbStopTerm", "p%d" % p)
            os.mkdir(pdir)
            for i in range(75):
                put(os.path.join(pdir, "r%03d.json" % i), {"v": i})
        assert pending(mnt)["queued"] == 300
        subprocess.run(["fusermount3", "-u", str(mnt)], check=True, timeout=10)
        mnt.proc.send_signal(signal.SIGTERM)
        status, took = wait_exit(mnt, 60)
    err = mnt.stderr()
    assert status == 0, (status, err[-3000:])
    assert "every change sent (300 since the stop" in stop_line(err), err[-3000:]
    last = err.rstrip("\n").splitlines()[-1]
    assert re.search(r"aztfs: info: unmounted \S+, exiting with status 0: \d+ requests sent, "
                     r"0 failures logged, 0 changes left in the journal$", last), last
    assert len(list(t.list_entities())) == 300


WRITER = r"""
import os, sys
pdir = sys.argv[1]
for i in range(100000):
    with open(os.path.join(pdir, "w%05d.json" % i), "w") as f:
        f.write('{"v": %d, "pad": "%s"}' % (i, "x" * 2000))
    print(i, flush=True)
"""


def test_a_writer_waiting_for_room_can_be_interrupted(sdk, seed, mounter, azurite, tmp_path):
    """^C reaches a writer waiting for room in a full queue (its save is
    not acknowledged, EINTR); the mount goes on serving, and once the
    service answers again every acknowledged change is sent."""
    t = seed.table(sdk, "wbStopIntr")
    opts, _ = wb_options(tmp_path, "writeback=60000,writeback_queue=1,timeout=5,"
                                   "retry_time=5")
    with FaultProxy(azurite.port, rate=0.0) as px:
        mnt = mounter.mount(conn_str=conn_str_for(px.port), options=opts)
        pdir = os.path.join(str(mnt), "wbStopIntr", "p")
        os.mkdir(pdir)
        px.set_faults(rate=1.0, kinds=["reset"], methods=["POST"])
        w = subprocess.Popen(["/usr/bin/python3", "-c", WRITER, pdir], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        acked = []
        reader = threading.Thread(target=lambda: acked.extend(
            int(l) for l in w.stdout), daemon=True)
        reader.start()
        last, still = -1, time.monotonic()      # wait until the writer is stuck
        while time.monotonic() - still < 2:
            assert time.monotonic() - still < 60 and w.poll() is None
            if len(acked) != last:
                last, still = len(acked), time.monotonic()
            time.sleep(0.1)
        t0 = time.monotonic()
        w.send_signal(signal.SIGINT)
        w.wait(10)
        assert time.monotonic() - t0 < 3, "the waiting writer took too long to give up"
        reader.join(5)
        assert w.returncode != 0 and len(acked) > 100, (w.returncode, len(acked))
        assert os.path.ismount(str(mnt)) and mnt.proc.poll() is None
        assert os.listdir(pdir)                 # the mount goes on serving
        px.set_faults(rate=0.0)
        fsync_dir(mnt)
        mnt.unmount()
    want = ["w%05d" % i for i in acked]
    assert sorted(entities(t)) == want          # every acknowledged change, not the last
