"""Regression tests of what the reference-model test found (issue 13) that are
about how tools use the mount rather than its own view: rsync's quick check
and sub-second mtimes (item 2), and what `rm` guards against (item 8).
Items 1 and 3-7: test_unlinked_open.py and test_local_view.py."""

import errno
import json
import os
import subprocess
import time

import pytest

T = "mdlItems"


def run(args):
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (args, r.stderr)
    return r


@pytest.fixture
def table(sdk):
    try:
        sdk.delete_table(T)
    except Exception:
        pass
    return sdk.create_table(T)


def test_rsync_modify_window_copies_same_size_same_second(table, mounter):
    """Two entities of the same size written within one second: rsync's
    default quick check (size, whole seconds) calls them equal and copies
    nothing; --modify-window=-1 compares nanoseconds and copies. The mount
    reports the Timestamp with sub-second precision."""
    table.create_entity({"PartitionKey": "p", "RowKey": "a", "v": "aaaa"})
    time.sleep(0.05)
    table.create_entity({"PartitionKey": "p", "RowKey": "b", "v": "bbbb"})
    m = mounter.mount()
    a, b = os.path.join(m, T, "p", "a.json"), os.path.join(m, T, "p", "b.json")
    sa, sb = os.stat(a), os.stat(b)
    assert sa.st_size == sb.st_size
    assert sa.st_mtime_ns != sb.st_mtime_ns and sa.st_mtime_ns % 10 ** 9 != 0
    run(["rsync", "-a", "--modify-window=-1", a, b])
    assert table.get_entity("p", "b")["v"] == "aaaa"


def test_incremental_backup_catches_two_changes_within_a_second(table, mounter, tmp_path):
    """An entity changed twice within one second with the same size: an
    incremental `rsync -a --modify-window=-1` backup taken between the two
    changes still copies the second."""
    table.create_entity({"PartitionKey": "p", "RowKey": "c", "v": "v1"})
    m = mounter.mount(options=["-o", "cache_timeout=0"])
    backup = tmp_path / "backup"
    src = os.path.join(m, T) + "/"
    table.update_entity({"PartitionKey": "p", "RowKey": "c", "v": "v2"}, mode="replace")
    run(["rsync", "-a", "--modify-window=-1", src, str(backup)])
    assert json.loads((backup / "p" / "c.json").read_text())["v"] == "v2"
    time.sleep(0.05)
    table.update_entity({"PartitionKey": "p", "RowKey": "c", "v": "v3"}, mode="replace")
    run(["rsync", "-a", "--modify-window=-1", src, str(backup)])
    assert json.loads((backup / "p" / "c.json").read_text())["v"] == "v3"


def test_rm_is_guarded_by_what_the_mount_last_read(table, mounter):
    """rm deletes the entity as this mount last read it: with the cache, a
    change made elsewhere since the cached read makes rm fail with ESTALE
    and the other change stays."""
    table.create_entity({"PartitionKey": "p", "RowKey": "d", "v": 1})
    m = mounter.mount()
    path = os.path.join(m, T, "p", "d.json")
    os.stat(path)                                   # read and cached
    table.update_entity({"PartitionKey": "p", "RowKey": "d", "v": 2}, mode="replace")
    with pytest.raises(OSError) as ei:
        os.unlink(path)
    assert ei.value.errno == errno.ESTALE
    assert table.get_entity("p", "d")["v"] == 2


def test_rm_with_cache_timeout_0_deletes_what_it_finds(table, mounter):
    """With -o cache_timeout=0 the mount keeps nothing between operations: rm
    looks the entity up itself, just before the delete, and deletes what it
    finds (the guard covers only the moment between that lookup and the
    delete), as rm on a local disk removes whatever the name holds."""
    table.create_entity({"PartitionKey": "p", "RowKey": "e", "v": 1})
    m = mounter.mount(options=["-o", "cache_timeout=0"])
    path = os.path.join(m, T, "p", "e.json")
    os.stat(path)
    table.update_entity({"PartitionKey": "p", "RowKey": "e", "v": 2}, mode="replace")
    os.unlink(path)
    assert [e["RowKey"] for e in table.list_entities()] == []
