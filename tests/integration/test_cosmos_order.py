"""Listings whatever order the service answers in (issue 42).

Cosmos DB for Table does not sort query results ("Query results returned by
the Table API aren't sorted in partition key/row key order as they are in
Azure Table storage", its FAQ). tests/cosmosmodel.py answers so over
Azurite: each query's entities permuted by a seed, pages of 1,000, opaque
continuation tokens. Through it, with several seeds, the tools a user runs
must see every entity exactly once, checked against the SDK's read of the
table (straight from Azurite): `ls T`, `ls T/b`, `find T`, `cat T/.ndjson`,
an rsync backup of a table of 12 partitions; with `-o unordered` (what the
service profile will say for Cosmos), and without it (the mount then finds
out from the first page out of order, table_client_disorder)."""

import json
import os
import sys
from pathlib import Path

import pytest

from aztfs_names import dir_name, file_name
from conftest import conn_str_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import CosmosModel  # noqa: E402

T3 = "coT3"      # partitions a, b, c of 1,500 entities each
T12 = "coT12"    # 12 partitions of 500 entities
SEEDS = [1, 2, 3]


@pytest.fixture(scope="module")
def tables(sdk):
    from conftest import insert_batched
    for name, parts, per in ((T3, ["a", "b", "c"], 1500),
                             (T12, ["p%02d" % i for i in range(12)], 500)):
        try:
            sdk.delete_table(name)
        except Exception:
            pass
        tc = sdk.create_table(name)
        insert_batched(tc, [{"PartitionKey": pk, "RowKey": "r%05d" % i, "n": i, "s": "x" * 40}
                            for pk in parts for i in range(per)])
    return sdk


def sdk_keys(sdk, table, pk=None):
    """The (PartitionKey, RowKey) pairs of TABLE (of partition PK) as the SDK
    reads them from Azurite."""
    tc = sdk.get_table_client(table)
    ents = (tc.query_entities("PartitionKey eq '%s'" % pk) if pk else tc.list_entities())
    return [(e["PartitionKey"], e["RowKey"]) for e in ents]


def once(names):
    """NAMES, each exactly once: their set (a name seen twice fails)."""
    seen = set(names)
    dup = len(names) - len(seen)
    assert dup == 0, "%d names listed more than once" % dup
    return seen


@pytest.fixture(params=SEEDS)
def model(request, azurite):
    with CosmosModel(azurite.port, seed=request.param) as cm:
        yield cm


@pytest.mark.parametrize("flag", [["-o", "unordered"], []], ids=["unordered", "found-out"])
def test_listings_exact_through_cosmos_model(tables, model, mounter, sh, tmp_path, flag):
    mnt = mounter.mount(conn_str=conn_str_for(model.port), options=flag)
    t3 = os.path.join(str(mnt), T3)
    # a partition listed first, alone (no table scan before it)
    b = sh.ls(os.path.join(t3, "b"))
    assert len(b) == 1500
    assert once(b) == {file_name(rk) for _, rk in sdk_keys(tables, T3, "b")}
    assert sh.ls(t3) == ["a", "b", "c"]
    found = sh(["find", t3, "-type", "f"]).lines()
    assert len(found) == 4500
    assert once(found) == {os.path.join(t3, dir_name(pk), file_name(rk))
                           for pk, rk in sdk_keys(tables, T3)}
    lines = sh(["cat", os.path.join(t3, ".ndjson")]).lines()
    assert len(lines) == 4500
    keys = [(e["PartitionKey"], e["RowKey"]) for e in map(json.loads, lines)]
    assert once(keys) == set(sdk_keys(tables, T3))
    # an rsync backup of a table of 12 partitions: every file once, each
    # file's content the entity's
    dst = tmp_path / "backup"
    sh(["rsync", "-a", os.path.join(str(mnt), T12) + "/", str(dst) + "/"])
    got = [str(p.relative_to(dst)) for p in dst.rglob("*.json")]
    assert len(got) == 6000
    assert once(got) == {os.path.join(dir_name(pk), file_name(rk))
                         for pk, rk in sdk_keys(tables, T12)}
    one = json.loads((dst / "p07" / file_name("r00321")).read_text())
    assert one["n"] == 321


def test_walk_without_cache_through_cosmos_model(tables, model, mounter, sh):
    """cache_timeout=0: the table scan keeps no partition (names only, to
    its end: no skip-ahead), each partition is listed again as the walk
    enters it, and every file is read by a point query."""
    mnt = mounter.mount(conn_str=conn_str_for(model.port),
                        options=["-o", "unordered", "-o", "cache_timeout=0"])
    t12 = os.path.join(str(mnt), T12)
    assert sh.ls(t12) == ["p%02d" % i for i in range(12)]
    found = sh(["find", t12, "-type", "f"]).lines()
    assert len(found) == 6000
    assert once(found) == {os.path.join(t12, dir_name(pk), file_name(rk))
                           for pk, rk in sdk_keys(tables, T12)}
    got = sh("cat %s/p03/r0001*.json | wc -l" % t12).stdout.split()
    assert got and int(got[0]) > 0


@pytest.mark.parametrize("flag", [["-o", "unordered"], []], ids=["unordered", "found-out"])
def test_table_view_through_cosmos_model(tables, model, mounter, sh, flag):
    """A table-level query view: its partitions gathered (each named once,
    each listing cached only at the query's end); a mount not told finds
    out from the first partition out of order and lists the view again."""
    mnt = mounter.mount(conn_str=conn_str_for(model.port), options=flag)
    view = os.path.join(str(mnt), T3, ".where", "n lt 100")
    assert sh.ls(view) == ["a", "b", "c"]
    assert len(once(sh.ls(os.path.join(view, "b")))) == 100
    found = sh(["find", view, "-type", "f"]).lines()
    assert len(found) == 300
    assert once(found) == {os.path.join(view, pk, "r%05d.json" % i)
                           for pk in "abc" for i in range(100)}
