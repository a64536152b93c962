"""Each failed operation logs exactly one line, naming the operation, the
path, the HTTP status, the service's error code and the attempts made."""

import errno
import json
import os
import re

import pytest

from conftest import rewrite_and_close

T = "failLog"


def lines_about(text, needle):
    return [l for l in text.splitlines() if needle in l]


@pytest.fixture
def mnt(sdk, seed, mounter):
    t = seed.table(sdk, T)
    t.upsert_entity({"PartitionKey": "p", "RowKey": "a", "v": "orig"})
    t.upsert_entity({"PartitionKey": "p", "RowKey": "b", "v": "orig"})
    return mounter.mount(options=["-o", "loglevel=debug"]), t


def test_conflicting_save_logs_one_line(mnt):
    m, t = mnt
    path = m.join(T, "p", "a.json")
    f = open(path, "r+")
    f.read()
    t.update_entity({"PartitionKey": "p", "RowKey": "a", "v": "sdk"}, mode="replace")
    assert rewrite_and_close(f, '{"v": "mount"}').errno == errno.ESTALE
    err = m.stderr()
    # error/warn lines only: debug lines may trace the requests
    shown = [l for l in lines_about(err, "a.json") if ": debug:" not in l]
    assert len(shown) == 1, err
    line = shown[0]
    assert re.search(r"save \S*/%s/p/a\.json failed: " % T, line), line
    assert "failed: ESTALE: the entity was changed by someone else" in line, line
    assert "(HTTP 412 UpdateConditionNotSatisfied" in line, line
    assert re.search(r"attempts \d+", line), line


def test_conflicting_delete_logs_one_line(mnt):
    m, t = mnt
    path = m.join(T, "p", "b.json")
    json.loads(open(path).read())
    t.update_entity({"PartitionKey": "p", "RowKey": "b", "v": "sdk"}, mode="replace")
    with pytest.raises(OSError) as ei:
        os.unlink(path)
    assert ei.value.errno == errno.ESTALE
    shown = [l for l in lines_about(m.stderr(), "b.json") if ": debug:" not in l]
    assert len(shown) == 1, m.stderr()
    assert re.search(r"delete \S*/p/b\.json failed: .*HTTP 412 UpdateConditionNotSatisfied.*; "
                     r"attempts \d+\)$",
                     shown[0]), shown[0]
