"""Import (doc/USAGE.md, "Import"): NDJSON written to /T/.ndjson or
/T/PK/.ndjson is applied in entity group transactions: '>' (or cp, dd) as
Insert Or Replace, '>>' as Insert. Checked through the official SDK: a round
trip of every Edm type and odd keys gives an identical table; a bad line
stops the stream with every line before it applied and none after, its
number in the error, the log and user.aztfs.errors; the close returns the
outcome; the mount shows what was imported."""

import base64
import datetime
import errno
import json
import os
import re
import subprocess
import sys
import time
import uuid

import pytest

from aztfs_names import dir_name
from conftest import ROOT, conn_str_for
from harness import FaultProxy, aztfs_env
from sdk_values import typed
import test_export as ex

# Also against the Cosmos DB for Table model (issue 42; conftest.py backend).
pytestmark = pytest.mark.backends

SRC = "importSrc"


@pytest.fixture(scope="module")
def src(sdk, seed):
    t = seed.table(sdk, SRC)
    seed.insert(t, ex.t_entities())
    return t


@pytest.fixture(scope="module")
def mnt(src, module_mounter):
    return module_mounter.mount()


def table_typed(table):
    """{(pk, rk): typed entity} of every entity of TABLE, through the SDK."""
    out = {}
    for e in table.list_entities():
        t = typed(e)
        out[(e.get("PartitionKey", ""), e.get("RowKey", ""))] = t
    return out


def shell(cmd):
    """Run CMD with sh; (exit status, stderr)."""
    p = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=600)
    return p.returncode, p.stderr


def errors_of(m):
    return json.dumps(json.loads(os.getxattr(str(m), "user.aztfs.errors")))


def write_stream(path, data, append=False):
    """Write DATA (str) to stream PATH with one open, write and close; the
    OSError of the write or the close, or None."""
    fd = os.open(path, os.O_WRONLY | (os.O_APPEND if append else os.O_TRUNC))
    try:
        try:
            os.write(fd, data.encode("utf-8"))
        except OSError as e:
            return e
    finally:
        try:
            os.close(fd)
        except OSError as e:
            return e
    return None


def line(pk, rk, **props):
    return json.dumps(dict(PartitionKey=pk, RowKey=rk, **props), ensure_ascii=False)


@pytest.mark.azurite_only(reason="its keys include an empty one and RowKeys of 300 bytes, which "
                          "Cosmos DB cannot hold (test_cosmos.py: such a line is refused)")
def test_round_trip_every_type_and_odd_keys(sdk, seed, src, mnt):
    dst = seed.table(sdk, "importDst")
    rc, err = shell("cat %s/%s/.ndjson > %s/importDst/.ndjson" % (mnt, SRC, mnt))
    assert rc == 0, err
    want = table_typed(src)
    got = table_typed(dst)
    assert len(want) == len(ex.t_entities())
    for k in want:       # the Timestamp is the service's own
        want[k].pop("Timestamp", None)
        got.get(k, {}).pop("Timestamp", None)
    assert got == want
    # and the mount's export of the copy is the source's, byte for byte
    with open(mnt.join(SRC, ".ndjson"), encoding="utf-8") as f:
        a = [json.loads(l) for l in f]
    with open(mnt.join("importDst", ".ndjson"), encoding="utf-8") as f:
        b = [json.loads(l) for l in f]
    for e in a + b:
        e.pop("Timestamp")
    assert a == b


def test_bad_line_stops_there_with_every_line_before_applied(sdk, seed, mnt):
    t = seed.table(sdk, "importBad")
    good = [line("p%d" % (i % 3), "r%04d" % i, n=i) for i in range(250)]
    after = [line("p%d" % (i % 3), "r%04d" % i, n=i) for i in range(250, 400)]
    data = "\n".join(good + ['{"PartitionKey": "p0", "RowKey": "x", "n": '] + after) + "\n"
    e = write_stream(mnt.join("importBad", ".ndjson"), data)
    assert e is not None and e.errno == errno.EINVAL, e
    keys = sorted(x["RowKey"] for x in t.list_entities())
    assert keys == ["r%04d" % i for i in range(250)]
    assert "line 251" in mnt.stderr()
    assert "line 251" in errors_of(mnt)


def test_upsert_replaces_whole_entities_and_leaves_the_rest(sdk, seed, mnt):
    t = seed.table(sdk, "importUpsert")
    seed.insert(t, [{"PartitionKey": "p", "RowKey": "a", "old": 1, "keep": "x"},
                    {"PartitionKey": "p", "RowKey": "b", "old": 2}])
    assert write_stream(mnt.join("importUpsert", ".ndjson"),
                        line("p", "a", new=10) + "\n" + line("q", "c", new=30) + "\n") is None
    got = {(e["PartitionKey"], e["RowKey"]): {k: v for k, v in e.items()
                                               if k not in ("PartitionKey", "RowKey")}
           for e in t.list_entities()}
    assert got == {("p", "a"): {"new": 10}, ("p", "b"): {"old": 2}, ("q", "c"): {"new": 30}}


def test_append_inserts_and_an_existing_entity_fails_the_close(sdk, seed, mnt):
    t = seed.table(sdk, "importInsert")
    seed.insert(t, [{"PartitionKey": "p", "RowKey": "r0050", "old": 1}])
    path = mnt.join("importInsert", ".ndjson")
    assert write_stream(path, line("q", "new", n=1) + "\n", append=True) is None
    data = "".join(line("p", "r%04d" % i, n=i) + "\n" for i in range(100))
    e = write_stream(path, data, append=True)
    assert e is not None and e.errno == errno.EEXIST, e
    # the transaction holding the conflict is not applied; the entity kept
    got = {e["RowKey"]: e for e in t.list_entities()}
    assert sorted(got) == ["new", "r0050"] and got["r0050"]["old"] == 1
    assert "line 51" in mnt.stderr()
    # with '>' the same lines replace it
    assert write_stream(path, data) is None
    assert len(list(t.query_entities("PartitionKey eq 'p'"))) == 100


def test_shell_redirections_and_tools(sdk, seed, mnt):
    t = seed.table(sdk, "importTools")
    src = mnt.join(SRC, "US", ".ndjson")
    dst = mnt.join("importTools", ".ndjson")
    for cmd in ("cat %s > %s" % (src, dst), "cp %s %s" % (src, dst),
                "dd if=%s of=%s bs=1000 status=none" % (src, dst),
                "gzip -c < %s | gzip -dc > %s" % (src, dst)):
        t.delete_table()
        t.create_table()
        rc, err = shell(cmd)
        assert rc == 0, (cmd, err)
        assert len(list(t.list_entities())) == 40, cmd


def test_partition_stream_takes_its_partition_only(sdk, seed, mnt):
    t = seed.table(sdk, "importPart")
    seed.insert(t, [{"PartitionKey": "EU", "RowKey": "seed"}])
    path = mnt.join("importPart", "EU", ".ndjson")
    # lines without a PartitionKey are the partition's; a last line needs no newline
    data = '{"RowKey": "a", "n": 1}\n' + line("EU", "b", n=2) + "\n" + '{"RowKey": "c"}'
    assert write_stream(path, data) is None
    assert sorted(e["RowKey"] for e in t.list_entities()) == ["a", "b", "c", "seed"]
    e = write_stream(path, line("EU", "d") + "\n" + line("US", "e") + "\n")
    assert e is not None and e.errno == errno.EINVAL
    assert "line 2: PartitionKey 'US' is not this partition's" in mnt.stderr()
    assert sorted(e["RowKey"] for e in t.list_entities()) == ["a", "b", "c", "d", "seed"]


def test_long_form_partition_stream(sdk, seed, mnt):
    pk = "L" * 300           # longer than a file name: a long-form directory name
    t = seed.table(sdk, "importLong")
    seed.insert(t, [{"PartitionKey": pk, "RowKey": "seed"}])
    path = mnt.join("importLong", dir_name(pk), ".ndjson")
    assert write_stream(path, line(pk, "a", n=1) + "\n") is None
    assert sorted(e["RowKey"] for e in t.list_entities()) == ["a", "seed"]
    assert write_stream(path, '{"RowKey": "b"}\n') is None     # the partition's own
    assert sorted(e["RowKey"] for e in t.list_entities()) == ["a", "b", "seed"]
    e = write_stream(path, '{"RowKey": "c"}\n' + line(pk[:-1], "d") + "\n")
    assert e is not None and e.errno == errno.EINVAL
    assert "line 2: PartitionKey '%s' is not this partition's" % pk[:80] in mnt.stderr()


def test_a_key_named_twice_ends_as_its_last_line(sdk, seed, mnt):
    t = seed.table(sdk, "importTwice")
    lines = [line("p", "r%03d" % (i % 150), n=i) for i in range(450)]
    assert write_stream(mnt.join("importTwice", ".ndjson"), "\n".join(lines) + "\n") is None
    got = {e["RowKey"]: e["n"] for e in t.list_entities()}
    assert got == {"r%03d" % j: 300 + j for j in range(150)}


def test_the_mount_shows_what_was_imported(sdk, seed, mnt):
    t = seed.table(sdk, "importShown")
    seed.insert(t, [{"PartitionKey": "p", "RowKey": "a", "n": 1}])
    with open(mnt.join("importShown", "p", "a.json")) as f:     # now cached
        assert json.load(f)["n"] == 1
    assert os.listdir(mnt.join("importShown")) == ["p"]
    assert write_stream(mnt.join("importShown", ".ndjson"),
                        line("p", "a", n=2) + "\n" + line("q", "b", n=3) + "\n") is None
    with open(mnt.join("importShown", "p", "a.json")) as f:
        assert json.load(f)["n"] == 2
    assert sorted(os.listdir(mnt.join("importShown"))) == ["p", "q"]


def test_refusals(sdk, seed, src, mnt):
    view = mnt.join(SRC, ".where", "n eq 1", ".ndjson")
    with pytest.raises(OSError) as e:
        os.open(view, os.O_WRONLY)
    assert e.value.errno == errno.EROFS
    with pytest.raises(OSError) as e:
        os.open(mnt.join(SRC, ".ndjson"), os.O_RDWR)
    assert e.value.errno == errno.EINVAL
    t = seed.table(sdk, "importRefuse")
    for bad, why in (("[1, 2]", "one JSON object"), ('{"RowKey": "a"}', "no PartitionKey"),
                     ('{"PartitionKey": "a"}', "no RowKey"),
                     (line("a/b", "r"), "a key the service refuses"),
                     (line("p", "r", **{"x@odata.type": "Edm.Int64", "x": "z"}), "Int64")):
        e = write_stream(mnt.join("importRefuse", ".ndjson"), line("p", "ok") + "\n" + bad + "\n")
        assert e is not None and e.errno == errno.EINVAL, bad
        log = mnt.stderr().splitlines()[-3:]
        assert any("line 2: " in l and why in l for l in log), (why, log)
    assert [e["RowKey"] for e in t.list_entities()] == ["ok"]
    e = write_stream(mnt.join("importRefuse", ".ndjson"),
                     line("p", "ok2") + "\n" + line("p", "big", s="x" * (5 << 20)) + "\n")
    assert e is not None and e.errno == errno.EINVAL
    assert "line 2: longer than 4194304 bytes" in mnt.stderr()
    assert sorted(e["RowKey"] for e in t.list_entities()) == ["ok", "ok2"]


def test_blank_lines_and_writes_out_of_order(sdk, seed, mnt):
    t = seed.table(sdk, "importOrder")
    path = mnt.join("importOrder", ".ndjson")
    assert write_stream(path, "\n  \n" + line("p", "a") + "\n\n" + line("p", "b") + "\n\n") is None
    assert sorted(e["RowKey"] for e in t.list_entities()) == ["a", "b"]
    fd = os.open(path, os.O_WRONLY)
    try:
        with pytest.raises(OSError) as e:
            os.pwrite(fd, (line("p", "c") + "\n").encode(), 100)
        assert e.value.errno == errno.ESPIPE
    finally:
        os.close(fd)
    assert "a write at offset 100, not at 0" in mnt.stderr()


BIG_N = 100000
BIG_PARTS = 100
ODD_RKS = ["%", " a b ", ".hidden", "it's", "ü😀日本", "q\"uote", "x" * 200, "~!@$^&*()"]


def big_line(i):
    """Entity I of the 100,000: every Edm type, odd keys among them."""
    pk = "part %02d é" % (i % BIG_PARTS) if i % BIG_PARTS else "%"
    rk = ODD_RKS[i % len(ODD_RKS)] + "%06d" % i if i % 13 == 0 else "r%06d" % i
    doc = {"PartitionKey": pk, "RowKey": rk, "s": "text %d \"q\" \\ é\n" % i, "i32": i - 50000,
           "i64": str(2 ** 53 + i), "i64@odata.type": "Edm.Int64",
           "dbl": i / 7.0, "dbl@odata.type": "Edm.Double", "b": i % 2 == 0,
           "dt": "2024-%02d-%02dT01:02:03.%03dZ" % (i % 12 + 1, i % 28 + 1, i % 1000),
           "dt@odata.type": "Edm.DateTime",
           "g": "%08x-0000-4000-8000-%012x" % (i, i), "g@odata.type": "Edm.Guid",
           "bin": base64.b64encode(i.to_bytes(4, "big") + b"\xff\x00").decode(),
           "bin@odata.type": "Edm.Binary"}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def expected(text):
    """The typed entity (sdk_values.typed) the SDK should read back for TEXT."""
    from azure.data.tables import EdmType, EntityProperty
    doc = json.loads(text)
    out = {"PartitionKey": ("Edm.String", doc["PartitionKey"]),
           "RowKey": ("Edm.String", doc["RowKey"])}
    conv = {"Edm.Int64": lambda v: EntityProperty(int(v), EdmType.INT64),
            "Edm.Double": lambda v: float(v),
            "Edm.DateTime": lambda v: datetime.datetime.fromisoformat(v.replace("Z", "+00:00")),
            "Edm.Guid": uuid.UUID, "Edm.Binary": base64.b64decode}
    for k, v in doc.items():
        if k in ("PartitionKey", "RowKey") or "@" in k:
            continue
        edm = doc.get(k + "@odata.type")
        out.update(typed({k: conv[edm](v) if edm else v}))
    return out


@pytest.mark.heavy
@pytest.mark.azurite_only(reason="the Cosmos model reads a query's whole answer set from "
                          "Azurite each time: 100,000 entities exported through it take "
                          "longer than the test's time limit")
def test_round_trip_100000(sdk, seed, mnt, tmp_path):
    """A file of 100,000 entities (every type, odd keys, 100 partitions,
    their lines interleaved) imported; that table exported and imported
    into another: the SDK reads the file's entities back from the copy,
    value for value, type for type."""
    seed.table(sdk, "importBigA")
    b = seed.table(sdk, "importBigB")
    src = tmp_path / "big.ndjson"
    lines = [big_line(i) for i in range(BIG_N)]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rc, err = shell("cat %s > %s/importBigA/.ndjson" % (src, mnt))
    assert rc == 0, err
    rc, err = shell("cat %s/importBigA/.ndjson > %s/importBigB/.ndjson" % (mnt, mnt))
    assert rc == 0, err
    want = {}
    for text in lines:
        e = expected(text)
        want[(e["PartitionKey"][1], e["RowKey"][1])] = e
    got = table_typed(b)     # A is what B was exported from: B holds any change A made
    for e in got.values():
        e.pop("Timestamp", None)
    assert len(got) == BIG_N
    assert got == want


def test_many_partitions_interleaved(sdk, seed, mnt):
    """Lines of 1,100 partitions interleaved, 6 KiB each: more partitions
    than the 1,024 transactions filled at once, and more than the 16 MiB of
    lines held, so the fullest is sent early either way; every entity
    arrives once, with its value."""
    t = seed.table(sdk, "importMany")
    parts, rounds = 1100, 3
    pad = "x" * 6000
    lines = [line("p%04d" % p, "r%d" % r, n=r * parts + p, pad=pad)
             for r in range(rounds) for p in range(parts)]
    r0 = json.loads(os.getxattr(str(mnt), "user.aztfs.stats"))["requests"]
    assert write_stream(mnt.join("importMany", ".ndjson"), "\n".join(lines) + "\n") is None
    sent = json.loads(os.getxattr(str(mnt), "user.aztfs.stats"))["requests"] - r0
    got = sorted(e["n"] for e in t.list_entities(select=["n"]))
    assert got == list(range(parts * rounds))
    # one transaction a partition if nothing were sent early; each early one adds one
    assert parts < sent <= parts * rounds + 5, sent


WRITER = r'''
import os, signal, sys
signal.signal(signal.SIGALRM, lambda *a: None)
signal.setitimer(signal.ITIMER_REAL, 0.005, 0.005)
data = sys.stdin.buffer.read()
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
done = short = 0
while done < len(data):
    n = os.write(fd, data[done:done + 65536])
    short += n < min(65536, len(data) - done)
    done += n
os.close(fd)
signal.setitimer(signal.ITIMER_REAL, 0)
print(short)
'''


def test_interrupted_writes_take_each_line_once(sdk, seed, mounter, azurite):
    """A writer whose writes keep being interrupted by a signal (a handler,
    so they go on) while they wait for room: each interrupted write is cut
    short after the lines it took, none is taken twice (>> inserts: a line
    taken twice would fail the close with EEXIST), none is lost."""
    t = seed.table(sdk, "importIntr")
    px = FaultProxy(azurite.port, rate=0.0, delay=0.1)
    px.start()
    try:
        # the writer waits for room once 1 MiB of lines (the cache's size)
        # is queued: 6 MiB of them; without a spool, which would take them
        m = mounter.mount(conn_str=conn_str_for(px.port),
                          options=["-o", "scan_parallel=1,cache_size=1,spool_dir=none"])
        data = "".join(line("p%d" % (i // 500), "r%05d" % i, n=i, pad="y" * 2000) + "\n"
                       for i in range(3000))
        p = subprocess.run([sys.executable, "-c", WRITER, m.join("importIntr", ".ndjson")],
                           input=data.encode(), capture_output=True, timeout=300)
    finally:
        px.stop()
    assert p.returncode == 0, p.stderr.decode()[-3000:] + m.stderr()[-3000:]
    assert int(p.stdout) > 0          # the signals did cut writes short
    assert sorted(e["n"] for e in t.list_entities(select=["n"])) == list(range(3000))


def test_an_import_past_memory_reads_ahead_on_disk(sdk, seed, mounter, azurite, tmp_path):
    """An input in partition order holding more than the memory given the
    mount (-o cache_size=1): the writer reads ahead into the spool (-o
    spool_dir=) instead of waiting for the senders, the log says how much
    went through it, every entity arrives with its value, and nothing is
    left in the spool's directory."""
    t = seed.table(sdk, "importSpool")
    spool = tmp_path / "spool"
    spool.mkdir()
    px = FaultProxy(azurite.port, rate=0.0, delay=0.2)  # senders slower than any writer
    px.start()
    try:
        m = mounter.mount(conn_str=conn_str_for(px.port),
                          options=["-o", "cache_size=1,spool_dir=%s" % spool])
        data = "".join(line("p%d" % (i // 600), "r%05d" % i, n=i, pad="z" * 1000) + "\n"
                       for i in range(4800))
        e = write_stream(m.join("importSpool", ".ndjson"), data)
        pattern = r"insert or replace; (\d+) of them through the spool, ([0-9.]+) MiB"
        for _ in range(100):  # the release, which logs the stream's end, follows the close
            log = m.stderr()
            spooled = re.search(pattern, log)
            if spooled:
                break
            time.sleep(0.1)
    finally:
        px.stop()
    assert e is None, (e, log[-3000:])
    assert "the rest waits in a spool in %s" % spool in log, log[-3000:]
    assert spooled and int(spooled.group(1)) >= 10, log[-3000:]
    assert os.listdir(spool) == []
    assert sorted(x["n"] for x in t.list_entities(select=["n"])) == list(range(4800))


def test_a_spool_dir_that_is_not_a_directory_is_refused(azurite, aztfs_run, tmp_path):
    res = aztfs_run(["-f", "-o", "spool_dir=%s" % (tmp_path / "missing"), str(tmp_path)],
                    aztfs_env(azurite.conn_str))
    assert res.returncode != 0, res
    assert "spool_dir '%s' is not a directory" % (tmp_path / "missing") in res.stderr, res


def test_lost_answers_insert_each_entity_once(sdk, seed, mounter, azurite):
    """Half of the transactions are applied and their answer lost (reset or
    503 after the service applied them): each is settled by reading its
    entities back, so >> (Insert) ends with no false EEXIST and every
    entity once. The 503s slow the mount's reads (shared backoff), so the
    reads of a transaction's 100 entities take seconds: the window they
    are judged by is the send's, not one that moves with them."""
    t = seed.table(sdk, "importLost")
    px = FaultProxy(azurite.port, rate=0.0, seed=20261125)
    px.start()
    try:
        m = mounter.mount(conn_str=conn_str_for(px.port),
                          options=["-o", "timeout=5,retries=6"])
        os.stat(m.join("importLost"))
        px.set_faults(rate=0.5, kinds=["reset_after", "503_after"], methods=["POST"])
        data = "".join(line("p%d" % (i % 3), "r%05d" % i, n=i) + "\n" for i in range(300))
        e = write_stream(m.join("importLost", ".ndjson"), data, append=True)
        injected = px.counts()
        px.set_faults(rate=0.0)
    finally:
        px.stop()
    assert e is None, (e, m.stderr()[-3000:])
    assert sorted(x["n"] for x in t.list_entities(select=["n"])) == list(range(300))
    assert injected.get("reset_after", 0) + injected.get("503_after", 0) >= 1, injected
    assert "already holds" in m.stderr()


@pytest.mark.azurite_only(reason="the proxy's 503s stand in for Azure Storage's")
def test_only_busy_answers_slow_a_partition(sdk, seed, mounter, azurite):
    """A 503 whose code is ServerBusy (Azure's "The server is busy", its
    answer past a partition's or the account's target) holds the
    partition to a learned rate (issue 43); a 503 with another code is the
    service failing, not its rate: retried after its backoff, it slows no
    partition (issue 46, finding 7). Told by the mount's log, and every
    entity arrives either way."""
    t = seed.table(sdk, "importBusy")
    data = "".join(line("p%d" % (i % 2), "r%05d" % i, n=i) + "\n" for i in range(1000))
    px = FaultProxy(azurite.port, rate=0.0, seed=43)
    px.start()
    try:
        m = mounter.mount(conn_str=conn_str_for(px.port))
        os.stat(m.join("importBusy"))
        px.set_faults(rate=0.3, kinds=["503"], methods=["POST"])   # InjectedFault
        e1 = write_stream(m.join("importBusy", ".ndjson"), data)
        refused = px.counts().get("503", 0)
        log1 = m.stderr()
        px.set_faults(rate=0.0)
        px.throttle(2)                     # ServerBusy past 2 requests a second
        e2 = write_stream(m.join("importBusy", ".ndjson"), data)
        throttled = px.counts().get("throttled", 0)
        log2 = m.stderr()[len(log1):]
    finally:
        px.stop()
    assert e1 is None and e2 is None, (e1, e2, m.stderr()[-3000:])
    assert refused >= 1 and throttled >= 1, px.counts()
    assert "throttled: " not in log1, log1[-3000:]
    assert "partition 'importBusy" in log2 and "throttled: " in log2, log2[-3000:]
    assert sorted(x["n"] for x in t.list_entities(select=["n"])) == list(range(1000))


@pytest.mark.azurite_only(reason="the model stands in front of Azurite")
@pytest.mark.parametrize("limited", ["account", "partition"])
def test_a_refusal_slows_the_rate_it_names(sdk, seed, mounter, azurite, limited):
    """Azure's ServerBusy says which target a request went past: "The
    server is busy." a partition's, "Operations per second is over the
    account limit." the account's (bench/limitmodel.py answers as Azure
    does). The mount cuts the rate the answer names and no other (issue
    43), and every entity arrives. Rates of a few hundred entities a
    second, so the import of 4 partitions of 300 meets the one limited."""
    sys.path.insert(0, str(ROOT / "bench"))
    from limitmodel import LimitModel
    t = seed.table(sdk, "importNames" + limited)
    rates = ({"account_rate": 300, "partition_rate": 100000} if limited == "account"
             else {"account_rate": 100000, "partition_rate": 150})
    data = "".join(line("p%d" % (i % 4), "r%05d" % i, n=i) + "\n" for i in range(1200))
    lm = LimitModel(upstream_port=azurite.port, **rates).start()
    try:
        m = mounter.mount(conn_str=conn_str_for(lm.port))
        os.stat(m.join(t.table_name))
        mark = lm.mark()
        e = write_stream(m.join(t.table_name, ".ndjson"), data)
        win = lm.window(mark)
        log = m.stderr()
    finally:
        lm.stop()
    assert e is None, (e, log[-3000:])
    assert win["busy_" + limited] >= 1, win
    if limited == "account":
        assert "account throttled: " in log, log[-3000:]
        assert "partition '" not in log, log[-3000:]
    else:
        assert "partition '%s" % t.table_name in log, log[-3000:]
        assert "account throttled" not in log, log[-3000:]
    assert sorted(x["n"] for x in t.list_entities(select=["n"])) == list(range(1200))


FAULT_N, FAULT_PARTS = 8000, 4      # 80 transactions of 100


def fault_pk(i):
    return "p%d" % (i // (FAULT_N // FAULT_PARTS))


@pytest.mark.parametrize("mode", [">", ">>"])
@pytest.mark.parametrize("kinds", [["503"], ["503_after", "reset_after"]], ids=["503", "after"])
def test_faults_cost_only_their_retries(sdk, seed, mounter, azurite, mode, kinds):
    """A tenth of the requests refused with 503 before the service sees
    them, or applied and their answer lost (503 or a reset after): every
    entity ends exactly as its line says, each once (>>: no false EEXIST),
    and each fault costs the request it spoiled one more send, not a
    slowdown of every request nor a read of each entity of a transaction
    (> is Insert Or Replace: sent again as it is). >> still checks what a
    lost Insert did, with one query of the transaction's keys."""
    name = "imp503%s%s" % ("I" if mode == ">>" else "U", kinds[0].replace("_", ""))
    t = seed.table(sdk, name)
    if mode == ">":     # old values of every other entity, for the import to replace
        seed.insert(t, [{"PartitionKey": fault_pk(i), "RowKey": "r%05d" % i,
                         "n": -1, "old": "x"} for i in range(0, FAULT_N, 2)])
    px = FaultProxy(azurite.port, rate=0.0, seed=20261128)
    px.start()
    try:
        m = mounter.mount(conn_str=conn_str_for(px.port))
        os.stat(m.join(name))
        data = "".join(line(fault_pk(i), "r%05d" % i, n=i,
                            s="v%d" % i) + "\n" for i in range(FAULT_N))
        before = px.counts()
        px.set_faults(rate=0.1, kinds=kinds)
        e = write_stream(m.join(name, ".ndjson"), data, append=mode == ">>")
        after = px.counts()
        px.set_faults(rate=0.0)
    finally:
        px.stop()
    assert e is None, (e, m.stderr()[-3000:])
    got = {}
    for x in t.list_entities():
        got.setdefault((x["PartitionKey"], x["RowKey"]), []).append(typed(x))
    assert len(got) == FAULT_N
    for i in range(FAULT_N):
        key = (fault_pk(i), "r%05d" % i)
        (x,) = got.pop(key)
        x.pop("Timestamp", None)
        assert x == typed(dict(PartitionKey=key[0], RowKey=key[1], n=i, s="v%d" % i)), x
    sent = after.get("requests", 0) - before.get("requests", 0)
    faults = sum(after.get(k, 0) - before.get(k, 0) for k in kinds)
    tx = FAULT_N // 100
    assert faults >= 4, "too few faults to show anything: %s" % after
    # each fault: its request sent again; a lost Insert's check: one query
    # (and a fault of that query, one more)
    bound = tx + faults + 5 if mode == ">" else tx + 2 * faults + 5
    assert sent <= bound, "%d requests for %d transactions and %d faults" % (sent, tx, faults)
    print("%s %s: %d requests, %d transactions, %d faults" % (mode, kinds, sent, tx, faults))


def test_write_behind_changes_go_first(sdk, seed, mounter, tmp_path):
    """With -o writeback (changes held up to a minute), an import sends the
    table's queued changes before its own lines: a file saved a moment
    before and a line of the import for the same entity end as the line
    says, and the saved file's other entity is on the service too."""
    t = seed.table(sdk, "importWb")
    m = mounter.mount(options=["-o", "writeback=60000,journal_dir=%s" % (tmp_path / "j")])
    os.mkdir(m.join("importWb", "p"))
    for rk, n in (("a", 1), ("b", 2)):
        with open(m.join("importWb", "p", rk + ".json"), "w") as f:
            f.write('{"n": %d}\n' % n)
    assert write_stream(m.join("importWb", ".ndjson"), line("p", "a", n=10) + "\n") is None
    got = {e["RowKey"]: e["n"] for e in t.list_entities()}
    assert got == {"a": 10, "b": 2}
    with open(m.join("importWb", "p", "a.json")) as f:
        assert json.load(f)["n"] == 10


def bash(cmd):
    """Run CMD with bash; (exit status, stderr)."""
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=600)
    return p.returncode, p.stderr


PIECES = r'''{ for i in 1 2 3 4 5; do
    echo -n '{"PartitionKey":"p","RowKey":"%s'$i'","at":"'; date +%%s | tr -d '\n'; echo '"}'
  done; } %s %s'''


@pytest.mark.parametrize("redir", [">", ">>"])
def test_a_shell_loop_writes_lines_in_pieces(sdk, seed, mnt, redir):
    """Each line in three pieces from one descriptor the shell holds: the
    exits of date and tr close copies of it (FLUSH) in the middle of a
    line, which is not the stream's end."""
    t = seed.table(sdk, "importPieces")
    rc, err = bash(PIECES % (redir, redir, mnt.join("importPieces", ".ndjson")))
    assert rc == 0, err + mnt.stderr()[-2000:]
    got = {e["RowKey"]: e["at"] for e in t.list_entities()}
    assert sorted(got) == ["%s%d" % (redir, i) for i in range(1, 6)], got
    assert all(v.isdigit() for v in got.values()), got


def test_fsync_and_a_copy_closed_mid_line(sdk, seed, mnt):
    """os.fsync, and a dup of the descriptor closed, inside a line: both
    return the outcome of the lines before it (0) and keep the line; a
    last line without its newline is taken at close."""
    t = seed.table(sdk, "importFsync")
    rc, err = bash(r'''python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"{\"PartitionKey\":\"p\",\"RowKey\":\"a\",\"n\":1}\n{\"PartitionKey\":\"p\",\"Row")
os.fsync(fd)
os.write(fd, b"Key\":\"b\",\"n\":")
os.close(os.dup(fd))
os.write(fd, b"2}\n{\"PartitionKey\":\"p\",\"RowKey\":\"c\",\"n\":3}")
os.fsync(fd)
os.close(fd)
' %s''' % mnt.join("importFsync", ".ndjson"))
    assert rc == 0, err + mnt.stderr()[-2000:]
    assert {e["RowKey"]: e["n"] for e in t.list_entities()} == {"a": 1, "b": 2, "c": 3}


def test_a_key_over_1_kib_is_a_bad_line(sdk, seed, mnt, tmp_path, backend):
    """Line 151 of 300 has a RowKey of 1,100 characters (Storage takes
    1 KiB in UTF-16, Cosmos DB 255 bytes): lines 1-150 are applied and none
    after, the message is whole in the log and user.aztfs.errors, and the
    documented recovery works."""
    t = seed.table(sdk, "importLongKey")
    rows = [line("p", "r%03d" % i, n=i) for i in range(300)]
    rows[150] = line("p", "k" * 1100, n=150)
    f = tmp_path / "t.ndjson"
    f.write_text("\n".join(rows) + "\n")
    rc, err = shell("cat %s > %s" % (f, mnt.join("importLongKey", ".ndjson")))
    assert rc == 1 and "Invalid argument" in err, err
    assert sorted(e["n"] for e in t.list_entities()) == list(range(150))
    if backend.cosmos:
        key = "the RowKey is 1100 bytes, over the 255 Cosmos DB takes"
    else:
        key = ("a key the service refuses: the RowKey is 2200 bytes in UTF-16 (1100 "
               "characters), more than the 1024 it takes")
    why = "line 151: %s; lines 1 to 150 applied, none after" % key
    assert "import /importLongKey/.ndjson failed: EINVAL: " + why in mnt.stderr()
    assert '"message": "%s"' % why in errors_of(mnt)
    rows[150] = line("p", "r150", n=150)
    f.write_text("\n".join(rows) + "\n")
    rc, err = shell("tail -n +151 %s >> %s" % (f, mnt.join("importLongKey", ".ndjson")))
    assert rc == 0, err
    assert sorted(e["n"] for e in t.list_entities()) == list(range(300))


def test_failure_messages_are_whole(sdk, seed, mnt):
    """A refused transaction's message names the entity (keys cut at 80
    bytes) and its lines, whole in the log and user.aztfs.errors; a bad
    first line says that no line was applied."""
    pk, rk = "P" * 90, "R" * 90
    t = seed.table(sdk, "importWhole")
    seed.insert(t, [{"PartitionKey": pk, "RowKey": rk + "07"}])
    data = "".join(line(pk, rk + "%02d" % i) + "\n" for i in range(10))
    e = write_stream(mnt.join("importWhole", ".ndjson"), data, append=True)
    assert e is not None and e.errno == errno.EEXIST, e
    why = ("line 8 (RowKey '%s' of partition '%s'): refused by the service; its transaction "
           "(lines 1 to 10, 10 entities) not applied" % (rk[:80], pk[:80]))
    assert "failed: EEXIST: %s (HTTP 409 EntityAlreadyExists" % why in mnt.stderr()
    assert '"message": "%s"' % why in errors_of(mnt)
    e = write_stream(mnt.join("importWhole", ".ndjson"), '{"RowKey": "x"}\n' + data)
    assert e is not None and e.errno == errno.EINVAL, e
    assert "failed: EINVAL: line 1: no PartitionKey; no line applied" in mnt.stderr()
    assert '"message": "line 1: no PartitionKey; no line applied"' in errors_of(mnt)
    assert [x["RowKey"] for x in t.list_entities()] == [rk + "07"]


# `>>` onto an entity that exists: which tools report the close's EEXIST
# (doc/USAGE.md, "Import"); the line is in $L, the file $F, the stream $S
APPEND_TOOLS = [
    ("cat", 'cat "$F" >> "$S"', True),
    ("gzip -dc", 'gzip -c "$F" | gzip -dc >> "$S"', True),
    ("jq", 'jq -c . "$F" >> "$S"', True),
    ("dd", 'dd if="$F" of="$S" oflag=append conv=notrunc status=none', True),
    ("sed", 'sed -n p "$F" >> "$S"', True),
    ("awk", 'awk 1 "$F" >> "$S"', True),
    ("tee -a", 'tee -a "$S" < "$F" > /dev/null', True),
    ("python with open()", 'python3 -c "import sys\nwith open(sys.argv[1], \'a\') as f: '
                           'f.write(sys.argv[2])" "$S" "$L"', True),
    ("python open() never closed", 'python3 -c "import sys; '
                                   'open(sys.argv[1], \'a\').write(sys.argv[2])" "$S" "$L"',
     False),
    ("echo (shell builtin)", 'echo "$L" >> "$S"', False),
    ("printf (shell builtin)", 'printf "%s\\n" "$L" >> "$S"', False),
    ("python os.write, no close", 'python3 -c "import os, sys; '
                                  'os.write(os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND), '
                                  'sys.argv[2].encode())" "$S" "$L"', False),
]


def test_which_tools_report_a_failed_append(sdk, seed, mnt, tmp_path):
    t = seed.table(sdk, "importTools2")
    seed.insert(t, [{"PartitionKey": "p", "RowKey": "there"}])
    f = tmp_path / "l.ndjson"
    f.write_text(line("p", "there", n=1) + "\n")
    env = dict(os.environ, F=str(f), S=mnt.join("importTools2", ".ndjson"),
               L=line("p", "there", n=1) + "\n")
    got = {}
    for name, cmd, _ in APPEND_TOOLS:
        p = subprocess.run(["bash", "-c", cmd], env=env, capture_output=True, text=True,
                           timeout=60)
        got[name] = p.returncode != 0
    assert got == {name: reports for name, _, reports in APPEND_TOOLS}
    assert [(e["RowKey"], "n" in e) for e in t.list_entities()] == [("there", False)]
