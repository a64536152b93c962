"""Cosmos DB for Table (issue 42; doc/USAGE.md, "Cosmos DB for Table"):
aztfs mounted with -o service=cosmos on the Cosmos model
(tests/cosmosmodel.py) speaks the protocol as Cosmos takes it, and checks
its limits before anything is sent. What is stored is checked through the
SDK talking to Azurite behind the model.

- a save with -o merge is a Merge sent as POST + X-HTTP-Method: MERGE
  (the model, as Cosmos, answers the MERGE verb with 405);
- an import under the model's 429 throttling (x-ms-retry-after-ms, and
  $batch answers whose changeset failed 429) ends whole;
- an import line with an empty RowKey stops the stream at that line, every
  line before it applied, none after;
- a view whose filter names Timestamp is refused with a reason (Cosmos
  answers such a filter with no entities)."""

import datetime
import errno
import json
import os
import re
import subprocess

import pytest

from conftest import KEY, conn_str_for
from test_import import errors_of, line, write_stream


@pytest.fixture
def cosmos(cosmos_model, mounter):
    """A mount of the Cosmos model with -o service=cosmos (and OPTIONS)."""
    def mount(*options):
        opts = ["-o", "service=cosmos"]
        for o in options:
            opts += ["-o", o]
        return mounter.mount(conn_str=conn_str_for(cosmos_model.port), options=opts)
    return mount


def test_merge_save_is_sent_as_cosmos_takes_it(sdk, seed, cosmos):
    t = seed.table(sdk, "cosmosMerge")
    t.create_entity({"PartitionKey": "p", "RowKey": "r", "keep": "x", "n": 1})
    m = cosmos("merge")
    path = m.join("cosmosMerge", "p", "r.json")
    with open(path) as f:
        doc = json.load(f)
    del doc["keep"]              # a merge leaves what the text no longer names
    doc["n"] = 2
    doc["added"] = "y"
    with open(path, "w") as f:   # before: EIO, the model's 405 to the MERGE verb
        json.dump(doc, f)
    e = t.get_entity("p", "r")
    assert (e["n"], e["added"], e["keep"]) == (2, "y", "x")


def test_import_under_throttling_ends_whole(sdk, seed, cosmos_model, cosmos):
    t = seed.table(sdk, "cosmosThrottled")
    m = cosmos("scan_parallel=4")
    data = "".join(line("p%d" % (i % 5), "r%04d" % i, n=i) + "\n" for i in range(1500))
    before = cosmos_model.counts().get("throttled", 0)
    cosmos_model.throttle(0.5, seed=5, retry_after_ms=20)
    try:
        e = write_stream(m.join("cosmosThrottled", ".ndjson"), data)
    finally:
        cosmos_model.throttle(0)
    assert e is None, e
    assert cosmos_model.counts().get("throttled", 0) - before >= 3, "throttled a few times (the first 15 draws of seed 5 say 5)"
    got = {(x["PartitionKey"], x["RowKey"]): x["n"] for x in t.list_entities()}
    assert got == {("p%d" % (i % 5), "r%04d" % i): i for i in range(1500)}


def test_import_line_with_an_empty_key_stops_there(sdk, seed, cosmos):
    t = seed.table(sdk, "cosmosEmptyKey")
    m = cosmos()
    good = [line("p", "r%03d" % i, n=i) for i in range(120)]
    after = [line("p", "s%03d" % i, n=i) for i in range(30)]
    data = "\n".join(good + [line("p", "", n=-1)] + after) + "\n"
    e = write_stream(m.join("cosmosEmptyKey", ".ndjson"), data)
    assert e is not None and e.errno == errno.EINVAL, e
    assert sorted(x["RowKey"] for x in t.list_entities()) == ["r%03d" % i for i in range(120)]
    assert "line 121" in m.stderr() and "empty RowKey" in m.stderr()
    assert "line 121" in errors_of(m) and "empty RowKey" in errors_of(m)


def test_save_over_cosmos_limits_is_refused_before_sending(sdk, seed, cosmos):
    t = seed.table(sdk, "cosmosLimits")
    m = cosmos()
    os.makedirs(m.join("cosmosLimits", "p"), exist_ok=True)
    with pytest.raises(OSError) as e:
        with open(m.join("cosmosLimits", "p", "r.json"), "w") as f:
            json.dump({"ResourceId": "x"}, f)
    assert e.value.errno == errno.EINVAL
    assert "reserved" in errors_of(m)
    long_rk = "k" * 256
    with pytest.raises(OSError) as e:
        with open(m.join("cosmosLimits", "p", long_rk + ".json"), "w") as f:
            f.write("{}")
    assert e.value.errno in (errno.EINVAL, errno.ENAMETOOLONG)
    assert list(t.list_entities()) == []


def test_timestamp_view_is_refused_with_a_reason(sdk, seed, cosmos):
    t = seed.table(sdk, "cosmosTsView")
    t.create_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
    m = cosmos()
    view = m.join("cosmosTsView", ".where", "Timestamp ge datetime'2000-01-01T00:00:00Z'")
    p = subprocess.run(["ls", view], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "Invalid argument" in p.stderr, p
    assert "Timestamp" in m.stderr() and "Cosmos DB" in m.stderr()
    assert "filter on Timestamp" in errors_of(m)
    # a filter on a property of one's own works
    assert os.listdir(m.join("cosmosTsView", ".where", "n eq 1")) == ["p"]


def test_timestamp_without_its_annotation(sdk, seed, cosmos):
    """Cosmos gives Timestamp 7 fraction digits and no Timestamp@odata.type:
    the file, its mtime and user.aztfs.timestamp show it all the same."""
    t = seed.table(sdk, "cosmosTs")
    t.create_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
    m = cosmos()
    path = m.join("cosmosTs", "p", "r.json")
    with open(path) as f:
        text = f.read()
    ts = json.loads(text)["Timestamp"]
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$", ts), ts
    assert "@odata.type" not in text.split('"n"')[0]
    assert os.getxattr(path, "user.aztfs.timestamp").decode() == ts
    want = datetime.datetime.strptime(ts[:26] + "Z", "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    assert abs(os.stat(path).st_mtime - want) < 1e-5


def test_the_service_setting(azurite, cosmos_model, sdk, seed, mounter, aztfs_run, tmp_path):
    """-o service= takes storage or cosmos; Service= in the config file says
    the same, and the option wins over it."""
    mp = tmp_path / "mp"
    mp.mkdir()
    env = dict(os.environ, AZURE_STORAGE_CONNECTION_STRING=azurite.conn_str)
    res = aztfs_run(["-f", "-o", "service=mongo", str(mp)], env)
    assert res.returncode != 0 and "unknown service=mongo" in res.stderr, res
    t = seed.table(sdk, "cosmosSetting")
    t.create_entity({"PartitionKey": "p", "RowKey": "r", "keep": "x"})
    conf = tmp_path / "cosmos.conf"
    # the model's port instead of Azurite's: the same account and key
    conf.write_text("AccountName=devstoreaccount1\nAccountKey=%s\nTableEndpoint="
                    "http://127.0.0.1:%d/devstoreaccount1\nService=cosmos\n"
                    % (KEY, cosmos_model.port))
    conf.chmod(0o600)
    m = mounter.mount(env=dict(os.environ), options=["-o", "config=%s" % conf, "-o", "merge"])
    path = m.join("cosmosSetting", "p", "r.json")
    with open(path, "w") as f:       # a Merge: sent as Cosmos takes it
        f.write('{"n": 1}')
    assert t.get_entity("p", "r")["keep"] == "x"
    assert "Cosmos DB for Table" in m.stderr()
    m2 = mounter.mount(env=dict(os.environ),
                       options=["-o", "config=%s" % conf, "-o", "merge", "-o", "service=storage"])
    with pytest.raises(OSError) as e:  # the MERGE verb, which the model refuses
        with open(m2.join("cosmosSetting", "p", "r.json"), "w") as f:
            f.write('{"n": 2}')
    assert e.value.errno == errno.EIO
