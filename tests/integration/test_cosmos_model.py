"""The Cosmos DB for Table model (tests/cosmosmodel.py, issue 42) checked
against an independent client: Microsoft's Python SDK (azure.data.tables)
speaking Cosmos to it, and raw HTTP for what the SDK never sends.

The SDK takes an endpoint for Cosmos by its host name (_common_conversion.py
_is_cosmos_endpoint: "*.table.cosmos.*", "*.table.cosmosdb.*", or
"localhost" on a port other than 10002) and then sends merges as POST +
X-HTTP-Method: MERGE (CosmosPatchTransformPolicy; in a $batch too). So the
tests reach the model as http://localhost:PORT/devstoreaccount1 and assert
that the SDK did choose Cosmos. What is stored is checked through a second
SDK client talking to Azurite directly."""

import base64
import collections
import email.utils
import hashlib
import hmac
import json
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest
from azure.core.credentials import AzureNamedKeyCredential
from azure.core.exceptions import HttpResponseError
from azure.data.tables import TableServiceClient, TableTransactionError, UpdateMode

from conftest import ACCOUNT, KEY, harness, insert_batched

TABLE = "cosmosModelBig"
PARTS = ("part-A", "part-B", "part-C")
PER_PART = 1500                 # 4,500 entities: five pages of the default 1,000
SEED = 11


def rk(i):
    return "row-%06d" % i       # '-' is not in base64: no false hit in a token


def cosmos_client(port):
    """An SDK client that speaks Cosmos to the model on PORT."""
    svc = TableServiceClient("http://localhost:%d/%s" % (port, ACCOUNT),
                             credential=AzureNamedKeyCredential(ACCOUNT, KEY))
    assert svc._cosmos_endpoint, "the SDK did not take the endpoint for Cosmos"
    return svc


def storage_client(port):
    """An SDK client that speaks Storage (PATCH merges) to PORT."""
    svc = TableServiceClient("http://127.0.0.1:%d/%s" % (port, ACCOUNT),
                             credential=AzureNamedKeyCredential(ACCOUNT, KEY))
    assert not svc._cosmos_endpoint
    return svc


def raw(port, method, path, body=b"", headers=None):
    """A SharedKey-signed request to 127.0.0.1:PORT; (status, headers, body)."""
    date = email.utils.formatdate(usegmt=True)
    ctype = "application/json" if body else ""
    resource = "/%s/%s" % (ACCOUNT, ACCOUNT) + urllib.parse.urlsplit(path).path
    sts = "%s\n\n%s\n%s\n%s" % (method, ctype, date, resource)
    sig = base64.b64encode(hmac.new(base64.b64decode(KEY), sts.encode(),
                                    hashlib.sha256).digest()).decode()
    h = {"x-ms-date": date, "x-ms-version": "2019-02-02", "DataServiceVersion": "3.0",
         "Accept": "application/json;odata=minimalmetadata",
         "Authorization": "SharedKey %s:%s" % (ACCOUNT, sig)}
    if ctype:
        h["Content-Type"] = ctype
    h.update(headers or {})
    req = urllib.request.Request("http://127.0.0.1:%d/%s%s" % (port, ACCOUNT, path),
                                 data=body or None, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


@pytest.fixture(scope="module")
def model(azurite):
    with harness.CosmosModel(upstream_port=azurite.port, seed=SEED) as cm:
        yield cm


@pytest.fixture(scope="module")
def big(sdk, seed):
    tc = seed.table(sdk, TABLE)
    insert_batched(tc, [{"PartitionKey": p, "RowKey": rk(i), "n": i}
                        for p in PARTS for i in range(PER_PART)])
    return {(p, rk(i)) for p in PARTS for i in range(PER_PART)}


def read_pages(tc, **kw):
    """[(page keys, continuation token after it)] of a paged listing."""
    pager = tc.list_entities(**kw).by_page()
    out = []
    for page in pager:
        keys = [(e["PartitionKey"], e["RowKey"]) for e in page]
        out.append((keys, pager.continuation_token))
    return out


def test_sdk_reads_every_entity_once_in_unsorted_pages(model, big):
    tc = cosmos_client(model.port).get_table_client(TABLE)
    pages = read_pages(tc)
    seen = collections.Counter(k for keys, _ in pages for k in keys)
    assert set(seen) == big and set(seen.values()) == {1}
    assert [len(keys) for keys, _ in pages] == [1000] * 4 + [500]
    for keys, _ in pages:
        assert keys != sorted(keys), "a page in key order"
        assert len({p for p, _ in keys}) == 3, "a page of one partition"
    # the same query gives the same order again within a run
    assert [keys for keys, _ in read_pages(tc)] == [keys for keys, _ in pages]


def test_order_changes_with_the_seed(azurite, model, big):
    tc = cosmos_client(model.port).get_table_client(TABLE)
    with harness.CosmosModel(upstream_port=azurite.port, seed=SEED + 1) as other:
        tc2 = cosmos_client(other.port).get_table_client(TABLE)
        a = [k for keys, _ in read_pages(tc, results_per_page=300) for k in keys]
        b = [k for keys, _ in read_pages(tc2, results_per_page=300) for k in keys]
    assert sorted(a) == sorted(b) and a != b


def test_a_filtered_top_1_gives_some_later_partition_not_the_next(model, big):
    tc = cosmos_client(model.port).get_table_client(TABLE)
    page = list(next(tc.query_entities("PartitionKey gt 'part-A'", results_per_page=1)
                     .by_page()))
    assert len(page) == 1 and page[0]["PartitionKey"] in ("part-B", "part-C")
    # over many different queries, the first answer is not always the next key
    got = set()
    for i in range(40):
        page = next(tc.query_entities("PartitionKey gt 'part-A' and n ge %d" % i,
                                      results_per_page=1).by_page())
        got.update(e["PartitionKey"] for e in page)
    assert got == {"part-B", "part-C"}


def test_top_above_1000_is_one_page(model, big):
    tc = cosmos_client(model.port).get_table_client(TABLE)
    pages = read_pages(tc, results_per_page=1700)
    assert [len(keys) for keys, _ in pages] == [1700, 1700, 1100]


def test_continuations_are_opaque_long_and_must_come_back_as_given(model, big):
    tc = cosmos_client(model.port).get_table_client(TABLE)
    pages = read_pages(tc, results_per_page=30)
    tokens = [t for _, t in pages[:-1]]
    assert pages[-1][1] is None and len(tokens) == 149
    lengths = [len(t["PartitionKey"]) for t in tokens]
    assert all(t["RowKey"] == "NA" for t in tokens)
    assert sum(n > 1024 for n in lengths) > len(tokens) // 2, lengths
    assert max(lengths) > 7 * 1024, lengths
    for t in tokens:
        doc = json.loads(t["PartitionKey"])
        doc = doc[0] if isinstance(doc, list) else doc
        assert set(doc) == {"token", "range"} and doc["token"].startswith("+RID:~")
        assert not re.search(r"part-|row-", t["PartitionKey"]), "a key in a token"

    def first_page(token):
        return next(tc.list_entities(results_per_page=30).by_page(continuation_token=token))

    good = tokens[3]
    assert len(list(first_page(good))) == 30
    altered = dict(good, PartitionKey=good["PartitionKey"].replace("#RT:", "#RT:1"))
    forged = {"PartitionKey": json.dumps({"token": "+RID:~AAAA#RT:1#TRC:2",
                                          "range": {"min": "", "max": "FF"}}),
              "RowKey": "NA"}
    for bad in (altered, forged, dict(good, RowKey="row-000001"),
                {"PartitionKey": "part-B", "RowKey": "row-000001"}):
        with pytest.raises(HttpResponseError) as ei:
            list(first_page(bad))
        assert ei.value.status_code == 400
    # a token of another query is refused as well
    other = tc.query_entities("n ge 0", results_per_page=30).by_page()
    list(next(other))
    with pytest.raises(HttpResponseError) as ei:
        list(first_page(other.continuation_token))
    assert ei.value.status_code == 400


def test_merge_through_the_sdk_speaking_cosmos(model, sdk, seed):
    seed.table(sdk, "cosmosMerge")
    direct = sdk.get_table_client("cosmosMerge")
    direct.create_entity({"PartitionKey": "p", "RowKey": "a", "keep": 1})
    direct.create_entity({"PartitionKey": "p", "RowKey": "b", "keep": 2})
    direct.create_entity({"PartitionKey": "p", "RowKey": "c", "keep": 3})
    tc = cosmos_client(model.port).get_table_client("cosmosMerge")
    tc.upsert_entity({"PartitionKey": "p", "RowKey": "a", "new": 10}, mode=UpdateMode.MERGE)
    tc.update_entity({"PartitionKey": "p", "RowKey": "b", "new": 20}, mode=UpdateMode.MERGE)
    tc.submit_transaction([("upsert", {"PartitionKey": "p", "RowKey": "c", "new": 30},
                            {"mode": UpdateMode.MERGE}),
                           ("update", {"PartitionKey": "p", "RowKey": "a", "more": 11},
                            {"mode": UpdateMode.MERGE})])
    got = {e["RowKey"]: dict(e) for e in direct.list_entities()}
    assert got["a"] == {"PartitionKey": "p", "RowKey": "a", "keep": 1, "new": 10, "more": 11}
    assert got["b"] == {"PartitionKey": "p", "RowKey": "b", "keep": 2, "new": 20}
    assert got["c"] == {"PartitionKey": "p", "RowKey": "c", "keep": 3, "new": 30}
    assert model.counts().get("batch_merge_rewritten", 0) >= 2


def test_the_merge_verbs_are_refused_and_post_with_x_http_method_taken(model, sdk, seed):
    seed.table(sdk, "cosmosVerbs")
    direct = sdk.get_table_client("cosmosVerbs")
    direct.create_entity({"PartitionKey": "p", "RowKey": "r", "keep": 1})
    path = "/cosmosVerbs(PartitionKey='p',RowKey='r')"
    for verb in ("MERGE", "PATCH"):
        status, headers, body = raw(model.port, verb, path, b'{"x": 1}', {"If-Match": "*"})
        assert status == 405, (verb, status, body)
    status, _, body = raw(model.port, "POST", path, b'{"x": 2}',
                          {"If-Match": "*", "X-HTTP-Method": "MERGE"})
    assert status == 204, body
    e = direct.get_entity("p", "r")
    assert (e["keep"], e["x"]) == (1, 2)
    # a Storage client (PATCH merges) fails on Cosmos as the SDK issues say
    tc = storage_client(model.port).get_table_client("cosmosVerbs")
    with pytest.raises(HttpResponseError) as ei:
        tc.update_entity({"PartitionKey": "p", "RowKey": "r", "y": 3}, mode=UpdateMode.MERGE)
    assert ei.value.status_code == 405
    with pytest.raises(TableTransactionError) as ei:
        tc.submit_transaction([("update", {"PartitionKey": "p", "RowKey": "r", "y": 3},
                                {"mode": UpdateMode.MERGE})])
    assert ei.value.status_code == 405 and "0:" in str(ei.value)
    assert "y" not in direct.get_entity("p", "r")


def test_throttling_is_429_with_retry_after_ms(azurite, sdk, seed):
    seed.table(sdk, "cosmosThrottle")
    sdk.get_table_client("cosmosThrottle").create_entity({"PartitionKey": "p", "RowKey": "r"})
    with harness.CosmosModel(upstream_port=azurite.port, seed=1, retry_after_ms=70) as cm:
        cm.throttle(1.0, seed=3)
        status, headers, body = raw(cm.port, "GET", "/cosmosThrottle()")
        assert status == 429 and headers["x-ms-retry-after-ms"] == "70"
        assert "Retry-After" not in headers
        assert json.loads(body)["odata.error"]["code"] == "TooManyRequests"
        tc = cosmos_client(cm.port).get_table_client("cosmosThrottle")
        with pytest.raises(TableTransactionError) as ei:
            tc.submit_transaction([("upsert", {"PartitionKey": "p", "RowKey": "s"})],
                                  retry_total=0)
        assert ei.value.status_code == 429 and "0:" in str(ei.value)
        cm.throttle(0.3, seed=3)
        statuses = collections.Counter(raw(cm.port, "GET", "/cosmosThrottle()")[0]
                                       for _ in range(60))
        assert set(statuses) == {200, 429} and 5 < statuses[429] < 35


def test_timestamp_as_cosmos_writes_it_and_filters_on_it_find_nothing(model, sdk, seed):
    seed.table(sdk, "cosmosTs")
    sdk.get_table_client("cosmosTs").create_entity({"PartitionKey": "p", "RowKey": "r"})
    for path in ("/cosmosTs()", "/cosmosTs(PartitionKey='p',RowKey='r')"):
        status, _, body = raw(model.port, "GET", path)
        assert status == 200
        doc = json.loads(body)
        ent = doc["value"][0] if "value" in doc else doc
        assert "Timestamp@odata.type" not in ent
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z", ent["Timestamp"])
    flt = "Timestamp ge datetime'2000-01-01T00:00:00Z'"
    assert len(list(sdk.get_table_client("cosmosTs").query_entities(flt))) == 1
    tc = cosmos_client(model.port).get_table_client("cosmosTs")
    assert list(tc.query_entities(flt)) == []
    assert len(list(tc.query_entities("RowKey eq 'Timestamp'"))) == 0
    assert len(list(tc.query_entities("PartitionKey eq 'p'"))) == 1


def test_cosmos_keys_limits_and_errors(model, sdk, seed):
    seed.table(sdk, "cosmosKeys")
    tc = cosmos_client(model.port).get_table_client("cosmosKeys")
    tc.create_entity({"PartitionKey": "p", "RowKey": "x" * 255})
    for bad in ({"PartitionKey": "", "RowKey": "r"}, {"PartitionKey": "p", "RowKey": ""},
                {"PartitionKey": "p", "RowKey": "x" * 256},
                {"PartitionKey": "p" * 1025, "RowKey": "r"},
                {"PartitionKey": "p", "RowKey": "r1", "Id": 1},
                {"PartitionKey": "p", "RowKey": "r2", "etag": "e"},
                {"PartitionKey": "p", "RowKey": "r3", "ResourceId": "x"}):
        with pytest.raises(HttpResponseError) as ei:
            tc.create_entity(bad)
        assert ei.value.status_code == 400, bad
    with pytest.raises(TableTransactionError) as ei:
        tc.submit_transaction([("upsert", {"PartitionKey": "p", "RowKey": ""})])
    assert ei.value.status_code == 400 and "0:" in str(ei.value)
    assert sorted(e["RowKey"] for e in sdk.get_table_client("cosmosKeys").list_entities()) \
        == ["x" * 255]
    status, _, _ = raw(model.port, "POST", "/cosmosKeys", b"x" * (2 * 1024 * 1024 + 1))
    assert status == 413
    status, _, _ = raw(model.port, "POST", "/Tables", json.dumps({"TableName": "a#b"}).encode())
    assert status == 400
    # the error form of the recordings: en-us, a RequestID, no x-ms-error-code
    status, headers, body = raw(model.port, "POST", "/cosmosKeys",
                                json.dumps({"PartitionKey": "p", "RowKey": "x" * 255}).encode())
    assert status == 409 and "x-ms-error-code" not in headers
    err = json.loads(body)["odata.error"]
    assert err["code"] == "EntityAlreadyExists" and err["message"]["lang"] == "en-us"
    assert re.search(r"\nRequestID:[0-9a-f-]{36}\n$", err["message"]["value"])
