"""Write semantics (issue 3): what a close, unlink, mkdir, rmdir, rename,
chmod... on the mount does to the table. Every step is checked through the
Azure SDK (the remote state), not only through the mount.

Each test seeds its own table, then mounts (with -o loglevel=debug so that
the requests aztfs sends can be counted from its log)."""

import ctypes
import errno
import json
import os
import stat as statmod
import subprocess
import time

import pytest
from azure.data.tables import EdmType, EntityProperty

from conftest import WriteHelpers, rewrite_and_close

# Also against the Cosmos DB for Table model (issue 42; conftest.py backend).
pytestmark = pytest.mark.backends

DEBUG = ("-o", "loglevel=debug")


def seeded_mount(sdk, seed, mounter, table, entities=(), options=DEBUG):
    t = seed.table(sdk, table)
    for e in entities:
        t.create_entity(e)
    return mounter.mount(options=options), t


def p(mnt, *parts):
    return os.path.join(str(mnt), *parts)


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def props(e):
    """User properties of an SDK entity (keys removed), as {name: (type, value)}."""
    return {k: v for k, v in WriteHelpers.typed(e).items()
            if k not in ("PartitionKey", "RowKey")}


def entity_writes(reqs, table):
    """Modifying requests that address TABLE's entities (or its $batch)."""
    return [(m, u, s) for (m, u, s) in reqs
            if "/%s(" % table in u or u.endswith("/" + table) or u.endswith("/$batch")]


# ---------------------------------------------------------------------------
# create / replace / merge
# ---------------------------------------------------------------------------
def test_new_file_is_one_insert_with_lenient_types(sdk, seed, mounter, wh):
    T = "wrInsert"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "seed"}])
    text = (b'{"s": "hello", "i": 7, "big": 5000000000, "neg": -2147483649, '
            b'"d": 2.5, "e": 1e3, "t": true, '
            b'"g": "0f8fad5b-d9cb-469f-a165-70867728950e", "g@odata.type": "Edm.Guid", '
            b'"dt": "2020-01-02T03:04:05Z", "dt@odata.type": "Edm.DateTime", '
            b'"bin": "aGVsbG8=", "bin@odata.type": "Edm.Binary", '
            b'"l": "-7", "l@odata.type": "Edm.Int64", '
            b'"dd": 3, "dd@odata.type": "Edm.Double", '
            b'"gone": null}')
    mark = wh.mark(mnt)
    assert wh.write_fd(p(mnt, T, "p", "new.json"), text,
                       os.O_WRONLY | os.O_CREAT | os.O_EXCL) is None
    writes = entity_writes(wh.writes(mnt, mark), T)
    assert [(m, s) for m, _, s in writes] == [("POST", 201)] or \
        [(m, s) for m, _, s in writes] == [("POST", 204)], writes
    e = wh.get(T, "p", "new")
    assert e is not None
    assert props(e) == {
        "s": ("Edm.String", "hello"),
        "i": ("Edm.Int32", 7),
        "big": ("Edm.Int64", 5000000000),
        "neg": ("Edm.Int64", -2147483649),
        "d": ("Edm.Double", 2.5),
        "e": ("Edm.Double", 1000.0),
        "t": ("Edm.Boolean", True),
        "g": ("Edm.Guid", "0f8fad5b-d9cb-469f-a165-70867728950e"),
        "dt": ("Edm.DateTime", "2020-01-02T03:04:05"),
        "bin": ("Edm.Binary", b"hello"),
        "l": ("Edm.Int64", -7),
        "dd": ("Edm.Double", 3.0),
    }
    # read back at once through the mount: canonical form
    doc = json.loads(read(p(mnt, T, "p", "new.json")))
    assert doc["PartitionKey"] == "p" and doc["RowKey"] == "new"
    assert doc["big"] == "5000000000" and doc["big@odata.type"] == "Edm.Int64"
    assert doc["dd"] == 3.0 and doc["dd@odata.type"] == "Edm.Double"
    assert doc["i"] == 7 and "i@odata.type" not in doc
    assert "gone" not in doc
    assert sorted(os.listdir(p(mnt, T, "p"))) == ["new.json", "seed.json"]


def test_canonical_output_exact_text(sdk, seed, mounter, wh):
    T = "wrCanon"
    mnt, _ = seeded_mount(sdk, seed, mounter, T)
    os.mkdir(p(mnt, T, "pk"))
    text = ('\ufeff{ "zeta":1,"Alpha" : "x\\u0041",\n"PartitionKey":"ignored",'
            '"RowKey":"ignored","Timestamp":"2000-01-01T00:00:00Z",'
            '"odata.etag":"W/\\"x\\"", "mid_": false, "r": 100.0 }').encode("utf-8")
    assert wh.write_fd(p(mnt, T, "pk", "row.json"), text,
                       os.O_WRONLY | os.O_CREAT | os.O_EXCL) is None
    e = wh.get(T, "pk", "row")
    assert props(e) == {"zeta": ("Edm.Int32", 1), "Alpha": ("Edm.String", "xA"),
                        "mid_": ("Edm.Boolean", False), "r": ("Edm.Double", 100.0)}
    got = read(p(mnt, T, "pk", "row.json"))
    ts = json.loads(got)["Timestamp"]
    assert ts != "2000-01-01T00:00:00Z"
    assert got == ('{\n  "PartitionKey": "pk",\n  "RowKey": "row",\n  "Timestamp": "%s",\n'
                   '  "Alpha": "xA",\n  "mid_": false,\n  "r": 100.0,\n'
                   '  "r@odata.type": "Edm.Double",\n  "zeta": 1\n}\n' % ts)
    assert os.stat(p(mnt, T, "pk", "row.json")).st_size == len(got.encode())


def test_existing_file_is_one_guarded_replace(sdk, seed, mounter, wh):
    T = "wrReplace"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "keep": "old", "n": 1}])
    before = wh.etag(T, "p", "a")
    mark = wh.mark(mnt)
    assert wh.write_fd(p(mnt, T, "p", "a.json"), b'{"n": 2, "new": "v"}') is None
    writes = entity_writes(wh.writes(mnt, mark), T)
    assert len(writes) == 1 and writes[0][0] == "PUT" and "RowKey='a'" in writes[0][1], writes
    e = wh.get(T, "p", "a")
    assert props(e) == {"n": ("Edm.Int32", 2), "new": ("Edm.String", "v")}  # keep is gone
    assert e.metadata["etag"] != before
    assert json.loads(read(p(mnt, T, "p", "a.json")))["new"] == "v"


def test_merge_option_keeps_properties_not_in_file(sdk, seed, mounter, wh, backend):
    T = "wrMerge"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "keep": "old", "n": 1}],
        options=("-o", "merge,loglevel=debug"))
    mark = wh.mark(mnt)
    assert wh.write_fd(p(mnt, T, "p", "a.json"), b'{"n": 2, "new": "v"}') is None
    writes = entity_writes(wh.writes(mnt, mark), T)
    # Cosmos DB answers the MERGE verb with 405: POST + X-HTTP-Method there
    assert [w[0] for w in writes] == ["POST" if backend.cosmos else "MERGE"], writes
    assert props(wh.get(T, "p", "a")) == {"n": ("Edm.Int32", 2), "new": ("Edm.String", "v"),
                                          "keep": ("Edm.String", "old")}
    # what the mount shows afterwards is the merged entity
    doc = json.loads(read(p(mnt, T, "p", "a.json")))
    assert doc["keep"] == "old" and doc["n"] == 2 and doc["new"] == "v"
    # a new file is still an Insert
    mark = wh.mark(mnt)
    assert wh.write_fd(p(mnt, T, "p", "b.json"), b'{"x": 1}',
                       os.O_WRONLY | os.O_CREAT | os.O_EXCL) is None
    assert [w[0] for w in entity_writes(wh.writes(mnt, mark), T)] == ["POST"]
    assert props(wh.get(T, "p", "b")) == {"x": ("Edm.Int32", 1)}


def test_merge_stale_etag_is_estale(sdk, seed, mounter, wh):
    T = "wrMergeStale"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "orig"}], options=("-o", "merge"))
    f = open(p(mnt, T, "p", "a.json"), "r+")
    t.update_entity({"PartitionKey": "p", "RowKey": "a", "v": "sdk"}, mode="replace")
    assert rewrite_and_close(f, '{"v": "mount"}').errno == errno.ESTALE
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.String", "sdk")}


# ---------------------------------------------------------------------------
# stale ETags
# ---------------------------------------------------------------------------
def test_stale_etag_at_close_is_estale_and_sdk_change_survives(sdk, seed, mounter, wh):
    T = "wrStale"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "orig"}])
    path = p(mnt, T, "p", "a.json")
    f = open(path, "r+")
    assert json.loads(f.read())["v"] == "orig"
    t.update_entity({"PartitionKey": "p", "RowKey": "a", "v": "sdk", "extra": 5},
                    mode="replace")
    sdk_etag = wh.etag(T, "p", "a")
    assert rewrite_and_close(f, '{"v": "mount"}').errno == errno.ESTALE
    assert wh.etag(T, "p", "a") == sdk_etag
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.String", "sdk"),
                                          "extra": ("Edm.Int32", 5)}
    # the mount now shows the SDK's version, size included
    text = read(path)
    doc = json.loads(text)
    assert doc["v"] == "sdk" and doc["extra"] == 5
    assert os.stat(path).st_size == len(text.encode())


def test_stale_etag_with_kept_fd_and_fsync(sdk, seed, mounter, wh):
    T = "wrStaleFd"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "orig"}])
    path = p(mnt, T, "p", "a.json")
    fd = os.open(path, os.O_RDWR)
    t.update_entity({"PartitionKey": "p", "RowKey": "a", "v": "sdk"}, mode="replace")
    os.ftruncate(fd, 0)
    os.pwrite(fd, b'{"v": "mount"}', 0)
    with pytest.raises(OSError) as ei:
        os.fsync(fd)
    assert ei.value.errno == errno.ESTALE
    os.close(fd)        # reported once: nothing resent
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.String", "sdk")}
    assert json.loads(read(path))["v"] == "sdk"


def test_fresh_etag_after_own_commit_allows_second_write(sdk, seed, mounter, wh):
    """Two commits through one fd (fsync, write, close): the second uses the
    ETag of the first and succeeds."""
    T = "wrTwoCommits"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "orig"}])
    fd = os.open(p(mnt, T, "p", "a.json"), os.O_WRONLY | os.O_TRUNC)
    os.write(fd, b'{"v": "one"}')
    os.fsync(fd)
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.String", "one")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, b'{"v": "two"}', 0)
    os.close(fd)
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.String", "two")}


def test_two_writers_second_close_is_estale(sdk, seed, mounter, wh):
    T = "wrTwoWriters"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a", "v": 0}])
    path = p(mnt, T, "p", "a.json")
    fd1 = os.open(path, os.O_WRONLY | os.O_TRUNC)
    fd2 = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.write(fd1, b'{"v": 1}')
    os.write(fd2, b'{"v": 2}')
    os.close(fd1)
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.Int32", 1)}
    with pytest.raises(OSError) as ei:
        os.close(fd2)
    assert ei.value.errno == errno.ESTALE
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.Int32", 1)}
    assert json.loads(read(path))["v"] == 1


def test_new_file_created_meanwhile_by_sdk_is_eexist(sdk, seed, mounter, wh):
    T = "wrCreateRace"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a"}])
    path = p(mnt, T, "p", "n.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.write(fd, b'{"v": "mount"}')
    t.create_entity({"PartitionKey": "p", "RowKey": "n", "v": "sdk"})
    with pytest.raises(OSError) as ei:
        os.close(fd)
    assert ei.value.errno == errno.EEXIST
    assert props(wh.get(T, "p", "n")) == {"v": ("Edm.String", "sdk")}
    assert json.loads(read(path))["v"] == "sdk"
    # O_EXCL on an existing entity fails at open
    with pytest.raises(FileExistsError):
        os.open(p(mnt, T, "p", "a.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)


def test_write_to_entity_deleted_meanwhile(sdk, seed, mounter, wh):
    T = "wrDelRace"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a", "v": 1}])
    path = p(mnt, T, "p", "a.json")
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.write(fd, b'{"v": 2}')
    t.delete_entity("p", "a")
    with pytest.raises(OSError) as ei:
        os.close(fd)
    assert ei.value.errno in (errno.ENOENT, errno.ESTALE)
    assert wh.get(T, "p", "a") is None       # not resurrected
    assert not os.path.exists(path)


def test_commit_only_at_flush(sdk, seed, mounter, wh):
    T = "wrAtFlush"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "orig"}])
    fd = os.open(p(mnt, T, "p", "a.json"), os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, b'{"v": "new"}')
        assert props(wh.get(T, "p", "a")) == {"v": ("Edm.String", "orig")}
        # a new file is not in the table before its close either
        fd2 = os.open(p(mnt, T, "p", "b.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        os.write(fd2, b'{"w": 1}')
        assert wh.get(T, "p", "b") is None
        os.close(fd2)
        assert props(wh.get(T, "p", "b")) == {"w": ("Edm.Int32", 1)}
    finally:
        os.close(fd)
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.String", "new")}


# ---------------------------------------------------------------------------
# O_TRUNC, empty files, touch
# ---------------------------------------------------------------------------
def test_echo_redirect_sends_one_write_never_an_empty_entity(sdk, seed, mounter, wh, sh):
    T = "wrEcho"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "orig"}])
    mark = wh.mark(mnt)
    sh("""echo '{"v": "echoed"}' > '%s'""" % p(mnt, T, "p", "a.json"))
    writes = entity_writes(wh.writes(mnt, mark), T)
    assert [w[0] for w in writes] == ["PUT"], writes
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.String", "echoed")}
    mark = wh.mark(mnt)
    sh("""echo '{"w": 2}' > '%s'""" % p(mnt, T, "p", "b.json"))
    writes = entity_writes(wh.writes(mnt, mark), T)
    assert [w[0] for w in writes] == ["POST"], writes
    assert props(wh.get(T, "p", "b")) == {"w": ("Edm.Int32", 2)}


def test_truncate_zero_is_entity_without_properties(sdk, seed, mounter, wh, sh):
    T = "wrTrunc"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "orig", "n": 3}])
    sh(["truncate", "-s", "0", p(mnt, T, "p", "a.json")])
    e = wh.get(T, "p", "a")
    assert e is not None and props(e) == {}
    text = read(p(mnt, T, "p", "a.json"))
    assert set(json.loads(text)) == {"PartitionKey", "RowKey", "Timestamp"}


def test_stat_size_right_after_truncate_matches_content(sdk, seed, mounter, wh, sh):
    """After `truncate -s 0 f` the file is the rendered empty entity (keys +
    Timestamp): its st_size must say so at once (readers stop at st_size)."""
    T = "wrTruncSize"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "orig"}])
    path = p(mnt, T, "p", "a.json")
    sh(["truncate", "-s", "0", path])
    size = os.stat(path).st_size
    data = read(path).encode()
    assert size == len(data) > 0


def test_python_open_w_close_without_write_is_empty_entity(sdk, seed, mounter, wh):
    T = "wrOpenW"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "orig"}])
    # ': > new.json' / open(,'w') on a new file: an entity with no properties.
    # The flush at close sends nothing (O_TRUNC: bash flushes before writing);
    # the entity is inserted at release, which Linux sends after close(2) has
    # returned. The mount shows the file at once; the service within moments.
    path = p(mnt, T, "p", "n.json")
    open(path, "w").close()
    assert os.path.exists(path)
    deadline = time.monotonic() + 10
    e = wh.get(T, "p", "n")
    while e is None and time.monotonic() < deadline:
        time.sleep(0.05)
        e = wh.get(T, "p", "n")
    assert e is not None and props(e) == {}
    shown = json.loads(read(path))
    assert shown["PartitionKey"] == "p" and shown["RowKey"] == "n"


def test_touch_new_and_existing(sdk, seed, mounter, wh, sh):
    T = "wrTouch"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "orig"}])
    before = wh.etag(T, "p", "a")
    mark = wh.mark(mnt)
    sh(["touch", p(mnt, T, "p", "a.json"), p(mnt, T, "p", "new.json")])
    writes = entity_writes(wh.writes(mnt, mark), T)
    assert [w[0] for w in writes] == ["POST"], writes
    assert wh.etag(T, "p", "a") == before
    e = wh.get(T, "p", "new")
    assert e is not None and props(e) == {}
    assert "new.json" in os.listdir(p(mnt, T, "p"))


# ---------------------------------------------------------------------------
# keys come from the path
# ---------------------------------------------------------------------------
def test_keys_from_path_not_content(sdk, seed, mounter, wh):
    T = "wrKeys"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "orig"}])
    text = read(p(mnt, T, "p", "a.json")).encode()
    assert b'"RowKey": "a"' in text
    assert wh.write_fd(p(mnt, T, "p", "b.json"), text,
                       os.O_WRONLY | os.O_CREAT | os.O_EXCL) is None
    assert props(wh.get(T, "p", "b")) == {"v": ("Edm.String", "orig")}
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.String", "orig")}
    assert json.loads(read(p(mnt, T, "p", "b.json")))["RowKey"] == "b"
    # content naming another partition does not move it either
    bad = text.replace(b'"PartitionKey": "p"', b'"PartitionKey": "zz"')
    assert wh.write_fd(p(mnt, T, "p", "c.json"), bad,
                       os.O_WRONLY | os.O_CREAT | os.O_EXCL) is None
    assert wh.get(T, "p", "c") is not None and wh.get(T, "zz", "c") is None


def test_awkward_key_names_write(sdk, seed, mounter, wh, wire, backend):
    T = "wrAwkward"
    mnt, _ = seeded_mount(sdk, seed, mounter, T)
    D = "%2Ehidden p%25"          # the partition ".hidden p%"
    os.mkdir(p(mnt, T, D))
    for name, rk in [("50%25.json", "50%"), ("%2Econfig.json", ".config"),
                     ("a b.json", "a b"), ("日本.json", "日本"), ("%.json", "")]:
        got = wh.write_fd(p(mnt, T, D, name), b'{"k": "%s"}' % name.encode(),
                          os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        if backend.cosmos and not rk:   # Cosmos DB refuses an empty key: nothing sent
            assert got is not None and got[1] == errno.EINVAL, got
            continue
        assert got is None, name
        if rk:
            assert props(wh.get(T, ".hidden p%", rk)) == {"k": ("Edm.String", name)}
    ents = {e.get("RowKey", "") for e in wh.entities(T)
            if e.get("PartitionKey") == ".hidden p%"}
    if backend.cosmos:
        assert ents == {"50%", ".config", "a b", "日本"}
        return
    assert ents == {"50%", ".config", "a b", "日本", ""}
    # the SDK drops empty keys: check the empty RowKey on the wire
    status, _, body = wire("/%s(PartitionKey='.hidden%%20p%%25',RowKey='')" % T)
    assert status == 200, body
    assert json.loads(body)["k"] == "%.json"
    assert sorted(os.listdir(p(mnt, T, D))) == sorted(
        ["50%25.json", "%2Econfig.json", "a b.json", "日本.json", "%.json"])


# ---------------------------------------------------------------------------
# unlink
# ---------------------------------------------------------------------------
def test_unlink_deletes(sdk, seed, mounter, wh):
    T = "wrUnlink"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a"}, {"PartitionKey": "p", "RowKey": "b"}])
    mark = wh.mark(mnt)
    os.unlink(p(mnt, T, "p", "a.json"))
    assert [w[0] for w in entity_writes(wh.writes(mnt, mark), T)] == ["DELETE"]
    assert wh.get(T, "p", "a") is None and wh.get(T, "p", "b") is not None
    assert os.listdir(p(mnt, T, "p")) == ["b.json"]
    assert not os.path.exists(p(mnt, T, "p", "a.json"))
    with pytest.raises(FileNotFoundError):
        os.unlink(p(mnt, T, "p", "a.json"))


def test_rm_of_open_file_deletes(sdk, seed, mounter):
    """rm of a file that is open (or whose release is still on its way:
    close(2) does not wait for it) deletes the entity, as on a disk, rather
    than renaming it to .fuse_hidden* (which fails with EXDEV); the open
    descriptor keeps reading what it opened."""
    T = "wrRmOpen"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "kept"},
        {"PartitionKey": "p", "RowKey": "b", "v": 2}])
    d = p(mnt, T, "p")
    with open(os.path.join(d, "a.json"), "rb") as held:
        os.unlink(os.path.join(d, "a.json"))
        assert json.loads(held.read())["v"] == "kept"
    read(os.path.join(d, "b.json"))
    os.unlink(os.path.join(d, "b.json"))
    assert list(t.list_entities()) == []
    assert os.listdir(d) == []


def test_unlink_stale_is_estale(sdk, seed, mounter, wh):
    T = "wrUnlinkStale"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a", "v": 1}])
    read(p(mnt, T, "p", "a.json"))      # cached with its ETag
    t.update_entity({"PartitionKey": "p", "RowKey": "a", "v": 2}, mode="replace")
    with pytest.raises(OSError) as ei:
        os.unlink(p(mnt, T, "p", "a.json"))
    assert ei.value.errno == errno.ESTALE
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.Int32", 2)}
    assert json.loads(read(p(mnt, T, "p", "a.json")))["v"] == 2
    # having seen the new version, deleting it again works (at once)
    os.unlink(p(mnt, T, "p", "a.json"))
    assert wh.get(T, "p", "a") is None
    assert os.listdir(p(mnt, T, "p")) == []


def test_last_unlink_keeps_partition_dir_until_rmdir(sdk, seed, mounter, wh):
    T = "wrLastUnlink"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a"}])
    os.unlink(p(mnt, T, "p", "a.json"))
    assert wh.entities(T) == []
    assert os.path.isdir(p(mnt, T, "p")) and os.listdir(p(mnt, T, "p")) == []
    os.rmdir(p(mnt, T, "p"))
    assert not os.path.exists(p(mnt, T, "p"))
    assert os.listdir(p(mnt, T)) == []


# ---------------------------------------------------------------------------
# mkdir / rmdir
# ---------------------------------------------------------------------------
def test_mkdir_rmdir_tables(sdk, seed, mounter, wh):
    T = "wrTabFull"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a"}])
    for name in ("wrNewTable", "wrnewtable2"):
        try:
            sdk.delete_table(name)
        except Exception:
            pass
    os.mkdir(p(mnt, "wrNewTable"))
    assert wh.table_exists("wrNewTable")
    assert os.path.isdir(p(mnt, "wrNewTable"))
    assert "wrNewTable" in os.listdir(str(mnt))
    assert os.listdir(p(mnt, "wrNewTable")) == []
    for bad in ("ab", "a-b", "1abc", "Tables"):
        with pytest.raises(OSError) as ei:
            os.mkdir(p(mnt, bad))
        assert ei.value.errno == errno.EINVAL, bad
        assert not wh.table_exists(bad)
    with pytest.raises(FileExistsError):
        os.mkdir(p(mnt, T))
    with pytest.raises(FileExistsError):
        os.mkdir(p(mnt, "wrNewTable"))
    # rmdir only when empty
    with pytest.raises(OSError) as ei:
        os.rmdir(p(mnt, T))
    assert ei.value.errno == errno.ENOTEMPTY
    assert wh.table_exists(T) and wh.get(T, "p", "a") is not None
    os.rmdir(p(mnt, "wrNewTable"))
    assert not wh.table_exists("wrNewTable")
    assert "wrNewTable" not in os.listdir(str(mnt))
    assert not os.path.exists(p(mnt, "wrNewTable"))


def test_mkdir_partition_local_until_written(sdk, seed, mounter, wh, sh):
    T = "wrPart"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a"}])
    os.mkdir(p(mnt, T, "newp"))
    assert statmod.S_ISDIR(os.stat(p(mnt, T, "newp")).st_mode)
    assert sorted(sh.ls(p(mnt, T))) == ["newp", "p"]
    assert sh.ls(p(mnt, T, "newp")) == []
    assert [e for e in wh.entities(T) if e["PartitionKey"] == "newp"] == []
    with pytest.raises(FileExistsError):
        os.mkdir(p(mnt, T, "newp"))
    with pytest.raises(FileExistsError):
        os.mkdir(p(mnt, T, "p"))
    # an empty local partition can be removed
    os.mkdir(p(mnt, T, "gone"))
    os.rmdir(p(mnt, T, "gone"))
    assert not os.path.exists(p(mnt, T, "gone"))
    assert "gone" not in sh.ls(p(mnt, T))
    # a file in it makes the partition real
    assert wh.write_fd(p(mnt, T, "newp", "r.json"), b'{"x": 1}',
                       os.O_WRONLY | os.O_CREAT | os.O_EXCL) is None
    assert props(wh.get(T, "newp", "r")) == {"x": ("Edm.Int32", 1)}
    assert sh.ls(p(mnt, T, "newp")) == ["r.json"]
    with pytest.raises(OSError) as ei:
        os.rmdir(p(mnt, T, "newp"))
    assert ei.value.errno == errno.ENOTEMPTY
    with pytest.raises(OSError) as ei:
        os.rmdir(p(mnt, T, "p"))
    assert ei.value.errno == errno.ENOTEMPTY
    assert wh.get(T, "p", "a") is not None


def test_rmdir_table_with_local_partition_is_enotempty(sdk, seed, mounter, wh):
    """A partition made with mkdir (nothing in the table yet) still makes its
    table non-empty, as on a local disk; and it must not come back as a ghost
    when a table of that name is made again."""
    T = "wrTabLocalPart"
    mnt, _ = seeded_mount(sdk, seed, mounter, T)
    os.mkdir(p(mnt, T, "localp"))
    with pytest.raises(OSError) as ei:
        os.rmdir(p(mnt, T))
    assert ei.value.errno == errno.ENOTEMPTY
    assert wh.table_exists(T)
    assert os.listdir(p(mnt, T)) == ["localp"]
    os.rmdir(p(mnt, T, "localp"))
    os.rmdir(p(mnt, T))
    assert not wh.table_exists(T)
    os.mkdir(p(mnt, T))
    assert os.listdir(p(mnt, T)) == []


def test_truncate_by_path(sdk, seed, mounter, wh):
    T = "wrTruncPath"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": 1}, {"PartitionKey": "p", "RowKey": "b", "v": 1}])
    os.truncate(p(mnt, T, "p", "a.json"), 0)
    assert props(wh.get(T, "p", "a")) == {}
    # growing a file by path pads it with NUL bytes: not JSON, refused
    etag = wh.etag(T, "p", "b")
    size = os.stat(p(mnt, T, "p", "b.json")).st_size
    with pytest.raises(OSError) as ei:
        os.truncate(p(mnt, T, "p", "b.json"), size + 10)
    assert ei.value.errno == errno.EINVAL
    assert wh.etag(T, "p", "b") == etag
    # stale: the SDK's change survives
    read(p(mnt, T, "p", "b.json"))
    t.update_entity({"PartitionKey": "p", "RowKey": "b", "v": 2}, mode="replace")
    with pytest.raises(OSError) as ei:
        os.truncate(p(mnt, T, "p", "b.json"), 0)
    assert ei.value.errno == errno.ESTALE
    assert props(wh.get(T, "p", "b")) == {"v": ("Edm.Int32", 2)}


def test_misplaced_files_and_dirs_eperm(sdk, seed, mounter, wh):
    T = "wrEperm"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a"}])
    for path in (p(mnt, "x.json"), p(mnt, T, "x.json"), p(mnt, T, "scratch")):
        with pytest.raises(OSError) as ei:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        assert ei.value.errno == errno.EPERM, path
        assert not os.path.exists(path)
    with pytest.raises(OSError) as ei:
        os.mkdir(p(mnt, T, "p", "sub"))
    assert ei.value.errno == errno.EPERM
    assert sorted(os.listdir(p(mnt, T, "p"))) == ["a.json"]
    assert [(e["PartitionKey"], e["RowKey"]) for e in wh.entities(T)] == [("p", "a")]


# ---------------------------------------------------------------------------
# rename
# ---------------------------------------------------------------------------
def test_rename_within_partition_is_one_batch(sdk, seed, mounter, wh):
    T = "wrRename"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "A", "l": EntityProperty(7, EdmType.INT64)},
        {"PartitionKey": "p", "RowKey": "b", "v": "B"},
        {"PartitionKey": "p", "RowKey": "c", "v": "C", "other": 1}])
    mark = wh.mark(mnt)
    os.rename(p(mnt, T, "p", "a.json"), p(mnt, T, "p", "n.json"))
    writes = entity_writes(wh.writes(mnt, mark), T)
    assert len(writes) == 1 and writes[0][1].endswith("/$batch"), writes
    assert wh.get(T, "p", "a") is None
    assert props(wh.get(T, "p", "n")) == {"v": ("Edm.String", "A"), "l": ("Edm.Int64", 7)}
    assert sorted(os.listdir(p(mnt, T, "p"))) == ["b.json", "c.json", "n.json"]
    assert json.loads(read(p(mnt, T, "p", "n.json")))["RowKey"] == "n"
    # over an existing target: replaced, 'other' gone
    os.rename(p(mnt, T, "p", "b.json"), p(mnt, T, "p", "c.json"))
    assert wh.get(T, "p", "b") is None
    assert props(wh.get(T, "p", "c")) == {"v": ("Edm.String", "B")}
    assert sorted(os.listdir(p(mnt, T, "p"))) == ["c.json", "n.json"]
    assert json.loads(read(p(mnt, T, "p", "c.json")))["v"] == "B"


def test_rename_stale_source_changes_nothing(sdk, seed, mounter, wh):
    T = "wrRenStale"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a", "v": 1}])
    assert os.listdir(p(mnt, T, "p")) == ["a.json"]     # a fresh listing: b is absent
    t.update_entity({"PartitionKey": "p", "RowKey": "a", "v": 2}, mode="replace")
    mark = wh.mark(mnt)
    with pytest.raises(OSError) as ei:
        os.rename(p(mnt, T, "p", "a.json"), p(mnt, T, "p", "b.json"))
    assert ei.value.errno == errno.ESTALE
    # the batch's If-Match found the conflict: no read before it (the
    # service fails the whole changeset with 412)
    reqs = wh.requests(mnt, mark)
    assert reqs and reqs[0][0] == "POST" and reqs[0][1].endswith("/$batch"), reqs
    assert reqs[0][2] == 202 and "UpdateConditionNotSatisfied" in mnt.stderr()[mark:]
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.Int32", 2)}
    assert wh.get(T, "p", "b") is None


def test_rename_over_stale_target_keeps_sdk_change(sdk, seed, mounter, wh):
    T = "wrRenStaleDst"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "src"},
        {"PartitionKey": "p", "RowKey": "b", "v": "dst"}])
    assert sorted(os.listdir(p(mnt, T, "p"))) == ["a.json", "b.json"]   # cached + ETags
    read(p(mnt, T, "p", "b.json"))
    t.update_entity({"PartitionKey": "p", "RowKey": "b", "v": "sdk"}, mode="replace")
    with pytest.raises(OSError) as ei:
        os.rename(p(mnt, T, "p", "a.json"), p(mnt, T, "p", "b.json"))
    assert ei.value.errno == errno.ESTALE
    assert props(wh.get(T, "p", "b")) == {"v": ("Edm.String", "sdk")}
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.String", "src")}


def test_rename_across_partitions_and_tables_exdev(sdk, seed, mounter, wh, sh):
    T, T2 = "wrXdev", "wrXdevOther"
    seed.table(sdk, T2).create_entity({"PartitionKey": "q", "RowKey": "z"})
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": "A"},
        {"PartitionKey": "p", "RowKey": "b", "v": "B"},
        {"PartitionKey": "q", "RowKey": "z"}])
    for dst in (p(mnt, T, "q", "a.json"), p(mnt, T2, "q", "a.json")):
        with pytest.raises(OSError) as ei:
            os.rename(p(mnt, T, "p", "a.json"), dst)
        assert ei.value.errno == errno.EXDEV
    assert wh.get(T, "p", "a") is not None and wh.get(T, "q", "a") is None
    # mv falls back to copy + unlink
    sh(["mv", p(mnt, T, "p", "a.json"), p(mnt, T, "q", "a.json")])
    assert wh.get(T, "p", "a") is None
    assert props(wh.get(T, "q", "a")) == {"v": ("Edm.String", "A")}
    sh(["mv", p(mnt, T, "p", "b.json"), p(mnt, T2, "q", "b.json")])
    assert wh.get(T, "p", "b") is None
    assert props(wh.get(T2, "q", "b")) == {"v": ("Edm.String", "B")}
    assert sorted(os.listdir(p(mnt, T2, "q"))) == ["b.json", "z.json"]


def test_rename_noreplace_is_einval(sdk, seed, mounter, wh):
    T = "wrNoRepl"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a"}])
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD, RENAME_NOREPLACE = -100, 1
    rc = libc.renameat2(AT_FDCWD, p(mnt, T, "p", "a.json").encode(), AT_FDCWD,
                        p(mnt, T, "p", "b.json").encode(), RENAME_NOREPLACE)
    assert rc == -1 and ctypes.get_errno() == errno.EINVAL
    assert wh.get(T, "p", "a") is not None and wh.get(T, "p", "b") is None


# ---------------------------------------------------------------------------
# scratch files
# ---------------------------------------------------------------------------
def test_scratch_files_stay_local(sdk, seed, mounter, wh, sh):
    T = "wrScratch"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a"}])
    s = p(mnt, T, "p", "notes.txt")
    mark = wh.mark(mnt)
    fd = os.open(s, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.pwrite(fd, b"world", 6)
    os.pwrite(fd, b"hello ", 0)
    os.close(fd)
    assert read(s) == "hello world"
    assert os.stat(s).st_size == 11
    assert statmod.S_IMODE(os.stat(s).st_mode) == 0o600
    os.chmod(s, 0o640)
    assert statmod.S_IMODE(os.stat(s).st_mode) == 0o640
    os.utime(s, (1000000000, 1234567890))
    assert int(os.stat(s).st_mtime) == 1234567890
    assert sorted(sh.ls(p(mnt, T, "p"))) == ["a.json", "notes.txt"]
    assert sh(["cat", s]).stdout == "hello world"
    assert entity_writes(wh.writes(mnt, mark), T) == []
    assert [e["RowKey"] for e in wh.entities(T)] == ["a"]
    os.unlink(s)
    assert sh.ls(p(mnt, T, "p")) == ["a.json"]


def test_scratch_rename_onto_entity_commits_once(sdk, seed, mounter, wh):
    T = "wrScratchRen"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "old": 1}])
    # new entity
    s = p(mnt, T, "p", "tmp1")
    with open(s, "wb") as f:
        f.write(b'{"v": "from scratch"}')
    mark = wh.mark(mnt)
    os.rename(s, p(mnt, T, "p", "n.json"))
    assert [w[0] for w in entity_writes(wh.writes(mnt, mark), T)] == ["POST"]
    assert props(wh.get(T, "p", "n")) == {"v": ("Edm.String", "from scratch")}
    assert not os.path.exists(s)
    # onto an existing entity: Replace
    s2 = p(mnt, T, "p", ".a.json.XXXX")
    with open(s2, "wb") as f:
        f.write(b'{"v": "replaced"}')
    mark = wh.mark(mnt)
    os.replace(s2, p(mnt, T, "p", "a.json"))
    assert [w[0] for w in entity_writes(wh.writes(mnt, mark), T)] == ["PUT"]
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.String", "replaced")}
    assert sorted(os.listdir(p(mnt, T, "p"))) == ["a.json", "n.json"]
    assert json.loads(read(p(mnt, T, "p", "a.json")))["v"] == "replaced"


def test_scratch_rename_onto_stale_entity_is_estale(sdk, seed, mounter, wh):
    """Atomic save (temp + rename) over an entity changed meanwhile through
    the SDK: refused, the SDK's change survives, the temp file stays."""
    T = "wrScratchStale"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a", "v": 1}])
    assert json.loads(read(p(mnt, T, "p", "a.json")))["v"] == 1
    s = p(mnt, T, "p", ".a.json.tmp")
    with open(s, "wb") as f:
        f.write(b'{"v": 3}')
    t.update_entity({"PartitionKey": "p", "RowKey": "a", "v": 2}, mode="replace")
    with pytest.raises(OSError) as ei:
        os.replace(s, p(mnt, T, "p", "a.json"))
    assert ei.value.errno == errno.ESTALE
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.Int32", 2)}
    assert json.loads(read(p(mnt, T, "p", "a.json")))["v"] == 2
    assert read(s) == '{"v": 3}'
    # saving again now that the new version was seen works
    os.replace(s, p(mnt, T, "p", "a.json"))
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.Int32", 3)}


def test_scratch_rename_bad_content_keeps_scratch(sdk, seed, mounter, wh):
    T = "wrScratchBad"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a", "v": 1}])
    s = p(mnt, T, "p", "tmp")
    with open(s, "wb") as f:
        f.write(b'{"v": [1]}')
    with pytest.raises(OSError) as ei:
        os.replace(s, p(mnt, T, "p", "a.json"))
    assert ei.value.errno == errno.EINVAL
    assert props(wh.get(T, "p", "a")) == {"v": ("Edm.Int32", 1)}
    assert read(s) == '{"v": [1]}'


# ---------------------------------------------------------------------------
# chmod / chown / utimens
# ---------------------------------------------------------------------------
def test_chmod_chown_utimens_are_noops(sdk, seed, mounter, wh):
    T = "wrAttrs"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "a", "v": 1}])
    before = wh.etag(T, "p", "a")
    mark = wh.mark(mnt)
    for path in (p(mnt, T, "p", "a.json"), p(mnt, T, "p"), p(mnt, T)):
        os.chmod(path, 0o600)
        os.chown(path, os.getuid(), os.getgid())
        os.utime(path, (1000000000, 1000000000))
        os.utime(path)
    assert entity_writes(wh.writes(mnt, mark), T) == []
    assert wh.etag(T, "p", "a") == before
    other = os.getuid() + 12345
    with pytest.raises(PermissionError):
        os.chown(p(mnt, T, "p", "a.json"), other, -1)


# ---------------------------------------------------------------------------
# read-only mount
# ---------------------------------------------------------------------------
def test_ro_mount_refuses_every_change(sdk, seed, mounter, wh):
    T = "wrRo"
    mnt, _ = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "a", "v": 1}, {"PartitionKey": "p", "RowKey": "b"}],
        options=("-o", "ro,loglevel=debug"))
    before = {(e["PartitionKey"], e["RowKey"]): e.metadata["etag"] for e in wh.entities(T)}
    mark = wh.mark(mnt)
    a, b = p(mnt, T, "p", "a.json"), p(mnt, T, "p", "b.json")
    attempts = [
        ("create", lambda: os.close(os.open(p(mnt, T, "p", "n.json"),
                                            os.O_WRONLY | os.O_CREAT, 0o644))),
        ("open-w", lambda: os.close(os.open(a, os.O_WRONLY))),
        ("open-trunc", lambda: os.close(os.open(a, os.O_WRONLY | os.O_TRUNC))),
        ("truncate", lambda: os.truncate(a, 0)),
        ("unlink", lambda: os.unlink(a)),
        ("rename", lambda: os.rename(a, p(mnt, T, "p", "c.json"))),
        ("rename-over", lambda: os.rename(a, b)),
        ("mkdir-table", lambda: os.mkdir(p(mnt, "wrRoNew"))),
        ("mkdir-part", lambda: os.mkdir(p(mnt, T, "q"))),
        ("rmdir-part", lambda: os.rmdir(p(mnt, T, "p"))),
        ("rmdir-table", lambda: os.rmdir(p(mnt, T))),
        ("scratch", lambda: os.close(os.open(p(mnt, T, "p", "tmp"),
                                             os.O_WRONLY | os.O_CREAT, 0o644))),
        ("chmod", lambda: os.chmod(a, 0o600)),
        ("utime", lambda: os.utime(a, (1, 1))),
    ]
    wrong = []
    for name, fn in attempts:
        try:
            fn()
            wrong.append((name, "succeeded"))
        except OSError as e:
            if e.errno != errno.EROFS:
                wrong.append((name, errno.errorcode.get(e.errno)))
    assert wrong == []
    assert wh.writes(mnt, mark) == []
    after = {(e["PartitionKey"], e["RowKey"]): e.metadata["etag"] for e in wh.entities(T)}
    assert after == before
    assert not wh.table_exists("wrRoNew")
    assert json.loads(read(a))["v"] == 1
