"""A SAS scoped to one table cannot list the account's tables: -o tables=
names the tables to show, and the mount works through that SAS alone."""

import errno
import json
import os
from datetime import datetime, timedelta, timezone

import pytest
from azure.core.credentials import AzureNamedKeyCredential
from azure.data.tables import TableSasPermissions, generate_table_sas

from conftest import ACCOUNT, KEY, aztfs_env

T = "sasScoped"
OTHER = "sasOther"


@pytest.fixture(scope="module")
def tables(sdk, seed):
    t = seed.table(sdk, T)
    for i in range(3):
        t.upsert_entity({"PartitionKey": "p", "RowKey": "r%d" % i, "v": i})
    seed.table(sdk, OTHER).upsert_entity({"PartitionKey": "p", "RowKey": "x", "v": 1})
    return T


def sas_conn(azurite, table, **perms):
    sas = generate_table_sas(AzureNamedKeyCredential(ACCOUNT, KEY), table,
                             permission=TableSasPermissions(**perms),
                             expiry=datetime.now(timezone.utc) + timedelta(hours=2))
    return "TableEndpoint=%s;SharedAccessSignature=%s" % (azurite.endpoint, sas)


def test_table_sas_without_tables_option_is_refused_with_a_hint(azurite, tables, tmp_path,
                                                                aztfs_run):
    mp = tmp_path / "mp"
    mp.mkdir()
    res = aztfs_run(["-f", mp], aztfs_env(sas_conn(azurite, T, read=True)))
    assert res.returncode != 0
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, res.stderr
    assert "403" in lines[0] and "-o tables=" in lines[0], lines[0]
    assert "sig=" not in res.stderr
    assert not os.path.ismount(str(mp))


def test_tables_option_mounts_a_table_sas(azurite, tables, mounter, sh):
    conn = sas_conn(azurite, T, read=True, add=True, update=True, delete=True)
    m = mounter.mount(conn_str=conn, options=["-o", "tables=%s" % T])
    assert sorted(os.listdir(m.path)) == [T]
    assert sorted(os.listdir(m.join(T, "p"))) == ["r0.json", "r1.json", "r2.json"]
    assert json.loads(sh(["cat", m.join(T, "p", "r1.json")]).stdout)["v"] == 1
    # a table that exists but is not named is not there
    with pytest.raises(OSError) as ei:
        os.stat(m.join(OTHER))
    assert ei.value.errno == errno.ENOENT
    # writes go through the same SAS
    with open(m.join(T, "p", "new.json"), "w") as f:
        f.write('{"w": 7}')
    assert json.loads(sh(["cat", m.join(T, "p", "new.json")]).stdout)["w"] == 7
    os.unlink(m.join(T, "p", "new.json"))
    assert "sig=" not in m.stderr()


def test_tables_option_leaves_out_missing_tables_with_a_note(azurite, tables, mounter):
    m = mounter.mount(options=["-o", "tables=%s:sasMissing" % T])
    assert sorted(os.listdir(m.path)) == [T]
    for name in (OTHER, "sasMissing"):
        with pytest.raises(OSError) as ei:
            os.stat(m.join(name))
        assert ei.value.errno == errno.ENOENT
    err = m.stderr()
    assert "'sasMissing'" in err and "does not exist" in err, err


def test_tables_option_naming_a_table_the_sas_does_not_cover_is_refused(
        azurite, tables, tmp_path, aztfs_run):
    mp = tmp_path / "mp"
    mp.mkdir()
    res = aztfs_run(["-f", "-o", "tables=%s:%s" % (T, OTHER), mp],
                    aztfs_env(sas_conn(azurite, T, read=True)))
    assert res.returncode != 0
    assert "403" in res.stderr, res.stderr
    assert not os.path.ismount(str(mp))


@pytest.mark.parametrize("value", ["1bad", "ab", "good1:no-dash", ""])
def test_invalid_tables_option_is_refused(azurite, value, tmp_path, aztfs_run):
    mp = tmp_path / "mp"
    mp.mkdir()
    res = aztfs_run(["-f", "-o", "tables=" + value, mp], aztfs_env(azurite.conn_str))
    assert res.returncode != 0, res
    assert "tables=" in res.stderr, res.stderr
    assert not os.path.ismount(str(mp))
