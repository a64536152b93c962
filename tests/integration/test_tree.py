"""The directory tree: tables, partitions, entity files, and what everyday
tools (ls, cat, wc, stat, du, find, grep) see of them."""

import calendar
import json
import os
import re
import stat as statmod

import pytest

from aztfs_names import dir_name, file_name

# Also against the Cosmos DB for Table model (issue 42; conftest.py backend).
pytestmark = pytest.mark.backends

MAIN = "treeMain"        # a few partitions, a few entities each
EMPTY = "treeEmpty"      # no entities at all
MANY = "treeManyParts"   # many partitions
BIG = "treeBig"          # 2500 entities in one partition (> 2 pages of 1000)
N_SMALL_TABLES = 30      # treeT00 .. treeT29, one entity each
BIG_COUNT = 2500
BIG_NEEDLE = "needle-only-in-the-last-row-7f3a"
MAIN_NEEDLE = "zebra-crossing-91c2"

MAIN_ENTITIES = [
    {"PartitionKey": "p1", "RowKey": "r1", "name": "alpha", "n": 1},
    {"PartitionKey": "p1", "RowKey": "r2", "name": "beta", "n": 2, "flag": True},
    {"PartitionKey": "p1", "RowKey": "r3", "name": "gamma " * 50, "n": 3},
    {"PartitionKey": "p2", "RowKey": "only", "name": MAIN_NEEDLE, "price": 9.5},
    {"PartitionKey": "p3", "RowKey": "a", "name": "a"},
    {"PartitionKey": "p3", "RowKey": "b", "name": "b"},
    {"PartitionKey": "p3", "RowKey": "c", "name": "c", "note": "x" * 3000},
    {"PartitionKey": "p4", "RowKey": "k", "name": "ümlaut and 日本"},
]
MANY_PARTS = 60


def small_table(i):
    return "treeT%02d" % i


def big_rk(i):
    return "r%05d" % i


@pytest.fixture(scope="module")
def tree(sdk, seed, module_mounter):
    """Seed every table, then mount once for the whole module."""
    t = seed.table(sdk, MAIN)
    seed.insert(t, MAIN_ENTITIES)

    seed.table(sdk, EMPTY)

    t = seed.table(sdk, MANY)
    seed.insert(t, [{"PartitionKey": "part%03d" % p, "RowKey": "row%d" % r, "v": p * 10 + r}
                    for p in range(MANY_PARTS) for r in range(2)])

    t = seed.table(sdk, BIG)
    big = [{"PartitionKey": "bulk", "RowKey": big_rk(i), "i": i, "s": "value %d" % i}
           for i in range(BIG_COUNT)]
    big[-1]["s"] = BIG_NEEDLE
    seed.insert(t, big)

    for i in range(N_SMALL_TABLES):
        t = seed.table(sdk, small_table(i))
        t.upsert_entity({"PartitionKey": "pk", "RowKey": "rk", "i": i})

    mnt = module_mounter.mount()
    return mnt


def sdk_entities(sdk, table):
    return list(sdk.get_table_client(table).list_entities())


def path_of(mnt, table, pk, rk):
    return os.path.join(str(mnt), table, dir_name(pk), file_name(rk))


# ---------------------------------------------------------------------------
def test_root_lists_exactly_the_tables(tree, sh, sdk):
    listed = sh.ls(tree)
    expected = sorted(t.name for t in sdk.list_tables())
    assert sorted(listed) == expected
    for name in [MAIN, EMPTY, MANY, BIG] + [small_table(i) for i in range(N_SMALL_TABLES)]:
        assert name in listed
    assert len(listed) == len(set(listed))


def test_thirty_tables_all_listed_and_browsable(tree, sh):
    listed = set(sh.ls(tree))
    for i in range(N_SMALL_TABLES):
        name = small_table(i)
        assert name in listed
        assert sh.ls(os.path.join(str(tree), name)) == ["pk"]
        assert sh.ls(os.path.join(str(tree), name, "pk")) == ["rk.json"]
        with open(path_of(tree, name, "pk", "rk"), "rb") as f:
            assert json.loads(f.read())["i"] == i


def test_table_lists_partitions(tree, sh):
    assert sorted(sh.ls(os.path.join(str(tree), MAIN))) == ["p1", "p2", "p3", "p4"]


def test_partition_lists_entity_files(tree, sh):
    base = os.path.join(str(tree), MAIN)
    assert sorted(sh.ls(os.path.join(base, "p1"))) == ["r1.json", "r2.json", "r3.json"]
    assert sh.ls(os.path.join(base, "p2")) == ["only.json"]
    assert sorted(sh.ls(os.path.join(base, "p3"))) == ["a.json", "b.json", "c.json"]
    # ls -a adds nothing but . and ..
    assert sorted(sh.ls(os.path.join(base, "p3"), "-a")) == [".", "..", "a.json", "b.json", "c.json"]


def test_file_content_matches_sdk(tree, sdk):
    for e in sdk_entities(sdk, MAIN):
        with open(path_of(tree, MAIN, e["PartitionKey"], e["RowKey"]), "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
        assert doc["PartitionKey"] == e["PartitionKey"]
        assert doc["RowKey"] == e["RowKey"]
        for k, v in e.items():
            assert doc[k] == v, k
        assert doc["Timestamp"].endswith("Z")


def parse_ls_l(text):
    """`ls -ln --time-style=+%s` lines -> {name: (mode, uid, gid, size, mtime)}."""
    out = {}
    for line in text.split("\n"):
        if not line or line.startswith("total "):
            continue
        f = line.split(None, 6)
        assert len(f) == 7, line
        out[f[6]] = (f[0], int(f[2]), int(f[3]), int(f[4]), int(f[5]))
    return out


def test_ls_l_size_equals_wc_and_python_read(tree, sh, sdk):
    checked = 0
    for pk in ("p1", "p2", "p3", "p4"):
        d = os.path.join(str(tree), MAIN, pk)
        listing = parse_ls_l(sh(["ls", "-ln", "--time-style=+%s", d]).stdout)
        assert listing, d
        for name, (mode, uid, gid, size, mtime) in listing.items():
            p = os.path.join(d, name)
            assert mode.startswith("-r"), (name, mode)
            wc = int(sh("cat -- '%s' | wc -c" % p).stdout.strip())
            with open(p, "rb") as f:
                data = f.read()
            assert size == wc == len(data), (name, size, wc, len(data))
            assert data.endswith(b"}\n")
            # reading at an offset past the middle gives the rest exactly
            with open(p, "rb") as f:
                f.seek(size // 2)
                assert f.read() == data[size // 2:]
            checked += 1
    assert checked == len(MAIN_ENTITIES)


def test_mtime_is_entity_timestamp(tree, sh, sdk):
    for e in sdk_entities(sdk, MAIN):
        ts = e.metadata["timestamp"]
        want = calendar.timegm(ts.utctimetuple())  # whole seconds, truncated
        p = path_of(tree, MAIN, e["PartitionKey"], e["RowKey"])
        st = os.stat(p)
        assert int(st.st_mtime) == want, (p, st.st_mtime, ts)
        assert int(sh(["stat", "-c", "%Y", p]).stdout) == want
        # the Timestamp member of the file is the same instant
        with open(p, "rb") as f:
            doc = json.loads(f.read())
        m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z$", doc["Timestamp"])
        assert m, doc["Timestamp"]
        secs = calendar.timegm(tuple(int(x) for x in m.groups()[:6]))
        assert secs == want


def test_blocks_cover_size(tree):
    for e in MAIN_ENTITIES:
        st = os.stat(path_of(tree, MAIN, e["PartitionKey"], e["RowKey"]))
        assert st.st_size > 0
        assert st.st_blocks * 512 >= st.st_size, (st.st_blocks, st.st_size)
        assert st.st_blocks * 512 < st.st_size + 64 * 1024  # no absurd values


def walk_sizes(top):
    """(sum of st_size, sum of st_blocks) over TOP and everything below it,
    like du (which counts directories too)."""
    size = blocks = 0
    for dirpath, dirnames, filenames in os.walk(top):
        st = os.lstat(dirpath)
        size += st.st_size
        blocks += st.st_blocks
        for fn in filenames:
            st = os.lstat(os.path.join(dirpath, fn))
            size += st.st_size
            blocks += st.st_blocks
    return size, blocks


def test_du(tree, sh):
    top = os.path.join(str(tree), MAIN)
    size, blocks = walk_sizes(top)
    du_b = int(sh(["du", "-sb", top]).stdout.split()[0])
    assert du_b == size
    file_bytes = sum(os.stat(path_of(tree, MAIN, e["PartitionKey"], e["RowKey"])).st_size
                     for e in MAIN_ENTITIES)
    assert du_b >= file_bytes
    du_k = int(sh(["du", "-sk", top]).stdout.split()[0])
    assert du_k == (blocks * 512 + 1023) // 1024
    assert du_k * 1024 >= file_bytes  # files are not counted as 0 bytes
    # plain `du -s` works on the whole mount too
    r = sh(["du", "-s", str(tree)])
    assert int(r.stdout.split()[0]) >= du_k


def test_find_counts_every_entity(tree, sh):
    out = sh("find '%s' -type f | wc -l" % os.path.join(str(tree), MAIN)).stdout
    assert int(out) == len(MAIN_ENTITIES)
    out = sh("find '%s' -type d | wc -l" % os.path.join(str(tree), MAIN)).stdout
    assert int(out) == 1 + 4
    files = sh(["find", os.path.join(str(tree), MAIN), "-type", "f", "-name", "*.json"]).lines()
    assert sorted(os.path.relpath(f, str(tree)) for f in files) == sorted(
        os.path.join(MAIN, e["PartitionKey"], e["RowKey"] + ".json") for e in MAIN_ENTITIES)


def test_grep_r_finds_value(tree, sh):
    r = sh(["grep", "-r", MAIN_NEEDLE, os.path.join(str(tree), MAIN)])
    lines = r.lines()
    assert len(lines) == 1, lines
    path, _, text = lines[0].partition(":")
    assert path == path_of(tree, MAIN, "p2", "only")
    assert text == '  "name": "%s",' % MAIN_NEEDLE
    # and a miss is a miss (exit 1), not an error (exit 2)
    r = sh(["grep", "-r", "no-such-value-anywhere-3c1d", os.path.join(str(tree), MAIN)], check=False)
    assert r.returncode == 1, r


def test_owned_by_current_user(tree, sh):
    uid, gid = os.getuid(), os.getgid()
    paths = [str(tree), os.path.join(str(tree), MAIN), os.path.join(str(tree), MAIN, "p1"),
             path_of(tree, MAIN, "p1", "r1")]
    for p in paths:
        st = os.stat(p)
        assert st.st_uid == uid, p
        assert st.st_gid == gid, p
    assert statmod.S_ISDIR(os.stat(paths[1]).st_mode)
    assert statmod.S_ISDIR(os.stat(paths[2]).st_mode)
    assert statmod.S_ISREG(os.stat(paths[3]).st_mode)
    listing = parse_ls_l(sh(["ls", "-ln", "--time-style=+%s", os.path.join(str(tree), MAIN)]).stdout)
    for name, (mode, u, g, size, mtime) in listing.items():
        assert mode.startswith("d"), (name, mode)
        assert (u, g) == (uid, gid)


def test_many_partitions(tree, sh):
    top = os.path.join(str(tree), MANY)
    listed = sh.ls(top)
    assert sorted(listed) == ["part%03d" % p for p in range(MANY_PARTS)]
    assert int(sh("find '%s' -type f | wc -l" % top).stdout) == MANY_PARTS * 2
    with open(os.path.join(top, "part042", "row1.json"), "rb") as f:
        assert json.loads(f.read())["v"] == 421


def test_empty_table_lists_empty(tree, sh):
    top = os.path.join(str(tree), EMPTY)
    assert statmod.S_ISDIR(os.stat(top).st_mode)
    assert sh.ls(top, "-A") == []
    assert int(sh("find '%s' -type f | wc -l" % top).stdout) == 0


def test_missing_paths_are_enoent(tree, sh):
    for p in [os.path.join(str(tree), "noSuchTable"),
              os.path.join(str(tree), MAIN, "nope"),
              os.path.join(str(tree), MAIN, "p1", "nope.json"),
              os.path.join(str(tree), MAIN, "p1", "r1")]:   # no .json suffix
        with pytest.raises(FileNotFoundError):
            os.stat(p)
        r = sh(["ls", p], check=False)
        assert r.returncode != 0 and "No such file" in r.stderr, r


def test_big_partition_lists_completely(tree, sh):
    top = os.path.join(str(tree), BIG)
    assert sh.ls(top) == ["bulk"]
    names = sh.ls(os.path.join(top, "bulk"))
    assert len(names) == BIG_COUNT
    assert sorted(names) == sorted(big_rk(i) + ".json" for i in range(BIG_COUNT))
    assert int(sh("ls '%s' | wc -l" % os.path.join(top, "bulk")).stdout) == BIG_COUNT
    assert int(sh("find '%s' -type f | wc -l" % top).stdout) == BIG_COUNT


def test_big_partition_grep_finds_last_row(tree, sh):
    top = os.path.join(str(tree), BIG)
    r = sh(["grep", "-rl", BIG_NEEDLE, top], timeout=120)
    assert r.lines() == [os.path.join(top, "bulk", big_rk(BIG_COUNT - 1) + ".json")]
    with open(os.path.join(top, "bulk", big_rk(1234) + ".json"), "rb") as f:
        doc = json.loads(f.read())
    assert doc["i"] == 1234 and doc["s"] == "value 1234"
