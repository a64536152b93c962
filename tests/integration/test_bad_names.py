"""Names that stand for no key the service accepts (doc/NAMES.md, "Characters
no key can hold" and "Names over 255 bytes") are refused at once, with
EINVAL or ENAMETOOLONG, without a request; the mount keeps serving, and
names at the edge of the rules still work."""

import errno
import json
import os
import subprocess
import time

import pytest

TABLE = "badNames"
FAST = 0.5      # seconds: a refusal is local; a request to a 500 takes 2.5 s

# Entity file names (created in partition "p") refused with EINVAL.
BAD_FILES = [
    "a#b.json", "what?.json", "a\\b.json",              # forbidden, as they are
    "a%2Fb.json", "a%2fb.json", "%5C.json", "%23.json", "%3F.json",  # escaped
    "tab%09here.json", "a%0A.json", "%00.json", "%7F.json", "%C2%85.json",
    "a\tb.json", "nel\u0085.json", "del\x7f.json",     # raw control characters
    b"caf\xe9.json", b"\xff.json", b"%E9.json",         # not UTF-8
    b"\xc0\xaf.json", b"\xed\xa0\x80.json",             # overlong '/', surrogate
    ".json",                                            # the empty key is %.json
]
# Partition directory names refused with EINVAL.
BAD_DIRS = ["a#b", "a%2Fb", "x%09", "q?", b"\xff\xfe", "%C2%9F"]


def stats(mnt):
    return json.loads(os.getxattr(str(mnt), "user.aztfs.stats"))


def as_bytes(name):
    return name if isinstance(name, bytes) else os.fsencode(name)


@pytest.fixture(scope="module")
def mnt(sdk, seed, module_mounter):
    t = seed.table(sdk, TABLE)
    t.create_entity({"PartitionKey": "p", "RowKey": "r", "v": 1})
    m = module_mounter.mount()
    assert os.listdir(os.path.join(str(m), TABLE, "p")) == ["r.json"]
    return m


def refused(mnt, op, path, want):
    """Run OP(PATH) (PATH bytes): it must fail with errno WANT, quickly, and
    without a request to the service."""
    before = stats(mnt)["requests"]
    t0 = time.monotonic()
    with pytest.raises(OSError) as ei:
        op(path)
    took = time.monotonic() - t0
    assert ei.value.errno == want, (path, os.strerror(ei.value.errno))
    assert took < FAST, (path, took)
    assert stats(mnt)["requests"] == before, path


def create(path):
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))


def part(mnt, *names):
    return os.path.join(os.fsencode(str(mnt)), os.fsencode(TABLE), *map(as_bytes, names))


@pytest.mark.parametrize("name", BAD_FILES, ids=repr)
def test_create_forbidden_file_name(mnt, name):
    refused(mnt, create, part(mnt, "p", name), errno.EINVAL)
    refused(mnt, os.stat, part(mnt, "p", name), errno.EINVAL)


@pytest.mark.parametrize("name", BAD_DIRS, ids=repr)
def test_mkdir_forbidden_partition_name(mnt, name):
    refused(mnt, os.mkdir, part(mnt, name), errno.EINVAL)
    refused(mnt, create, part(mnt, name, "r.json"), errno.EINVAL)


@pytest.mark.parametrize("name,op", [
    (b"x" * 251 + b".json", create),      # 256 bytes
    (b"x" * 300 + b".json", create),
    (b"x" * 256, create),                 # a scratch name
    (b"\xff" * 256 + b".json", create),   # too long wins over not UTF-8
    (b"x" * 256, os.mkdir),
])
def test_name_over_255_bytes(mnt, name, op):
    path = part(mnt, name) if op is os.mkdir else part(mnt, "p", name)
    refused(mnt, op, path, errno.ENAMETOOLONG)


def test_rename_onto_forbidden_name(mnt):
    d = part(mnt, "p")
    with open(os.path.join(d, b"draft.tmp"), "w") as f:   # a scratch file: local
        f.write('{"v": 2}')
    refused(mnt, lambda p: os.rename(os.path.join(d, b"draft.tmp"), p),
            os.path.join(d, b"a#b.json"), errno.EINVAL)
    assert os.path.exists(os.path.join(d, b"draft.tmp"))
    os.unlink(os.path.join(d, b"draft.tmp"))


def test_refusal_is_logged_once_with_the_reason(mnt):
    refused(mnt, create, part(mnt, "p", "log#me.json"), errno.EINVAL)
    lines = [l for l in mnt.stderr().splitlines() if "log#me.json" in l]
    assert len(lines) == 1, mnt.stderr()[-3000:]
    assert "not a valid name: a key cannot hold" in lines[0], lines


def test_log_escapes_names(mnt):
    """A name with a newline, a backslash or bytes that are not UTF-8 cannot
    forge a log line: the log writes \\xhh and \\\\ (here through the line
    mkdir of an invalid table name writes)."""
    root = os.fsencode(str(mnt))
    refused(mnt, os.mkdir, os.path.join(root, b"x\naztfs: error: forged"), errno.EINVAL)
    refused(mnt, os.mkdir, os.path.join(root, b"lat\xe9\\x0a"), errno.EINVAL)
    err = mnt.stderr()
    assert "/x\\x0aaztfs: error: forged: not a valid table name" in err, err[-3000:]
    assert "/lat\\xe9\\\\x0a: not a valid table name" in err, err[-3000:]
    assert not [l for l in err.splitlines() if l.startswith("aztfs: error: forged")]


def test_names_at_the_edge_still_work(mnt, sdk):
    d = part(mnt, "p")
    keys = {
        b"x" * 250 + b".json": "x" * 250,        # a 255-byte name
        "café 日本.json": "café 日本",
        "%25.json": "%",
        "it's.json": "it's",
        "%2E.json": ".",
        "%.json": "",
        "~*<>|:.json": "~*<>|:",
    }
    for name, key in keys.items():
        with open(os.path.join(d, as_bytes(name)), "w") as f:
            f.write('{"k": %s}' % json.dumps(key))
    tc = sdk.get_table_client(TABLE)
    for key in keys.values():
        assert tc.get_entity("p", key)["k"] == key
    listed = set(os.listdir(d))
    assert {as_bytes(n) for n in keys} <= listed
    assert b".json" not in listed


def test_mount_keeps_serving(mnt):
    with open(os.path.join(str(mnt), TABLE, "p", "r.json")) as f:
        assert json.loads(f.read())["v"] == 1
    assert "r.json" in os.listdir(os.path.join(str(mnt), TABLE, "p"))


# -- refusals a user meets with shell tools: errno and user.aztfs.errors -------
def errors_of(mnt):
    return json.loads(os.getxattr(str(mnt), "user.aztfs.errors"))["recent"]


def shell(mnt, *argv, stdin=""):
    return subprocess.run(list(argv), input=stdin, capture_output=True, text=True,
                          cwd=str(mnt), timeout=60)


@pytest.mark.parametrize("argv, path, errno_name, op, why", [
    (["mkdir", "ab"], "/ab", "EINVAL", "mkdir", "not a valid table name"),
    (["mkdir", "bad name"], "/bad name", "EINVAL", "mkdir", "not a valid table name"),
    (["touch", TABLE + "/file.json"], "/%s/file.json" % TABLE, "EPERM", "create",
     "files live inside partition directories"),
    (["mkdir", TABLE + "/p/sub"], "/%s/p/sub" % TABLE, "EPERM", "mkdir", "nothing deeper"),
    (["mkdir", TABLE + "/50%"], "/%s/50%%" % TABLE, "EINVAL", "mkdir",
     "the key '50%' is named '50%25'"),
    (["tee", TABLE + "/p/50%.json"], "/%s/p/50%%.json" % TABLE, "EINVAL", "create",
     "the key '50%' is named '50%25.json'"),
    (["cat", TABLE + "/p/a#b.json"], "/%s/p/a#b.json" % TABLE, "EINVAL", "look up",
     "a key cannot hold"),
    (["rm", TABLE + "/.ndjson"], "/%s/.ndjson" % TABLE, "EROFS", "unlink",
     "an export stream is read-only"),
], ids=["short-table", "table-with-space", "file-in-table", "dir-in-partition",
        "partition-50%", "file-50%", "lookup-#", "rm-stream"])
def test_a_refusal_says_why_in_user_aztfs_errors(mnt, sdk, argv, path, errno_name, op, why):
    """The reason of a refusal was in the log only, and the tool said just
    "Invalid argument" or "Operation not permitted"; user.aztfs.errors,
    where the mount's warning sends people without syslog, now holds it.
    A name that is not a key's spelling (50%.json) is EINVAL, as NAMES.md's
    other refusals, not EPERM, and the reason names the right name."""
    p = shell(mnt, *argv, stdin='{"v": 1}\n')
    assert p.returncode != 0, p
    assert os.strerror(getattr(errno, errno_name)) in p.stderr, p.stderr
    mine = [e for e in errors_of(mnt) if e["path"] == path]
    assert mine, errors_of(mnt)
    e = mine[-1]
    assert (e["op"], e["error"]) == (op, errno_name), e
    assert why in e["message"], e
    assert path in mnt.stderr() and why in mnt.stderr()


def test_the_name_a_refusal_gives_is_the_right_one(mnt, sdk):
    p = shell(mnt, "tee", TABLE + "/p/50%25.json", stdin='{"v": 50}\n')
    assert p.returncode == 0, p
    e = sdk.get_table_client(TABLE).get_entity("p", "50%")
    assert e["v"] == 50
