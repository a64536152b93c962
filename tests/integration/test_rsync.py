"""rsync through the mount: back up a table with awkward keys and all eight
types, restore it into a new table, and an incremental backup after a change
made with the SDK. The restored table is compared with the original on the
wire (raw REST, so empty keys count too) and through the SDK (Edm types)."""

import base64
import datetime
import json
import os
import re
import time
import urllib.parse
import uuid

import pytest
from azure.data.tables import EdmType, EntityProperty

from aztfs_names import dir_name, file_name
from conftest import WriteHelpers

# Also against the Cosmos DB for Table model (issue 42; conftest.py backend).
pytestmark = pytest.mark.backends

SRC = "rsyncSrc"
DST = "rsyncDst"
SRC0 = "rsyncZeroTtl"

LONG_RK = "long-" + "abcdefghij" * 30            # > 250 bytes: long-form file name
LONG_PK = "lp-" + "é" * 140                      # 283 UTF-8 bytes: long-form directory

ALL_TYPES = {
    "s": "text with \"quotes\" and\nnewline",
    "i32": -42,
    "i64": EntityProperty(9007199254740993, EdmType.INT64),
    "dbl": 0.1,
    "dbl_int": EntityProperty(3.0, EdmType.DOUBLE),
    "nan": float("nan"),
    "b": True,
    "dt": datetime.datetime(2021, 3, 4, 5, 6, 7, 123456, tzinfo=datetime.timezone.utc),
    "g": uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e"),
    "bin": b"\x00\x01\xfe\xffhello",
    "empty_s": "",
    "uni": "日本語 😀",
}

KEYS = [
    ("p", "plain"), ("p", "50%"), ("p", ".config"), ("p", "a b"), ("p", "日本"),
    ("p", "it's"), ("p", "v1.2"), ("p", ""), ("p", ".."), ("p", LONG_RK),
    ("", "emptypk"), (".hidden", "h"), ("sp ace%", "x"), (LONG_PK, "l"),
]


def entities():
    out = []
    for i, (pk, rk) in enumerate(KEYS):
        e = {"PartitionKey": pk, "RowKey": rk, "idx": i}
        e.update(ALL_TYPES)
        out.append(e)
    return out


def wire_table(wire, table):
    """{(pk, rk): {property: (value, odata.type or None)}} of every entity,
    from raw REST with full metadata (Timestamp and odata.* dropped)."""
    status, headers, body = wire("/%s()" % table,
                                 accept="application/json;odata=fullmetadata")
    assert status == 200, body
    assert "x-ms-continuation-NextPartitionKey" not in headers
    out = {}
    for e in json.loads(body)["value"]:
        key = (e["PartitionKey"], e["RowKey"])
        props = {}
        for k, v in e.items():
            if k.startswith("odata.") or "@odata." in k or k in (
                    "PartitionKey", "RowKey", "Timestamp"):
                continue
            props[k] = (v, e.get(k + "@odata.type"))
        out[key] = props
    return out


def sdk_typed(wh, table):
    return {(e.get("PartitionKey", ""), e.get("RowKey", "")): {
        k: v for k, v in WriteHelpers.typed(e).items() if k not in ("PartitionKey", "RowKey")}
        for e in wh.entities(table)}


def rsync(sh, *args):
    return sh(["rsync", "-a", "--stats"] + list(args), check=False, timeout=60)


def transferred(r):
    m = re.search(r"Number of regular files transferred: (\d+)", r.stdout)
    assert m, r
    return int(m.group(1))


def tree_files(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            full = os.path.join(d, f)
            with open(full, "rb") as fh:
                out[os.path.relpath(full, root)] = fh.read()
    return out


def strip_ts(data):
    return re.sub(rb'\n  "Timestamp": "[^"]*",\n', b"\n", data)


@pytest.fixture(scope="module")
def src_mount(sdk, seed, module_mounter):
    t = seed.table(sdk, SRC)
    for e in entities():
        t.create_entity(e)
    for name in (DST, SRC0):
        try:
            sdk.delete_table(name)
        except Exception:
            pass
    t0 = seed.table(sdk, SRC0)
    for e in entities()[:5]:
        t0.create_entity(e)
    return module_mounter.mount(options=("-o", "cache_timeout=1,loglevel=debug"))


def test_seed_is_what_we_think(sdk, src_mount, wire):
    w = wire_table(wire, SRC)
    assert set(w) == set(KEYS)
    props = w[("p", "plain")]
    assert props["i64"] == ("9007199254740993", "Edm.Int64")
    assert props["bin"][1] == "Edm.Binary" and props["g"][1] == "Edm.Guid"


@pytest.fixture(scope="module")
def backup(src_mount, sh, tmp_path_factory):
    """rsync -a MNT/SRC/ BACKUP/ once; returns (backup dir, rsync result)."""
    d = tmp_path_factory.mktemp("rsync") / "backup"
    r = rsync(sh, os.path.join(str(src_mount), SRC) + "/", str(d) + "/")
    return d, r


WANT_NAMES = {os.path.join(dir_name(pk), file_name(rk)) for pk, rk in KEYS}


def test_backup(src_mount, backup):
    backup, r = backup
    assert r.returncode == 0, r
    got = tree_files(str(backup))
    assert set(got) == WANT_NAMES
    mounted = tree_files(os.path.join(str(src_mount), SRC))
    assert got == mounted
    for pk, rk in KEYS:
        doc = json.loads(got[os.path.join(dir_name(pk), file_name(rk))])
        assert doc["PartitionKey"] == pk and doc["RowKey"] == rk
        assert doc["i64"] == "9007199254740993" and doc["i64@odata.type"] == "Edm.Int64"
    # mtimes are the entity Timestamps (whole seconds at least)
    ts = json.loads(got[os.path.join("p", "plain.json")])["Timestamp"]
    t = datetime.datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    assert int(os.stat(backup / "p" / "plain.json").st_mtime) == int(t)


@pytest.mark.azurite_only(reason="its keys include empty ones and RowKeys of 300 bytes, "
                          "which Cosmos DB cannot hold: a restore there fails them, loudly")
def test_restore_into_new_table(src_mount, backup, sh, wh, wire):
    mnt = str(src_mount)
    backup, r = backup
    assert r.returncode == 0, r
    got = tree_files(str(backup))
    os.mkdir(os.path.join(mnt, DST))
    assert wh.table_exists(DST)
    r = rsync(sh, str(backup) + "/", os.path.join(mnt, DST) + "/")
    src_w, dst_w = wire_table(wire, SRC), wire_table(wire, DST)
    assert sorted(set(src_w) - set(dst_w)) == []        # missing in the copy
    assert r.returncode == 0, r
    assert set(dst_w) == set(src_w)
    for key in src_w:
        assert dst_w[key] == src_w[key], key
    src_t, dst_t = sdk_typed(wh, SRC), sdk_typed(wh, DST)
    for key in src_t:
        if key[0] == "" or key[1] == "":
            continue        # the SDK drops empty keys; compared on the wire above
        assert dst_t[key] == src_t[key], key
    # no temp files left behind in the mount, and the restored tree reads back
    restored = tree_files(os.path.join(mnt, DST))
    assert set(restored) == WANT_NAMES
    for name, data in restored.items():
        assert strip_ts(data) == strip_ts(got[name]), name


DIFF_TABLE = "rsyncDiff"
NO_TIMESTAMP = ["-I", '^  "Timestamp": ']      # doc/USAGE.md, "Comparing a restore"


@pytest.mark.azurite_only(reason="its keys include empty ones and RowKeys of 300 bytes, "
                          "which Cosmos DB cannot hold: a restore there fails them, loudly")
def test_a_restore_compares_equal_to_its_backup_but_for_timestamps(src_mount, backup, sh,
                                                                  sdk):
    """The documented comparison: `diff -r` flags every restored file (the
    service gave each a new Timestamp), `diff -r -I '^  "Timestamp": '`
    finds none, and still finds an entity changed after the restore."""
    mnt, (backup, r) = str(src_mount), backup
    assert r.returncode == 0, r
    try:
        sdk.delete_table(DIFF_TABLE)
    except Exception:
        pass
    dst = os.path.join(mnt, DIFF_TABLE)
    os.mkdir(dst)
    assert rsync(sh, str(backup) + "/", dst + "/").returncode == 0
    plain = sh(["diff", "-r", "-q", str(backup), dst], check=False)
    assert plain.returncode == 1 and len(plain.stdout.splitlines()) == len(WANT_NAMES), plain
    same = sh(["diff", "-r"] + NO_TIMESTAMP + [str(backup), dst], check=False)
    assert same.returncode == 0 and same.stdout == "", same
    c = sdk.get_table_client(DIFF_TABLE)
    e = c.get_entity("p", "plain")
    e["s"] = "changed after the restore"
    c.update_entity(e, mode="replace")
    time.sleep(1.5)                                   # cache_timeout=1: the mount sees it
    changed = sh(["diff", "-r"] + NO_TIMESTAMP + [str(backup), dst], check=False)
    assert changed.returncode == 1 and "changed after the restore" in changed.stdout, changed
    assert changed.stdout.count("diff -r") == 1, changed


def test_incremental_backup(src_mount, backup, sh, sdk):
    mnt = str(src_mount)
    backup, r = backup
    assert r.returncode == 0, r
    # nothing changed: a rerun copies nothing
    r = rsync(sh, mnt + "/" + SRC + "/", str(backup) + "/")
    assert r.returncode == 0, r
    assert transferred(r) == 0, r.stdout
    # one entity changed with the SDK: the next backup copies it
    c = sdk.get_table_client(SRC)
    e = c.get_entity("p", "plain")
    e["s"] = "changed by the SDK"
    c.update_entity(e, mode="replace")
    time.sleep(1.3)     # cache_timeout=1
    r = rsync(sh, mnt + "/" + SRC + "/", str(backup) + "/")
    assert r.returncode == 0, r
    doc = json.loads((backup / "p" / "plain.json").read_text())
    assert doc["s"] == "changed by the SDK"
    assert transferred(r) == 1, r.stdout
    assert tree_files(str(backup)) == tree_files(os.path.join(mnt, SRC))


@pytest.mark.azurite_only(reason="its keys include empty ones and RowKeys of 300 bytes, "
                          "which Cosmos DB cannot hold: a restore there fails them, loudly")
def test_create_entity_with_long_rowkey_name(src_mount, wh):
    """A new file under a long-form name whose content carries the full keys
    (doc/NAMES.md, 'Long keys') becomes that entity."""
    d = os.path.join(str(src_mount), SRC, "p")
    rk = "newlong-" + "z" * 300
    text = json.dumps({"PartitionKey": "p", "RowKey": rk, "v": 1}).encode()
    assert wh.write_fd(os.path.join(d, file_name(rk)), text,
                       os.O_WRONLY | os.O_CREAT | os.O_EXCL) is None
    assert dict(wh.get(SRC, "p", rk)) == {"PartitionKey": "p", "RowKey": rk, "v": 1}
    os.unlink(os.path.join(d, file_name(rk)))
    assert wh.get(SRC, "p", rk) is None


def test_backup_with_fresh_mount_sees_sdk_change(sdk, seed, mounter, sh, tmp_path):
    T = "rsyncFresh"
    t = seed.table(sdk, T)
    for e in entities()[:4]:
        t.create_entity(e)
    backup = tmp_path / "b"
    m1 = mounter.mount()
    r = rsync(sh, os.path.join(str(m1), T) + "/", str(backup) + "/")
    assert r.returncode == 0, r
    m1.unmount()
    # same size (-42 -> 777): only the mtime (the Timestamp, whole seconds for
    # rsync's quick check) tells the change, so let the second turn over
    time.sleep(1.1)
    e = t.get_entity("p", "50%")
    e["i32"] = 777
    t.update_entity(e, mode="replace")
    m2 = mounter.mount()
    r = rsync(sh, os.path.join(str(m2), T) + "/", str(backup) + "/")
    assert r.returncode == 0, r
    assert json.loads((backup / "p" / "50%25.json").read_text())["i32"] == 777
    assert transferred(r) == 1, r.stdout


def test_backup_with_cache_timeout_0(src_mount, mounter, sh, tmp_path):
    """-o cache_timeout=0 (always ask the service) must still list and copy."""
    m = mounter.mount(options=("-o", "cache_timeout=0"))
    backup = tmp_path / "z"
    r = rsync(sh, os.path.join(str(m), SRC0) + "/", str(backup) + "/")
    assert r.returncode == 0, r
    assert set(tree_files(str(backup))) == {
        os.path.join(dir_name(pk), file_name(rk)) for pk, rk in KEYS[:5]}


def test_restore_over_existing_table_replaces(src_mount, sh, wh, sdk, tmp_path):
    """rsync into a table that already holds (different) entities with the
    same keys: each is replaced by the backup's version."""
    T = "rsyncOver"
    mnt = str(src_mount)
    backup = tmp_path / "bk"
    (backup / "p").mkdir(parents=True)
    (backup / "p" / "a.json").write_text('{"v": "from backup"}')
    (backup / "p" / "b.json").write_text('{"w": 2}')
    try:
        sdk.delete_table(T)
    except Exception:
        pass
    os.mkdir(os.path.join(mnt, T))
    r = rsync(sh, str(backup) + "/", os.path.join(mnt, T) + "/")
    assert r.returncode == 0, r
    assert dict(wh.get(T, "p", "a")) == {"PartitionKey": "p", "RowKey": "a", "v": "from backup"}
    (backup / "p" / "a.json").write_text('{"v": "second", "extra": true}')
    r = rsync(sh, str(backup) + "/", os.path.join(mnt, T) + "/")
    assert r.returncode == 0, r
    assert dict(wh.get(T, "p", "a")) == {"PartitionKey": "p", "RowKey": "a", "v": "second",
                                         "extra": True}
    assert dict(wh.get(T, "p", "b")) == {"PartitionKey": "p", "RowKey": "b", "w": 2}
