"""Text that is not a valid entity: the close fails with EINVAL or EFBIG,
nothing is sent, the remote entity is unchanged (checked with the SDK), and
the mount keeps working."""

import base64
import errno
import json
import os
import shlex

import pytest

from conftest import WriteHelpers

T = "wrErrors"
PK = "p"
ORIG = {"PartitionKey": PK, "RowKey": "victim", "v": "original", "n": 1}

OK_MARK = object()

CASES = [
    # (id, bytes, errno)
    ("not-json", b'{"a": 1', errno.EINVAL),
    ("garbage", b"hello world", errno.EINVAL),
    ("trailing-garbage", b'{"a": 1} x', errno.EINVAL),
    ("array", b'[{"a": 1}]', errno.EINVAL),
    ("string", b'"just a string"', errno.EINVAL),
    ("number", b"42", errno.EINVAL),
    ("null", b"null", errno.EINVAL),
    ("two-objects", b'{"a": 1}{"b": 2}', errno.EINVAL),
    ("duplicate-member", b'{"a": 1, "a": 2}', errno.EINVAL),
    ("nested-object", b'{"a": {"b": 1}}', errno.EINVAL),
    ("nested-array", b'{"a": [1, 2]}', errno.EINVAL),
    ("int64-annotation-bad", b'{"a": "x", "a@odata.type": "Edm.Int64"}', errno.EINVAL),
    ("int64-out-of-range", b'{"a": "9223372036854775808", "a@odata.type": "Edm.Int64"}',
     errno.EINVAL),
    ("int32-annotation-big", b'{"a": 3000000000, "a@odata.type": "Edm.Int32"}', errno.EINVAL),
    ("guid-bad", b'{"g": "not-a-guid", "g@odata.type": "Edm.Guid"}', errno.EINVAL),
    ("datetime-bad", b'{"d": "yesterday", "d@odata.type": "Edm.DateTime"}', errno.EINVAL),
    ("binary-bad-padding", b'{"b": "aGVsbG8", "b@odata.type": "Edm.Binary"}', errno.EINVAL),
    ("double-bad", b'{"d": "abc", "d@odata.type": "Edm.Double"}', errno.EINVAL),
    ("bool-as-int64", b'{"a": true, "a@odata.type": "Edm.Int64"}', errno.EINVAL),
    ("unknown-type", b'{"a": "x", "a@odata.type": "Edm.Decimal"}', errno.EINVAL),
    ("annotation-without-property", b'{"a@odata.type": "Edm.Int64"}', errno.EINVAL),
    ("name-dash", b'{"a-b": 1}', errno.EINVAL),
    ("name-digit-first", b'{"1abc": 1}', errno.EINVAL),
    ("name-space", b'{"a b": 1}', errno.EINVAL),
    ("name-empty", b'{"": 1}', errno.EINVAL),
    ("name-too-long", b'{"%s": 1}' % (b"a" * 256), errno.EINVAL),
    ("too-many-properties",
     json.dumps({"p%03d" % i: i for i in range(253)}).encode(), errno.EINVAL),
    ("entity-over-1mib",
     json.dumps({"s%02d" % i: "x" * 30000 for i in range(40)}).encode(), errno.EFBIG),
    # 600 KB of text, 1.2 MB as the service counts it (2 bytes a character)
    ("entity-over-1mib-in-utf16",
     json.dumps({"s%02d" % i: "x" * 30000 for i in range(20)}).encode(), errno.EFBIG),
    ("string-over-64kib", json.dumps({"s": "x" * 32769}).encode(), errno.EFBIG),
    ("string-non-bmp-over-64kib", json.dumps({"s": "\U0001F600" * 16385},
                                             ensure_ascii=False).encode(), errno.EFBIG),
    ("binary-over-64kib",
     json.dumps({"b": base64.b64encode(b"\0" * 65537).decode(),
                 "b@odata.type": "Edm.Binary"}).encode(), errno.EFBIG),
]

# limits that must still be accepted (the boundaries of the cases above)
OK_CASES = [
    ("252-properties", json.dumps({"p%03d" % i: i for i in range(252)}).encode()),
    ("string-64kib", json.dumps({"s": "x" * 32768}).encode()),
    ("binary-64kib", json.dumps({"b": base64.b64encode(b"\1" * 65536).decode(),
                                 "b@odata.type": "Edm.Binary"}).encode()),
    ("name-255", b'{"%s": 1}' % (b"a" * 255)),
    # 16 Strings of 32,700 characters: some 1,046,700 bytes as the service counts them
    ("entity-just-under-1mib", json.dumps({"s%02d" % i: "x" * 32700 for i in range(16)}).encode()),
    ("underscore-names", b'{"_a": 1, "a_1": 2}'),
]


@pytest.fixture(scope="module")
def mnt(sdk, seed, module_mounter):
    t = seed.table(sdk, T)
    t.create_entity(ORIG)
    t.create_entity({"PartitionKey": PK, "RowKey": "okay", "x": 0})
    return module_mounter.mount(options=("-o", "loglevel=debug"))


def path(mnt, rk):
    return os.path.join(str(mnt), T, PK, rk + ".json")


def assert_healthy(mnt, wh):
    """The mount still reads and writes."""
    assert WriteHelpers.write_fd(path(mnt, "okay"), b'{"x": 1}') is None
    assert wh.get(T, PK, "okay")["x"] == 1
    assert WriteHelpers.write_fd(path(mnt, "okay"), b'{"x": 0}') is None
    assert wh.get(T, PK, "okay")["x"] == 0
    assert "victim.json" in os.listdir(os.path.join(str(mnt), T, PK))


@pytest.mark.parametrize("data,err", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_text_over_existing_entity(mnt, wh, data, err):
    etag = wh.etag(T, PK, "victim")
    mark = wh.mark(mnt)
    got = wh.write_fd(path(mnt, "victim"), data)
    assert got == ("close", err)
    assert wh.writes(mnt, mark) == []           # nothing sent
    e = wh.get(T, PK, "victim")
    assert e.metadata["etag"] == etag
    assert dict(e) == ORIG
    # the mount shows the entity as it is in the table
    with open(path(mnt, "victim"), "rb") as f:
        doc = json.loads(f.read())
    assert doc["v"] == "original" and doc["n"] == 1
    assert_healthy(mnt, wh)


@pytest.mark.parametrize("data,err", [c[1:] for c in CASES[::3]], ids=[c[0] for c in CASES[::3]])
def test_bad_text_as_new_file_creates_nothing(mnt, wh, data, err):
    mark = wh.mark(mnt)
    got = wh.write_fd(path(mnt, "fresh"), data, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    assert got == ("close", err)
    assert wh.writes(mnt, mark) == []
    assert wh.get(T, PK, "fresh") is None
    assert "fresh.json" not in os.listdir(os.path.join(str(mnt), T, PK))
    assert not os.path.exists(path(mnt, "fresh"))
    assert_healthy(mnt, wh)


@pytest.mark.parametrize("data", [c[1] for c in OK_CASES], ids=[c[0] for c in OK_CASES])
def test_limits_still_accepted(mnt, wh, data):
    rk = "limit"
    assert wh.write_fd(path(mnt, rk), data, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) is None
    e = wh.get(T, PK, rk)
    want = json.loads(data)
    got = WriteHelpers.typed(e)
    for k, v in want.items():
        if k.endswith("@odata.type"):
            continue
        assert k in got
        if isinstance(v, str) and want.get(k + "@odata.type") == "Edm.Binary":
            assert got[k] == ("Edm.Binary", base64.b64decode(v))
        else:
            assert got[k][1] == v
    with open(path(mnt, rk), "rb") as f:
        assert json.loads(f.read())["RowKey"] == rk


def test_write_beyond_handle_limit_is_efbig_at_write(mnt, wh):
    """A file of several MiB cannot be an entity; the write or the close
    fails with EFBIG and nothing is sent."""
    etag = wh.etag(T, PK, "victim")
    got = wh.write_fd(path(mnt, "victim"), b" " * (5 * 1024 * 1024))
    assert got is not None and got[1] == errno.EFBIG
    assert wh.etag(T, PK, "victim") == etag
    assert_healthy(mnt, wh)


def test_append_to_object_is_einval(mnt, wh):
    """O_APPEND of another object after the canonical text: invalid JSON."""
    etag = wh.etag(T, PK, "victim")
    got = wh.write_fd(path(mnt, "victim"), b'{"more": 1}\n', os.O_WRONLY | os.O_APPEND)
    assert got == ("close", errno.EINVAL)
    assert wh.etag(T, PK, "victim") == etag
    assert dict(wh.get(T, PK, "victim")) == ORIG


def test_failed_close_is_reported_once(mnt, wh):
    """After a refused flush the handle does not resend at release, and a
    second flush (dup'd fd) reports no new commit of the bad text."""
    etag = wh.etag(T, PK, "victim")
    mark = wh.mark(mnt)
    fd = os.open(path(mnt, "victim"), os.O_WRONLY | os.O_TRUNC)
    os.write(fd, b"{bad")
    fd2 = os.dup(fd)
    with pytest.raises(OSError) as ei:
        os.close(fd)
    assert ei.value.errno == errno.EINVAL
    os.close(fd2)
    assert wh.writes(mnt, mark) == []
    assert wh.etag(T, PK, "victim") == etag


# The shell's noclobber ('>' as O_CREAT|O_EXCL without O_TRUNC): bash's
# flush before its write made the empty entity, which the refused content
# then left behind (issue 46, item 1).
NOCLOBBER_REFUSED = [
    ("not-json", "echo 'not json' > {p}"),
    ("bad-type", """echo '{{"g": "x", "g@odata.type": "Edm.Guid"}}' > {p}"""),
    ("entity-over-1mib", "cat {big} > {p}"),                  # EFBIG at the close
    ("over-handle-limit", "head -c 5242880 /dev/zero > {p}"),  # EFBIG at a write
]


@pytest.mark.parametrize("cmd", [c[1] for c in NOCLOBBER_REFUSED],
                         ids=[c[0] for c in NOCLOBBER_REFUSED])
def test_noclobber_refused_new_file_leaves_nothing(mnt, wh, sh, tmp_path, cmd):
    big = tmp_path / "big.json"
    big.write_bytes(CASES[[c[0] for c in CASES].index("entity-over-1mib")][1])
    d = os.path.join(str(mnt), T, PK)
    f = path(mnt, "nc")
    sh("set -o noclobber; " + cmd.format(p=shlex.quote(f), big=big), check=False)
    assert wh.get(T, PK, "nc") is None
    assert "nc.json" not in sh.ls(d)
    assert not os.path.exists(f)
    # the name is free: the next noclobber '>' creates it
    sh(["bash", "-o", "noclobber", "-c", """echo '{"v": 1}' > %s""" % shlex.quote(f)])
    assert wh.get(T, PK, "nc")["v"] == 1
    assert "nc.json" in sh.ls(d)
    assert json.loads(open(f, "rb").read())["v"] == 1
    os.unlink(f)
    assert wh.get(T, PK, "nc") is None
    assert_healthy(mnt, wh)


def test_refused_create_never_removes_another_writers_entity(mnt, wh, sdk):
    """The empty entity a refused create made is removed guarded by its own
    ETag: one another writer has replaced meanwhile stays."""
    f = path(mnt, "race")
    fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.close(os.dup(fd))                    # a flush before the write: the empty entity
        assert dict(wh.get(T, PK, "race")) == {"PartitionKey": PK, "RowKey": "race"}
        with pytest.raises(FileExistsError):    # a second creator loses
            os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        sdk.get_table_client(T).upsert_entity({"PartitionKey": PK, "RowKey": "race", "v": "sdk"})
        os.write(fd, b"not json")
    finally:
        with pytest.raises(OSError) as ei:
            os.close(fd)
    assert ei.value.errno == errno.EINVAL
    assert wh.get(T, PK, "race")["v"] == "sdk"
    sdk.get_table_client(T).delete_entity(PK, "race")


def test_long_form_key_over_1_kib(mnt, wh):
    """A long-form name whose text carries a RowKey of 1,100 characters
    (the service takes 1 KiB in UTF-16): refused at close with EINVAL and
    the reason, nothing sent; one of 512 characters is saved."""
    from aztfs_names import file_name
    mark = wh.mark(mnt)
    rk = "k" * 1100
    data = json.dumps({"PartitionKey": PK, "RowKey": rk, "n": 1}).encode()
    got = wh.write_fd(os.path.join(str(mnt), T, PK, file_name(rk)), data,
                      os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    assert got == ("close", errno.EINVAL)
    assert wh.writes(mnt, mark) == []
    assert ("not saved: a key the service refuses: the RowKey is 2200 bytes in UTF-16 (1100 "
            "characters), more than the 1024 it takes") in mnt.stderr()
    rk = "k" * 512
    data = json.dumps({"PartitionKey": PK, "RowKey": rk, "n": 1}).encode()
    assert wh.write_fd(os.path.join(str(mnt), T, PK, file_name(rk)), data,
                       os.O_WRONLY | os.O_CREAT | os.O_EXCL) is None
    assert wh.get(T, PK, rk)["n"] == 1
    assert_healthy(mnt, wh)
