"""Awkward keys: every PartitionKey / RowKey maps to exactly one name, as
predicted by aztfs_names.encode (written from the spec), and back."""

import errno
import json
import os

import pytest

from aztfs_names import dir_name, encode, file_name, is_long_form

TABLE = "namesKeys"

KEYS = [
    "", ".", "..", ".hidden", "a%b", "100%", "with space", "quote'single",
    'quote"double', "é日本😀", "%2E", "%~abc", "ACME Corp", "café", "a.b.",
    "x" * 300, "x" * 301, "y" * 512, "k" * 250, "k" * 251,
    "a" + "é" * 150, "%" * 100, "日" * 90,
]
# Keys used as PartitionKeys: all of them. RowKeys in each partition: all of
# them for a few partitions, a smaller set for the others (keeps it quick).
FULL_PKS = ["", ".", "a%b", "é日本😀", "x" * 300, "quote'single"]
SOME_RKS = ["", "..", ".hidden", "100%", 'quote"double', "y" * 512, "%" * 100]


def rks_for(pk):
    return KEYS if pk in FULL_PKS else SOME_RKS


@pytest.fixture(scope="module")
def mnt(sdk, seed, module_mounter):
    t = seed.table(sdk, TABLE)
    ents = [{"PartitionKey": pk, "RowKey": rk, "pk_len": len(pk), "rk_len": len(rk)}
            for pk in KEYS for rk in rks_for(pk)]
    seed.insert(t, ents)
    return module_mounter.mount()


def table_dir(mnt):
    return os.path.join(str(mnt), TABLE)


def test_spec_examples():
    # the examples given with the rule
    assert encode("a%b") == "a%25b"
    assert encode(".") == "%2E"
    assert encode("..") == "%2E."
    assert encode("") == "%"


def test_partition_dirs_exactly_once(mnt, sh):
    listed = sh.ls(table_dir(mnt))
    expected = {dir_name(pk): pk for pk in KEYS}
    assert len(expected) == len(KEYS), "name rule collision in the test data"
    # each name exactly once
    assert len(listed) == len(set(listed)), sorted(listed)
    assert set(listed) == set(expected), (
        "missing: %r, unexpected: %r" % (sorted(set(expected) - set(listed)),
                                         sorted(set(listed) - set(expected))))
    # every listed name maps back to exactly the set of keys
    assert {expected[n] for n in listed} == set(KEYS)
    # ls -A shows the same: nothing hidden behind a leading dot
    assert sorted(sh.ls(table_dir(mnt), "-A")) == sorted(listed)
    for n in listed:
        assert not n.startswith(".")
        assert "/" not in n


def test_entity_files_exactly_once(mnt, sh):
    for pk in KEYS:
        d = os.path.join(table_dir(mnt), dir_name(pk))
        listed = sh.ls(d)
        expected = {file_name(rk): rk for rk in rks_for(pk)}
        assert len(listed) == len(set(listed)), (pk[:20], listed)
        assert set(listed) == set(expected), (
            pk[:20], sorted(set(expected) - set(listed)), sorted(set(listed) - set(expected)))
        assert {expected[n] for n in listed} == set(rks_for(pk))


def test_file_content_has_the_keys(mnt, sh):
    n = 0
    for pk in KEYS:
        for rk in rks_for(pk):
            p = os.path.join(table_dir(mnt), dir_name(pk), file_name(rk))
            with open(p, "rb") as f:
                doc = json.loads(f.read().decode("utf-8"))
            assert doc["PartitionKey"] == pk
            assert doc["RowKey"] == rk
            assert doc["pk_len"] == len(pk) and doc["rk_len"] == len(rk)
            n += 1
    assert n == sum(len(rks_for(pk)) for pk in KEYS)


def test_cat_shows_keys(mnt, sh):
    pk = "quote'single"
    d = os.path.join(table_dir(mnt), dir_name(pk))
    for rk in KEYS:
        out = sh(["cat", os.path.join(d, file_name(rk))]).stdout
        lines = out.split("\n")
        assert lines[0] == "{"
        assert lines[1] == "  " + json.dumps("PartitionKey") + ": " + json.dumps(pk, ensure_ascii=False) + ","
        assert lines[2] == "  " + json.dumps("RowKey") + ": " + json.dumps(rk, ensure_ascii=False) + ","


def test_names_fit_name_max(mnt, sh):
    longest = 0
    for pk in KEYS:
        dn = dir_name(pk)
        assert len(dn.encode()) <= 250
        for rk in rks_for(pk):
            fn = file_name(rk)
            assert len(fn.encode()) <= 255
            longest = max(longest, len(fn.encode()))
    assert longest > 200  # long-form names were exercised
    # and the listed names as bytes, straight from the kernel
    for entry in os.scandir(os.fsencode(table_dir(mnt))):
        assert len(entry.name) <= 250
        for sub in os.scandir(entry.path):
            assert len(sub.name) <= 255
            assert sub.name.endswith(b".json")


def test_long_forms(mnt):
    for k in ("x" * 300, "x" * 301, "y" * 512, "k" * 251, "a" + "é" * 150, "%" * 100):
        assert is_long_form(encode(k)), k[:10]
    assert not is_long_form(encode("k" * 250))
    assert encode("x" * 300) != encode("x" * 301)       # same prefix, other hash
    d = os.path.join(table_dir(mnt), dir_name("x" * 300))
    assert os.path.isdir(d)
    assert os.path.isdir(os.path.join(table_dir(mnt), dir_name("x" * 301)))
    with open(os.path.join(d, file_name("y" * 512)), "rb") as f:
        assert json.loads(f.read())["RowKey"] == "y" * 512


def test_stat_every_name_and_find_count(mnt, sh):
    total = 0
    for pk in KEYS:
        for rk in rks_for(pk):
            st = os.stat(os.path.join(table_dir(mnt), dir_name(pk), file_name(rk)))
            assert st.st_size > 0
            total += 1
    out = sh("find '%s' -type f | wc -l" % table_dir(mnt)).stdout
    assert int(out) == total


@pytest.mark.parametrize("bad", [
    ".hidden",        # canonical is %2Ehidden
    "%2e",            # lower-case escape
    "%2Ehidden.json", # a file name used as a directory
    "a%62",           # needless escape of 'b'
    "a%b",            # unescaped '%'
    "%25",            # that would be the key "%" which does not exist
    "x" * 200 + "%~" + "0" * 32,  # long form with a wrong hash
])
def test_non_canonical_dir_names_do_not_exist(mnt, bad):
    with pytest.raises(OSError) as ei:
        os.stat(os.path.join(table_dir(mnt), bad))
    assert ei.value.errno == errno.ENOENT


@pytest.mark.parametrize("bad", [".hidden.json", "%2e.json", "%2E", "100%.json", "%2Ehidden"])
def test_non_canonical_file_names_do_not_exist(mnt, bad):
    d = os.path.join(table_dir(mnt), dir_name("a%b"))
    with pytest.raises(OSError) as ei:
        os.stat(os.path.join(d, bad))
    assert ei.value.errno == errno.ENOENT


def test_grep_finds_awkward_key(mnt, sh):
    r = sh(["grep", "-rlF", '"RowKey": "quote\\"double"', os.path.join(table_dir(mnt), "a%25b")])
    assert r.lines() == [os.path.join(table_dir(mnt), "a%25b", "quote\"double.json")]


def test_long_forms_without_a_cache(mnt, module_mounter):
    """With -o cache_timeout=0 nothing is kept, so a long-form name is
    resolved from the listing its lookup scans, not from the cache (which
    used to answer ENOENT)."""
    m = module_mounter.mount(options=["-o", "cache_timeout=0"])
    d = os.path.join(str(m), TABLE, dir_name("x" * 300))
    assert os.path.isdir(d)
    with open(os.path.join(d, file_name("y" * 512)), "rb") as f:
        assert json.loads(f.read())["RowKey"] == "y" * 512
    with pytest.raises(OSError) as ei:
        os.stat(os.path.join(d, file_name("y" * 513)))
    assert ei.value.errno == errno.ENOENT
