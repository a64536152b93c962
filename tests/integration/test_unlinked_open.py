"""Open files whose name is removed (issue 12, item 2; issue 13, item 1).

With hard_remove, libfuse hands a NULL path to operations on an open file
whose name was removed (rm, or a rename onto it). aztfs answers them from the
open file itself, as a local disk would: the handle keeps working on its own
copy, and what is written through it goes with the removed file (nothing is
sent, nothing is recreated). A removed scratch file's bytes went with its
name: data operations on it are ESTALE. fstat and fgetxattr ask by inode,
which libfuse's path API cannot name once removed: ESTALE. The mount keeps
serving throughout."""

import errno
import json
import os

import pytest

T = "unlinkOpen"


@pytest.fixture
def mnt(sdk, mounter):
    try:
        sdk.delete_table(T)
    except Exception:
        pass
    t = sdk.create_table(T)
    for rk in ("f", "g", "other"):
        t.create_entity({"PartitionKey": "p", "RowKey": rk, "v": rk})
    m = mounter.mount()
    yield m, t
    # the daemon is alive and serving
    assert sorted(os.listdir(os.path.join(m, T, "p")))[:1] != []
    assert json.load(open(os.path.join(m, T, "p", "other.json")))["v"] == "other"


def rows(t):
    return sorted(e["RowKey"] for e in t.list_entities())


def test_ops_on_an_unlinked_open_entity(mnt):
    m, t = mnt
    path = os.path.join(m, T, "p", "f.json")
    fd = os.open(path, os.O_RDWR)
    try:
        os.unlink(path)
        assert rows(t) == ["g", "other"]
        os.ftruncate(fd, 0)
        assert os.write(fd, b'{"v": "late"}') == 13
        os.fsync(fd)
        # fstat, fchmod, futimens and fgetxattr ask by inode (the kernel
        # sends no file handle with them), which libfuse cannot name once
        # removed: ESTALE, from libfuse itself
        for call in (lambda: os.fstat(fd), lambda: os.fchmod(fd, 0o600),
                     lambda: os.utime(fd, (1, 2)),
                     lambda: os.getxattr(fd, "user.anything")):
            with pytest.raises(OSError) as ei:
                call()
            assert ei.value.errno == errno.ESTALE
        os.lseek(fd, 0, os.SEEK_SET)
        assert os.read(fd, 100) == b'{"v": "late"}'
    finally:
        os.close(fd)
    assert rows(t) == ["g", "other"]          # not recreated
    assert not os.path.exists(path)
    assert "removed while open" in m.stderr()


def test_write_and_close_after_unlink(mnt):
    m, t = mnt
    path = os.path.join(m, T, "p", "f.json")
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.unlink(path)
    os.write(fd, b'{"v": 2}')
    os.close(fd)
    assert rows(t) == ["g", "other"]


def test_rename_onto_a_file_open_for_writing(mnt):
    """open(f, O_TRUNC); rename(g, f); write; close: the handle wrote into
    the replaced file, which is gone; f holds g (sed -i, rsync and editors
    do this while another process holds f open)."""
    m, t = mnt
    d = os.path.join(m, T, "p")
    fd = os.open(os.path.join(d, "f.json"), os.O_WRONLY | os.O_TRUNC)
    os.rename(os.path.join(d, "g.json"), os.path.join(d, "f.json"))
    os.write(fd, b'{"v": 2}')
    os.close(fd)
    assert rows(t) == ["f", "other"]
    assert t.get_entity("p", "f")["v"] == "g"


def test_scratch_file_rename_onto_a_file_open_for_writing(mnt):
    m, t = mnt
    d = os.path.join(m, T, "p")
    fd = os.open(os.path.join(d, "f.json"), os.O_WRONLY | os.O_TRUNC)
    with open(os.path.join(d, "f.json.tmp"), "w") as fh:
        fh.write('{"v": "from scratch"}')
    os.rename(os.path.join(d, "f.json.tmp"), os.path.join(d, "f.json"))
    os.write(fd, b'{"v": 2}')
    os.close(fd)
    assert t.get_entity("p", "f")["v"] == "from scratch"


def test_unlinked_scratch_file(mnt):
    m, t = mnt
    path = os.path.join(m, T, "p", "notes.txt")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"hello")
        os.unlink(path)
        with pytest.raises(OSError) as ei:
            os.write(fd, b"more")
        assert ei.value.errno == errno.ESTALE
        with pytest.raises(OSError) as ei:
            os.ftruncate(fd, 0)
        assert ei.value.errno == errno.ESTALE
        os.fsync(fd)
    finally:
        os.close(fd)
    assert not os.path.exists(path)
