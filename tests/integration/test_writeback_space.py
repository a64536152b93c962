"""The journal's disk (issue 29, item 8): a small journal_dir holds a
restore of any size (the queue is bounded by the room the journal has, the
journal is compacted as it goes, and its space is grown by what the disk
can spare), a full disk makes writers wait while queued changes are sent,
never fails an acknowledged change, and an ENOSPC with nothing to send
heals once space is back. Each journal_dir is a tmpfs of its own size
(the tests run as root, as FUSE mounts here do)."""

import errno
import json
import os
import subprocess

import pytest

from test_writeback import entities, pending, put, sync_all


@pytest.fixture
def small_disk(tmp_path):
    """SMALL_DISK(MIB): a tmpfs of that size (mode 0700); unmounted after."""
    made = []

    def make(mib):
        d = tmp_path / ("disk%d" % len(made))
        d.mkdir(mode=0o700)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm,mode=0700" % mib, "tmpfs",
                        str(d)], check=True)
        made.append(d)
        return d
    yield make
    for d in made:
        subprocess.run(["umount", "-l", str(d)], check=False)


def journal_opts(disk, extra="writeback"):
    return ["-o", "%s,journal_dir=%s" % (extra, disk / "journal")]


def test_a_10_mib_journal_dir_holds_a_restore_of_24_mib(sdk, seed, mounter, small_disk):
    """1,000 entities of 24 KB through a 10 MiB journal_dir: every one
    reaches the service, none is reported failed (33 to 146 acknowledged
    ones used to be lost as 'the journal cannot be written')."""
    t = seed.table(sdk, "wbSpace")
    disk = small_disk(10)
    mnt = mounter.mount(options=journal_opts(disk))
    assert "the queue is bounded at" in mnt.stderr()
    pad = "x" * 24000
    for p in range(10):
        pdir = os.path.join(str(mnt), "wbSpace", "p%d" % p)
        os.mkdir(pdir)
        for i in range(100):
            put(os.path.join(pdir, "r%03d.json" % i), {"v": i, "pad": pad})
    sync_all(mnt)
    p = pending(mnt)
    assert p["failed"] == 0 and p["queued"] == 0, p
    assert len(list(t.list_entities(select=["RowKey"]))) == 1000
    assert "cannot be written" not in mnt.stderr()
    mnt.unmount()


def test_a_1_mib_journal_dir_takes_small_writes(sdk, seed, mounter, small_disk):
    """The journal is not grown by 4 MiB of zeros on a small disk (the first
    write used to fail on 1 MiB)."""
    t = seed.table(sdk, "wbTiny")
    mnt = mounter.mount(options=journal_opts(small_disk(1), "writeback=60000"))
    pdir = os.path.join(str(mnt), "wbTiny", "p")
    os.mkdir(pdir)
    for i in range(200):
        put(os.path.join(pdir, "r%03d.json" % i), {"v": i})
    sync_all(mnt)
    assert len(entities(t)) == 200
    mnt.unmount()


def test_enospc_with_nothing_queued_fails_the_write_and_heals(sdk, seed, mounter,
                                                              small_disk):
    """A full disk with nothing queued: the save fails with ENOSPC (not
    acknowledged), and once space is back the next save works (every later
    write used to fail with EIO until remount)."""
    t = seed.table(sdk, "wbFullDisk")
    disk = small_disk(2)
    mnt = mounter.mount(options=journal_opts(disk, "writeback=60000"))
    pdir = os.path.join(str(mnt), "wbFullDisk", "p")
    os.mkdir(pdir)
    put(os.path.join(pdir, "a.json"), {"v": 1})
    sync_all(mnt)
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    for size in (65536, 4096, 1):               # fill the disk to the last byte
        try:
            while True:
                os.write(fd, b"\1" * size)
        except OSError as e:
            assert e.errno == errno.ENOSPC
    os.close(fd)
    big = {"pad%d" % i: "y" * 30000 for i in range(10)}     # more than the disk has
    with pytest.raises(OSError) as ei:
        put(os.path.join(pdir, "b.json"), big)
    assert ei.value.errno == errno.ENOSPC
    assert "the journal's disk is full" in mnt.stderr()
    os.unlink(filler)
    put(os.path.join(pdir, "c.json"), {"v": 3})
    sync_all(mnt)
    assert entities(t) == {"a": 1, "c": 3}
    assert pending(mnt)["failed"] == 0
    mnt.unmount()
