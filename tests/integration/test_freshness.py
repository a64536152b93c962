"""Freshness of what stat shows (doc/USAGE.md, "Freshness"; aztfs(1),
attr_timeout): the kernel answers stat itself for attr_timeout seconds; a
change made through the mount drops its copy at once; a change made
elsewhere shows after cache_timeout + attr_timeout at most, and at once in
a listing taken after cache_timeout."""

import json
import os
import time


def _path(mnt, *parts):
    return os.path.join(str(mnt), *parts)


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _sdk_grow(table_client, rk):
    """Replace entity p/RK with a larger one (through the SDK, not the mount)."""
    table_client.update_entity({"PartitionKey": "p", "RowKey": rk, "v": "x" * 500},
                               mode="replace")


def test_change_elsewhere_reaches_stat_after_both_lifetimes(sdk, seed, mounter):
    T = "frStat"
    t = seed.table(sdk, T)
    t.create_entity({"PartitionKey": "p", "RowKey": "a", "v": 1})
    mnt = mounter.mount(options=("-o", "cache_timeout=1,attr_timeout=1"))
    f = _path(mnt, T, "p", "a.json")
    before = os.stat(f).st_size
    assert before == len(_read(f))
    _sdk_grow(t, "a")
    time.sleep(2.3)       # cache_timeout + attr_timeout, and some slack
    after = os.stat(f).st_size
    data = _read(f)
    assert after == len(data) > before
    assert json.loads(data)["v"] == "x" * 500


def test_kernel_keeps_stat_for_attr_timeout_and_a_listing_refreshes_it(sdk, seed, mounter):
    """With attr_timeout=60 the kernel does not ask again for a minute: fstat
    of an open file (no path walk, so no new lookup) keeps the old size after
    our cache expired, until a listing (readdirplus) brings the new one. A
    read is never stale: it always reaches the daemon."""
    T = "frAttr"
    t = seed.table(sdk, T)
    t.create_entity({"PartitionKey": "p", "RowKey": "a", "v": 1})
    mnt = mounter.mount(options=("-o", "cache_timeout=1,attr_timeout=60"))
    f = _path(mnt, T, "p", "a.json")
    fd = os.open(f, os.O_RDONLY)
    try:
        before = os.fstat(fd).st_size
        _sdk_grow(t, "a")
        time.sleep(1.3)
        assert os.fstat(fd).st_size == before      # the kernel's copy
        assert os.listdir(_path(mnt, T, "p")) == ["a.json"]
        listed = os.fstat(fd).st_size                # refreshed by readdirplus
        data = _read(f)                              # direct: the new entity
        assert json.loads(data)["v"] == "x" * 500
        assert listed == len(data) > before
    finally:
        os.close(fd)


def test_save_through_mount_drops_kernel_copy_at_once(sdk, seed, mounter):
    """A save is rendered canonically (keys, Timestamp, sorted properties):
    its size is not what was written, and stat says so at once even with a
    long attr_timeout."""
    T = "frSave"
    t = seed.table(sdk, T)
    t.create_entity({"PartitionKey": "p", "RowKey": "a", "v": 1})
    mnt = mounter.mount(options=("-o", "cache_timeout=60,attr_timeout=60"))
    f = _path(mnt, T, "p", "a.json")
    os.stat(f)
    written = b'{"v":   2,    "w": "yy"}'
    with open(f, "wb") as fh:
        fh.write(written)
    data = _read(f)
    assert json.loads(data)["w"] == "yy"
    assert os.stat(f).st_size == len(data) != len(written)
    # rename within the partition: the target shows its own rendering
    g = _path(mnt, T, "p", "bb.json")
    os.rename(f, g)
    data = _read(g)
    assert json.loads(data)["RowKey"] == "bb"
    assert os.stat(g).st_size == len(data)
