"""model.py - the reference-model test of aztfs (issue 13).

Seeded random sequences of operations are applied to a mount and to an
in-memory model of what the table must hold and what the mount must show.
After every step the mount is compared with the model: the listings, every
file's bytes parsed with their types, and `stat` sizes against the bytes read.
At the end the remote table is compared with the model through the official
SDK. A second mount and the SDK change and delete the same entities; the
model says which outcome is allowed (ESTALE, and the other change kept).

On a failure the seed and a shrunk sequence are printed, with the command
that replays them:

    /usr/bin/python3 tests/integration/model.py --seeds 7            # one seed
    /usr/bin/python3 tests/integration/model.py --minutes 30 --seeds 1000   # long mode
    /usr/bin/python3 tests/integration/model.py --replay steps.json   # a saved sequence

Used by tests/integration/test_model.py (a fixed set of seeds in CI) and,
with --writeback, test_model_writeback.py, whose crash points are in
model_crash.py."""

import argparse
import base64
import errno
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import harness  # noqa: E402
import model_crash  # noqa: E402
import sdk_values  # noqa: E402
from harness import write_through  # noqa: E402
from aztfs_names import dir_name, file_name  # noqa: E402

CACHE_TIMEOUT = 2            # -o cache_timeout of the model's mounts (seconds)
SETTLE = CACHE_TIMEOUT + 1.5  # a change made elsewhere is shown after this at most
MOUNT_OPTIONS = "cache_timeout=%d" % CACHE_TIMEOUT
PARTITIONS = ["p1", "a b", "50%", ".hid", "caf\u00e9", "it's", ""]
ROWS = ["r1", "r2", "a b", "%", ".dot", "\u65e5\u672c", "it's", "", "x" * 300]
# The Cosmos DB for Table profile (issue 42, tests/cosmosmodel.py): keys
# Cosmos can hold - none empty, RowKeys up to 255 bytes (still a long-form
# file name past 250 bytes).
COSMOS_PARTITIONS = [p for p in PARTITIONS if p]
COSMOS_ROWS = [r for r in ROWS if r and len(r) <= 255] + ["x" * 255]
SYSTEM = ("PartitionKey", "RowKey", "Timestamp")
WB_QUEUE_MIB = 1             # -o writeback_queue= of the write-behind mounts (term_wait fills it)
WB_STOP = 3                  # -o writeback_stop= of the write-behind mounts (seconds)
WRITER_PK = "wq"             # term_wait's writer saves here (not in PARTITIONS)
# What a generated kill -9 remount becomes (by weight), drawn from a second
# random stream so that a seed's steps stay those it had before the crash
# points; that stream also adds a "lost" remount before a step with chance
# EXTRA_LOST (the lost batches must hold each kind of operation over the seeds).
CRASHES = [("kill", 1), ("lost", 2), ("damaged", 1), ("term_wait", 1)]
EXTRA_LOST = 1 / 100


class StepFailed(AssertionError):
    pass


# ---------------------------------------------------------------------------
# typed values: (Edm type, the value as aztfs writes it in a file)
# ---------------------------------------------------------------------------
VALUES = {
    "Edm.String": ["", "caf\u00e9 \u65e5\u672c", 'quote " and \\ back', "two\nlines\ttab",
                   "x" * 2000, "\U0001F600"],
    "Edm.Int32": [0, -2147483648, 2147483647, 42],
    "Edm.Int64": ["9223372036854775807", "-9223372036854775808", "0", "4294967296"],
    # no -0.0: Azurite stores it as 0 (the SDK alone reads back 0.0 too)
    "Edm.Double": [0.5, -1.5, 1e+300, 5e-324, 2.0, "NaN", "Infinity", "-Infinity"],
    "Edm.Boolean": [True, False],
    "Edm.DateTime": ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2020-02-29T12:00:00.5Z"],
    "Edm.Guid": ["0f8fad5b-d9cb-469f-a165-70867728950e", "00000000-0000-0000-0000-000000000000"],
    "Edm.Binary": ["AA==", base64.b64encode(bytes(range(256))).decode()],
}
IMPLIED = ("Edm.String", "Edm.Int32", "Edm.Boolean")


def random_props(rng):
    """A random entity: {name: (type, value)}, with a "tok" string that sed
    can find."""
    props = {"tok": ("Edm.String", "tok%d" % rng.randrange(10 ** 6))}
    for i in range(rng.randrange(4)):
        t = rng.choice(sorted(VALUES))
        props["v%d_%s" % (i, t[4:].lower())] = (t, rng.choice(VALUES[t]))
    return props


def entity_text(props, rng=None):
    """File text for PROPS, annotated where the type is not implied; laid out
    compactly or indented (aztfs accepts any layout)."""
    obj = {}
    for k, (t, v) in props.items():
        obj[k] = v
        if t not in IMPLIED:
            obj[k + "@odata.type"] = t
    if rng is not None and rng.random() < 0.5:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    return (json.dumps(obj, ensure_ascii=False, indent=1) + "\n").encode()


def parse_file(data):
    """{name: (type, value)} of a file's bytes (keys and Timestamp dropped)."""
    obj = json.loads(data.decode("utf-8"))
    out = {}
    for k, v in obj.items():
        if k in SYSTEM or "@" in k:
            continue
        t = obj.get(k + "@odata.type")
        if t is None:
            t = ("Edm.Boolean" if isinstance(v, bool) else "Edm.Int32" if isinstance(v, int)
                 else "Edm.String")
        out[k] = (t, v)
    return out


def same_value(t, a, b):
    if t == "Edm.Double" and isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return type(a) is type(b) and a == b


def same_props(want, got):
    return (set(want) == set(got) and
            all(want[k][0] == got[k][0] and same_value(want[k][0], want[k][1], got[k][1])
                for k in want))


def sdk_props(e):
    """{name: (type, value as a file shows it)} of an SDK entity (keys and
    Timestamp dropped; a DateTime as naive UTC isoformat)."""
    out = {}
    for k, (t, v) in sdk_values.typed(e).items():
        if k in SYSTEM:
            continue
        if t == "Edm.Int64":
            v = str(v)
        elif t == "Edm.Double" and isinstance(v, float) and math.isinf(v):
            v = "Infinity" if v > 0 else "-Infinity"
        elif t == "Edm.Binary":
            v = base64.b64encode(v).decode()
        out[k] = (t, v)
    return out


def model_for_sdk(props):
    """PROPS as sdk_props shows them (DateTime to microseconds)."""
    import datetime
    out = {}
    for k, (t, v) in props.items():
        if t == "Edm.DateTime":
            base, frac = v[:19], v[20:-1] if "." in v else ""
            d = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S")
            v = d.replace(microsecond=int((frac + "000000")[:6])).isoformat()
        out[k] = (t, v)
    return out


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------
class Model:
    """What the table holds and what the mount shows: {pk: {rk: props}} and
    the partition directories made with mkdir (or left by rm)."""

    def __init__(self):
        self.rows = {}
        self.dirs = set()
        self.emptied = {}          # pk -> when another writer deleted its last entity

    def get(self, pk, rk):
        return self.rows.get(pk, {}).get(rk)

    def put(self, pk, rk, props):
        self.rows.setdefault(pk, {})[rk] = props

    def delete(self, pk, rk):
        part = self.rows.get(pk, {})
        part.pop(rk, None)
        if not part:
            self.rows.pop(pk, None)

    def partitions(self):
        return {pk for pk, part in self.rows.items() if part} | self.dirs

    def lingering(self):
        """Partitions another writer emptied within CACHE_TIMEOUT: the table's
        listing may still name them (shown empty) until it expires."""
        now = time.monotonic()
        return {pk for pk, t in self.emptied.items()
                if now - t < CACHE_TIMEOUT + 0.5 and pk not in self.partitions()}


# ---------------------------------------------------------------------------
# one run: steps generated from a seed, executed and checked
# ---------------------------------------------------------------------------
def errno_of(fn):
    """0, or the errno fn raised."""
    try:
        fn()
        return 0
    except OSError as e:
        return e.errno


class Runner:
    """Applies steps to MOUNT (and OTHER, a second mount) and to a model of
    TABLE; SDK is a TableServiceClient."""

    def __init__(self, mount, other, sdk, table, wb=None):
        self.m, self.other, self.sdk, self.table = str(mount), str(other), sdk, table
        self.model = Model()
        self.tc = sdk.get_table_client(table)
        self.log = []
        self.wb = wb                # write-behind mode: a Remounter (WRITEBACK below)
        self.max_queued = 0         # the most changes seen queued after a step (write-behind)
        self.wb_done = {}           # write-behind steps carried out, by kind
        self.term_waits = 0         # term_wait steps begun (their writer's row keys)

    # paths ---------------------------------------------------------------
    def pdir(self, pk, root=None):
        return os.path.join(root or self.m, self.table, dir_name(pk))

    def path(self, pk, rk, root=None):
        return os.path.join(self.pdir(pk, root), file_name(rk))

    def text(self, props, pk, rk, rng=None):
        """Entity text; a long-form name needs its keys in the content."""
        obj_props = dict(props)
        data = entity_text(obj_props, rng)
        if len(rk.encode()) > 250 or len(pk.encode()) > 250:
            obj = json.loads(data)
            obj["PartitionKey"], obj["RowKey"] = pk, rk
            data = json.dumps(obj, ensure_ascii=False).encode()
        return data

    def expect(self, step, want, got):
        if want != got:
            raise StepFailed("%s: expected %s, got %s" % (
                step["op"], errno.errorcode.get(want, want) if want else "success",
                errno.errorcode.get(got, got) if got else "success"))

    # writing through the mount -----------------------------------------------
    def write_fd(self, path, data, flags, chunks=1, fsync_mid=False):
        """open, write DATA (in CHUNKS, or back to front with pwrite when
        CHUNKS is 0, with an fsync after the first chunk when FSYNC_MID),
        close; (call, errno) of the first failure or None."""
        def writes(fd):
            if chunks == 0:
                half = max(1, len(data) // 2)
                os.pwrite(fd, data[half:], half)
                os.pwrite(fd, data[:half], 0)
                return
            step = max(1, -(-len(data) // chunks))
            for i in range(0, len(data), step):
                os.write(fd, data[i:i + step])
                if fsync_mid and i == 0:
                    try:
                        os.fsync(fd)      # the half-written text: EINVAL, or saved
                    except OSError as e:
                        if e.errno != errno.EINVAL:
                            raise
        return write_through(path, flags, writes)

    def saved(self, pk, rk, props):
        self.model.put(pk, rk, props)
        self.model.dirs.discard(pk)

    def removed(self, pk, rk):
        self.model.delete(pk, rk)
        self.model.dirs.add(pk)          # the directory stays until rmdir

    # the operations ------------------------------------------------------------
    def op_create(self, s):
        pk, rk = s["pk"], s["rk"]
        exists = self.model.get(pk, rk) is not None
        if pk not in self.model.partitions():
            os.makedirs(self.pdir(pk), exist_ok=True)
            self.model.dirs.add(pk)
        err = self.write_fd(self.path(pk, rk), self.text(s["props"], pk, rk),
                            os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        self.expect(s, errno.EEXIST if exists else 0, err[1] if err else 0)
        if not exists:
            self.saved(pk, rk, s["props"])

    def op_overwrite(self, s):
        pk, rk = s["pk"], s["rk"]
        if pk not in self.model.partitions():
            os.makedirs(self.pdir(pk), exist_ok=True)
            self.model.dirs.add(pk)
        err = self.write_fd(self.path(pk, rk), self.text(s["props"], pk, rk, random.Random(s["seed"])),
                            os.O_WRONLY | os.O_CREAT | os.O_TRUNC, chunks=s["chunks"],
                            fsync_mid=s.get("fsync", False))
        self.expect(s, 0, err[1] if err else 0)
        self.saved(pk, rk, s["props"])

    def op_append_fix(self, s):
        pk, rk = s["pk"], s["rk"]
        if self.model.get(pk, rk) is None:
            return
        fd = os.open(self.path(pk, rk), os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, b'\n{"broken": ')
            os.ftruncate(fd, 0)
            os.write(fd, self.text(s["props"], pk, rk))
        finally:
            os.close(fd)
        self.saved(pk, rk, s["props"])

    def op_truncate0(self, s):
        pk, rk = s["pk"], s["rk"]
        exists = self.model.get(pk, rk) is not None
        if len(rk.encode()) > 250:
            return                        # the empty entity cannot carry the long key
        got = errno_of(lambda: os.truncate(self.path(pk, rk), 0))
        self.expect(s, 0 if exists else errno.ENOENT, got)
        if exists:
            self.saved(pk, rk, {})

    def op_rename(self, s):
        pk, a, b = s["pk"], s["rk"], s["rk2"]
        src = self.model.get(pk, a)
        if src is None or a == b or len(b.encode()) > 250:
            return
        got = errno_of(lambda: os.rename(self.path(pk, a), self.path(pk, b)))
        self.expect(s, 0, got)
        self.model.delete(pk, a)
        self.model.put(pk, b, src)

    def op_move_across(self, s):
        pk, pk2, rk = s["pk"], s["pk2"], s["rk"]
        src = self.model.get(pk, rk)
        if src is None or pk == pk2 or len(rk.encode()) > 250:
            return
        if pk2 not in self.model.partitions():
            os.makedirs(self.pdir(pk2), exist_ok=True)
            self.model.dirs.add(pk2)
        got = errno_of(lambda: os.rename(self.path(pk, rk), self.path(pk2, rk)))
        self.expect(s, errno.EXDEV, got)
        r = subprocess.run(["mv", self.path(pk, rk), self.path(pk2, rk)],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise StepFailed("mv across partitions: %s" % r.stderr)
        self.removed(pk, rk)
        self.saved(pk2, rk, src)

    def op_unlink(self, s):
        pk, rk = s["pk"], s["rk"]
        exists = self.model.get(pk, rk) is not None
        got = errno_of(lambda: os.unlink(self.path(pk, rk)))
        self.expect(s, 0 if exists else errno.ENOENT, got)
        if exists:
            self.removed(pk, rk)

    def op_mkdir(self, s):
        pk = s["pk"]
        want = errno.EEXIST if pk in self.model.partitions() else 0
        got = errno_of(lambda: os.mkdir(self.pdir(pk)))
        if pk in self.model.lingering() and got == errno.EEXIST:
            return                        # the mount still lists it: as ls shows
        self.expect(s, want, got)
        if want == 0:
            self.model.dirs.add(pk)

    def op_rmdir(self, s):
        pk = s["pk"]
        if pk not in self.model.partitions():
            want = errno.ENOENT
        else:
            want = errno.ENOTEMPTY if self.model.rows.get(pk) else 0
        self.expect(s, want, errno_of(lambda: os.rmdir(self.pdir(pk))))
        if want == 0:
            self.model.dirs.discard(pk)

    def op_cp(self, s):
        pk, a, b = s["pk"], s["rk"], s["rk2"]
        src = self.model.get(pk, a)
        if src is None or a == b or len(b.encode()) > 250 or len(a.encode()) > 250:
            return
        r = subprocess.run(["cp", "-p", self.path(pk, a), self.path(pk, b)],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise StepFailed("cp -p: %s" % r.stderr)
        self.saved(pk, b, src)

    def op_sed(self, s):
        pk, rk = s["pk"], s["rk"]
        cur = self.model.get(pk, rk)
        if cur is None or "tok" not in cur or len(rk.encode()) > 250:
            return
        new = "tok%d" % s["n"]
        r = subprocess.run(["sed", "-i", "s/%s/%s/" % (cur["tok"][1], new), self.path(pk, rk)],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise StepFailed("sed -i: %s" % r.stderr)
        props = dict(cur)
        props["tok"] = ("Edm.String", new)
        self.saved(pk, rk, props)

    def op_scratch(self, s):
        pk, rk = s["pk"], s["rk"]
        if pk not in self.model.partitions() or len(rk.encode()) > 250:
            return
        tmp = os.path.join(self.pdir(pk), ".model.tmp")
        with open(tmp, "wb") as f:
            f.write(self.text(s["props"], pk, rk))
        self.expect(s, 0, errno_of(lambda: os.rename(tmp, self.path(pk, rk))))
        self.saved(pk, rk, s["props"])

    def op_two_handles(self, s):
        """Two handles of this mount on one entity: the first close wins, the
        second is ESTALE: it read the entity before the first save."""
        pk, rk = s["pk"], s["rk"]
        if pk not in self.model.partitions() or len(rk.encode()) > 250:
            return
        if self.model.get(pk, rk) is None:
            return
        flags = os.O_WRONLY | os.O_TRUNC
        fa, fb = os.open(self.path(pk, rk), flags, 0o644), os.open(self.path(pk, rk), flags, 0o644)
        os.write(fa, self.text(s["props"], pk, rk))
        os.write(fb, self.text(s["props2"], pk, rk))
        self.expect(s, 0, errno_of(lambda: os.close(fa)))
        self.expect(s, errno.ESTALE, errno_of(lambda: os.close(fb)))
        self.saved(pk, rk, s["props"])

    def op_bad_save(self, s):
        """Text that is not an entity: the close fails with EINVAL, nothing
        changes; the same name can be saved at once afterwards."""
        pk, rk = s["pk"], s["rk"]
        if pk not in self.model.partitions() or len(rk.encode()) > 250:
            return
        err = self.write_fd(self.path(pk, rk), b'{"a": 1', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        self.expect(s, errno.EINVAL, err[1] if err else 0)
        self.check_view()
        err = self.write_fd(self.path(pk, rk), self.text(s["props"], pk, rk),
                            os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        self.expect(s, 0, err[1] if err else 0)
        self.saved(pk, rk, s["props"])

    EXCL_BAD = [b"not json", b'{"g": "x", "g@odata.type": "Edm.Guid"}']

    def op_excl_refused(self, s):
        """An O_CREAT|O_EXCL create whose content is refused (issue 46, item
        1): the shell's noclobber '>' (HOW "noclobber") or os.open with a
        flush before the write, as bash makes ("open"). On a name that
        exists: EEXIST, nothing changes. Else the close fails with EINVAL,
        and neither the mount nor the service holds the name afterwards (the
        empty entity the create made is removed); its directory stays."""
        pk, rk = s["pk"], s["rk"]
        exists = self.model.get(pk, rk) is not None
        if pk not in self.model.partitions():
            os.makedirs(self.pdir(pk), exist_ok=True)
            self.model.dirs.add(pk)
        path, bad = self.path(pk, rk), self.EXCL_BAD[s["bad"] % len(self.EXCL_BAD)]
        if s["how"] == "noclobber":
            r = subprocess.run(["bash", "-o", "noclobber", "-c", 'printf "%s\\n" "$2" > "$1"',
                                "bash", path, bad.decode()], capture_output=True, timeout=60)
            said = r.stderr.decode(errors="replace").strip()
            if exists != ("cannot overwrite existing file" in said):
                raise StepFailed("%s: bash exited %d (%s), the name %s" % (
                    s["op"], r.returncode, said, "exists" if exists else "is free"))
        else:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except OSError as e:
                self.expect(s, errno.EEXIST if exists else 0, e.errno)
                return
            if exists:
                os.close(fd)
                self.expect(s, errno.EEXIST, 0)
            try:
                errno_of(lambda: os.close(os.dup(fd)))   # (a long-form name: EINVAL, no keys)
                os.write(fd, bad)
            finally:
                err = errno_of(lambda: os.close(fd))
            self.expect(s, errno.EINVAL, err)
        if not exists:
            self.check_remote_entity(pk, rk, None)
            if os.path.exists(path):
                raise StepFailed("%s: %s is still shown after its refused create" % (
                    s["op"], file_name(rk)))

    def op_rename_onto_open(self, s):
        """open(b, O_TRUNC); rename(a, b); write; close: the handle wrote into
        the file the rename replaced, which is gone (sed -i, rsync and
        editors do this while someone holds b open)."""
        pk, a, b = s["pk"], s["rk"], s["rk2"]
        src, dst = self.model.get(pk, a), self.model.get(pk, b)
        if src is None or dst is None or a == b or len(b.encode()) > 250:
            return
        fd = os.open(self.path(pk, b), os.O_WRONLY | os.O_TRUNC)
        try:
            self.expect(s, 0, errno_of(lambda: os.rename(self.path(pk, a), self.path(pk, b))))
            os.write(fd, self.text(s["props"], pk, b))
        finally:
            self.expect(s, 0, errno_of(lambda: os.close(fd)))
        self.model.delete(pk, a)
        self.model.put(pk, b, src)

    def op_write_across_rename(self, s):
        """open(a, O_TRUNC); rename(a, b); write; close: as on a local disk,
        the handle follows the rename made through this mount and saves b."""
        pk, a, b = s["pk"], s["rk"], s["rk2"]
        if self.model.get(pk, a) is None or a == b or len(b.encode()) > 250 \
                or len(a.encode()) > 250:
            return
        fd = os.open(self.path(pk, a), os.O_WRONLY | os.O_TRUNC)
        try:
            self.expect(s, 0, errno_of(lambda: os.rename(self.path(pk, a), self.path(pk, b))))
            self.model.put(pk, b, self.model.get(pk, a))
            self.model.delete(pk, a)
            os.write(fd, self.text(s["props"], pk, b))
        finally:
            self.expect(s, 0, errno_of(lambda: os.close(fd)))
        self.saved(pk, b, s["props"])

    def op_new_open_listed(self, s):
        """A new file open and not yet saved is listed, and can be renamed
        within its partition before its close saves it."""
        pk, a, b = s["pk"], s["rk"], s["rk2"]
        if (pk not in self.model.partitions() or self.model.get(pk, a) is not None or
                self.model.get(pk, b) is not None or a == b or
                len(a.encode()) > 250 or len(b.encode()) > 250):
            return
        fd = os.open(self.path(pk, a), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, self.text(s["props"], pk, a))
            if file_name(a) not in os.listdir(self.pdir(pk)):
                raise StepFailed("a new file open for writing is not listed")
            self.expect(s, 0, errno_of(lambda: os.rename(self.path(pk, a), self.path(pk, b))))
        finally:
            self.expect(s, 0, errno_of(lambda: os.close(fd)))
        self.saved(pk, b, s["props"])

    def op_rsync_copy(self, s):
        """rsync one entity onto another (nanosecond quick check)."""
        pk, a, b = s["pk"], s["rk"], s["rk2"]
        src = self.model.get(pk, a)
        if src is None or a == b or len(a.encode()) > 250 or len(b.encode()) > 250:
            return
        r = subprocess.run(["rsync", "-a", "--modify-window=-1", self.path(pk, a),
                            self.path(pk, b)], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise StepFailed("rsync: %s" % r.stderr)
        self.saved(pk, b, src)

    def op_held_read(self, s):
        """A read handle held across another step keeps the bytes it opened."""
        pk, rk = s["pk"], s["rk"]
        if self.model.get(pk, rk) is None:
            return
        fd = os.open(self.path(pk, rk), os.O_RDONLY)
        try:
            before = os.read(fd, 1 << 22)
            want = self.model.get(pk, rk)
            self.run_step(s["inner"])
            os.lseek(fd, 0, os.SEEK_SET)
            after = os.read(fd, 1 << 22)
        finally:
            os.close(fd)
        if after != before or not same_props(want, parse_file(before)):
            raise StepFailed("a held read handle changed: %r -> %r" % (before[:80], after[:80]))

    def op_ext_change(self, s):
        """Someone else (the SDK, or the second mount) changes or deletes the
        entity between our read and our save: the save fails (ESTALE, or
        ENOENT when deleted) and their change is kept, even when their bytes
        equal ours. The failed save tells the mount, so from then on it shows
        the other writer's entity (or none) at once."""
        pk, rk = s["pk"], s["rk"]
        if self.model.get(pk, rk) is None or len(rk.encode()) > 250:
            return
        if self.wb:
            return self.ext_change_wb(s)
        fd = os.open(self.path(pk, rk), os.O_RDWR)
        try:
            os.read(fd, 1 << 22)
            theirs = s["props2"] if not s["same"] else s["props"]
            if s["how"] == "rm_after_change":
                self.tc.upsert_entity(self.sdk_entity(pk, rk, theirs), mode="replace")
                os.close(fd)
                fd = None
                got = errno_of(lambda: os.unlink(self.path(pk, rk)))
                self.expect(s, errno.ESTALE, got)
                self.model.put(pk, rk, theirs)
                return
            self.change_elsewhere(s["how"], pk, rk, theirs)
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, self.text(s["props"], pk, rk))
        except BaseException:
            if fd is not None:
                os.close(fd)
            raise
        got = errno_of(lambda: os.close(fd))
        if s["how"] == "sdk_delete":
            self.expect(s, errno.ENOENT, got)
            self.model.delete(pk, rk)
            self.model.emptied[pk] = time.monotonic()
        else:
            self.expect(s, errno.ESTALE, got)
            self.model.put(pk, rk, theirs)

    # streams (/T/.ndjson, /T/PK/.ndjson): import and export --------------------
    def stream_path(self, pk=None):
        """The table's stream, or partition PK's."""
        return os.path.join(self.pdir(pk) if pk is not None else
                            os.path.join(self.m, self.table), ".ndjson")

    def ndjson_line(self, pk, rk, props, with_pk=True):
        """Entity PK/RK with PROPS as an import line (its keys in it)."""
        obj = json.loads(entity_text(props))
        keys = {"PartitionKey": pk, "RowKey": rk} if with_pk else {"RowKey": rk}
        return (json.dumps(dict(keys, **obj), ensure_ascii=False) + "\n").encode()

    def shell_into(self, data, op, path):
        """`cat lines OP PATH` (OP ">" or ">>"); cat's exit status and stderr."""
        r = subprocess.run(["bash", "-c", 'cat %s "$1"' % op, "import", path], input=data,
                           capture_output=True, timeout=120)
        return r.returncode, r.stderr.decode(errors="replace")

    def op_import(self, s):
        """NDJSON written to the table's stream, or a partition's (its lines
        without their PartitionKey, half the time): `>` is Insert Or Replace
        (each line's entity whole, the last of one key wins), `>>` Insert
        (only entities the table lacks; first, with CLASH, one line naming
        an entity it holds alone fails the stream: cat exits 1, nothing
        changes)."""
        pk0 = s["pk"]
        part = s["scope"] == "partition"
        if part and pk0 not in self.model.partitions():
            return
        lines = [(pk0 if part else pk, rk, props) for pk, rk, props in s["lines"]]
        if s["how"] == ">>":
            held = sorted((pk, rk) for pk, rows in self.model.rows.items() for rk in rows
                          if not part or pk == pk0)
            if held and s["clash"]:
                pk, rk = held[s["n"] % len(held)]
                rc, err = self.shell_into(self.ndjson_line(pk, rk, {}), ">>",
                                          self.stream_path(pk0 if part else None))
                if rc == 0:
                    raise StepFailed(">> of an entity the table holds succeeded")
                self.check_view()
            new = {}                       # Insert: entities the table lacks, one line a key
            for pk, rk, props in lines:
                if self.model.get(pk, rk) is None:
                    new.setdefault((pk, rk), props)
            lines = [(pk, rk, props) for (pk, rk), props in new.items()]
        data = b"".join(self.ndjson_line(pk, rk, props, not (part and s["bare"]))
                        for pk, rk, props in lines)
        rc, err = self.shell_into(data, s["how"], self.stream_path(pk0 if part else None))
        if rc != 0:
            raise StepFailed("cat %s stream: exit %d: %s" % (s["how"], rc, err.strip()))
        for pk, rk, props in lines:
            self.saved(pk, rk, props)

    def op_export(self, s):
        """`cat` of the table's stream, or a partition's: one line per
        entity of the model, each line its entity's properties with their
        types, in key order (in any, on Cosmos DB: "any_order"); a pread fails (ESPIPE: the stream is read in
        order), and reads in order give cat's bytes at any point."""
        pk = s["pk"] if s["scope"] == "partition" else None
        path = self.stream_path(pk)
        r = subprocess.run(["cat", path], capture_output=True, timeout=120)
        if pk is not None and pk not in self.model.partitions():
            if r.returncode == 0 and r.stdout == b"" and pk in self.model.lingering():
                return                     # the mount still lists it, empty
            if r.returncode == 0 or b"No such file" not in r.stderr:
                raise StepFailed("cat of a missing partition's stream: exit %d, %r" % (
                    r.returncode, r.stderr[:200]))
            return
        if r.returncode != 0:
            raise StepFailed("cat %s: %s" % (path, r.stderr.decode(errors="replace")))
        data = r.stdout
        if data and not data.endswith(b"\n"):
            raise StepFailed("export: the last line has no newline")
        got = []
        for line in data.split(b"\n")[:-1]:
            obj = json.loads(line.decode("utf-8"))
            got.append((obj.get("PartitionKey"), obj.get("RowKey"), parse_file(line)))
        want = {(p, r): props for p, part in self.model.rows.items() for r, props in part.items()
                if pk is None or p == pk}
        keys = [(p, r) for p, r, _ in got]
        if sorted(keys) != sorted(want) or len(set(keys)) != len(keys):
            raise StepFailed("export %s: keys %s, model %s" % (path, keys, sorted(want)))
        utf16 = [(p.encode("utf-16-be"), r.encode("utf-16-be")) for p, r in keys]
        if not s.get("any_order") and utf16 != sorted(utf16) and keys != sorted(keys):
            raise StepFailed("export %s: keys out of order: %s" % (path, keys))
        for p, r, props in got:
            if not same_props(want[(p, r)], props):
                raise StepFailed("export %s: %s/%s: %s, model %s" % (path, p, r, props,
                                                                     want[(p, r)]))
        if data:
            at = int(len(data) * s["at"])
            fd = os.open(path, os.O_RDONLY)
            try:
                code = errno_of(lambda: os.pread(fd, 4096, at))
                skipped = 0
                while skipped < at and (chunk := os.read(fd, min(at - skipped, 65536))):
                    skipped += len(chunk)
                part = os.read(fd, 4096)
            finally:
                os.close(fd)
            if code != errno.ESPIPE:
                raise StepFailed("export %s: pread gave errno %s, not ESPIPE" % (path, code))
            if part != data[at:at + 4096]:
                raise StepFailed("export %s: read at %d in order: %r, cat has %r" % (
                    path, at, part[:60], data[at:at + 60]))

    # write-behind (-o writeback): the steps that differ --------------------------
    def sync_root(self):
        """fsync of the mount's root (everything queued sent): 0 or the errno."""
        def go():
            fd = os.open(self.m, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return errno_of(go)

    def pending(self):
        return json.loads(os.getxattr(self.m, "user.aztfs.pending"))

    def check_pending(self, queued=None, failed=0):
        """user.aztfs.pending holds FAILED failed changes (and QUEUED queued
        ones when given)."""
        p = self.pending()
        self.max_queued = max(self.max_queued, p["queued"])
        if p["failed"] != failed or (queued is not None and p["queued"] + p["sending"] != queued):
            raise StepFailed("user.aztfs.pending: %s (expected %s failed%s)" % (
                p, failed, "" if queued is None else ", %d queued" % queued))
        return p

    def ext_change_wb(self, s):
        """op_ext_change with write-behind: our entity is sent first (fsync),
        then someone else changes or deletes it and we save or rm it: the save
        is acknowledged and shown, the conflict comes at the next fsync of the
        root (EIO, the change listed in user.aztfs.pending, the other
        writer's entity kept and shown), and the failed change is discarded."""
        pk, rk = s["pk"], s["rk"]
        self.expect({"op": "ext_change: fsync of the root first"}, 0, self.sync_root())
        theirs = s["props2"] if not s["same"] else s["props"]
        dirs = set(self.model.dirs)
        fd = os.open(self.path(pk, rk), os.O_RDWR)
        try:
            os.read(fd, 1 << 22)
            if s["how"] == "rm_after_change":
                self.tc.upsert_entity(self.sdk_entity(pk, rk, theirs), mode="replace")
                os.close(fd)
                fd = None
                self.expect(s, 0, errno_of(lambda: os.unlink(self.path(pk, rk))))
                self.removed(pk, rk)
            else:
                self.change_elsewhere(s["how"], pk, rk, theirs)
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, self.text(s["props"], pk, rk))
                got, fd = errno_of(lambda: os.close(fd)), None
                self.expect(s, 0, got)
                self.saved(pk, rk, s["props"])
        finally:
            if fd is not None:
                os.close(fd)
        self.check_view()                     # the acknowledged change is shown
        self.expect({"op": "ext_change: fsync of the root after the conflict"}, errno.EIO,
                    self.sync_root())
        gone = s["how"] == "sdk_delete"
        p = self.check_pending(failed=1)
        f = p["failures"][0]
        want_path = "/%s/%s/%s" % (self.table, dir_name(pk), file_name(rk))
        want_errno = errno.ENOENT if gone else errno.ESTALE
        if f["path"] != want_path or f["errno"] != want_errno:
            raise StepFailed("user.aztfs.pending: %s, expected %s failed with %s" % (
                p, want_path, errno.errorcode[want_errno]))
        self.check_remote_entity(pk, rk, None if gone else theirs)
        self.model.dirs = dirs                # the mount shows the service's entity again
        if gone:
            self.model.delete(pk, rk)
            self.model.emptied[pk] = time.monotonic()
        else:
            self.model.put(pk, rk, theirs)
        self.check_view()
        os.setxattr(self.m, "user.aztfs.discard", want_path.encode())
        self.check_pending()
        self.count("conflict_" + s["how"])

    def count(self, kind, n=1):
        self.wb_done[kind] = self.wb_done.get(kind, 0) + n

    def check_remote_entity(self, pk, rk, props):
        """The service holds PROPS as PK/RK (None: no such entity)."""
        from azure.core.exceptions import ResourceNotFoundError
        try:
            got = sdk_props(self.tc.get_entity(pk, rk))
        except ResourceNotFoundError:
            got = None
        if (got is None) != (props is None) or (
                props is not None and not same_props(model_for_sdk(props), got)):
            raise StepFailed("remote %s/%s: %s, expected %s" % (pk, rk, got, props))

    def op_sync(self, s):
        """fsync of the root: nothing queued or failed after it, and the
        service holds the model."""
        self.check_remote()
        self.count("sync")

    def op_remount(self, s):
        """Take the mount down as s["how"] says (down_*) and mount again with
        the same journal: everything acknowledged is on the service (after a
        clean unmount at once, after a crash once the next mount replayed
        the journal, before it serves the tree), nothing queued or failed.
        Partition directories made with mkdir and still empty existed only
        in the mount."""
        m = self.m
        journal = self.pending()["journal"]
        kind, damaged = getattr(self, "down_" + s["how"])(s, journal)
        self.m = None
        with open(journal, errors="replace") as f:     # what the next mount replays
            held = "\n".join(line[:300] for line in f.read().splitlines())
        self.m = self.wb.up()
        if damaged:
            self.settle_damaged(damaged)
        try:
            self.check_pending(queued=0)
        except StepFailed as e:
            raise StepFailed("%s; the journal before the mount replayed it:\n%s" % (e, held))
        self.check_remote()
        self.model.dirs.clear()
        if m == self.m:
            raise StepFailed("remount: the same mountpoint came back")
        self.count(kind)

    # each takes the mount down: (the kind to count, the damaged journal record or None)
    def down_clean(self, s, journal):
        self.m = None                          # no fsync through a mount while it is down
        self.wb.down(True)
        self.check_remote()
        return "remount_clean", None

    def down_kill(self, s, journal):
        self.wb.down(False)
        return "remount_kill", None

    def down_lost(self, s, journal):
        """kill -9 while the service has applied a batch and its answer is
        lost (model_crash.lost_batch): the next mount sends it again and
        settles the 404/409/412 as ours. Counts the kinds the batch held."""
        try:
            lost = model_crash.lost_batch(self.m, journal, self.wb.proxy, self.wb.kill)
        finally:
            self.wb.release()
        if lost is None:
            return "remount_lost_none", None
        for kind in model_crash.batch_kinds(lost["body"]):
            self.count("lost_" + kind)
        return "remount_lost", None

    def down_damaged(self, s, journal):
        """kill -9, then a record in the middle of the journal damaged
        (model_crash.damage_journal); a plain kill when it holds fewer than 3
        change records."""
        self.wb.down(False)
        rec = model_crash.damage_journal(journal, s["n"])
        return ("remount_damaged" if rec else "remount_damaged_too_short"), rec

    def settle_damaged(self, rec):
        """After the mount over a journal whose record REC was damaged: the
        mount said so (model_crash.damage_reported); the changes of REC's
        entity, and of those that depended on it (REC["also"]: the other
        halves of its renames), that failed are discarded and the model
        takes what the service holds for each of them (the mount must show
        the same). Everything else must be as the model says."""
        failed = model_crash.damage_reported(self.wb.cur.stderr(), self.pending(), rec)
        for path in failed:
            os.setxattr(self.m, "user.aztfs.discard", path.encode())
        if failed:
            self.count("damaged_later_failed")
        if len(failed) > 1:
            self.count("damaged_rename_failed")
        from azure.core.exceptions import ResourceNotFoundError
        for e in [rec] + rec["also"]:
            pk, rk = e["pk"], e["rk"]
            was = self.model.get(pk, rk)
            try:
                self.tc.get_entity(pk, rk)
                with open(self.path(pk, rk), "rb") as f:
                    self.model.put(pk, rk, parse_file(f.read()))    # check_remote compares
            except ResourceNotFoundError:
                self.model.delete(pk, rk)
            now = self.model.get(pk, rk)
            if (was is None) != (now is None) or (now is not None and
                                                  not same_props(was, now)):
                self.count("damaged_change_lost")

    def down_term_wait(self, s, journal):
        """SIGTERM while a writer waits for room in the full queue, every
        batch stalled (model_crash.term_wait): the saves the writer saw
        succeed reach the service at the next mount, the one that failed
        does not."""
        self.term_waits += 1
        text, props = model_crash.big_entity()
        names = ["t%d-%d" % (self.term_waits, i) for i in range(100)]
        os.makedirs(self.pdir(WRITER_PK), exist_ok=True)

        def queued():
            p = self.pending()
            return p["queued"] + p["sending"]

        def save(rk):                          # (O_EXCL would insert at the open, and stall)
            return self.write_fd(self.path(WRITER_PK, rk), text,
                                 os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        acked, _ = model_crash.term_wait(self.wb.cur, self.wb.proxy, queued, save, names,
                                         WB_STOP)
        for rk in acked:
            self.saved(WRITER_PK, rk, props)
        self.count("term_wait_saved", len(acked))
        return "remount_term_wait", None

    def change_elsewhere(self, how, pk, rk, theirs):
        """Someone else deletes (sdk_delete) or replaces (sdk_replace) the
        entity through the SDK, or saves THEIRS through the second mount."""
        if how == "sdk_delete":
            self.tc.delete_entity(pk, rk)
        elif how == "sdk_replace":
            self.tc.upsert_entity(self.sdk_entity(pk, rk, theirs), mode="replace")
        else:
            self.save_elsewhere(pk, rk, theirs)

    def save_elsewhere(self, pk, rk, props):
        """Save PROPS as entity PK/RK through the second mount, whose view
        may be up to CACHE_TIMEOUT old: its ESTALE or ENOENT is retried."""
        deadline = time.monotonic() + SETTLE
        while True:
            err = self.write_fd(self.path(pk, rk, self.other), self.text(props, pk, rk),
                                os.O_WRONLY | os.O_TRUNC)
            if not err:
                return
            if err[1] not in (errno.ESTALE, errno.ENOENT) or time.monotonic() > deadline:
                raise StepFailed("second mount's save: %s" % (err,))
            time.sleep(0.2)

    def sdk_entity(self, pk, rk, props):
        import uuid
        from azure.data.tables import EdmType, EntityProperty
        e = {"PartitionKey": pk, "RowKey": rk}
        for k, (t, v) in props.items():
            if t == "Edm.Int64":
                v = EntityProperty(int(v), EdmType.INT64)
            elif t == "Edm.Double":
                v = EntityProperty(float(v) if isinstance(v, str) else v, EdmType.DOUBLE)
            elif t == "Edm.Int32":
                v = EntityProperty(v, EdmType.INT32)
            elif t == "Edm.Binary":
                v = base64.b64decode(v)
            elif t == "Edm.Guid":
                v = uuid.UUID(v)
            elif t == "Edm.DateTime":
                v = EntityProperty(v, EdmType.DATETIME)
            e[k] = v
        return e

    # checking -------------------------------------------------------------------
    def check_view(self):
        """The mount shows the model: listings, bytes parsed with types, and
        stat sizes against the bytes read."""
        tdir = os.path.join(self.m, self.table)
        shown = set(os.listdir(tdir))
        want = {dir_name(pk) for pk in self.model.partitions()}
        lingering = self.model.lingering()
        if not want <= shown <= want | {dir_name(pk) for pk in lingering}:
            raise StepFailed("table listing: shown %s, model %s" % (sorted(shown), sorted(want)))
        for pk in self.model.partitions():
            self.check_partition(pk)
        for pk in lingering:
            if dir_name(pk) in shown and os.path.isdir(self.pdir(pk)):
                self.check_partition(pk)

    def check_partition(self, pk):
        part = self.model.rows.get(pk, {})
        try:
            names = set(os.listdir(self.pdir(pk)))
        except FileNotFoundError:
            if part or pk in self.model.dirs:
                raise
            return                        # a lingering partition just expired
        want = {file_name(rk) for rk in part}
        if names != want:
            raise StepFailed("partition %r: shown %s, model %s" % (pk, sorted(names), sorted(want)))
        for rk, props in part.items():
            p = self.path(pk, rk)
            with open(p, "rb") as f:
                data = f.read()
            size = os.stat(p).st_size
            if size != len(data):
                raise StepFailed("%s/%s: stat says %d bytes, read %d" % (pk, rk, size, len(data)))
            got = parse_file(data)
            if not same_props(props, got):
                raise StepFailed("%s/%s: file %s, model %s" % (pk, rk, got, props))

    def check_remote(self):
        """The remote table equals the model, through the official SDK."""
        if self.wb and self.m:
            self.expect({"op": "fsync of the root before the SDK check"}, 0, self.sync_root())
            self.check_pending(queued=0)
        got = {}
        for e in self.tc.list_entities():
            # the SDK leaves an empty key out of the entity
            got[(e.get("PartitionKey", ""), e.get("RowKey", ""))] = sdk_props(e)
        want = {(pk, rk): model_for_sdk(p) for pk, part in self.model.rows.items()
                for rk, p in part.items()}
        if set(got) != set(want):
            raise StepFailed("remote keys %s, model %s" % (sorted(got), sorted(want)))
        for k in want:
            if not same_props(want[k], got[k]):
                raise StepFailed("remote %s: %s, model %s" % (k, got[k], want[k]))

    # driving ------------------------------------------------------------------
    def run_step(self, s):
        self.log.append(s)
        getattr(self, "op_" + s["op"])(s)
        if self.wb:
            self.check_pending()

    def run(self, steps):
        """Run STEPS from an empty table; raises StepFailed at the first
        difference, with the index of the step."""
        for i, s in enumerate(steps):
            try:
                self.run_step(s)
                self.check_view()
            except Exception as e:
                raise StepFailed("step %d (%s): %s: %s" % (i, json.dumps(s, ensure_ascii=False),
                                                           type(e).__name__, e))
        try:
            self.check_view()
            self.check_remote()
        except Exception as e:
            raise StepFailed("at the end: %s: %s" % (type(e).__name__, e))


OPS = [("create", 6), ("overwrite", 8), ("append_fix", 2), ("truncate0", 2), ("rename", 4),
       ("move_across", 2), ("unlink", 4), ("mkdir", 2), ("rmdir", 2), ("cp", 2), ("sed", 2),
       ("scratch", 3), ("two_handles", 2), ("held_read", 2), ("ext_change", 4),
       ("bad_save", 1), ("rename_onto_open", 1), ("write_across_rename", 1),
       ("new_open_listed", 1), ("rsync_copy", 1), ("excl_refused", 1)]
STREAM_OPS = [("import", 2), ("export", 2)]   # not with write-behind (its sequences unchanged)


WB_OPS = [("sync", 2), ("remount", 1)]    # with write-behind only


def gen_step(rng, depth=0, wb=False, crash=None, cosmos=False):
    """One step from RNG; with WB the write-behind steps too, and CRASH (a
    second Random) turns a kill -9 remount into one of CRASHES. COSMOS: keys
    of the Cosmos profile."""
    parts, rows = (COSMOS_PARTITIONS, COSMOS_ROWS) if cosmos else (PARTITIONS, ROWS)
    ops = [o for o, w in OPS + (WB_OPS if wb else STREAM_OPS) for _ in range(w)
           if not (depth and o in ("held_read", "remount"))]
    op = rng.choice(ops)
    s = {"op": op, "pk": rng.choice(parts), "rk": rng.choice(rows)}
    if op in ("create", "overwrite", "append_fix", "scratch", "two_handles", "ext_change",
              "bad_save", "rename_onto_open", "write_across_rename", "new_open_listed"):
        s["props"] = random_props(rng)
    if op in ("two_handles", "ext_change"):
        s["props2"] = random_props(rng)
    if op == "overwrite":
        s["chunks"] = rng.choice([1, 1, 2, 3, 0])
        s["fsync"] = rng.random() < 0.3
        s["seed"] = rng.randrange(1 << 30)
    if op in ("rename", "cp", "rename_onto_open", "write_across_rename", "new_open_listed",
              "rsync_copy"):
        s["rk2"] = rng.choice(rows)
    if op == "move_across":
        s["pk2"] = rng.choice(parts)
    if op == "sed":
        s["n"] = rng.randrange(10 ** 6)
    if op == "ext_change":
        s["how"] = rng.choice(["sdk_replace", "sdk_delete", "mount2", "rm_after_change"])
        s["same"] = rng.random() < 0.3
    if op == "excl_refused":
        s["how"] = rng.choice(["noclobber", "open"])
        s["bad"] = rng.randrange(1 << 30)
    if op == "remount":
        s["how"] = rng.choice(["clean", "kill"])
        if s["how"] == "kill" and crash is not None:
            s["how"] = crash.choice([k for k, w in CRASHES for _ in range(w)])
            s["n"] = crash.randrange(1 << 30)
    if op == "held_read":
        s["inner"] = gen_step(rng, depth + 1, wb, crash, cosmos)
    if op in ("import", "export"):
        gen_stream_step(rng, s, parts, rows)
        if cosmos and op == "export":
            s["any_order"] = True           # Cosmos DB answers in no order
    # JSON round trip: props values as tuples become lists; keep them tuples
    return s


def gen_stream_step(rng, s, parts=PARTITIONS, rows=ROWS):
    """An import's or an export's arguments into step S; its lines' keys
    from PARTS and ROWS (the Cosmos profile's on the Cosmos backend)."""
    s["scope"] = rng.choice(["table", "partition"])
    if s["op"] == "export":
        s["at"] = rng.random()              # where its pread reads
        return
    s["how"] = rng.choice([">", ">", ">>"])
    s["clash"] = rng.random() < 0.5
    s["bare"] = rng.random() < 0.5
    s["n"] = rng.randrange(1 << 30)         # which held entity a clash names
    s["lines"] = [(rng.choice(parts), rng.choice(rows), random_props(rng))
                  for _ in range(rng.randrange(1, 6))]


def normalise(step):
    """Steps loaded from JSON carry lists where tuples were."""
    for key in ("props", "props2"):
        if key in step:
            step[key] = {k: tuple(v) for k, v in step[key].items()}
    if "lines" in step:
        step["lines"] = [(pk, rk, {k: tuple(v) for k, v in props.items()})
                         for pk, rk, props in step["lines"]]
    if "inner" in step:
        normalise(step["inner"])
    return step


def gen_steps(seed, n, wb=False, cosmos=False):
    """N steps from SEED; WB: with the write-behind steps too (another
    sequence than without), and from a second stream the crash kinds of
    remount (CRASHES, EXTRA_LOST: the N steps are those of the sequence
    without them). COSMOS: the Cosmos profile's keys (another sequence)."""
    rng = random.Random(seed)
    crash = random.Random("crash-%d" % seed) if wb else None
    steps = []
    for _ in range(n):
        if crash and crash.random() < EXTRA_LOST:
            steps.append({"op": "remount", "how": "lost", "n": crash.randrange(1 << 30)})
        steps.append(gen_step(rng, 0, wb, crash, cosmos))
    return steps


# ---------------------------------------------------------------------------
# running on fresh tables, shrinking
# ---------------------------------------------------------------------------
class Remounter:
    """The write-behind mount of a Session: START(JOURNAL_DIR) returns a
    started harness.Mount (with -o writeback and that journal_dir) whose
    connection goes through PROXY, a FaultProxy (rate 0 but in the crash
    steps; one for the session, so the endpoint, and so the journal's name,
    stays the same). Each try gets a new journal (fresh(): nothing of an
    earlier try is replayed); down() takes the mount away (an unmount, or
    kill -9), up() starts it again with the same options, so with the same
    journal."""

    def __init__(self, start, journal_base, proxy):
        self.start, self.base, self.n = start, Path(journal_base), 0
        self.proxy = proxy
        self.journal_dir = None
        self.cur = None

    @property
    def path(self):
        return str(self.cur)

    def fresh(self):
        """A mount on a new journal; its path."""
        if self.cur is not None and not self.cur.closed:
            try:
                harness.Mount.unmount(self.cur, check=True)
            except harness.HarnessError as e:
                raise StepFailed("unmount: %s" % e)
        self.n += 1
        self.journal_dir = self.base / ("journal-%d" % self.n)
        self.cur = self.start(self.journal_dir)
        return self.path

    def down(self, clean):
        m = self.cur
        if clean:
            try:
                harness.Mount.unmount(m, check=True)
            except harness.HarnessError as e:
                raise StepFailed("unmount: %s" % e)
            return
        self.kill()
        self.release()

    def kill(self):
        """kill -9 of the daemon; its mount stays until release()."""
        if self.cur.proc.poll() is None:
            self.cur.proc.send_signal(signal.SIGKILL)
        self.cur.proc.wait(10)

    def release(self):
        """Take away the mount of a daemon that is gone."""
        if self.cur.proc.poll() is None:
            self.kill()
        # the dead mount answers ENOTCONN: harness.is_mounted reads /proc/mounts
        harness.unmount_path(self.cur.path)
        self.cur.closed = True

    def up(self):
        if self.cur is None:
            return self.fresh()
        if self.cur.closed:
            self.cur = self.start(self.journal_dir)
        return self.path


def wb_options(journal_dir, delay=60000):
    """The model's mount options with write-behind (DELAY ms; None: the
    default delay) journalled in JOURNAL_DIR, with a small queue and stop
    bound (for term_wait)."""
    return ["-o", "%s,writeback%s,writeback_queue=%d,writeback_stop=%d,journal_dir=%s" % (
        MOUNT_OPTIONS, "" if delay is None else "=%d" % delay, WB_QUEUE_MIB, WB_STOP,
        journal_dir)]


class Session:
    """A mount, a second mount and an SDK client; each try gets a new table.
    With WB (a Remounter; MOUNT is then None) the first mount writes behind
    and the write-behind steps are run."""

    def __init__(self, mount, other, sdk, wb=None):
        self.mount, self.other, self.sdk, self.wb = mount, other, sdk, wb
        self.n = 0
        self.max_queued = 0         # write-behind: the most changes seen queued in the last try
        self.wb_done = {}           # write-behind steps carried out in the last try, by kind
        self.wb_total = {}          # ... in all tries

    def main_path(self):
        return self.wb.up() if self.wb else str(self.mount)

    def attempt(self, steps, tag="m"):
        """Run STEPS on a new table; the failure message, or None."""
        self.n += 1
        table = "mdl%s%d%d" % (tag, os.getpid() % 1000, self.n)
        try:
            self.sdk.delete_table(table)
        except Exception:
            pass
        self.sdk.create_table(table)
        time.sleep(0.01)
        mount = self.wb.fresh() if self.wb else str(self.mount)
        os.listdir(mount)                        # the mounts learn the new table
        os.listdir(str(self.other))
        deadline = time.monotonic() + SETTLE + 1
        while table not in os.listdir(mount) or table not in os.listdir(str(self.other)):
            if time.monotonic() > deadline:
                return "table %s never appeared in the mounts" % table
            time.sleep(0.2)
        r = Runner(mount, self.other, self.sdk, table, self.wb)
        try:
            r.run([normalise(json.loads(json.dumps(s))) for s in steps])
            return None
        except StepFailed as e:
            return str(e)
        finally:
            self.max_queued, self.wb_done = r.max_queued, r.wb_done
            for k, v in r.wb_done.items():
                self.wb_total[k] = self.wb_total.get(k, 0) + v
            if self.wb:                          # a failed try leaves nothing behind
                self.wb.proxy.set_faults(rate=0.0)
                r.m = self.main_path()
                r.sync_root()
                errno_of(lambda: os.setxattr(r.m, "user.aztfs.discard", b"*"))   # ENODATA: none
            try:
                self.sdk.delete_table(table)
            except Exception:
                pass

    def shrink(self, steps, budget=120.0):
        """A shorter sequence that still fails (delta debugging, bounded by
        BUDGET seconds): (steps, message)."""
        msg = self.attempt(steps, "s")
        if msg is None:
            return steps, "(did not fail again: flaky?)"
        deadline = time.monotonic() + budget
        chunk = max(1, len(steps) // 2)
        while chunk >= 1 and time.monotonic() < deadline:
            i, changed = 0, False
            while i < len(steps) and time.monotonic() < deadline:
                cand = steps[:i] + steps[i + chunk:]
                m = self.attempt(cand, "s") if cand else None
                if m is not None:
                    steps, msg, changed = cand, m, True
                else:
                    i += chunk
            if not changed:
                chunk //= 2
        return steps, msg


def report(seed, steps, msg, shrunk, smsg, out_dir, replay_args=""):
    """The failure, and how to replay it (REPLAY_ARGS: the mode's options,
    e.g. "--writeback 60000")."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / ("model-seed-%s.json" % seed)
    path.write_text(json.dumps(shrunk, ensure_ascii=False, indent=1))
    return ("model test failed, seed %s (%d steps): %s\n"
            "shrunk to %d steps: %s\n%s\n"
            "replay: /usr/bin/python3 tests/integration/model.py %s--replay %s"
            % (seed, len(steps), msg, len(shrunk), smsg,
               json.dumps(shrunk, ensure_ascii=False, indent=1),
               replay_args + " " if replay_args else "", path))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1-20", help="seeds to run: N, A-B (default 1-20)")
    ap.add_argument("--steps", type=int, default=80, help="steps per seed (default 80)")
    ap.add_argument("--minutes", type=float,
                    help="long mode: seeds from the first of --seeds on, until this much time passed")
    ap.add_argument("--replay", help="run the steps saved in this JSON file")
    ap.add_argument("--out", default=".run/model", help="where failing sequences go")
    ap.add_argument("--cosmos", type=int, metavar="SEED",
                    help="mount through the Cosmos DB for Table model (tests/cosmosmodel.py, "
                    "its orders seeded by SEED), with the Cosmos profile's keys")
    ap.add_argument("--writeback", nargs="?", const="60000", metavar="MS|default",
                    help="the first mount writes behind (-o writeback=MS, default 60000; "
                    "'default': aztfs' own delay), with the write-behind steps")
    args = ap.parse_args()
    from harness import Azurite, FaultProxy, Mount, conn_str_for
    from azure.data.tables import TableServiceClient
    work = Path(args.out) / "work"
    work.mkdir(parents=True, exist_ok=True)
    wb_mounts = []

    def start_wb(journal_dir):
        delay = None if args.writeback == "default" else int(args.writeback)
        m = Mount(work, conn_str_for(px.port), wb_options(journal_dir, delay))
        wb_mounts.append(m)
        return m.start()

    from harness import CosmosModel
    with Azurite(work) as az, FaultProxy(az.port, rate=0.0, stall=30) as px, \
            CosmosModel(az.port, seed=args.cosmos or 0) as cm:
        cs = conn_str_for(cm.port) if args.cosmos is not None else az.conn_str
        with Mount(work, cs, ["-o", MOUNT_OPTIONS]) as m1, \
                Mount(work, cs, ["-o", MOUNT_OPTIONS]) as m2:
            try:
                return run_seeds(args, m1, m2,
                                 TableServiceClient.from_connection_string(az.conn_str),
                                 start_wb, px)
            finally:
                for m in wb_mounts:
                    m.unmount(check=False)


def run_seeds(args, m1, m2, sdk, start_wb, proxy):
    wb = Remounter(start_wb, Path(args.out) / "work" / ("journals-%d" % os.getpid()), proxy) \
        if args.writeback else None
    sess = Session(None if wb else m1.path, m2.path, sdk, wb)
    replay_args = "--writeback %s" % args.writeback if wb else ""
    if args.cosmos is not None:
        replay_args = ("%s --cosmos %d" % (replay_args, args.cosmos)).strip()
    if args.replay:
        steps = [normalise(s) for s in json.loads(Path(args.replay).read_text())]
        msg = sess.attempt(steps)
        print(msg or "replay passed (%d steps)" % len(steps))
        return 1 if msg else 0
    a, _, b = args.seeds.partition("-")
    if args.minutes:        # from the first seed of --seeds on, until the time is up
        seeds, end = iter(range(int(a), 10 ** 9)), time.monotonic() + 60 * args.minutes
    else:
        seeds, end = iter(range(int(a), int(b or a) + 1)), None
    total = 0
    for seed in seeds:
        if end is not None and time.monotonic() > end:
            break
        steps = gen_steps(seed, args.steps, bool(wb), args.cosmos is not None)
        msg = sess.attempt(steps)
        total += len(steps)
        if msg:
            shrunk, smsg = sess.shrink(steps)
            print(report(seed, steps, msg, shrunk, smsg, args.out, replay_args))
            return 1
        print("seed %d: %d steps ok (%d in all%s)" % (
            seed, len(steps), total, ", at most %d queued, %s" % (
                sess.max_queued, json.dumps(sess.wb_done, sort_keys=True)) if wb else ""),
            flush=True)
    print("model: %d steps passed" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
