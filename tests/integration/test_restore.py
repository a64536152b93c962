"""Restore and small writes at the protocol minimum (issue 15, synchronous
mode): a name missing from a listing the mount may trust costs no request,
the service's answer to a write goes into the cached listing, and a save of
what the entity already holds sends nothing. Counted by the mount itself
(user.aztfs.stats) and checked through the official SDK."""

import datetime
import json
import os
import subprocess
import time
import uuid

import pytest

from azure.data.tables import EdmType, EntityProperty

from conftest import WriteHelpers

# Also against the Cosmos DB for Table model (issue 42; conftest.py backend).
pytestmark = pytest.mark.backends

SRC = "restSrc"
P, PER = 3, 70                   # partitions, entities per partition
WRITE_KINDS = ("insert", "replace", "merge", "delete", "batch")


def typed_entity(pk, i):
    return {"PartitionKey": pk, "RowKey": "r%04d" % i, "s": "value %d" % i, "i32": i,
            "i64": EntityProperty(2**40 + i, EdmType.INT64), "dbl": i / 4,
            "b": i % 2 == 0, "g": uuid.UUID(int=i),
            "dt": datetime.datetime(2024, 1, 2, 3, 4, i % 60, tzinfo=datetime.timezone.utc),
            "bin": bytes([i % 256, 0, 255])}


def kinds(mnt):
    return json.loads(os.getxattr(str(mnt), "user.aztfs.stats"))["requests_by_kind"]


def delta(before, after):
    return {k: after[k] - before[k] for k in after if after[k] != before[k]}


def writes(d):
    return sum(d.get(k, 0) for k in WRITE_KINDS)


def rsync(src, dst):
    subprocess.run(["rsync", "-a", src.rstrip("/") + "/", dst.rstrip("/") + "/"],
                   check=True, timeout=300, capture_output=True)


def sdk_state(sdk, table):
    return {(e["PartitionKey"], e["RowKey"]): (WriteHelpers.typed(e), e.metadata["etag"])
            for e in sdk.get_table_client(table).list_entities()}


def backup(sdk, seed, mounter, tmp_path):
    t = seed.table(sdk, SRC)
    seed.insert(t, [typed_entity("part%d" % p, i) for p in range(P) for i in range(PER)])
    mnt = mounter.mount()
    dst = str(tmp_path / "backup")
    rsync(os.path.join(str(mnt), SRC), dst)
    mnt.unmount()
    return dst


def test_rsync_restore_into_new_table_sends_one_write_per_entity(sdk, seed, mounter,
                                                                  tmp_path):
    bk = backup(sdk, seed, mounter, tmp_path)
    dst = "restDst"
    seed.table(sdk, dst)
    sdk.delete_table(dst)
    mnt = mounter.mount()
    n = P * PER
    before = kinds(mnt)
    os.mkdir(os.path.join(str(mnt), dst))
    rsync(bk, os.path.join(str(mnt), dst))
    d = delta(before, kinds(mnt))
    # one insert per entity, nothing read back, a handful of others
    assert d.get("insert") == n and d.get("get_entity", 0) == 0, d
    assert sum(d.values()) <= n + P + 5, d
    want = {k: v[0] for k, v in sdk_state(sdk, SRC).items()}
    got = sdk_state(sdk, dst)
    assert {k: v[0] for k, v in got.items()} == want       # types included
    # the same backup again: nothing written; rsync renames every file onto
    # its entity (the mtimes differ), and a copy older than negative_timeout
    # (1 s by default; waited out here, so that a slow run and a fast one
    # take the same path) is read again first: the first open of the table
    # with a point query, then, once a walk is seen, a page at a time
    time.sleep(1.5)
    before = kinds(mnt)
    rsync(bk, os.path.join(str(mnt), dst))
    d = delta(before, kinds(mnt))
    assert writes(d) == 0 and d.get("get_entity", 0) <= 1, d
    assert sum(d.values()) <= 2 * P + 5, d
    mnt.unmount()
    # and from a fresh mount: no write, no entity rewritten, and rsync's
    # lookups in order cost a page each, not a read per file
    mnt = mounter.mount()
    before = kinds(mnt)
    rsync(bk, os.path.join(str(mnt), dst))
    d = delta(before, kinds(mnt))
    assert writes(d) == 0, d
    assert sum(d.values()) <= 2 * P + 5, d
    assert sdk_state(sdk, dst) == got                      # same ETags: untouched


def test_tools_in_a_listed_partition_send_exactly_one_write(sdk, seed, mounter, tmp_path):
    T = "restTools"
    t = seed.table(sdk, T)
    t.create_entity({"PartitionKey": "p", "RowKey": "a", "v": "A"})
    mnt = mounter.mount()
    part = os.path.join(str(mnt), T, "p")
    assert os.listdir(part) == ["a.json"]         # the partition's listing, fresh

    def one(cmd, kind):
        before = kinds(mnt)
        subprocess.run(cmd, shell=True, check=True, cwd=part, timeout=60)
        d = delta(before, kinds(mnt))
        assert d == {kind: 1}, (cmd, d)

    one("echo '{\"v\": \"new\"}' > new.json", "insert")
    one("cp a.json copy.json", "insert")
    one("rm copy.json", "delete")
    one("mv new.json moved.json", "batch")
    one("echo '{\"v\": \"changed\"}' > a.json", "replace")
    assert sorted(os.listdir(part)) == ["a.json", "moved.json"]
    assert WriteHelpers.get(WriteHelpers(sdk), T, "p", "copy") is None
    assert WriteHelpers.get(WriteHelpers(sdk), T, "p", "new") is None
    assert WriteHelpers.get(WriteHelpers(sdk), T, "p", "moved")["v"] == "new"
    assert WriteHelpers.get(WriteHelpers(sdk), T, "p", "a")["v"] == "changed"
    # what the tools asked after their writes (stat, utimens, chmod) was
    # answered from the service's answers: no read at all
    assert kinds(mnt)["get_entity"] == 0


def test_save_of_what_the_entity_holds_sends_nothing_but_a_type_change_does(
        sdk, seed, mounter, tmp_path):
    T = "restSame"
    t = seed.table(sdk, T)
    t.create_entity({"PartitionKey": "p", "RowKey": "a", "n": 5, "s": "x"})
    mnt = mounter.mount()
    f = os.path.join(str(mnt), T, "p", "a.json")
    text = open(f).read()
    etag = WriteHelpers(sdk).etag(T, "p", "a")
    before = kinds(mnt)
    with open(f, "w") as out:
        out.write(text)                                  # the same bytes
    with open(f, "w") as out:
        out.write(json.dumps({"s": "x", "n": 5}))        # other bytes, same entity
    assert writes(delta(before, kinds(mnt))) == 0
    assert WriteHelpers(sdk).etag(T, "p", "a") == etag
    # the same number as an Int64 is another entity: sent
    with open(f, "w") as out:
        out.write(json.dumps({"s": "x", "n": "5", "n@odata.type": "Edm.Int64"}))
    assert delta(before, kinds(mnt)).get("replace") == 1
    e = WriteHelpers(sdk).get(T, "p", "a")
    assert WriteHelpers.typed(e)["n"] == ("Edm.Int64", 5)


def test_restore_slower_than_cache_timeout_still_reads_nothing(sdk, seed, mounter, azurite,
                                                               tmp_path):
    """rsync makes every directory first and fills them one after the
    other, so at a distance the last ones are reached long after they were
    made: their listings have expired by then. A directory the mount made
    is listed once more (one request) instead of asked name by name."""
    from harness import FaultProxy, conn_str_for
    bk = str(tmp_path / "bk")
    parts, per = 3, 40
    for p in range(parts):
        os.makedirs(os.path.join(bk, "p%d" % p))
        for i in range(per):
            with open(os.path.join(bk, "p%d" % p, "r%03d.json" % i), "w") as f:
                json.dump({"v": i}, f)
    dst = "restSlow"
    seed.table(sdk, dst)
    sdk.delete_table(dst)
    with FaultProxy(azurite.port, rate=0.0, delay=0.02) as px:
        mnt = mounter.mount(conn_str=conn_str_for(px.port),
                            options=("-o", "cache_timeout=1,negative_timeout=0.2"))
        before = kinds(mnt)
        t0 = time.monotonic()
        os.mkdir(os.path.join(str(mnt), dst))
        rsync(bk, os.path.join(str(mnt), dst))
        took = time.monotonic() - t0
        d = delta(before, kinds(mnt))
        mnt.unmount()
    assert took > 2, "the restore must outlast cache_timeout for this test to mean anything"
    n = parts * per
    assert d.get("insert") == n and d.get("get_entity", 0) == 0, d
    assert sum(d.values()) <= n + 2 * parts + 5, d
    assert len(WriteHelpers(sdk).entities(dst)) == n


def test_restore_puts_back_an_entity_changed_elsewhere(sdk, seed, mounter, tmp_path):
    """The mount listed the table, then someone changed an entity, then the
    backup is restored more than negative_timeout later: the entity gets
    the backup's content back (the rename that rsync saves with reads the
    entity again), and an entity the backup holds unchanged is not
    rewritten."""
    T = "restBack"
    t = seed.table(sdk, T)
    t.create_entity({"PartitionKey": "p", "RowKey": "a", "v": "orig"})
    t.create_entity({"PartitionKey": "p", "RowKey": "b", "v": "same"})
    mnt = mounter.mount()
    bk = str(tmp_path / "bk")
    rsync(os.path.join(str(mnt), T), bk)
    etag_b = WriteHelpers(sdk).etag(T, "p", "b")
    t.update_entity({"PartitionKey": "p", "RowKey": "a", "v": "changed"}, mode="replace")
    time.sleep(1.3)                               # past negative_timeout
    subprocess.run(["rsync", "-a", "--ignore-times", bk + "/", os.path.join(str(mnt), T) + "/"],
                   check=True, timeout=60, capture_output=True)
    assert WriteHelpers(sdk).get(T, "p", "a")["v"] == "orig"
    assert WriteHelpers(sdk).etag(T, "p", "b") == etag_b
