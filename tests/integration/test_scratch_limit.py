"""Scratch files (names not ending in .json inside a partition) live in the
daemon's memory: -o scratch_size=MiB bounds them all together (default 64).
A write or truncate past the bound fails with ENOSPC and one log line, the
files already there stay intact, removing one (or renaming it onto an
entity) frees its room, and the daemon stays up."""

import errno
import json
import os
import re
import threading

import pytest

from conftest import aztfs_env

TABLE = "scratchLim"
KIB = 1024
MIB = 1024 * 1024
FULL = re.compile(r"aztfs: error: write /%s/p/(\S+) failed: ENOSPC: no room for scratch files: "
                  r"they hold (\d+) KiB of the (\d+) KiB -o scratch_size allows" % TABLE)


@pytest.fixture(scope="module")
def table(sdk, seed):
    t = seed.table(sdk, TABLE)
    t.upsert_entity({"PartitionKey": "p", "RowKey": "r", "v": "x"})
    return t


def write_file(path, data, chunk=64 * KIB):
    """Create PATH and write DATA in CHUNK-sized os.write calls. Returns None,
    or the errno of the first failing call."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for i in range(0, len(data), chunk):
            os.write(fd, data[i:i + chunk])
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)
    return None


def content(i, size):
    """SIZE bytes that differ from file to file."""
    line = ("file %04d " % i).encode()
    return (line * (size // len(line) + 1))[:size]


def test_write_past_the_bound_fails_with_enospc(table, mounter):
    mnt = mounter.mount(options=["-o", "scratch_size=1"])
    part = mnt.join(TABLE, "p")
    files = [os.path.join(part, ".f%d.tmp" % i) for i in range(5)]
    for i, f in enumerate(files[:4]):                 # 4 x 256 KiB: exactly 1 MiB
        assert write_file(f, content(i, 256 * KIB)) is None, f
    assert write_file(files[4], content(4, 256 * KIB)) == errno.ENOSPC
    assert os.path.getsize(files[4]) == 0             # nothing of it was kept
    for i, f in enumerate(files[:4]):
        with open(f, "rb") as fh:
            assert fh.read() == content(i, 256 * KIB), f
    m = FULL.search(mnt.stderr())
    assert m and m.group(1) == ".f4.tmp" and m.group(3) == "1024", mnt.stderr()

    # truncate (growing a file) is bounded too
    with pytest.raises(OSError) as ei:
        os.truncate(files[0], 512 * KIB)
    assert ei.value.errno == errno.ENOSPC
    assert re.search(r"error: truncate /%s/p/\.f0\.tmp failed: ENOSPC: no room" % TABLE, mnt.stderr())
    assert os.path.getsize(files[0]) == 256 * KIB

    # removing a file frees its room
    os.unlink(files[1])
    assert write_file(files[4], content(4, 256 * KIB)) is None
    with open(files[4], "rb") as fh:
        assert fh.read() == content(4, 256 * KIB)

    # shrinking a file frees the rest of it
    os.truncate(files[2], 0)
    assert write_file(files[1], content(1, 256 * KIB)) is None

    # renaming one onto an entity (what rsync and sed -i do) frees it too
    entity = {"v": "y" * 30000, "w": "z" * 30000}
    text = json.dumps(entity).encode()
    assert write_file(files[2], text + b" " * (256 * KIB - len(text))) == errno.ENOSPC
    os.unlink(files[3])
    assert write_file(files[2], text + b" " * (256 * KIB - len(text))) is None
    os.rename(files[2], os.path.join(part, "big.json"))
    assert table.get_entity("p", "big")["w"] == entity["w"]
    assert write_file(files[3], content(3, 256 * KIB)) is None

    assert mnt.proc.poll() is None and os.path.ismount(str(mnt))
    assert sorted(os.listdir(part)) == [".f0.tmp", ".f1.tmp", ".f3.tmp", ".f4.tmp",
                                        "big.json", "r.json"]


def test_bound_holds_under_concurrent_writers(table, mounter):
    mnt = mounter.mount(options=["-o", "scratch_size=2"])
    part = mnt.join(TABLE, "p")
    paths = [os.path.join(part, "par%d~" % i) for i in range(8)]
    results = [None] * len(paths)

    def writer(i):
        results[i] = write_file(paths[i], content(i, MIB), chunk=32 * KIB)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(len(paths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert set(results) <= {None, errno.ENOSPC}, results
    assert results.count(None) <= 2 and errno.ENOSPC in results, results
    sizes = [os.path.getsize(p) for p in paths]
    assert sum(sizes) <= 2 * MIB, sizes
    for i, p in enumerate(paths):
        with open(p, "rb") as fh:
            assert fh.read() == content(i, MIB)[:sizes[i]], p
    # every byte is given back: with all files gone, the whole bound is free
    for p in paths:
        os.unlink(p)
    assert write_file(os.path.join(part, "whole~"), content(9, 2 * MIB)) is None
    assert write_file(os.path.join(part, "more~"), b"x") == errno.ENOSPC


def test_default_bound_keeps_the_daemon_small(table, mounter):
    """The reported case: 40 scratch files of 8 MiB each took the daemon to
    342 MB. With the default bound (64 MiB) 8 fit and the rest fail with
    ENOSPC (memory itself is measured by bench/, not by a timed test: an
    ASan build's RSS says nothing about the daemon's)."""
    mnt = mounter.mount()
    part = mnt.join(TABLE, "p")
    data = content(0, 8 * MIB)
    results = [write_file(os.path.join(part, "big%02d.tmp" % i), data, chunk=MIB)
               for i in range(40)]
    assert results.count(None) == 8 and results[8:] == [errno.ENOSPC] * 32, results
    with open(os.path.join(part, "big07.tmp"), "rb") as fh:
        assert fh.read() == data
    for i in range(40):
        os.unlink(os.path.join(part, "big%02d.tmp" % i))
    assert write_file(os.path.join(part, "again.tmp"), data) is None


def test_one_file_is_capped_at_8_mib(table, mounter):
    """The per-file cap comes before the total: EFBIG, not ENOSPC."""
    mnt = mounter.mount(options=["-o", "scratch_size=16"])
    f = mnt.join(TABLE, "p", "huge~")
    assert write_file(f, content(0, 8 * MIB)) is None
    assert write_file(f, content(0, 8 * MIB + 1), chunk=MIB) == errno.EFBIG
    with pytest.raises(OSError) as ei:
        os.truncate(f, 8 * MIB + 1)
    assert ei.value.errno == errno.EFBIG


def test_zero_allows_only_empty_scratch_files(table, mounter):
    mnt = mounter.mount(options=["-o", "scratch_size=0"])
    f = mnt.join(TABLE, "p", "empty~")
    open(f, "w").close()
    assert os.path.getsize(f) == 0
    assert write_file(f, b"x") == errno.ENOSPC


@pytest.mark.parametrize("value", ["-1", "1048577", "lots"])
def test_bad_scratch_size_refused(value, azurite, tmp_path, aztfs_run):
    mp = tmp_path / "mp"
    mp.mkdir()
    res = aztfs_run(["-f", "-o", "scratch_size=" + value, mp], aztfs_env(azurite.conn_str))
    assert res.returncode == 1, res
    assert re.search(r"scratch_size", res.stderr), res
    assert not os.path.ismount(str(mp))
