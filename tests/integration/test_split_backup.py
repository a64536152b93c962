"""A table backed up in key ranges, one per machine (doc/OPERATIONS.md,
"Backing up a table from several machines"): four PartitionKey range views
cover the table exactly. Every entity lands in one range's copy, none in two,
the keys on and around the cut points included; each copy holds what the
official SDK's query of its filter returns; and the four copies put together
are the same tree as a backup of the whole table."""

import os
import subprocess

import pytest

from aztfs_names import encode

# Also against the Cosmos DB for Table model (issue 42; conftest.py backend).
pytestmark = pytest.mark.backends

T = "splitT"
CUTS = ["g", "n", "t"]
# Keys on each cut, just under and just over it, and at both ends of the
# order (the empty key first; upper case before lower case; a key past
# ASCII last); '%' spelled %25 in names.
PARTS = ["", "0", "Zebra", "a b", "f", "f~", "fzzz", "g", "g ", "g0",
         "m", "m~", "n", "n%", "s", "szzz", "t", "t0", "zz", "~", "\u00e9t\u00e9"]
ROWS = ["", "r1", "r~"]


def ranges(cuts):
    """The filters of the ranges CUTS split the key space into: below the
    first cut, between each two, from the last one on."""
    out = ["PartitionKey lt '%s'" % cuts[0]]
    out += ["PartitionKey ge '%s' and PartitionKey lt '%s'" % (a, b)
            for a, b in zip(cuts, cuts[1:])]
    out.append("PartitionKey ge '%s'" % cuts[-1])
    return out


@pytest.fixture(scope="module")
def table(sdk, seed):
    t = seed.table(sdk, T)
    seed.insert(t, [{"PartitionKey": pk, "RowKey": rk, "v": "%s|%s" % (pk, rk)}
                    for pk in PARTS for rk in ROWS])
    return t


def files_under(root):
    out = []
    for d, _, fs in os.walk(root):
        out += [os.path.relpath(os.path.join(d, f), root) for f in fs]
    return sorted(out)


def name_of(pk, rk):
    return os.path.join(encode(pk), encode(rk) + ".json")


def test_four_range_views_cover_the_table_exactly(table, mounter, sh, tmp_path):
    mnt = mounter.mount()
    everything = sorted(name_of(pk, rk) for pk in PARTS for rk in ROWS)
    copies = []
    for i, flt in enumerate(ranges(CUTS)):
        dest = tmp_path / ("machine%d" % i)
        sh(["rsync", "-a", "--modify-window=-1",
            os.path.join(str(mnt), T, ".where", flt) + "/", str(dest) + "/"])
        got = files_under(dest)
        want = sorted(name_of(e.get("PartitionKey", ""), e.get("RowKey", ""))
                      for e in table.query_entities(flt))  # the SDK leaves an empty key out
        assert got == want, flt
        assert got, "range %r is empty: the test would not show a gap" % flt
        copies.append(got)
    merged = sorted(f for c in copies for f in c)
    assert len(merged) == len(set(merged)), "an entity in two ranges"
    assert merged == everything, "ranges missing: %s" % sorted(set(everything) - set(merged))
    on_cuts = [name_of(pk, "r1") for pk in CUTS]
    assert all(sum(n in c for c in copies) == 1 for n in on_cuts)

    whole = tmp_path / "whole"
    sh(["rsync", "-a", "--modify-window=-1", os.path.join(str(mnt), T) + "/", str(whole) + "/"])
    joined = tmp_path / "joined"
    joined.mkdir()
    for i in range(len(copies)):
        sh(["cp", "-a", "%s/." % (tmp_path / ("machine%d" % i)), str(joined)])
    r = subprocess.run(["diff", "-r", str(whole), str(joined)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-2000:]


def recipe():
    """The indented block after the marker in doc/OPERATIONS.md."""
    doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "doc", "OPERATIONS.md")).read()
    after = doc.split("<!-- tests/integration/test_split_backup.py runs this block", 1)[1]
    lines = after.split("\n")[2:]
    block = []
    for line in lines:
        if line and not line.startswith("    "):
            break
        block.append(line[4:])
    return "\n".join(block).strip()


def test_the_documented_recipe_splits_the_table_exactly(table, mounter, tmp_path):
    """OPERATIONS.md's block, run as written with T set to the test's mount
    and I from 1 to 4: the cut points come from the partition names, and the
    four copies hold every entity once."""
    mnt = mounter.mount()
    script = recipe()
    assert script.startswith("T=/mnt/tables/orders N=4\n"), script
    script = script.replace("T=/mnt/tables/orders", 'T="$MNT/%s"' % T, 1)
    r = subprocess.run(["bash", "-euc", "for I in 1 2 3 4; do\n%s\ndone" % script],
                       cwd=str(tmp_path), env=dict(os.environ, MNT=str(mnt)),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    ranges = (tmp_path / "ranges").read_text().splitlines()
    assert len(ranges) == 4 and all(ranges), ranges
    copies = [files_under(tmp_path / "backup" / ("orders-%d" % i)) for i in range(1, 5)]
    assert all(copies), [len(c) for c in copies]
    merged = sorted(f for c in copies for f in c)
    assert merged == sorted(name_of(pk, rk) for pk in PARTS for rk in ROWS)
