"""Changes through long-form names (doc/NAMES.md, "Long keys"), checked
through the official SDK:

* mv across partitions or tables (doc/USAGE.md, "Writing"): rename answers
  EXDEV and mv copies (it removes the target, creates it, copies the text,
  removes the source). A long-form target name whose key the copy cannot
  find is refused with ENOTSUP before mv removes anything; every
  combination of source and target name, target there or not, same or
  other table.
* a save through a handle opened before the entity was deleted elsewhere is
  ENOENT, with and without the cache (doc/USAGE.md, "Changes made
  elsewhere")."""

import errno
import itertools
import os
import subprocess

import pytest
from azure.core.exceptions import ResourceNotFoundError

from aztfs_names import dir_name, file_name

T, T2 = "lfMoves", "lfMovesOther"
LP, LR = "P" * 300, "R" * 300          # long-form keys (names over 250 bytes)

# Source names: (PartitionKey, RowKey) prefixes; the case number makes each unique.
SOURCES = {"short": ("sp", "s"), "long_rk": ("sp", LR + "src"), "long_pk": (LP + "src", "s")}
# Target names. "long_pk_kept": the target's partition holds another entity,
# so its key is found by listing after mv removed the target. "same_long_rk" /
# "same_long_pk": the long key the source has, in another partition / table.
TARGETS = ["short", "long_rk", "long_pk", "long_pk_kept", "same_long_rk", "same_long_pk"]


def cases():
    out = []
    for n, (src, dst, exists, table) in enumerate(itertools.product(
            SOURCES, TARGETS, (False, True), (T, T2))):
        if dst == "same_long_rk" and src != "long_rk":
            continue
        if dst == "same_long_pk" and (src != "long_pk" or table == T):
            continue
        spk, srk = SOURCES[src][0] + "%02d" % n, SOURCES[src][1]
        if dst == "same_long_rk":
            dpk, drk = "dp%02d" % n, srk
        elif dst == "same_long_pk":
            dpk, drk = spk, "d"
        else:
            dpk = (LP + "dst" if dst.startswith("long_pk") else "dp") + "%02d" % n
            drk = LR + "dst" if dst == "long_rk" else "d"
        # what the copy needs: a long-form RowKey that is not the source's is
        # only in the copied text (the source's); so is a long-form
        # PartitionKey that is not the source's, unless the partition still
        # holds an entity to list once the target is removed
        kept = not exists or dst == "long_pk_kept"
        refused = (drk != srk and len(drk) > 250) or (dpk != spk and len(dpk) > 250 and not kept)
        out.append(pytest.param(n, spk, srk, table, dpk, drk, exists, dst == "long_pk_kept",
                                refused, id="%s-to-%s-%s-%s" % (
                                    src, dst, "existing" if exists else "new",
                                    "same-table" if table == T else "other-table")))
    return out


CASES = cases()


@pytest.fixture(scope="module")
def moves(sdk, seed, module_mounter):
    """Every case's entities, seeded before the mount (which then finds the
    long-form names by listing), and the mount."""
    tables = {T: seed.table(sdk, T), T2: seed.table(sdk, T2)}
    for c in CASES:
        n, spk, srk, table, dpk, drk, exists, kept, _ = c.values
        tables[T].create_entity({"PartitionKey": spk, "RowKey": srk, "v": "src%d" % n})
        # a new target's partition exists: it holds another entity
        tables[table].create_entity({"PartitionKey": dpk, "RowKey": drk if exists else "other",
                                     "v": "dst%d" % n})
        if kept:
            tables[table].create_entity({"PartitionKey": dpk, "RowKey": "kept", "v": 0})
    return tables, module_mounter.mount()


def value(table, pk, rk):
    try:
        return table.get_entity(pk, rk)["v"]
    except ResourceNotFoundError:
        return None


@pytest.mark.parametrize("n,spk,srk,table,dpk,drk,exists,kept,refused", CASES)
def test_mv_across_partitions(moves, n, spk, srk, table, dpk, drk, exists, kept, refused):
    tables, mnt = moves
    src = os.path.join(str(mnt), T, dir_name(spk), file_name(srk))
    dst = os.path.join(str(mnt), table, dir_name(dpk), file_name(drk))
    r = subprocess.run(["mv", src, dst], capture_output=True, text=True, timeout=60)
    if refused:
        # refused by rename itself: nothing removed, nothing written
        assert value(tables[T], spk, srk) == "src%d" % n
        assert value(tables[table], dpk, drk) == ("dst%d" % n if exists else None)
        assert r.returncode != 0 and "Operation not supported" in r.stderr, r
        assert os.path.exists(src) and os.path.exists(dst) == exists
        to = dst[len(str(mnt)):]
        log = [l for l in mnt.stderr().splitlines() if "not moved (ENOTSUP)" in l and to in l]
        assert len(log) == 1, log
    else:
        assert r.returncode == 0, r
        assert value(tables[T], spk, srk) is None
        assert value(tables[table], dpk, drk) == "src%d" % n
        assert not os.path.exists(src) and os.path.exists(dst)


def test_cp_and_rm_onto_an_existing_long_form_name(sdk, seed, mounter):
    """The way the refusal's log line points to: cp over an existing
    long-form target keeps the target's keys; then rm the source."""
    t = seed.table(sdk, "lfCopy")
    t.create_entity({"PartitionKey": "a", "RowKey": "s", "v": "src"})
    t.create_entity({"PartitionKey": "b", "RowKey": LR, "v": "dst"})
    mnt = mounter.mount()
    src = os.path.join(str(mnt), "lfCopy", "a", "s.json")
    dst = os.path.join(str(mnt), "lfCopy", "b", file_name(LR))
    r = subprocess.run(["mv", src, dst], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "Operation not supported" in r.stderr, r
    subprocess.run(["cp", src, dst], check=True, timeout=60)
    os.unlink(src)
    assert t.get_entity("b", LR)["v"] == "src"
    assert [e["RowKey"] for e in t.list_entities()] == [LR]


@pytest.mark.parametrize("cache_timeout", ["0", "2"])
@pytest.mark.parametrize("pk,rk", [("p", LR), (LP, "r")], ids=["long_rk", "long_pk"])
def test_save_over_a_long_form_entity_deleted_elsewhere(sdk, seed, mounter, cache_timeout,
                                                       pk, rk):
    """A file opened for writing, its entity deleted with the SDK, then saved
    with text that carries no keys (`echo ... > NAME`): ENOENT and the
    "deleted by someone else" log line, whether the mount's listing still
    names the entity (cache_timeout=2) or is asked again (0); nothing is
    created."""
    name = "lfDel" + cache_timeout
    t = seed.table(sdk, name)
    t.create_entity({"PartitionKey": pk, "RowKey": rk, "v": 1})
    mnt = mounter.mount(options=["-o", "cache_timeout=" + cache_timeout])
    path = os.path.join(str(mnt), name, dir_name(pk), file_name(rk))
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.write(fd, b'{"v": 2}')
    t.delete_entity(pk, rk)
    with pytest.raises(OSError) as ei:
        os.close(fd)
    assert ei.value.errno == errno.ENOENT
    assert list(t.list_entities()) == []
    assert not os.path.exists(path)
    log = [l for l in mnt.stderr().splitlines() if "deleted by someone else" in l]
    assert log and all(dir_name(pk)[:50] in l for l in log), mnt.stderr()
