"""A good citizen of a shared account (doc/USAGE.md, "Request rate"): with
`-o max_rps=N` the mount starts at most N requests a second, all its threads
together; when the service throttles (503 ServerBusy, Retry-After), the
whole mount slows down to what the service serves, not only the request
that was refused, and no read or acknowledged write fails.

The service here is tests/faultproxy.py in front of Azurite, counting every
request it receives and, in the second test, answering 503 ServerBusy with
"Retry-After: 1" past 60 requests served in the last second."""

import json
import os
import subprocess
import threading
import time

import pytest

from harness import FaultProxy, conn_str_for

T = "paceT"
N = 60                              # entities, 3 partitions
CAP = 40                            # -o max_rps of the first test
LIMIT = 60                          # the throttling service's rate
OPTS = "cache_timeout=0,scan_parallel=8"  # every open asks the service


@pytest.fixture(scope="module")
def table(sdk, seed):
    t = seed.table(sdk, T)
    seed.insert(t, [{"PartitionKey": "p%d" % (i % 3), "RowKey": "r%04d" % i, "v": i}
                    for i in range(N)])
    return t


@pytest.fixture
def proxy(azurite):
    px = FaultProxy(azurite.port, rate=0.0)
    px.start()
    yield px
    px.stop()


def most_in_one_second(times):
    """The most of TIMES (sorted) inside any window of one second."""
    best, j = 0, 0
    for i, t in enumerate(times):
        while times[j] <= t - 1.0:
            j += 1
        best = max(best, i - j + 1)
    return best


def walk(mnt, writes, tag):
    """Eight readers cat every entity while a writer saves WRITES new ones
    (one file each, closed: acknowledged). Returns (cat's exit status and
    stderr, the names written, seconds taken)."""
    root = os.path.join(str(mnt), T)
    written = []

    def writer():
        for i in range(writes):
            name = "w-%s-%03d" % (tag, i)
            with open(os.path.join(root, "p0", name + ".json"), "w") as f:
                f.write(json.dumps({"v": i}))
            written.append(name)

    t0 = time.monotonic()
    th = threading.Thread(target=writer)
    th.start()
    r = subprocess.run("find '%s' -type f -name 'r*.json' -print0 | xargs -0 -P8 -n5 cat "
                       "> /dev/null" % root, shell=True, capture_output=True, text=True,
                       timeout=300)
    th.join(300)
    return r, written, time.monotonic() - t0


def test_max_rps_caps_every_thread_together(table, mounter, proxy, sdk):
    free = mounter.mount(conn_str=conn_str_for(proxy.port), options=["-o", OPTS])
    start = len(proxy.arrivals())
    r, _, took_free = walk(free, 0, "free")
    assert r.returncode == 0, r.stderr
    uncapped = most_in_one_second(proxy.arrivals()[start:])
    free.unmount()
    assert uncapped > 2 * CAP, "the walk is too light to show a cap: %d/s" % uncapped

    mnt = mounter.mount(conn_str=conn_str_for(proxy.port),
                        options=["-o", "%s,max_rps=%d" % (OPTS, CAP)])
    start = len(proxy.arrivals())
    r, written, took = walk(mnt, 20, "cap")
    times = proxy.arrivals()[start:]
    assert r.returncode == 0, r.stderr
    assert len(written) == 20
    sent = len(times)
    assert sent >= N
    most = most_in_one_second(times)
    # starts are spaced 1000/CAP ms; the proxy sees them a little jittered
    assert most <= CAP + max(2, CAP // 10), "%d requests within one second, cap %d" % (
        most, CAP)
    assert most >= CAP * 0.7, "never near the cap (%d/s): the test shows nothing" % most
    assert took >= (sent - CAP) / CAP, (sent, took)
    keys = {e["RowKey"] for e in table.query_entities("PartitionKey eq 'p0'")}
    assert all(w in keys for w in written)
    mnt.unmount()
    print("uncapped %d/s in %.1f s; capped %d/s, %d requests in %.1f s"
          % (uncapped, took_free, most, sent, took))


def test_a_throttling_service_slows_the_whole_mount(table, mounter, proxy, sdk):
    proxy.throttle(LIMIT)
    mnt = mounter.mount(conn_str=conn_str_for(proxy.port), options=["-o", OPTS])
    start = len(proxy.arrivals())
    passes = []
    for k in range(2):
        r, written, took = walk(mnt, 15, "thr%d" % k)
        assert r.returncode == 0, r.stderr          # no read failed
        passes.append((written, took))
    counts = proxy.counts()
    sent = len(proxy.arrivals()) - start
    throttled = counts.get("throttled", 0)
    keys = {e["RowKey"] for e in table.query_entities("PartitionKey eq 'p0'")}
    for written, _ in passes:                       # no acknowledged write lost
        assert len(written) == 15 and all(w in keys for w in written)
    took = sum(t for _, t in passes)
    served = sent - throttled
    assert throttled > 0, "the service never throttled: the test shows nothing"
    assert throttled <= 0.25 * sent, "%d of %d requests throttled" % (throttled, sent)
    assert served / took >= 0.5 * LIMIT, "%.1f/s served of the %d/s the service allows" % (
        served / took, LIMIT)
    err = mnt.unmount()
    assert "the service is throttling: every request of this mount slowed to" in err, err[-3000:]
    print("%d requests, %d throttled, %.1f/s served in %.1f s" % (
        sent, throttled, served / took, took))
