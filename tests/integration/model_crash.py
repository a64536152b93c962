"""model_crash.py - the crash points of the reference model's write-behind
remount step (issue 29), for tests/integration/model.py.

Each takes a write-behind mount (a harness.Mount whose connection goes
through a tests/faultproxy.py FaultProxy) down at one crash point and says
what the next mount with the same journal must then show; model.py keeps
the model and runs the checks that follow (nothing queued or failed, the
service equal to the model):

* lost_batch: the service applies a batch, its answer never comes, and the
  daemon is killed (kill -9) while the fsync of the root waits for it;
* damage_journal / damage_reported: after a kill -9, one byte of a change
  record in the middle of the journal is set to 0;
* term_wait: SIGTERM while a writer waits for room in the full queue and
  every batch stalls.

A check that does not hold raises CrashFailed (model.Runner.run reports it
as a failed step)."""

import base64
import json
import os
import re
import signal
import subprocess
import threading
import time

import harness

STOP_SLACK = 5          # seconds a stop may take beyond -o writeback_stop (exit, compaction)
WAIT_LIMIT = 20         # seconds for a send or a writer to get where the crash needs it
STUCK = 1.5             # seconds without progress after which the writer is waiting for room
BIG_PROPS = 10          # term_wait's entities: this many Binary properties of 64 KiB
                        # (a string is at most 64 KiB in UTF-16: 32,768 characters)
# the operations of a $batch body, by the method of their request line
BATCH_METHODS = {"POST": "insert", "PUT": "replace", "MERGE": "merge", "DELETE": "delete"}
BATCH_LINE = re.compile(rb"^(POST|PUT|MERGE|DELETE) \S+ HTTP/1\.1\r?$", re.M)


class CrashFailed(AssertionError):
    pass


def fsync_child(root):
    """A child process that fsyncs ROOT (blocked while a batch is out); its pid."""
    pid = os.fork()
    if pid == 0:
        try:
            harness.fsync_dir(root)
        finally:
            os._exit(0)
    return pid


def reap(pid, timeout=10):
    """Wait for child PID (killed after TIMEOUT seconds)."""
    deadline = time.monotonic() + timeout
    while not os.waitpid(pid, os.WNOHANG)[0]:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return
        time.sleep(0.02)


def batch_kinds(body):
    """The kinds of operation ("insert", "replace", "merge", "delete") a
    $batch request's BODY (bytes) holds."""
    return {BATCH_METHODS[m.decode()] for m in BATCH_LINE.findall(body)}


def lost_batch(root, journal, proxy, kill):
    """The proxy forwards a batch (POST) and never answers it: the first
    that holds a delete when the queue does (JOURNAL's live records say),
    else the first that holds a replace, else the first (a lost batch holds
    an insert the most often, a delete the least). A child fsyncs ROOT (the
    mount's root: every queued change is sent, and the child waits for the
    lost answer); once the service has applied the batch, KILL() (kill -9
    of the daemon). The faults are cleared. Returns the lost request
    (FaultProxy.faulted()), or None when the fsync returned without such a
    batch (nothing queued, or it was out already: a plain kill -9)."""
    _, recs = journal_lines(journal)
    live = {recs[i]["k"] for i in live_ops(recs)}
    want = next((k for k in ("delete", "replace") if k in live), None)
    match = None
    if want:
        match = lambda method, target, body: want in batch_kinds(body)  # noqa: E731
    before = proxy.counts().get("stall_after", 0)
    proxy.set_faults(rate=1.0, kinds=["stall_after"], methods=["POST"], limit=1, match=match)
    pid, lost = fsync_child(root), None
    try:
        deadline = time.monotonic() + WAIT_LIMIT
        while True:
            if proxy.counts().get("stall_after", 0) > before:
                f = proxy.faulted()[-1]
                if f["forwarded"]:
                    lost = f            # applied by the service, the answer held
                    break
            elif os.waitpid(pid, os.WNOHANG)[0]:
                pid = None              # the fsync returned: no batch was held
                break
            if time.monotonic() > deadline:
                raise CrashFailed("lost: in %d s the fsync of the root neither returned nor "
                                  "had a batch applied (%s)" % (WAIT_LIMIT, proxy.counts()))
            time.sleep(0.01)
    finally:
        kill()
        if pid is not None:
            reap(pid)
        proxy.set_faults(rate=0.0)
    return lost


def journal_lines(path):
    """The journal's lines (bytes, without their newlines; the zeros the
    file was grown by at its end left out) and each one's record (the JSON
    after "MAC "; None when it does not parse)."""
    with open(path, "rb") as f:
        lines = f.read().rstrip(b"\0").split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    recs = []
    for line in lines:
        try:
            recs.append(json.loads(line.split(b" ", 1)[1]))
        except (IndexError, ValueError):
            recs.append(None)
    return lines, recs


def live_ops(recs):
    """Indexes of the "op" records of RECS that nothing later settles (a
    "done", "fail" or "drop" record of its seq) or replaces: the changes a
    damaged record really loses."""
    settled = set()
    for r in recs:
        if not r:
            continue
        if r.get("t") in ("done", "fail", "drop"):
            settled.update(r.get("seqs") or [r.get("seq")])
        elif r.get("t") == "op" and r.get("replaces"):
            settled.add(r["replaces"])
    return {i for i, r in enumerate(recs)
            if r and r.get("t") == "op" and r.get("seq") not in settled}


def damage_journal(path, n):
    """Set to 0 one byte of an "op" record in the middle of the journal at
    PATH (neither its first nor its last line), inside its JSON after the
    "path" member (the first byte of the kind's value), so that the path
    stays readable. The record is chosen by N among those still live (any
    middle one if none is). Returns the record (its JSON) with "also": the
    live changes that depend on it ({"path", "pk", "rk"} each: the other
    halves of renames with a live change of its path, which a rename's
    batch takes down with it), or None when the journal holds fewer than 3
    "op" lines (nothing damaged)."""
    lines, recs = journal_lines(path)
    ops = [i for i, r in enumerate(recs) if r and r.get("t") == "op"]
    if len(ops) < 3:
        return None
    middle = [i for i in ops if 0 < i < len(lines) - 1]
    alive = live_ops(recs)
    live = [i for i in middle if i in alive]
    i = (live or middle)[n % len(live or middle)]
    groups = {recs[j].get("g") for j in alive | {i}
              if recs[j].get("path") == recs[i]["path"] and recs[j].get("g")}
    also = {recs[j]["path"]: {"path": recs[j]["path"], "pk": recs[j]["pk"], "rk": recs[j]["rk"]}
            for j in sorted(alive) if recs[j].get("g") in groups and
            recs[j]["path"] != recs[i]["path"]}
    line = lines[i]
    end_of_path = line.index(b'"', line.index(b'"path":"') + len(b'"path":"'))
    at = line.index(b'"k":"', end_of_path) + len(b'"k":"')
    with open(path, "r+b") as f:
        f.seek(sum(len(x) + 1 for x in lines[:i]) + at)
        f.write(b"\0")
    return dict(recs[i], also=list(also.values()))


def damage_reported(stderr, pending, rec):
    """The mount over the damaged journal said so: its log names the damaged
    record's path, user.aztfs.pending (PENDING) counts it, and only changes of
    that entity and of REC["also"] (which depended on the lost one) failed.
    Returns the paths of the changes that failed."""
    want = "(it names %s), it is lost" % rec["path"]
    if want not in stderr:
        raise CrashFailed("damaged: the log does not say %r:\n%s" % (want, "\n".join(
            l for l in stderr.splitlines() if "journal" in l)[-3000:]))
    if pending["damaged"] < 1:
        raise CrashFailed("damaged: user.aztfs.pending counts no damage: %s" % pending)
    allowed = {rec["path"]} | {a["path"] for a in rec["also"]}
    others = [f for f in pending["failures"] if f["path"] not in allowed]
    if others or len(pending["failures"]) != pending["failed"]:
        raise CrashFailed("damaged: failed changes besides those of %s: %s"
                          % (sorted(allowed), pending))
    return sorted({f["path"] for f in pending["failures"]})


def big_entity():
    """File text of an entity of about 870 KB (BIG_PROPS Binary properties of
    64 KiB), and its properties as the model holds them."""
    props = {}
    for i in range(BIG_PROPS):
        data = bytes((j + i) % 256 for j in range(256)) * 256
        props["b%02d" % i] = ("Edm.Binary", base64.b64encode(data).decode())
    obj = {}
    for k, (t, v) in props.items():
        obj[k], obj[k + "@odata.type"] = v, t
    return json.dumps(obj).encode(), props


def writer(save, names, acked, failed):
    """SAVE(name) (None or (call, errno)) for each of NAMES until one fails:
    ACKED gets the names saved, FAILED the one that failed and its error."""
    for name in names:
        err = save(name)
        if err:
            failed.append((name, err))
            return
        acked.append(name)


def wait_stuck(th, acked, failed):
    """Return once the writer thread TH has saved nothing for STUCK seconds
    (it waits for room); raise if it stops or keeps going."""
    last, since, t0 = -1, time.monotonic(), time.monotonic()
    while time.monotonic() - since < STUCK:
        if failed or not th.is_alive():
            raise CrashFailed("term_wait: the writer stopped before the SIGTERM: %s" % failed)
        if time.monotonic() - t0 > WAIT_LIMIT:
            raise CrashFailed("term_wait: the writer never waited for room (%d saved)"
                              % len(acked))
        if len(acked) != last:
            last, since = len(acked), time.monotonic()
        time.sleep(0.05)


def stop_line(stderr):
    lines = [l for l in stderr.splitlines() if "write-behind stopped after" in l]
    if len(lines) != 1:
        raise CrashFailed("term_wait: no single 'write-behind stopped after' line:\n%s"
                          % stderr[-3000:])
    return lines[0]


def term_wait(mount, proxy, queued, save, names, stop_secs):
    """Every batch stalls (the proxy holds each POST, unsent); a writer
    thread saves SAVE(name) for NAMES until it waits for room in the full
    queue; then SIGTERM. The daemon must exit within STOP_SECS (its -o
    writeback_stop) + STOP_SLACK with status 1 and one log line "write-behind
    stopped after ...: 0 changes sent since the stop; N unsent and 0 failed"
    (N: what QUEUED() says is queued before the signal), and the writer's
    save must fail, logged as having waited for room. The mount is then gone (MOUNT closed) and the
    faults cleared. Returns the names the writer saw saved, and the one that
    failed."""
    acked, failed = [], []
    proxy.set_faults(rate=1.0, kinds=["stall"], methods=["POST"])
    th = threading.Thread(target=writer, args=(save, names, acked, failed), daemon=True)
    th.start()
    try:
        wait_stuck(th, acked, failed)
        n = queued()
        t0 = time.monotonic()
        mount.proc.send_signal(signal.SIGTERM)
        try:
            status = mount.proc.wait(stop_secs + STOP_SLACK)
        except subprocess.TimeoutExpired:
            raise CrashFailed("term_wait: aztfs did not exit within %d s of SIGTERM:\n%s" % (
                stop_secs + STOP_SLACK, mount.stderr()[-3000:]))
        took = time.monotonic() - t0
        th.join(WAIT_LIMIT)
    finally:
        if mount.proc.poll() is None:
            mount.proc.kill()
            mount.proc.wait(10)
        harness.unmount_path(mount.path)
        mount.closed, mount.exit_status = True, mount.proc.returncode
        proxy.set_faults(rate=0.0)
    err = mount.stderr()
    line = stop_line(err)
    want = "0 changes sent since the stop; %d unsent and 0 failed" % n
    if status != 1 or want not in line:
        raise CrashFailed("term_wait: exit status %s after %.1f s, expected 1 and %r:\n%s"
                          % (status, took, want, line))
    if th.is_alive() or len(failed) != 1 or \
            "waited for room in the write-behind queue" not in err:
        raise CrashFailed("term_wait: the save waiting for room did not fail: alive %s, %s:\n%s"
                          % (th.is_alive(), failed, err[-3000:]))
    return acked, failed[0][0]
