#!/usr/bin/python3
# limitmodel.py - Azurite behind Azure Table Storage's scalability targets (stdlib only).
"""A proxy in front of Azurite that enforces what Azurite does not: the
service's scalability targets. Azure answers 503 ServerBusy past them and
the client has to back off; Azurite serves whatever it is sent, so a bench
against bare Azurite says nothing about how close a job comes to the limit.

Built on tests/faultproxy.py's FaultProxy (its plumbing, its --delay-ms, its
counters) through its _answer_here/_answered hooks. Each behaviour cites its
source ("[n]" below).

Sources:
  [TGT]  "Scalability and performance targets for Table storage",
         https://learn.microsoft.com/azure/storage/tables/scalability-targets
         (also docs.azure.cn/en-us/storage/tables/scalability-targets):
         "Maximum request rate per storage account: 20,000 transactions per
         second, assuming a 1-KiB entity size"; "Target throughput for a
         single table partition (1 KiB-entities): Up to 2,000 entities per
         second"; "When your application reaches the limit of what a
         partition can handle for your workload, Azure Storage begins to
         return error code 503 (Server Busy) or error code 500 (Operation
         Timeout) responses. If 503 errors are occurring, consider modifying
         your application to use an exponential backoff policy for retries."
  [ERR]  "Common REST API error codes",
         https://learn.microsoft.com/rest/api/storageservices/common-rest-api-error-codes:
         ServerBusy, Service Unavailable (503), with the user messages "The
         server is currently unable to receive requests. Please retry your
         request.", "Ingress is over the account limit.", "Egress is over
         the account limit.", "Operations per second is over the account
         limit.". The Table service's own list ("Table service error codes",
         https://learn.microsoft.com/rest/api/storageservices/table-service-error-codes)
         has no throttling code of its own: the common ServerBusy applies.
  [BUSY] microsoft/vscode-azurestorage#502: a ServerBusy answered "The server
         is busy.\\nRequestId:d4d1bd34-d01e-006d-2c3b-9527ff000000\\nTime:
         2019-11-07T07:19:09.4697076Z". Azure/azure-sdk-for-go#22139: the real
         service answering "503 Operations per second is over the account
         limit." with code ServerBusy, the message as the status line's
         reason phrase and "\\nRequestId:...\\nTime:..." after it in the body.
  [REC]  Azure/azure-sdk-for-python, sdk/tables/azure-data-tables/tests/
         recordings/test_table.pyTestTabletest_create_table_fail_on_exist.json:
         a Table service error as recorded against *.table.core.windows.net:
         headers Cache-Control: no-cache, Content-Type: application/json;
         odata=minimalmetadata; streaming=true; charset=utf-8, Server:
         Windows-Azure-Table/1.0 Microsoft-HTTPAPI/2.0, X-Content-Type-Options:
         nosniff, x-ms-client-request-id (the client's, echoed), x-ms-request-id
         (8-4-4-4-12 hex ending in 000000), x-ms-version (the request's), Date;
         no x-ms-error-code header; body {"odata.error":{"code":...,"message":
         {"lang":"en-US","value":"<message>\\nRequestId:<id>\\nTime:<ISO, 7
         fractional digits>Z"}}}.
  [SDK]  azure-core (the pipeline under azure-data-tables 12.4, /usr/lib/
         python3/dist-packages/azure/core/pipeline/policies/_retry.py):
         RetryPolicy retries 408/429/500/502/503/504 (_SAFE_CODES), POST and
         PATCH too on 500/503/504 (_is_method_retryable), with exponential
         backoff (retry_backoff_factor 0.8, 3 status retries by default);
         a Retry-After header is honoured when present (is_retry,
         sleep_for_retry), not needed. azure-data-tables' TablesRetryPolicy
         (_policies.py) adds nothing for 503.
  [RA]   Retry-After: no source found saying the Table (or any Storage data)
         service sends it with ServerBusy; [TGT] tells the client to back off
         exponentially on its own and [SDK] does so without one. So the
         model sends none. (MicrosoftDocs/azure-docs#76932 reports a
         Retry-After of 17 s from "Azure Storage", but on the Resource
         Manager throttling page: management requests, not the data plane.)

What it models:
  * One token bucket per partition (table + PartitionKey) refilled at
    PARTITION_RATE entities/s and one for the account at ACCOUNT_RATE
    entities/s [TGT], each holding one second of its rate and full at
    start. --scale multiplies Azure's 2,000 and 20,000 (scale 0.05: 100 and
    1,000). [TGT] states the account target in transactions of 1-KiB
    entities; the model counts entities for the account too (an entity
    group transaction of 100 costs 100), the conservative reading, so one
    unit serves both buckets.
  * A request's charge: a point read, insert, update, merge or delete: 1
    entity to its partition and the account; an entity group transaction
    (POST .../$batch): its operation count, each operation to the partition
    its URL or body names; a query: the entities it returned, to their
    partitions (after the answer; the account at least 1); table create,
    delete, list and anything else: 1, account only.
  * A request whose buckets cannot pay its charge is refused before it
    reaches Azurite (the bucket pays when it holds the charge, or is full
    for a charge larger than itself: a batch of 100 at a scale that makes
    the bucket smaller than 100 still passes now and then, leaving the
    bucket in debt). A query is refused when a bucket it touches (the
    account, and the partition its $filter names with PartitionKey eq '...')
    holds less than one entity; what it then returns may leave its buckets
    in debt. The refusal is 503 ServerBusy [TGT][ERR] in the Table
    service's error form [REC]: "The server is busy." for a partition
    [BUSY], "Operations per second is over the account limit." for the
    account [ERR][BUSY], the message as the reason phrase [BUSY], no
    Retry-After [RA]. A refused $batch gets the same top-level 503 (no
    source shows a throttled batch; throttling is decided before the
    request is parsed, so it is answered like any request: not as a
    multipart changeset failure).
  * DELAY (--delay-ms): FaultProxy's, every request, refused or not.

What it does NOT model: 500 OperationTimedOut [TGT] (a partition past its
target may time out instead of refusing); ingress/egress bandwidth targets;
partition splits and load balancing (a real partition server may serve more
than 2,000 entities/s for a while, or less while it moves); server-side
query time limits; entity sizes (every entity costs 1 whatever its size,
[TGT] assumes 1 KiB); secondary locations.

Counters (counts(): FaultProxy's 'requests', 'forwarded', ... and
'busy_partition', 'busy_account', 'entities'), charged() (entities per
partition), events() (a time series: (time.monotonic(), kind, table,
PartitionKey, entities)) and window() (what happened since a mark: seconds,
entities, requests, 503s, the best one-second rate).

From Python:

    sys.path.insert(0, "bench"); from limitmodel import LimitModel
    with LimitModel(upstream_port=az.port, scale=0.05, delay=0.025) as lm:
        ... lm.port ... ; mark = lm.mark() ; ... ; lm.window(mark)

From the shell:

    /usr/bin/python3 bench/limitmodel.py --upstream 10002 --listen 10003 \\
        --scale 0.05 --delay-ms 25 [--partition-rate N] [--account-rate N] [-v]

prints the rates, then the counters when stopped (Ctrl-C / SIGTERM).
"""

import argparse
import datetime
import email.utils
import json
import re
import sys
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from faultproxy import FaultProxy, serve_until_stopped  # noqa: E402

AZURE_PARTITION_RATE = 2000      # entities/s a partition serves [TGT]
AZURE_ACCOUNT_RATE = 20000       # entities/s an account serves [TGT]
BUSY_PARTITION = "The server is busy."                              # [BUSY]
BUSY_ACCOUNT = "Operations per second is over the account limit."   # [ERR][BUSY]
EVENTS_KEPT = 1_000_000          # events() remembers at most this many

# /account/Table(PartitionKey='a',RowKey='b'), /account/Table() or /account/Table
_ENTITY_PATH = re.compile(r"^/[^/]+/([^/()?]+)\((.+)\)$")
_QUERY_PATH = re.compile(r"^/[^/]+/([^/()?]+)(?:\(\))?$")
_KEYS = re.compile(r"^PartitionKey='((?:[^']|'')*)',RowKey='((?:[^']|'')*)'$")
_FILTER_PK = re.compile(r"PartitionKey\s+eq\s+'((?:[^']|'')*)'")
_BATCH_OP = re.compile(rb"^(GET|POST|PUT|MERGE|PATCH|DELETE) (\S+) HTTP/1\.1\r?$", re.M)


def _request_id():
    """An x-ms-request-id in the service's shape [REC]: 8-4-4-4-12 hex whose
    last six digits are 0."""
    return str(uuid.uuid4())[:-6] + "000000"


def _now_iso():
    """The service's Time: with seven fractional digits [REC]."""
    t = datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%07d" % (t.microsecond * 10) + "Z"


def _url_keys(path):
    """(table, PartitionKey) of an entity URL path, or None."""
    m = _ENTITY_PATH.match(path)
    if not m:
        return None
    k = _KEYS.match(m.group(2))
    if not k:
        return None
    return m.group(1), k.group(1).replace("''", "'")


def _path_of(url):
    """The unquoted path of URL (absolute, as in a $batch part, or not)."""
    return urllib.parse.unquote(urllib.parse.urlsplit(url).path)


def _body_pk(raw):
    """PartitionKey of a JSON entity body (bytes), or None."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    pk = doc.get("PartitionKey") if isinstance(doc, dict) else None
    return pk if isinstance(pk, str) else None


def batch_charges(body):
    """{(table, PartitionKey): operations} of a $batch BODY (multipart):
    every part's request line names its entity, or its JSON body does (an
    insert). An operation whose partition cannot be read counts for
    (table, None)."""
    out = {}
    ops = list(_BATCH_OP.finditer(body))
    for i, m in enumerate(ops):
        end = ops[i + 1].start() if i + 1 < len(ops) else len(body)
        path = _path_of(m.group(2).decode("latin-1"))
        keys = _url_keys(path)
        if keys is None:
            q = _QUERY_PATH.match(path)
            table = q.group(1) if q else None
            seg = body[m.end():end]
            start, stop = seg.find(b"{"), seg.rfind(b"}")
            pk = _body_pk(seg[start:stop + 1]) if 0 <= start < stop else None
            keys = (table, pk)
        key = ((keys[0] or "").lower(), keys[1])
        out[key] = out.get(key, 0) + 1
    return out


class Bucket:
    """A token bucket: RATE tokens a second, holding at most RATE (one
    second), full at start; may go into debt (below 0)."""

    def __init__(self, rate, now):
        self.rate = float(rate)
        self.cap = float(rate)
        self.tokens = float(rate)
        self.t = now

    def level(self, now):
        self.tokens = min(self.cap, self.tokens + (now - self.t) * self.rate)
        self.t = now
        return self.tokens

    def can_pay(self, n, now):
        """Whether a charge of N passes now: the bucket holds N, or it is
        full and N is more than it can ever hold."""
        return self.level(now) >= min(float(n), self.cap)

    def not_empty(self, now):
        return self.level(now) >= min(1.0, self.cap)

    def pay(self, n):
        self.tokens -= n


class LimitModel(FaultProxy):
    """Azurite behind the Table service's scalability targets; see the
    module docstring."""

    def __init__(self, upstream_port, listen_port=0, scale=1.0, partition_rate=None,
                 account_rate=None, delay=0.0, log=None, upstream_host="127.0.0.1"):
        super().__init__(upstream_port, listen_port, rate=0.0, delay=delay, log=log,
                         upstream_host=upstream_host)
        self.scale = float(scale)
        self.partition_rate = float(partition_rate if partition_rate is not None
                                    else AZURE_PARTITION_RATE * self.scale)
        self.account_rate = float(account_rate if account_rate is not None
                                  else AZURE_ACCOUNT_RATE * self.scale)
        if self.partition_rate <= 0 or self.account_rate <= 0:
            raise ValueError("rates must be positive")
        self._mlock = threading.Lock()
        self._t0 = time.monotonic()
        self._account = Bucket(self.account_rate, self._t0)
        self._parts = {}
        self._charged = {}
        self._events = []

    # -- counters ----------------------------------------------------------------
    def charged(self):
        """{(table, PartitionKey): entities charged} (table in lower case)."""
        with self._mlock:
            return dict(self._charged)

    def events(self, since=None):
        """[(time.monotonic(), kind, table, PartitionKey, entities)], oldest
        first; kind 'charge' (entities), 'account' (a request charged to the
        account only: table operations), 'busy_partition' or 'busy_account'
        (a 503 and the charge refused). SINCE: only
        those at or after that time."""
        with self._mlock:
            ev = list(self._events)
        return ev if since is None else [e for e in ev if e[0] >= since]

    def limit(self, partitions):
        """Entities/s a job spread evenly over PARTITIONS partitions can get
        at most: min(account rate, PARTITIONS x partition rate)."""
        return min(self.account_rate, max(1, partitions) * self.partition_rate)

    def mark(self):
        """A point to measure from (see window())."""
        return time.monotonic(), self.counts()

    def window(self, mark, end=None):
        """What happened between MARK and END (default now): dict of seconds,
        requests, entities, busy_partition, busy_account, rate (entities/s
        over the window), peak (most entities charged in any one second
        of it) and last (seconds from MARK to the last entity charged: when
        the service's part of a job ended)."""
        t0, before = mark
        end = time.monotonic() if end is None else end
        after = self.counts()
        ev = [e for e in self.events(t0) if e[0] <= end and e[1] == "charge"]
        peak, j, acc = 0, 0, 0
        for e in ev:                       # sliding one-second window
            acc += e[4]
            while ev[j][0] <= e[0] - 1.0:
                acc -= ev[j][4]
                j += 1
            peak = max(peak, acc)
        secs = max(end - t0, 1e-9)

        def d(k):
            return after.get(k, 0) - before.get(k, 0)
        return {"seconds": secs, "requests": d("requests"), "entities": d("entities"),
                "busy_partition": d("busy_partition"), "busy_account": d("busy_account"),
                "rate": d("entities") / secs, "peak": peak,
                "last": ev[-1][0] - t0 if ev else 0.0}

    # -- the buckets --------------------------------------------------------------
    def _part(self, key, now):
        b = self._parts.get(key)
        if b is None:
            b = self._parts[key] = Bucket(self.partition_rate, now)
        return b

    def _event(self, now, kind, key, n):
        if len(self._events) < EVENTS_KEPT:
            self._events.append((now, kind, key[0], key[1], n))

    def _charge_locked(self, now, charges, account_n):
        for key, n in charges.items():
            self._part(key, now).pay(n)
            self._charged[key] = self._charged.get(key, 0) + n
            self._event(now, "charge", key, n)
        self._account.pay(account_n)
        if not charges:
            self._event(now, "account", ("", None), account_n)

    def _admit(self, charges, account_n, query=False):
        """None if the request may pass (and is charged unless QUERY), else
        'busy_partition' or 'busy_account'."""
        now = time.monotonic()
        with self._mlock:
            for key, n in charges.items():
                b = self._part(key, now)
                if not (b.not_empty(now) if query else b.can_pay(n, now)):
                    self._event(now, "busy_partition", key, n)
                    return "busy_partition"
            if not (self._account.not_empty(now) if query
                    else self._account.can_pay(account_n, now)):
                self._event(now, "busy_account", ("", None), account_n)
                return "busy_account"
            if not query:
                self._charge_locked(now, charges, account_n)
        if not query:
            self._count("entities", sum(charges.values()))
        return None

    # -- what a request costs -------------------------------------------------------
    @staticmethod
    def _classify(method, target, headers, body):
        """('point'|'batch'|'query'|'account', {(table, pk): n})."""
        path = _path_of(target)
        if method == "POST" and path.endswith("/$batch"):
            return "batch", batch_charges(body)
        keys = _url_keys(path)
        if keys is not None and keys[0] != "Tables":
            return "point", {(keys[0].lower(), keys[1]): 1}
        q = _QUERY_PATH.match(path)
        if q is None or q.group(1) == "Tables":
            return "account", {}
        table = q.group(1).lower()
        if method == "GET":
            filt = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query).get("$filter")
            m = _FILTER_PK.search(filt[0]) if filt else None
            return "query", ({(table, m.group(1).replace("''", "'")): 1} if m else {})
        if method == "POST":                # insert: the key is in the body
            return "point", {(table, _body_pk(body)): 1}
        return "account", {}

    # -- FaultProxy hooks ---------------------------------------------------------
    def _answer_here(self, sock, keep, method, target, headers, body):
        kind, charges = self._classify(method, target, headers, body)
        account_n = sum(charges.values()) if kind in ("point", "batch") else 1
        busy = self._admit(charges, account_n, query=(kind == "query"))
        if busy is None:
            return False
        self._count(busy)
        self._log("%s %s -> 503 %s" % (method, target, busy))
        self._send_busy(sock, keep, headers,
                        BUSY_PARTITION if busy == "busy_partition" else BUSY_ACCOUNT)
        return True

    def _answered(self, method, target, headers, body, status, rheaders, data):
        kind, charges = self._classify(method, target, headers, body)
        if kind != "query":
            return
        table = _QUERY_PATH.match(_path_of(target)).group(1).lower()
        default_pk = next(iter(charges))[1] if charges else None
        got = {}
        if status == 200:
            try:
                doc = json.loads(data)
                rows = doc.get("value", []) if isinstance(doc, dict) else []
            except ValueError:
                rows = []
            for e in rows:
                pk = e.get("PartitionKey", default_pk) if isinstance(e, dict) else default_pk
                got[(table, pk)] = got.get((table, pk), 0) + 1
        n = sum(got.values())
        with self._mlock:
            self._charge_locked(time.monotonic(), got, max(n, 1))
        self._count("entities", n)

    def _send_busy(self, sock, keep, headers, message):
        """503 ServerBusy as the Table service answers it [ERR][REC][BUSY],
        without Retry-After [RA]."""
        hmap = {k.lower(): v for k, v in headers}
        rid = _request_id()
        body = json.dumps({"odata.error": {"code": "ServerBusy", "message": {
            "lang": "en-US", "value": "%s\nRequestId:%s\nTime:%s" % (message, rid, _now_iso())}}},
            separators=(",", ":")).encode()
        lines = ["HTTP/1.1 503 %s" % message,
                 "Cache-Control: no-cache",
                 "Content-Length: %d" % len(body),
                 "Content-Type: application/json;odata=minimalmetadata;streaming=true;"
                 "charset=utf-8",
                 "Server: Windows-Azure-Table/1.0 Microsoft-HTTPAPI/2.0",
                 "X-Content-Type-Options: nosniff",
                 "x-ms-request-id: %s" % rid,
                 "x-ms-version: %s" % hmap.get("x-ms-version", "2019-02-02"),
                 "Date: %s" % email.utils.formatdate(usegmt=True),
                 "Connection: %s" % ("keep-alive" if keep else "close")]
        if "x-ms-client-request-id" in hmap:
            lines.append("x-ms-client-request-id: %s" % hmap["x-ms-client-request-id"])
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Azurite behind Azure Table Storage's "
                                 "scalability targets")
    ap.add_argument("--upstream", type=int, required=True, help="Azurite's port on 127.0.0.1")
    ap.add_argument("--listen", type=int, default=0, help="port to listen on (0: any)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiplies Azure's 2,000 (partition) and 20,000 (account) entities/s")
    ap.add_argument("--partition-rate", type=float, help="entities/s a partition (overrides)")
    ap.add_argument("--account-rate", type=float, help="entities/s the account (overrides)")
    ap.add_argument("--delay-ms", type=float, default=0.0,
                    help="hold every request this long first")
    ap.add_argument("-v", "--verbose", action="store_true", help="log every 503")
    a = ap.parse_args(argv)
    log = (lambda m: print(m, file=sys.stderr, flush=True)) if a.verbose else None
    lm = LimitModel(a.upstream, a.listen, scale=a.scale, partition_rate=a.partition_rate,
                    account_rate=a.account_rate, delay=a.delay_ms / 1000.0, log=log)
    lm.start()
    print("limitmodel: 127.0.0.1:%d -> 127.0.0.1:%d, %g entities/s a partition, %g the account"
          % (lm.port, a.upstream, lm.partition_rate, lm.account_rate), flush=True)
    return serve_until_stopped(lm, "limitmodel")


if __name__ == "__main__":
    sys.exit(main())
