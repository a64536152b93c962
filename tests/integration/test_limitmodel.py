"""The scalability-target model (bench/limitmodel.py, issue 43) checked with
Microsoft's SDK (azure.data.tables) alone, no aztfs: it must refuse what
Azure refuses, the way Azure refuses it, and serve what Azure serves.

Rates are a few entities a second, so every assertion holds however slow
the machine is: a burst is sent until the model refuses (a slower machine
only sends it over a longer time, and the bound on what was served grows
with that time), a paced load is paced by the clock (a slower machine
sends less), and the debt a batch or a query leaves takes seconds to repay.
What was served and refused is read from the model's own counters and from
what Azurite holds (through the SDK, directly)."""

import json
import sys
import time

import pytest
from azure.core.exceptions import HttpResponseError
from azure.data.tables import TableServiceClient

from conftest import ROOT, conn_str_for

sys.path.insert(0, str(ROOT / "bench"))
from limitmodel import LimitModel  # noqa: E402

BURST_MAX = 60          # requests a burst may send before giving up


@pytest.fixture
def model(azurite):
    """LimitModel(**rates) in front of the session's Azurite, stopped after."""
    models = []

    def make(**kw):
        lm = LimitModel(upstream_port=azurite.port, **kw).start()
        models.append(lm)
        return lm
    yield make
    for lm in models:
        lm.stop()


def client(lm):
    """An SDK client through the model that does not retry (sees each 503)."""
    return TableServiceClient.from_connection_string(conn_str_for(lm.port), retry_total=0)


def ent(pk, i, **more):
    return dict(PartitionKey=pk, RowKey="r%04d" % i, Value=i, **more)


def fresh_table(sdk, name):
    sdk.delete_table(name)
    sdk.create_table(name)
    return sdk.get_table_client(name)


def burst(tc, pk, start=0):
    """Upsert into partition PK as fast as the SDK goes until refused:
    (entities served, seconds, the HttpResponseError)."""
    t0 = time.monotonic()
    for i in range(BURST_MAX):
        try:
            tc.upsert_entity(ent(pk, start + i))
        except HttpResponseError as e:
            return i, time.monotonic() - t0, e
    pytest.fail("%d upserts into one partition, none refused" % BURST_MAX)


def assert_server_busy(err, message):
    """ERR is the Table service's 503 ServerBusy: status, code, the OData
    error body with RequestId and Time, the service's headers, no Retry-After."""
    assert err.status_code == 503
    assert err.error_code == "ServerBusy"
    r = err.response
    doc = json.loads(r.text())
    assert doc["odata.error"]["code"] == "ServerBusy"
    assert doc["odata.error"]["message"]["lang"] == "en-US"
    value = doc["odata.error"]["message"]["value"]
    assert value.startswith(message + "\nRequestId:" + r.headers["x-ms-request-id"] + "\nTime:")
    assert value.endswith("Z") and len(value.rsplit("Time:", 1)[1]) == len(
        "2021-09-21T00:49:27.8708734Z")
    assert r.headers["Content-Type"].startswith("application/json;odata=minimalmetadata")
    assert r.headers["x-ms-version"]
    assert "Retry-After" not in r.headers
    assert r.reason == message


def test_burst_past_a_partition_is_refused_while_another_partition_is_served(
        model, sdk):
    lm = model(partition_rate=2, account_rate=1000)
    tc = client(lm).get_table_client("limBurst")
    fresh_table(sdk, "limBurst")
    served, secs, err = burst(tc, "hot")
    assert_server_busy(err, "The server is busy.")
    # the bucket holds 2 and gains 2 a second: what passed is bounded by time
    assert 2 <= served <= 2 + 2 * secs + 1
    tc.upsert_entity(ent("cold", 0))                 # another partition: served
    c = lm.counts()
    assert c["busy_partition"] == 1 and c.get("busy_account", 0) == 0
    assert lm.charged()[("limburst", "hot")] == served
    assert lm.charged()[("limburst", "cold")] == 1
    # the refused upsert never reached Azurite
    stored = list(sdk.get_table_client("limBurst").query_entities("PartitionKey eq 'hot'"))
    assert len(stored) == served


def test_a_load_at_the_partition_rate_is_served(model, sdk):
    rate, n = 5, 15                                  # three seconds at the rate
    lm = model(partition_rate=rate, account_rate=1000)
    tc = client(lm).get_table_client("limPaced")
    fresh_table(sdk, "limPaced")
    t0 = time.monotonic()
    for i in range(n):
        time.sleep(max(0.0, t0 + i / rate - time.monotonic()))
        tc.upsert_entity(ent("p", i))                # raises on a 503
    assert lm.counts().get("busy_partition", 0) == 0
    assert lm.charged()[("limpaced", "p")] == n


def test_many_partitions_together_pass_the_account_rate(model, sdk):
    lm = model(partition_rate=100, account_rate=3)
    tc = client(lm).get_table_client("limAccount")
    fresh_table(sdk, "limAccount")
    t0 = time.monotonic()
    for i in range(BURST_MAX):                       # one entity a partition
        try:
            tc.upsert_entity(ent("p%03d" % i, 0))
        except HttpResponseError as e:
            err = e
            break
    else:
        pytest.fail("no 503 from the account bucket")
    secs = time.monotonic() - t0
    assert_server_busy(err, "Operations per second is over the account limit.")
    c = lm.counts()
    assert c["busy_account"] == 1 and c.get("busy_partition", 0) == 0
    assert 3 <= i <= 3 + 3 * secs + 1
    assert sum(lm.charged().values()) == i


def test_a_batch_is_charged_its_operations(model, sdk):
    lm = model(partition_rate=2, account_rate=1000)
    tc = client(lm).get_table_client("limBatch")
    fresh_table(sdk, "limBatch")
    ops = ([("create", ent("b", i)) for i in range(4)]       # POST: key in the body
           + [("upsert", ent("b", i)) for i in range(4, 8)])  # PUT/MERGE: key in the URL
    tc.submit_transaction(ops)        # 8 > the bucket's 2: passes when full, leaves debt
    assert lm.charged()[("limbatch", "b")] == 8
    with pytest.raises(HttpResponseError) as ei:              # -6 + 2/s: seconds away
        tc.submit_transaction([("upsert", ent("b", 9))])
    assert_server_busy(ei.value, "The server is busy.")
    tc.submit_transaction([("upsert", ent("c", i)) for i in range(2)])   # another partition
    assert lm.charged()[("limbatch", "c")] == 2
    assert lm.counts()["busy_partition"] == 1
    assert len(list(sdk.get_table_client("limBatch").list_entities())) == 10


def test_a_query_is_charged_the_entities_it_returns(model, sdk):
    direct = fresh_table(sdk, "limQuery")
    for i in range(6):
        direct.upsert_entity(ent("q", i))
    for i in range(3):
        direct.upsert_entity(ent("r", i))
    lm = model(partition_rate=2, account_rate=1000)
    tc = client(lm).get_table_client("limQuery")
    assert len(list(tc.query_entities("PartitionKey eq 'q'"))) == 6
    assert lm.charged() == {("limquery", "q"): 6}
    assert lm.counts()["entities"] == 6
    # partition q is 4 in debt (2 - 6, 2/s back): the next query on it is refused
    with pytest.raises(HttpResponseError) as ei:
        list(tc.query_entities("PartitionKey eq 'q'"))
    assert_server_busy(ei.value, "The server is busy.")
    assert lm.charged()[("limquery", "q")] == 6
    assert len(list(tc.query_entities("PartitionKey eq 'r'"))) == 3    # served
    assert lm.charged()[("limquery", "r")] == 3
    # a scan is charged to the partitions of what it returned
    lm2 = model(partition_rate=100, account_rate=1000)
    assert len(list(client(lm2).get_table_client("limQuery").list_entities())) == 9
    assert lm2.charged() == {("limquery", "q"): 6, ("limquery", "r"): 3}
