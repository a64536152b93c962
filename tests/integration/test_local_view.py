"""The mount's own view stays consistent after failed saves and renames
(issue 13, items 3 to 7, found by the reference-model test).

* A new file whose save failed leaves its name free: creating it again
  works at once (item 3).
* After ESTALE the file shows the current entity everywhere: the size stat
  gives is the number of bytes read, even where the partition was listed
  (item 4).
* After ENOENT (the entity was deleted elsewhere) the file is gone from the
  listing too (item 5).
* A handle open on a file follows a rename made through this mount: what is
  written through it is saved under the new name (item 6).
* A new file that is open and not yet saved is listed, and can be renamed
  within its partition (EXDEV across partitions) (item 7).

Every remote state is checked through the SDK, every view through the
mount."""

import errno
import json
import os
import time

import pytest

from conftest import rewrite_and_close
from test_faults import faulty_mount, proxy  # noqa: F401 (proxy is a fixture)
from test_write import DEBUG, p, seeded_mount


def read(path):
    with open(path, "rb") as f:
        return f.read()


def seed_only(sdk, seed, mounter, table):
    """A debug mount of TABLE holding the one entity p/seed: (mount, table
    client, directory of partition p)."""
    mnt, t = seeded_mount(sdk, seed, mounter, table, [{"PartitionKey": "p", "RowKey": "seed"}])
    return mnt, t, p(mnt, table, "p")


def user_props(e):
    return {k: v for k, v in e.items() if k not in ("PartitionKey", "RowKey")}


def rows(t):
    return sorted((e["PartitionKey"], e["RowKey"]) for e in t.list_entities())


def raises(err, fn, *args):
    """FN(*ARGS) fails with errno ERR."""
    with pytest.raises(OSError) as ei:
        fn(*args)
    assert ei.value.errno == err, ei.value


def assert_consistent(path):
    """The size a listing (ls -l), stat before the read and stat after it
    give is the number of bytes the read returns."""
    d, name = os.path.split(path)
    with os.scandir(d) as it:
        listed = [e.stat().st_size for e in it if e.name == name]
    before = os.stat(path).st_size
    data = read(path)
    after = os.stat(path).st_size
    assert listed == [len(data)] and before == after == len(data), \
        (listed, before, after, data)
    return json.loads(data)


# ---------------------------------------------------------------------------
# item 3: a failed save of a new file leaves its name free
# ---------------------------------------------------------------------------
def test_failed_save_of_new_file_leaves_the_name_free(sdk, seed, mounter, wh, sh):
    T = "lvFailedNew"
    mnt, t, d = seed_only(sdk, seed, mounter, T)
    assert os.listdir(d) == ["seed.json"]
    for name in ("a.json", "b.json", "c.json"):
        err = wh.write_fd(os.path.join(d, name), b'{"a": 1',
                          os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        assert err == ("close", errno.EINVAL)
        assert not os.path.exists(os.path.join(d, name))
    assert rows(t) == [("p", "seed")]
    assert os.listdir(d) == ["seed.json"]
    # at once, not after cache_timeout (30 s): a create ...
    assert wh.write_fd(os.path.join(d, "a.json"), b'{"a": 1}',
                       os.O_WRONLY | os.O_CREAT | os.O_TRUNC) is None
    assert user_props(wh.get(T, "p", "a")) == {"a": 1}
    assert assert_consistent(os.path.join(d, "a.json"))["a"] == 1
    # ... a touch ...
    sh(["touch", os.path.join(d, "b.json")])
    assert user_props(wh.get(T, "p", "b")) == {}
    # ... while an open without O_CREAT says the name is free
    raises(errno.ENOENT, os.open, os.path.join(d, "c.json"), os.O_WRONLY)
    raises(errno.ENOENT, os.open, os.path.join(d, "c.json"), os.O_RDONLY)
    assert wh.get(T, "p", "c") is None
    assert sorted(os.listdir(d)) == ["a.json", "b.json", "seed.json"]
    assert rows(t) == [("p", "a"), ("p", "b"), ("p", "seed")]


# ---------------------------------------------------------------------------
# item 4: after ESTALE, stat and read agree on the current entity
# ---------------------------------------------------------------------------
def stale_save(t, d):
    f = open(os.path.join(d, "a.json"), "r+")
    t.update_entity({"PartitionKey": "p", "RowKey": "a", "v": LONGER}, mode="replace")
    assert rewrite_and_close(f, '{"v": "mount"}').errno == errno.ESTALE


def stale_delete(t, d):
    t.update_entity({"PartitionKey": "p", "RowKey": "a", "v": LONGER}, mode="replace")
    raises(errno.ESTALE, os.unlink, os.path.join(d, "a.json"))


def stale_rename(t, d):
    t.update_entity({"PartitionKey": "p", "RowKey": "a", "v": LONGER}, mode="replace")
    raises(errno.ESTALE, os.rename, os.path.join(d, "a.json"), os.path.join(d, "a2.json"))


LONGER = "a much longer value than before, " * 3


@pytest.mark.parametrize("attr_timeout", ["1", "0"])
@pytest.mark.parametrize("how", [stale_save, stale_delete, stale_rename],
                         ids=["save", "delete", "rename"])
def test_after_estale_stat_and_read_show_the_current_entity(sdk, seed, mounter, wh,
                                                            attr_timeout, how):
    T = "lvStale%s%s" % (how.__name__[6:], attr_timeout)
    mnt, t = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": rk, "v": "short"} for rk in ("a", "b")],
        options=DEBUG + ("-o", "attr_timeout=" + attr_timeout))
    d = p(mnt, T, "p")
    assert sorted(os.listdir(d)) == ["a.json", "b.json"]      # listed
    assert assert_consistent(os.path.join(d, "a.json"))["v"] == "short"
    how(t, d)
    assert user_props(wh.get(T, "p", "a")) == {"v": LONGER}    # theirs is kept
    assert wh.get(T, "p", "a2") is None
    assert assert_consistent(os.path.join(d, "a.json"))["v"] == LONGER
    assert sorted(os.listdir(d)) == ["a.json", "b.json"]
    assert assert_consistent(os.path.join(d, "b.json"))["v"] == "short"


# ---------------------------------------------------------------------------
# item 5: after ENOENT, the listing does not show the file
# ---------------------------------------------------------------------------
def gone_save(t, d):
    f = open(os.path.join(d, "a.json"), "r+")
    t.delete_entity("p", "a")
    assert rewrite_and_close(f, '{"v": "mount"}').errno == errno.ENOENT


def gone_delete(t, d):
    t.delete_entity("p", "a")
    raises(errno.ENOENT, os.unlink, os.path.join(d, "a.json"))


@pytest.mark.parametrize("how", [gone_save, gone_delete], ids=["save", "delete"])
def test_entity_deleted_elsewhere_leaves_the_listing(sdk, seed, mounter, wh, how):
    T = "lvGone" + how.__name__[5:]
    mnt, t = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": rk, "v": rk} for rk in ("a", "keep")])
    d = p(mnt, T, "p")
    assert sorted(os.listdir(d)) == ["a.json", "keep.json"]
    how(t, d)
    assert rows(t) == [("p", "keep")]                   # not resurrected
    assert os.listdir(d) == ["keep.json"]
    assert not os.path.exists(os.path.join(d, "a.json"))
    raises(errno.ENOENT, os.open, os.path.join(d, "a.json"), os.O_RDONLY)
    assert assert_consistent(os.path.join(d, "keep.json"))["v"] == "keep"


# ---------------------------------------------------------------------------
# item 6: an open handle follows a rename made through this mount
# ---------------------------------------------------------------------------
def test_handle_follows_rename_of_entity(sdk, seed, mounter, wh):
    T = "lvFollow"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "d", "v": "orig"},
        {"PartitionKey": "p", "RowKey": "e", "v": "orig e"}])
    d = p(mnt, T, "p")
    fd = os.open(os.path.join(d, "d.json"), os.O_WRONLY | os.O_TRUNC)
    fd2 = os.open(os.path.join(d, "e.json"), os.O_RDWR)
    try:
        mark = wh.mark(mnt)
        os.rename(os.path.join(d, "d.json"), os.path.join(d, "d2.json"))
        assert wh.get(T, "p", "d") is None
        assert user_props(wh.get(T, "p", "d2")) == {"v": "orig"}
        os.write(fd, b'{"v": "written"}')
    finally:
        os.close(fd)
    assert wh.get(T, "p", "d") is None
    assert user_props(wh.get(T, "p", "d2")) == {"v": "written"}
    assert "someone else" not in mnt.stderr()[mark:]
    # one batch, then one guarded replace of the new name, with the ETag the
    # batch answered: nothing read back in between
    reqs = [r for r in wh.requests(mnt, mark) if "/%s(" % T in r[1] or
            r[1].endswith("/$batch")]
    batch = [i for i, r in enumerate(reqs) if r[1].endswith("/$batch")]
    assert len(batch) == 1, reqs
    after = reqs[batch[0] + 1:]
    assert [(m, s) for m, _, s in after] == [("PUT", 204)], reqs
    assert "RowKey='d2'" in after[0][1]
    assert sorted(os.listdir(d)) == ["d2.json", "e.json"]
    assert assert_consistent(os.path.join(d, "d2.json"))["v"] == "written"

    # a handle with unsaved writes follows too; twice
    os.write(fd2, b" ")
    os.rename(os.path.join(d, "e.json"), os.path.join(d, "e2.json"))
    os.rename(os.path.join(d, "e2.json"), os.path.join(d, "e3.json"))
    os.lseek(fd2, 0, os.SEEK_SET)
    os.ftruncate(fd2, 0)
    os.write(fd2, b'{"v": "via e"}')
    os.close(fd2)
    assert rows(t) == [("p", "d2"), ("p", "e3")]
    assert user_props(wh.get(T, "p", "e3")) == {"v": "via e"}
    assert assert_consistent(os.path.join(d, "e3.json"))["v"] == "via e"


@pytest.mark.parametrize("kind", ["503_after", "reset_after"])
def test_handle_follows_rename_whose_answer_was_lost(sdk, seed, mounter, proxy, wh,  # noqa: F811
                                                     kind):
    """The batch is applied and its answer lost: the rename is settled by
    reading the entities back, and the handle follows with the ETag the
    target was found with."""
    T = "lvFollowLost"
    seed.table(sdk, T).create_entity({"PartitionKey": "p", "RowKey": "d", "v": "orig"})
    m = faulty_mount(mounter, proxy)
    proxy.set_faults(rate=0.0)
    d = p(m, T, "p")
    assert os.listdir(d) == ["d.json"]
    fd = os.open(os.path.join(d, "d.json"), os.O_WRONLY | os.O_TRUNC)
    try:
        proxy.set_faults(rate=1.0, kinds=[kind], limit=1, methods=["POST"])
        os.rename(os.path.join(d, "d.json"), os.path.join(d, "d2.json"))
        assert proxy.counts().get(kind, 0) == 1, proxy.counts()
        proxy.set_faults(rate=0.0)
        os.write(fd, b'{"v": "written"}')
    finally:
        os.close(fd)
    assert "already holds" in m.stderr()            # settled by reading back
    assert rows(sdk.get_table_client(T)) == [("p", "d2")]
    assert user_props(wh.get(T, "p", "d2")) == {"v": "written"}
    assert os.listdir(d) == ["d2.json"]
    assert assert_consistent(os.path.join(d, "d2.json"))["v"] == "written"


def test_stale_handle_does_not_follow_into_a_newer_entity(sdk, seed, mounter, wh):
    """A handle opened before the entity changed (here by another handle of
    this mount) keeps its old ETag across the rename: its save is ESTALE,
    and the newer content is kept."""
    T = "lvFollowStale"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [{"PartitionKey": "p", "RowKey": "d",
                                                    "v": "orig"}])
    d = p(mnt, T, "p")
    old = os.open(os.path.join(d, "d.json"), os.O_RDWR)
    assert wh.write_fd(os.path.join(d, "d.json"), b'{"v": "newer"}') is None
    os.rename(os.path.join(d, "d.json"), os.path.join(d, "d2.json"))
    os.ftruncate(old, 0)
    os.pwrite(old, b'{"v": "stale"}', 0)
    raises(errno.ESTALE, os.close, old)
    assert rows(t) == [("p", "d2")]
    assert user_props(wh.get(T, "p", "d2")) == {"v": "newer"}


def test_new_file_handle_follows_rename(sdk, seed, mounter, wh):
    T = "lvFollowNew"
    mnt, t, d = seed_only(sdk, seed, mounter, T)
    mark = wh.mark(mnt)
    fd = os.open(os.path.join(d, "n.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.rename(os.path.join(d, "n.json"), os.path.join(d, "n2.json"))
        assert rows(t) == [("p", "seed")]            # nothing sent yet
        os.write(fd, b'{"v": "new"}')
    finally:
        os.close(fd)
    assert rows(t) == [("p", "n2"), ("p", "seed")]
    assert user_props(wh.get(T, "p", "n2")) == {"v": "new"}
    writes = [(m, s) for m, u, s in wh.writes(mnt, mark)]
    assert writes in ([("POST", 201)], [("POST", 204)]), writes
    assert sorted(os.listdir(d)) == ["n2.json", "seed.json"]
    assert assert_consistent(os.path.join(d, "n2.json"))["v"] == "new"


# ---------------------------------------------------------------------------
# item 7: a new file not yet saved is listed and can be renamed
# ---------------------------------------------------------------------------
def test_unsaved_new_file_is_listed_and_renamable(sdk, seed, mounter, wh):
    T = "lvUnsaved"
    mnt, t = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "seed"},
        {"PartitionKey": "q", "RowKey": "other"}])
    d = p(mnt, T, "p")
    assert os.listdir(d) == ["seed.json"]
    fd = os.open(os.path.join(d, "u.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, b'{"v": 1}')
        assert sorted(os.listdir(d)) == ["seed.json", "u.json"]
        assert os.stat(os.path.join(d, "u.json")).st_size == 8
        # across partitions: EXDEV, as for any entity
        raises(errno.EXDEV, os.rename, os.path.join(d, "u.json"), p(mnt, T, "q", "u.json"))
        # within the partition: the name moves, nothing is sent
        os.rename(os.path.join(d, "u.json"), os.path.join(d, "u2.json"))
        assert sorted(os.listdir(d)) == ["seed.json", "u2.json"]
        assert os.stat(os.path.join(d, "u2.json")).st_size == 8
        assert not os.path.exists(os.path.join(d, "u.json"))
        assert rows(t) == [("p", "seed"), ("q", "other")]
        os.write(fd, b" ")
    finally:
        os.close(fd)
    assert rows(t) == [("p", "seed"), ("p", "u2"), ("q", "other")]
    assert user_props(wh.get(T, "p", "u2")) == {"v": 1}
    assert sorted(os.listdir(d)) == ["seed.json", "u2.json"]
    assert os.listdir(p(mnt, T, "q")) == ["other.json"]
    assert assert_consistent(os.path.join(d, "u2.json"))["v"] == 1


@pytest.mark.parametrize("merge", [False, True], ids=["replace", "merge"])
def test_unsaved_new_file_renamed_onto_an_entity_replaces_it(sdk, seed, mounter, wh, merge):
    """The new file is the entity's whole content, also with -o merge (as
    a scratch file renamed onto an entity)."""
    T = "lvUnsavedOnto" + ("M" if merge else "")
    mnt, t = seeded_mount(sdk, seed, mounter, T, [
        {"PartitionKey": "p", "RowKey": "e", "v": "old", "extra": 1}],
        options=DEBUG + (("-o", "merge") if merge else ()))
    d = p(mnt, T, "p")
    fd = os.open(os.path.join(d, "u.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, b'{"v": "from u"}')
        os.rename(os.path.join(d, "u.json"), os.path.join(d, "e.json"))
        assert os.listdir(d) == ["e.json"]
        assert user_props(wh.get(T, "p", "e")) == {"v": "old", "extra": 1}    # at close
    finally:
        os.close(fd)
    assert rows(t) == [("p", "e")]
    assert user_props(wh.get(T, "p", "e")) == {"v": "from u"}
    assert assert_consistent(os.path.join(d, "e.json"))["v"] == "from u"


def test_second_open_of_an_unsaved_new_file(sdk, seed, mounter, wh):
    """A new file not yet saved opens like any file: a reader gets its bytes
    so far; a second writer has a copy of its own, and of the two saves the
    first close wins, the second is EEXIST (as two creates)."""
    T = "lvUnsavedTwice"
    mnt, t, _ = seed_only(sdk, seed, mounter, T)
    path = p(mnt, T, "p", "n.json")
    fa = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    fb = None
    try:
        os.write(fa, b'{"v": "a"}')
        assert read(path) == b'{"v": "a"}'
        fb = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.write(fb, b'{"v": "b"}')
    finally:
        os.close(fa)
        if fb is not None:
            raises(errno.EEXIST, os.close, fb)
    assert user_props(wh.get(T, "p", "n")) == {"v": "a"}
    assert assert_consistent(path)["v"] == "a"


def test_partition_with_an_unsaved_new_file_is_not_empty(sdk, seed, mounter, wh):
    T = "lvUnsavedRmdir"
    mnt, t, _ = seed_only(sdk, seed, mounter, T)
    os.mkdir(p(mnt, T, "q"))
    fd = os.open(p(mnt, T, "q", "n.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, b'{"v": 1}')
        raises(errno.ENOTEMPTY, os.rmdir, p(mnt, T, "q"))
        assert os.listdir(p(mnt, T, "q")) == ["n.json"]
    finally:
        os.close(fd)
    assert user_props(wh.get(T, "q", "n")) == {"v": 1}
    assert sorted(os.listdir(p(mnt, T))) == ["p", "q"]


def test_unsaved_empty_new_file_renamed_is_saved_at_close(sdk, seed, mounter, wh):
    """touch-like: a new file closed without a write becomes an entity
    without properties, under the name it has at its close."""
    T = "lvUnsavedEmpty"
    mnt, t, d = seed_only(sdk, seed, mounter, T)
    fd = os.open(os.path.join(d, "x.json"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.rename(os.path.join(d, "x.json"), os.path.join(d, "y.json"))
    assert sorted(os.listdir(d)) == ["seed.json", "y.json"]
    os.close(fd)
    # inserted at release, which Linux sends just after close returns
    deadline = time.monotonic() + 10
    while rows(t) != [("p", "seed"), ("p", "y")] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rows(t) == [("p", "seed"), ("p", "y")]
    assert user_props(wh.get(T, "p", "y")) == {}
    assert sorted(os.listdir(d)) == ["seed.json", "y.json"]


def test_unsaved_new_file_removed_while_open_is_never_sent(sdk, seed, mounter, wh):
    """rm of a new file not yet saved: as on a local disk, the handle keeps
    its copy and what it wrote goes with the removed file."""
    T = "lvUnsavedRm"
    mnt, t, d = seed_only(sdk, seed, mounter, T)
    mark = wh.mark(mnt)
    fd = os.open(os.path.join(d, "r.json"), os.O_RDWR | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, b'{"v": 1}')
        os.unlink(os.path.join(d, "r.json"))
        assert os.listdir(d) == ["seed.json"]
        assert not os.path.exists(os.path.join(d, "r.json"))
        os.write(fd, b" ")
        assert os.pread(fd, 100, 0) == b'{"v": 1} '
    finally:
        os.close(fd)
    assert rows(t) == [("p", "seed")]
    assert [w for w in wh.writes(mnt, mark) if "/%s" % T in w[1]] == []
    assert os.listdir(d) == ["seed.json"]
    assert "removed while open" in mnt.stderr()[mark:]

