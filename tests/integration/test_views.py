"""Query views (doc/USAGE.md, "Query views"): /t/.where/FILTER/ and
/t/pk/.where/FILTER/ list what the service's $filter returns, cross-checked
against the same filter through the official SDK; .where is hidden from
walks of the table; views are read-only (EROFS, nothing sent); a filter the
service refuses is EINVAL with its message in the log; listing a view costs
the query's pages and nothing per file."""

import datetime
import errno
import json
import math
import os
import time
import uuid

import pytest

from stubtable import StubTable

# Also against the Cosmos DB for Table model (issue 42; conftest.py backend).
pytestmark = pytest.mark.backends

T = "viewsT"
N = 300                 # entities of T, over 3 partitions
PARTS = ["EU", "US", "AP"]
GUIDS = [str(uuid.UUID(int=i * 7919 + 1)) for i in range(N)]


def entity(i):
    from azure.data.tables import EdmType, EntityProperty
    return {"PartitionKey": PARTS[i % 3], "RowKey": "r%04d" % i,
            "Amount": i, "Big": EntityProperty(i * 1_000_000_000 + 5, EdmType.INT64),
            "Status": "failed" if i % 10 == 0 else "ok",
            "Flag": i % 2 == 0, "Price": i / 4.0,
            "When": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
            + datetime.timedelta(hours=i),
            "Id": uuid.UUID(GUIDS[i]), "Note": "it's %d/x" % i}


@pytest.fixture(scope="module")
def seeded(sdk, seed):
    t = seed.table(sdk, T)
    seed.insert(t, [entity(i) for i in range(N)])
    return t


def stats(mnt):
    return json.loads(os.getxattr(str(mnt), "user.aztfs.stats"))


def requests(mnt):
    return stats(mnt)["requests"]


def enc(filter_text):
    """A filter as a directory name: '%' -> %25, '/' -> %2F (doc/NAMES.md)."""
    return filter_text.replace("%", "%25").replace("/", "%2F")


def sdk_keys(table, flt, pk=None):
    if pk is not None:
        flt = "PartitionKey eq '%s' and (%s)" % (pk, flt)
    return sorted((e["PartitionKey"], e["RowKey"]) for e in table.query_entities(flt))


def view_keys(mnt, flt, pk=None):
    if pk is None:
        root = os.path.join(str(mnt), T, ".where", enc(flt))
        return sorted((p, f[:-5]) for p in os.listdir(root)
                      for f in os.listdir(os.path.join(root, p)))
    root = os.path.join(str(mnt), T, pk, ".where", enc(flt))
    return sorted((pk, f[:-5]) for f in os.listdir(root))


FILTERS = [
    "Status eq 'failed'",                                   # string equality
    "Amount gt 100 and Amount le 150",                      # Int32 range
    "Big ge 250000000000L",                                 # Int64
    "Flag eq true and Amount lt 40",                        # boolean
    "Price gt 70.5",                                        # double
    "When ge datetime'2026-01-05T00:00:00Z' and When lt datetime'2026-01-06T00:00:00Z'",
    "Id eq guid'%s'" % GUIDS[42],                           # GUID
    "Status eq 'failed' or Amount eq 7",                    # or
    "not (Amount ge 5)",                                    # not
    "RowKey ge 'r0100' and RowKey lt 'r0120'",              # a key range
    "Note eq 'it''s 12/x'",                                 # a quote and a '/'
    "Amount gt 100000",                                     # nothing matches
]


@pytest.mark.parametrize("flt", FILTERS)
def test_table_view_matches_the_sdk(seeded, module_mounter, flt):
    mnt = module_mounter.mount() if not module_mounter.mounts else module_mounter.mounts[0]
    want = sdk_keys(seeded, flt)
    assert view_keys(mnt, flt) == want
    if flt != "Amount gt 100000":
        assert want, "the filter should match something"


@pytest.mark.parametrize("flt", FILTERS[:4] + [FILTERS[9]])
def test_partition_view_matches_the_sdk(seeded, module_mounter, flt):
    mnt = module_mounter.mount() if not module_mounter.mounts else module_mounter.mounts[0]
    for pk in PARTS:
        assert view_keys(mnt, flt, pk) == sdk_keys(seeded, flt, pk), pk


def test_a_views_partition_looked_up_directly(seeded, mounter):
    """A partition of a table-level view looked up before the view is
    listed: its own query (the filter and its key); a partition the view
    does not hold, or the table lacks, is ENOENT."""
    mnt = mounter.mount()
    flt = "Amount lt 30"
    view = os.path.join(str(mnt), T, ".where", enc(flt))
    want = [k for p, k in sdk_keys(seeded, flt) if p == "US"]
    assert sorted(f[:-5] for f in os.listdir(os.path.join(view, "US"))) == want
    assert not os.path.exists(os.path.join(view, "ZZ"))
    assert not os.path.exists(os.path.join(str(mnt), T, ".where", "Amount gt 100000", "EU"))
    with open(os.path.join(view, "US", want[0] + ".json")) as f:
        assert json.load(f)["RowKey"] == want[0]
    assert not os.path.exists(os.path.join(view, "US", "r9999.json"))
    # the whole view afterwards is still exactly the SDK's
    assert view_keys(mnt, flt) == sdk_keys(seeded, flt)


def test_reading_a_view_gives_the_entity_and_shares_the_cache(seeded, mounter, sh):
    mnt = mounter.mount()
    flt = "Status eq 'failed'"
    view = os.path.join(str(mnt), T, ".where", enc(flt))
    before = requests(mnt)
    r = sh(["grep", "-rl", '"Status": "failed"', view])
    files = sorted(r.lines())
    assert len(files) == len(sdk_keys(seeded, flt))
    listing = requests(mnt) - before
    assert listing == 1, listing           # one page of matches, nothing per file
    for f in files[:5]:
        p, name = f.split(os.sep)[-2:]
        with open(f) as fh:
            doc = json.load(fh)
        assert doc["RowKey"] == name[:-5] and doc["PartitionKey"] == p
        got = seeded.get_entity(p, name[:-5])
        assert doc["Amount"] == got["Amount"]
        # the same bytes under the normal path, served from the cache
        with open(os.path.join(str(mnt), T, p, name)) as fh:
            assert json.load(fh) == doc
        assert os.stat(f).st_size == os.stat(os.path.join(str(mnt), T, p, name)).st_size
    assert requests(mnt) - before == listing, "a read through the view cost a request"


def test_where_is_hidden_but_reachable(seeded, mounter, sh, tmp_path):
    mnt = mounter.mount()
    table = os.path.join(str(mnt), T)
    assert ".where" not in os.listdir(table)
    assert ".where" not in sh.ls(table, "-a")
    assert ".where" not in os.listdir(os.path.join(table, "EU"))
    r = sh(["find", table])
    assert not [l for l in r.lines() if ".where" in l]
    r = sh(["grep", "-rl", "failed", table])
    assert r.lines() and not [l for l in r.lines() if ".where" in l]
    dest = tmp_path / "copy"
    sh(["rsync", "-a", table + "/", str(dest) + "/"])
    assert not (dest / ".where").exists()
    assert sum(len(f) for _, _, f in os.walk(dest)) == N
    # but it is there by name: stat, cd, and an empty listing
    for where in (os.path.join(table, ".where"), os.path.join(table, "EU", ".where")):
        assert os.path.isdir(where)
        assert os.listdir(where) == []
        assert sh("cd '%s' && pwd" % where).stdout.strip() == where
    assert not os.path.exists(os.path.join(str(mnt), "noSuchTable", ".where"))
    # in a partition, ".where" is the views' directory, never a scratch file
    with pytest.raises(OSError) as e:
        open(os.path.join(table, "EU", ".where"), "w")
    assert e.value.errno == errno.EISDIR


def test_changes_in_a_view_are_erofs_and_send_nothing(seeded, mounter, sh):
    mnt = mounter.mount()
    flt = "Status eq 'failed'"
    view = os.path.join(str(mnt), T, ".where", enc(flt))
    pview = os.path.join(str(mnt), T, "EU", ".where", enc(flt))
    first = os.path.join(view, "AP", sorted(os.listdir(os.path.join(view, "AP")))[0])
    pfirst = os.path.join(pview, sorted(os.listdir(pview))[0])
    before = stats(mnt)["requests_by_kind"]
    attempts = [
        lambda: open(first, "w"),
        lambda: open(first, "a"),
        lambda: open(first, "r+"),
        lambda: open(pfirst, "w"),
        lambda: open(os.path.join(view, "AP", "new.json"), "w"),
        lambda: open(os.path.join(pview, "new.json"), "w"),
        lambda: open(os.path.join(view, "AP", "scratch.txt"), "w"),
        lambda: os.unlink(first),
        lambda: os.unlink(pfirst),
        lambda: os.rename(first, os.path.join(view, "AP", "other.json")),
        lambda: os.rename(first, os.path.join(str(mnt), T, "AP", "moved.json")),
        lambda: os.rename(os.path.join(str(mnt), T, "AP", "r0002.json"),
                          os.path.join(view, "AP", "r0002.json")),
        lambda: os.mkdir(os.path.join(view, "NEWP")),
        lambda: os.rmdir(os.path.join(view, "AP")),
        lambda: os.rmdir(view),
        lambda: os.rmdir(os.path.join(str(mnt), T, ".where")),
        lambda: os.truncate(first, 0),
        lambda: os.chmod(first, 0o600),
        lambda: os.utime(first, (0, 0)),
        lambda: os.chown(first, os.getuid(), os.getgid()),
    ]
    for i, attempt in enumerate(attempts):
        with pytest.raises(OSError) as e:
            attempt()
        assert e.value.errno == errno.EROFS, (i, e.value)
    after = stats(mnt)["requests_by_kind"]
    writes = {k: after[k] - before[k] for k in after
              if k not in ("query", "list_tables", "get_entity")}
    assert not any(writes.values()), writes
    assert "a query view is read-only" in mnt.stderr()
    # nothing changed remotely
    assert len(list(seeded.list_entities())) == N
    assert seeded.get_entity("AP", os.path.basename(first)[:-5])["Status"] == "failed"


def test_refused_filter_is_einval_with_the_services_message(seeded, mounter, sh):
    mnt = mounter.mount()
    bad = os.path.join(str(mnt), T, ".where", "Amount eqq 5")
    with pytest.raises(OSError) as e:
        os.listdir(bad)
    assert e.value.errno == errno.EINVAL
    log = [l for l in mnt.stderr().splitlines() if "Amount eqq 5" in l]
    assert len(log) == 1, log               # one line, with the service's answer
    assert "refused the filter" in log[0] and "HTTP 400 InvalidInput" in log[0], log
    with pytest.raises(OSError) as e:
        os.stat(os.path.join(str(mnt), T, "EU", ".where", "startswith(RowKey, 'r')"))
    assert e.value.errno == errno.EINVAL
    # the mount is healthy
    assert view_keys(mnt, "Amount eq 3") == sdk_keys(seeded, "Amount eq 3")


def test_filters_over_the_limits_are_refused_before_sending(seeded, mounter):
    mnt = mounter.mount()
    ok14 = " or ".join("Amount eq %d" % i for i in range(14))
    many = " or ".join("Amount eq %d" % i for i in range(16))
    assert view_keys(mnt, ok14, "EU") == sdk_keys(seeded, ok14, "EU")   # 15 with the scope
    before = requests(mnt)
    for path in (os.path.join(str(mnt), T, ".where", many),
                 os.path.join(str(mnt), T, "EU", ".where",
                              " or ".join("Amount eq %d" % i for i in range(15)))):
        with pytest.raises(OSError) as e:
            os.listdir(path)
        assert e.value.errno == errno.EINVAL
    assert requests(mnt) == before, "a filter over the limits was sent"
    assert "more than 15 comparisons" in mnt.stderr()
    # a '%' not written %25 is no filter name
    with pytest.raises(OSError) as e:
        os.stat(os.path.join(str(mnt), T, ".where", "Note eq '50%'"))
    assert e.value.errno == errno.EINVAL
    assert requests(mnt) == before


@pytest.mark.azurite_only("Cosmos DB answers a Timestamp filter with nothing, and aztfs "
                          "refuses such a view there (test_cosmos.py)")
def test_timestamp_filter_is_an_incremental_backup(seeded, sdk, seed, mounter, sh, tmp_path):
    t = seed.table(sdk, "viewsInc")
    seed.insert(t, [{"PartitionKey": "p%d" % (i % 4), "RowKey": "r%03d" % i, "v": i}
                    for i in range(120)])
    time.sleep(1.2)
    since = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    time.sleep(0.2)
    changed = [("p1", "r005"), ("p2", "r010"), ("p3", "r111")]
    for pk, rk in changed:
        e = t.get_entity(pk, rk)
        e["v"] = -1
        t.update_entity(e)
    mnt = mounter.mount()
    flt = "Timestamp ge datetime'%s'" % since
    dest = tmp_path / "delta"
    sh(["rsync", "-a", os.path.join(str(mnt), "viewsInc", ".where", enc(flt)) + "/",
        str(dest) + "/"])
    got = sorted((d.name, f.name[:-5]) for d in dest.iterdir() for f in d.iterdir())
    assert got == sorted(changed)
    assert got == sorted((e["PartitionKey"], e["RowKey"]) for e in t.query_entities(flt))
    assert json.loads((dest / "p2" / "r010.json").read_text())["v"] == -1


def test_view_listing_costs_the_pages_of_its_matches(sdk, seed, mounter, sh, tmp_path):
    """A 3,000-entity table, a filter matching 1,200: looking the view up and
    listing it costs ceil(1200/1000) = 2 pages (Azurite sends no empty pages: it scans the
    whole table for each page), and grep -r and rsync -a of the view then
    cost nothing per file."""
    t = seed.table(sdk, "viewsBig")
    seed.insert(t, [{"PartitionKey": "p%02d" % (i % 6), "RowKey": "r%05d" % i,
                     "Sel": i % 5 < 2, "v": "value %d" % i} for i in range(3000)])
    mnt = mounter.mount()
    flt = "Sel eq true"
    view = os.path.join(str(mnt), "viewsBig", ".where", enc(flt))
    before = stats(mnt)
    # the lookup asks for the first page only (the service's verdict on the
    # filter); the listing that follows streams on from the second
    assert os.path.isdir(view)
    assert requests(mnt) - before["requests"] == 1
    r = sh(["find", view, "-type", "f"])
    assert len(r.lines()) == 1200
    mid = stats(mnt)
    assert mid["requests"] - before["requests"] == math.ceil(1200 / 1000)
    assert mid["requests_by_kind"]["get_entity"] == before["requests_by_kind"]["get_entity"]
    sh(["grep", "-rq", "value 2996", view])
    sh(["rsync", "-a", view + "/", str(tmp_path / "out") + "/"])
    assert sum(len(f) for _, _, f in os.walk(tmp_path / "out")) == 1200
    assert stats(mnt)["requests"] == mid["requests"], "grep/rsync of the view cost requests"


class Sparse(StubTable):
    """A stub Table endpoint on 127.0.0.1 for what Azurite never does: a
    selective filter answered with pages without an entity but with a
    continuation (the service does that while it looks through a big
    table). Query Tables names the table "sparse"; entity queries get
    EMPTY1 empty pages, a page of two entities, EMPTY2 empty pages, then a
    last page of one entity. Each entity query's $filter is recorded."""

    EMPTY1, EMPTY2 = 150, 30     # more in a row than TABLE_MAX_EMPTY_PAGES (100)

    def __init__(self, empty1=None, delay=0.0):
        self.EMPTY1 = empty1 if empty1 is not None else Sparse.EMPTY1
        super().__init__("sparse", delay)

    @staticmethod
    def ent(rk):
        return {"odata.etag": "W/\"datetime'2026-11-22T08%3A26%3A34.91Z'\"",
                "PartitionKey": "p", "RowKey": rk,
                "Timestamp": "2026-11-22T08:26:34.91Z", "v": 1}

    def page(self, n, query):
        last = self.EMPTY1 + 1 + self.EMPTY2 + 1
        rows = ([self.ent("r1"), self.ent("r2")] if n == self.EMPTY1 + 1 else
                [self.ent("r3")] if n == last else [])
        return rows, n < last


def test_a_view_keeps_going_through_empty_pages(mounter):
    from conftest import conn_str_for
    srv = Sparse()
    try:
        m = mounter.mount(conn_str=conn_str_for(srv.port))
        before = requests(m)
        view = os.path.join(str(m), "sparse", ".where", "v eq 1")
        assert os.path.isdir(view)
        assert requests(m) - before == 1       # the lookup: the first page only
        assert os.listdir(view) == ["p"]
        assert sorted(os.listdir(os.path.join(view, "p"))) == ["r1.json", "r2.json",
                                                                "r3.json"]
        pages = Sparse.EMPTY1 + 1 + Sparse.EMPTY2 + 1
        # ceil(3 / 1000) pages of matches + the empty pages, nothing more
        assert requests(m) - before == pages == len(srv.filters)
        assert set(srv.filters) == {"v eq 1"}
        with open(os.path.join(view, "p", "r2.json")) as f:
            assert json.load(f)["RowKey"] == "r2"
        assert requests(m) - before == pages, "the read was not served from the listing"
        # the partition form adds the key to the filter
        srv.filters.clear()
        assert sorted(os.listdir(os.path.join(str(m), "sparse", "p", ".where",
                                              "v eq 1"))) == ["r1.json", "r2.json", "r3.json"]
        assert set(srv.filters) == {"PartitionKey eq 'p' and (v eq 1)"}
    finally:
        srv.close()


def test_views_without_a_cache(seeded, mounter):
    """-o cache_timeout=0 keeps no listing: a view is asked again for each
    look, and still shows exactly the SDK's entities and their contents."""
    mnt = mounter.mount(options=["-o", "cache_timeout=0"])
    flt = "Status eq 'failed'"
    assert view_keys(mnt, flt) == sdk_keys(seeded, flt)
    assert view_keys(mnt, flt, "US") == sdk_keys(seeded, flt, "US")
    pk, rk = sdk_keys(seeded, flt, "US")[0]
    with open(os.path.join(str(mnt), T, "US", ".where", enc(flt), rk + ".json")) as f:
        assert json.load(f)["Amount"] == seeded.get_entity(pk, rk)["Amount"]


def test_usage_recipes(seeded, mounter, sh, tmp_path):
    """The shapes of doc/USAGE.md's recipes, run by the shell as written
    there (the filter in double quotes), checked against the SDK."""
    mnt = mounter.mount()
    t = os.path.join(str(mnt), T)
    # key range of one partition, copied with cp -r
    flt = "RowKey ge 'r0100' and RowKey lt 'r0130'"
    sh('cp -r "%s/EU/.where/%s" "%s/range"' % (t, flt, tmp_path))
    assert sorted(f[:-5] for f in os.listdir(tmp_path / "range")) == \
        [k for _, k in sdk_keys(seeded, flt, "EU")]
    # a property slice with ls
    flt = "Status eq 'failed' and Amount gt 100"
    r = sh('ls "%s/.where/%s"/*/' % (t, flt))
    assert sorted(l for l in r.lines() if l.endswith(".json")) == \
        sorted(k + ".json" for _, k in sdk_keys(seeded, flt))
    # grep in a slice
    r = sh('grep -rl "failed" "%s/.where/Amount lt 50/"' % t)
    assert len(r.lines()) == len(sdk_keys(seeded, "Amount lt 50 and Status eq 'failed'"))
    # counting with find | wc -l
    flt = "When ge datetime'2026-01-05T00:00:00Z'"
    r = sh('find "%s/.where/%s" -type f | wc -l' % (t, flt))
    assert int(r.stdout.strip()) == len(sdk_keys(seeded, flt))


def test_views_listed_and_read_at_once(seeded, mounter):
    """Eight threads at once looking up, listing and reading the same views
    and different ones: every answer is the SDK's (the table of views under
    way is shared by all the mount's threads)."""
    import threading
    mnt = mounter.mount()
    flts = ["Amount lt %d" % n for n in (20, 40, 60, 80)]
    want = {f: sdk_keys(seeded, f) for f in flts}
    errors = []

    def work(i):
        try:
            for j in range(6):
                f = flts[(i + j) % len(flts)]
                got = view_keys(mnt, f)
                assert got == want[f], f
                p, k = got[j % len(got)]
                with open(os.path.join(str(mnt), T, ".where", enc(f), p, k + ".json")) as fh:
                    assert json.load(fh)["RowKey"] == k
        except Exception as e:          # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


def test_an_endless_view_stops_when_its_reader_is_killed(mounter):
    """A view follows empty pages however many come; what stops a server
    that never ends them is the reader going away: ls killed, the daemon
    sends nothing more and goes on serving."""
    import subprocess
    from conftest import conn_str_for
    srv = Sparse(empty1=10 ** 9, delay=0.1)
    try:
        m = mounter.mount(conn_str=conn_str_for(srv.port))
        view = os.path.join(str(m), "sparse", ".where", "v eq 1")
        ls = subprocess.Popen(["ls", view], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        time.sleep(2.0)
        assert ls.poll() is None and len(srv.filters) >= 5
        t0 = time.monotonic()
        ls.kill()
        ls.wait(timeout=10)
        assert time.monotonic() - t0 < 3, "ls stayed in D state after SIGKILL"
        time.sleep(0.6)                 # one page in flight may finish
        before = len(srv.filters)
        time.sleep(1.0)
        assert len(srv.filters) == before, "the daemon kept listing for a reader that is gone"
        assert os.listdir(str(m)) == ["sparse"]
    finally:
        srv.close()


# Filters that would reach outside "PartitionKey eq 'EU' and (FILTER)": a
# ')' that closes the scope's group, the same hidden from a count of
# parentheses that ignores literals, and a literal left open by a doubled
# quote. Each lists the whole table when sent in the partition form.
ESCAPES = ["true) or (true",
           "Status ne '(') or (RowKey ne ')'",
           "Note eq 'x'' ) or (true"]


@pytest.mark.parametrize("flt", ESCAPES)
def test_a_partitions_view_cannot_reach_outside_it(seeded, mounter, sh, flt):
    """doc/USAGE.md, "Query views": a filter whose parentheses do not
    balance outside its literals, or with a literal left open, is refused
    with EINVAL and a log line before anything is sent, in the partition
    form (where it would list the other partitions) and the table form."""
    mnt = mounter.mount()
    assert "EU" in os.listdir(os.path.join(str(mnt), T))   # the table and EU are known
    before = requests(mnt)
    view = os.path.join(str(mnt), T, "EU", ".where", enc(flt))
    r = sh(["ls", view + "/"], check=False)
    assert r.returncode != 0 and "Invalid argument" in r.stderr, r
    assert r.lines() == [], r               # nothing listed, of any partition
    for path in (view, os.path.join(str(mnt), T, ".where", enc(flt)),
                 os.path.join(str(mnt), T, ".where", enc(flt), "EU")):
        with pytest.raises(OSError) as e:
            os.listdir(path)
        assert e.value.errno == errno.EINVAL, path
    assert requests(mnt) == before, "a filter that escapes its scope was sent"
    log = [l for l in mnt.stderr().splitlines() if "query view" in l]
    assert log and all("parentheses do not balance" in l or "closing quote" in l
                       for l in log), log
    # the mount goes on: the partition's own views still list it alone
    assert view_keys(mnt, "Amount lt 30", "EU") == sdk_keys(seeded, "Amount lt 30", "EU")


class Leaky(StubTable):
    """A stub service that answers every query for one partition, whatever
    its $filter, with entities of partitions "p" and "q": what a service
    that evaluated a partition's filter wrongly would send. A query of the
    whole table gets pages without an entity that never end, so that a
    table-level view's partition is asked for with its own query."""

    def __init__(self):
        super().__init__("leaky")

    @staticmethod
    def ent(pk, rk):
        return {"odata.etag": "W/\"datetime'2026-11-22T08%3A26%3A34.91Z'\"",
                "PartitionKey": pk, "RowKey": rk,
                "Timestamp": "2026-11-22T08:26:34.91Z", "v": 1}

    def page(self, n, query):
        if not query.get("$filter", [""])[0].startswith("PartitionKey eq "):
            return [], True
        return [self.ent("p", "r1"), self.ent("p", "r2"), self.ent("q", "r3"),
                self.ent("q", "r4")], False


def test_a_partitions_view_lists_its_partition_only(mounter):
    """Defence in depth: an entity of another partition in the answer to a
    partition's view is dropped and logged, never listed nor cached, in
    both partition forms (/t/p/.where/F and /t/.where/F/p)."""
    from conftest import conn_str_for
    srv = Leaky()
    try:
        m = mounter.mount(conn_str=conn_str_for(srv.port))
        for view in (os.path.join(str(m), "leaky", "p", ".where", "v eq 1"),
                     os.path.join(str(m), "leaky", ".where", "v eq 1", "p")):
            assert sorted(os.listdir(view)) == ["r1.json", "r2.json"], view
            assert not os.path.exists(os.path.join(view, "r3.json"))
            with open(os.path.join(view, "r2.json")) as f:
                assert json.load(f)["PartitionKey"] == "p"
        log = [l for l in m.stderr().splitlines() if "outside the view's partition" in l]
        assert len(log) == 2 and all("2 entities" in l and "'q'" in l for l in log), log
    finally:
        srv.close()
