#!/usr/bin/python3
"""cosmosmodel.py - Azurite answering the way Cosmos DB for Table does (stdlib only).

No Cosmos DB emulator runs on Linux (its Linux emulator serves the NoSQL API
only), so the Cosmos variant of the tests runs against this model: an HTTP/1.1
reverse proxy in front of Azurite (tests/faultproxy.py's plumbing) that changes
what Azurite says into what Cosmos DB for Table says where the two differ. Each
behaviour cites the public source that shows it ("[n]" below); where the exact
wording or code Cosmos uses is not public, the comment says so.

Sources:
  [FAQ]  Cosmos DB for Table FAQ / docs: "Query results returned by the Table
         API aren't sorted in partition key/row key order as they're in Azure
         Table storage" (confirmed by the docs team in MicrosoftDocs/azure-docs
         #19489).
  [REC]  Azure/azure-sdk-for-python, sdk/tables/azure-data-tables/tests/
         recordings/test_table_entity_cosmos.pyTestTableEntityCosmostest_query_
         entities_each_page.json: a $top=2 query against *.table.cosmos.azure.com
         answers x-ms-continuation-NextPartitionKey =
         {"token":"+RID:~jHoxAPXy+D4CAAAAAAAAAA==#RT:1#TRC:2#ISV:2#IEO:65567#QCF:8
         #FPC:AQIAAAAAAAAABgAAAAAAAAA=","range":{"min":"","max":"FF"}} (the next
         one a JSON array of such) and x-ms-continuation-NextRowKey = NA; the
         client sends both back URL-encoded as NextPartitionKey/NextRowKey. Its
         entities carry "Timestamp": "2022-11-03T18:16:21.7807879Z" (7 digits)
         and no "Timestamp@odata.type", in minimalmetadata answers.
  [405]  Azure/azure-sdk-for-net#13555, azure-sdk-for-python#13844,
         azure-sdk-for-java#20025 ("#cosmosKnownIssue"): "The Merge operation
         (which is implemented as Patch) always fails with a 405
         MethodNotAllowed response against Cosmos table endpoints ... send Merge
         as Post with an additional header: X-HTTP-Method: MERGE".
  [SDK]  azure-data-tables 12.4 (/usr/lib/python3/dist-packages/azure/data/
         tables/): _policies.py CosmosPatchTransformPolicy and
         _common_conversion.py _transform_patch_to_cosmos_post (PATCH -> POST +
         X-HTTP-Method: MERGE), applied also to the merge parts of a $batch
         changeset (_table_batch.py _batch_merge_entity when
         _is_cosmos_endpoint); _error.py _COSMOS_VALID_TABLE (table names 1-255
         characters without / \\ # ? or a trailing space); _deserialize.py
         _from_entity_datetime ("Cosmos returns this with a decimal point").
  [LIM]  Cosmos DB for Table FAQ, "Where is API for Table not identical with
         Azure Table storage behavior?": "Row keys can only be up to 255
         bytes", "Batches can only have up to 2 MBs", "Table names in Azure
         Table storage aren't case-sensitive, but they are in Azure Cosmos DB
         for Table".
  [ERR]  Azure/azure-sdk-for-python recordings test_table_entity_cosmos.py
         TestTableEntityCosmostest_insert_entity_conflict.json: a 409 answers
         {"odata.error":{"code":"EntityAlreadyExists","message":{"lang":
         "en-us","value":"The specified entity already exists.\\nRequestID:
         21aadee4-...\\n"}}} with no x-ms-error-code header.
         azure-sdk-for-net#21405: a property named ETag fails with
         InternalServerError in the same form.
  [TS]   Timestamp filters match nothing on Cosmos: azure-sdk-for-net#32468
         and #40549 ("An empty collection is returned. No exception is
         thrown"; "a known issue of the service"), MicrosoftDocs/azure-docs
         #53329; the Cosmos query tutorial: "Azure Cosmos DB blocks the
         queries on timestamp properties" (quoted in AzureCosmosDB/
         data-migration-desktop-tool#240).
  [KEY]  Empty keys: microsoft/AzureStorageExplorer#3211 (Cosmos "fail[s] to
         insert an entity with PartitionKey or RowKey value empty", Storage
         succeeds). Reserved names: Azure/azure-cosmos-table-dotnet#12 ("ID is
         a reserved field"), azure-sdk-for-net#33972 (ResourceId),
         azure-sdk-for-net#21405 (ETag).
  [429]  Cosmos DB docs "Diagnose and troubleshoot request rate too large
         (429) exceptions": throttled requests get 429 TooManyRequests with the
         x-ms-retry-after-ms header (milliseconds to wait).

What it models (each switchable only as a whole: it is a profile):
  * Order [FAQ]: a query's whole answer set is read from Azurite (following
    Azurite's own continuations), permuted with an RNG seeded by (seed, table,
    $filter, $select) - the same query gives the same order within a run, the
    order changes with the seed - and paged by the model: $top honoured (any
    size), DEFAULT_PAGE entities a page without it.
  * Continuation [REC]: NextPartitionKey is an opaque JSON document in the
    recorded shape whose token is random and padded to a length drawn per
    token (some ~200 bytes, most over 1 KB, some over 7 KB); NextRowKey is the
    literal NA. A continuation the model did not issue, or issued for another
    query, or one altered (NextRowKey other than NA), is refused 400. The
    tokens say nothing about keys.
  * MERGE [405][SDK]: the MERGE and PATCH verbs are refused 405; POST with
    X-HTTP-Method: MERGE is the merge (forwarded as is: Azurite dispatches on
    the header). In a $batch changeset a part POST + X-HTTP-Method: MERGE is a
    merge (rewritten to MERGE for Azurite, which would take a POST part for
    an insert); a MERGE or PATCH part fails the batch with 405 at its index.
  * Throttling [429]: with throttle(rate, seed), that fraction of requests is
    answered 429 TooManyRequests with x-ms-retry-after-ms before it reaches
    Azurite; a $batch is answered 202 with its changeset failed 429 at index 0.
  * Timestamp [REC][SDK][TS]: answers carry Timestamp with 7 fractional
    digits and no Timestamp@odata.type; a $filter that names Timestamp
    matches nothing (200, no entities, no error).
  * Keys and limits [LIM][KEY]: empty PartitionKey or RowKey refused 400;
    RowKey over 255 bytes, PartitionKey over 1 KiB refused 400; request
    bodies over 2 MB refused 413; reserved property names (id, rid, etag,
    ResourceId, any case) refused 400; table names that Cosmos refuses
    ([SDK] _error.py) refused 400.
  * Errors [ERR]: bodies say "lang":"en-us", the message ends with
    "\\nRequestID:<guid>\\n" (an id of the request where the brief of issue
    42 says ActivityId: the recordings show RequestID), and there is no
    x-ms-error-code header. A batch failure the model makes names its
    operation index even at 0 ("0:...").

What it does NOT model:
  * Azurite's own limits still apply underneath: an entity over 1 MiB (Cosmos
    takes 2 MB), a table name Storage refuses but Cosmos accepts (e.g. one
    with a '-' or over 63 characters), and table-name case (Cosmos table
    names are case-sensitive, Storage's are not) behave as on Azurite.
  * A query's answer set is fixed at its first page (snapshot): entities
    written while a client pages are not seen by later pages. Real Cosmos
    continues a live query; a client must cope with either.
  * Table listings (GET /Tables, NextTableName) are forwarded unchanged.
  * Request units, partition splits, session consistency, the exact wording
    of most Cosmos error messages (the codes used are the ones the SDKs'
    sources or recordings show, else named as guesses in the comments), the
    x-ms-substatus header, Entra ID scopes, TLS.
  * The 500 InternalServerError Cosmos gives for some reserved names
    ([ERR] #21405) and the odd acceptance of empty keys by its portal ([KEY]
    azure-sdk-for-java#31903): the model refuses with 400 throughout.
  * Batch failures Azurite makes keep Azurite's wording and index form; only
    their lang/RequestID are restated.
  * SharedKey signatures are checked by Azurite (the model changes no
    request line or signed header; a rewritten $batch body is not signed).

From Python (the tests take it from tests/harness.py):

    from harness import CosmosModel
    with CosmosModel(upstream_port=az.port, seed=7) as cm:
        ... cm.port ... ; cm.counts() ; cm.throttle(0.2, seed=1)

From the shell:

    /usr/bin/python3 tests/cosmosmodel.py --upstream 10002 --listen 10003 \\
        --seed 1 [--page-size 1000] [--throttle 0.1 --throttle-seed 3]
"""

import argparse
import base64
import http.client
import collections
import hashlib
import json
import random
import re
import sys
import urllib.parse
import uuid

from faultproxy import FaultProxy, _BadRequest, serve_until_stopped

DEFAULT_PAGE = 1000          # entities a page without $top (Storage's page size too)
TOKENS_KEPT = 2048           # continuations remembered (the oldest forgotten)
# [LIM] "Row keys can only be up to 255 bytes", "Batches can only have up to 2
# MBs". PartitionKey: the FAQ names no Cosmos limit, Storage's 1 KiB is kept.
# A single entity: 2 MB, the Cosmos item size limit ("Azure Cosmos DB service
# quotas"; not checked against a recording), so one request body <= 2 MB.
MAX_ROWKEY_BYTES = 255
MAX_PARTKEY_BYTES = 1024
MAX_BODY_BYTES = 2 * 1024 * 1024
# [KEY] Property names Cosmos keeps for itself (the Table layer stores an
# entity as a Cosmos item with its own id, _rid, _etag and resource id):
# "ID is a reserved field", ResourceId, ETag. Compared without case here.
RESERVED_PROPS = ("id", "rid", "etag", "resourceid")
# [SDK] _error.py _COSMOS_VALID_TABLE
COSMOS_TABLE_NAME = re.compile(r"^[^/\\#?]{0,253}[^ /\\#?]$")

# /account/Table() or /account/Table  (queries), /account/Table(PartitionKey='a',RowKey='b')
_ENTITY_PATH = re.compile(r"^/[^/]+/([^/()?]+)\((.+)\)$")
_QUERY_PATH = re.compile(r"^/[^/]+/([^/()?]+)(?:\(\))?$")
_KEYS = re.compile(r"^PartitionKey='((?:[^']|'')*)',RowKey='((?:[^']|'')*)'$")


def _activity():
    return str(uuid.uuid4())


def cosmos_error(code, message):
    """A Cosmos error body as [ERR] shows it: OData JSON, "lang":"en-us", the
    message ending with "\\nRequestID:<guid>\\n"."""
    value = "%s\nRequestID:%s\n" % (message, _activity())
    return json.dumps({"odata.error": {"code": code,
                                       "message": {"lang": "en-us", "value": value}}},
                      separators=(",", ":")).encode() + b"\r\n"


def _strip_literals(expr):
    """EXPR (an OData $filter) without its string literals."""
    return re.sub(r"'(?:[^']|'')*'", "''", expr)


def names_timestamp(filt):
    return bool(filt) and re.search(r"\bTimestamp\b", _strip_literals(filt)) is not None


def fix_entity(ent):
    """An entity as Cosmos answers it [REC]: Timestamp with 7 fractional
    digits, no Timestamp@odata.type."""
    if not isinstance(ent, dict):
        return ent
    ent.pop("Timestamp@odata.type", None)
    ts = ent.get("Timestamp")
    if isinstance(ts, str):
        m = re.match(r"^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$", ts)
        if m:
            ent["Timestamp"] = "%s.%sZ" % (m.group(1), (m.group(2) or "")[:7].ljust(7, "0"))
    return ent


class _Query:
    """One query run: its answer set (permuted) and where the pages are."""

    def __init__(self, key, entities, doc, headers):
        self.key = key
        self.entities = entities
        self.doc = doc            # the upstream answer's JSON minus "value"
        self.headers = headers


class CosmosModel(FaultProxy):
    """Azurite behind Cosmos DB for Table's differences; see the module docstring."""

    def __init__(self, upstream_port, listen_port=0, seed=0, page_size=DEFAULT_PAGE,
                 upstream_host="127.0.0.1", log=None, retry_after_ms=50):
        super().__init__(upstream_port, listen_port, rate=0.0, seed=seed,
                         upstream_host=upstream_host, log=log)
        self.seed = seed
        self.page_size = page_size
        self.retry_after_ms = retry_after_ms
        self._tokens = collections.OrderedDict()     # token -> (_Query, offset)
        self._token_rng = random.Random("tokens-%s" % seed)
        self._throttle_rate = 0.0
        self._throttle_rng = random.Random(0)

    # -- configuration ---------------------------------------------------------
    def throttle(self, rate, seed=0, retry_after_ms=None):
        """Answer that fraction (0..1) of the requests 429 [429]."""
        with self._lock:
            self._throttle_rate = float(rate or 0.0)
            self._throttle_rng = random.Random(seed)
            if retry_after_ms is not None:
                self.retry_after_ms = retry_after_ms

    def tokens(self):
        """The continuations issued so far (oldest first, at most TOKENS_KEPT)."""
        with self._lock:
            return list(self._tokens)

    def _log(self, msg):
        if self.log:
            self.log("cosmosmodel: " + msg)

    # -- answers -----------------------------------------------------------------
    def _send(self, sock, status, headers, body, keep, method="GET"):
        lines = ["HTTP/1.1 %d %s" % (status, http.client.responses.get(status, "Status"))]
        lines += ["%s: %s" % (k, v) for k, v in headers
                  if k.lower() not in ("content-length", "connection", "transfer-encoding")]
        no_body = status in (204, 304) or method == "HEAD"
        if not no_body:
            lines.append("Content-Length: %d" % len(body))
        lines.append("Connection: %s" % ("keep-alive" if keep else "close"))
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
                     + (b"" if no_body else body))

    def _error(self, sock, status, code, message, keep, extra=()):
        self._count("cosmos_%d" % status)
        # [ERR]: no x-ms-error-code header (Storage sends one), the code is in
        # the body only.
        hdrs = [("Content-Type", "application/json; odata=minimalmetadata"),
                ("x-ms-request-id", _activity())] + list(extra)
        self._send(sock, status, hdrs, cosmos_error(code, message), keep)

    def _fix_error(self, status, rh, data):
        """Upstream errors restated the Cosmos way [ERR]: "lang":"en-us", the
        message ending with a RequestID, no x-ms-error-code header."""
        rh = [(k, v) for k, v in rh if k.lower() != "x-ms-error-code"]
        try:
            doc = json.loads(data)
            err = doc["odata.error"]
            code = err.get("code", "")
            msg = err.get("message", {}).get("value", "")
        except (ValueError, KeyError, TypeError, AttributeError):
            return rh, data
        return rh, cosmos_error(code, msg.split("\nRequestId:")[0])

    def _fix_body(self, rh, data):
        """Entities in a 200/201 JSON answer the way Cosmos writes them."""
        ctype = dict((k.lower(), v) for k, v in rh).get("content-type", "")
        if "json" not in ctype or not data:
            return data
        try:
            doc = json.loads(data)
        except ValueError:
            return data
        if isinstance(doc, dict) and isinstance(doc.get("value"), list):
            doc["value"] = [fix_entity(e) for e in doc["value"]]
        elif isinstance(doc, dict):
            fix_entity(doc)
        return json.dumps(doc).encode()

    # -- continuation tokens -------------------------------------------------------
    def _new_token(self, query, offset):
        """An opaque continuation in the shape of [REC]: random, keyless, of a
        length drawn per token (some short, most over 1 KB, some over 7 KB)."""
        with self._lock:
            rng = self._token_rng
            rid = base64.b64encode(rng.getrandbits(96).to_bytes(12, "big")).decode()
            r = rng.random()
            pad = (rng.randint(8, 40) if r < 0.2 else
                   rng.randint(5400, 5900) if r > 0.85 else rng.randint(800, 1600))
            fpc = base64.b64encode(rng.getrandbits(8 * pad).to_bytes(pad, "big")).decode()
            token = json.dumps({"token": "+RID:~%s#RT:%d#TRC:%d#ISV:2#IEO:65567#QCF:8#FPC:%s"
                                         % (rid, rng.randint(1, 9), rng.randint(1, 5000), fpc),
                                "range": {"min": "", "max": "FF"}}, separators=(",", ":"))
            if rng.random() < 0.5:
                token = "[" + token + "]"       # [REC]: the later pages' form
            self._tokens[token] = (query, offset)
            while len(self._tokens) > TOKENS_KEPT:
                self._tokens.popitem(last=False)
            return token

    # -- queries -------------------------------------------------------------------
    def _read_all(self, up, path, params, headers, follow=True):
        """Every entity Azurite answers to PATH?PARAMS (its pages followed);
        returns ((status, reason, rh, data) of a failure or None, entities,
        the first answer's doc and headers, up)."""
        entities = []
        first = None
        npk = nrk = None
        while True:
            q = list(params)
            if npk is not None:
                q.append(("NextPartitionKey", npk))
                if nrk is not None:
                    q.append(("NextRowKey", nrk))
            target = path + ("?" + "&".join(urllib.parse.quote(k, safe="$") + "="
                                            + urllib.parse.quote(v, safe="") for k, v in q)
                             if q else "")
            (status, reason, rh, data), up = self._forward(up, "GET", target, headers, b"")
            self._count("upstream_pages")
            if status != 200:
                return (status, reason, rh, data), None, None, None, up
            doc = json.loads(data)
            entities.extend(doc.pop("value", []))
            hmap = {k.lower(): v for k, v in rh}
            if first is None:
                first = (doc, [(k, v) for k, v in rh
                               if not k.lower().startswith("x-ms-continuation")])
            npk = hmap.get("x-ms-continuation-nextpartitionkey")
            nrk = hmap.get("x-ms-continuation-nextrowkey")
            if npk is None or not follow:
                return None, entities, first[0], first[1], up

    def _query(self, sock, keep, up, path, table, query_string, headers):
        params = urllib.parse.parse_qsl(query_string, keep_blank_values=True)
        pmap = dict(params)
        top = pmap.get("$top")
        npk = pmap.get("NextPartitionKey")
        nrk = pmap.get("NextRowKey")
        rest = [(k, v) for k, v in params
                if k not in ("$top", "NextPartitionKey", "NextRowKey")]
        filt = pmap.get("$filter", "")
        key = (table, filt, pmap.get("$select", ""))
        try:
            size = int(top) if top is not None else self.page_size
            if size <= 0:
                raise ValueError
        except ValueError:
            self._error(sock, 400, "BadRequest", "The $top value is invalid.", keep)
            return up
        if npk is not None or nrk is not None:
            with self._lock:
                got = self._tokens.get(npk) if npk is not None else None
            if got is None or nrk != "NA" or got[0].key != key:
                # [REC] the client must send both back as given; what Cosmos
                # answers to a forged one is not public: 400 BadRequest here.
                self._count("bad_continuations")
                self._error(sock, 400, "BadRequest",
                            "Invalid continuation token: the continuation is malformed, "
                            "altered or not for this query.", keep)
                return up
            query, offset = got
        else:
            if names_timestamp(filt):
                # [TS] a $filter naming Timestamp matches nothing on Cosmos:
                # an empty answer, no error.
                self._count("timestamp_filters")
                failure, _, doc, rh, up = self._read_all(up, path, [
                    (k, v) for k, v in rest if k != "$filter"] + [("$top", "1")], headers,
                    follow=False)
                if failure is not None:
                    return self._pass(sock, keep, failure, "GET")
                query = _Query(key, [], doc, rh)
            else:
                failure, ent_list, doc, rh, up = self._read_all(up, path, rest, headers)
                if failure is not None:
                    return self._pass(sock, keep, failure, "GET")
                rng = random.Random(hashlib.sha256(
                    json.dumps([self.seed, key]).encode()).digest())
                rng.shuffle(ent_list)                   # [FAQ] not in key order
                query = _Query(key, [fix_entity(e) for e in ent_list], doc, rh)
            offset = 0
        page = query.entities[offset:offset + size]
        hdrs = list(query.headers)
        if offset + size < len(query.entities):
            token = self._new_token(query, offset + size)
            hdrs += [("x-ms-continuation-NextPartitionKey", token),
                     ("x-ms-continuation-NextRowKey", "NA")]
        body = dict(query.doc)
        body["value"] = page
        self._count("pages")
        self._send(sock, 200, hdrs, json.dumps(body).encode(), keep)
        return up

    @staticmethod
    def _fix_batch_answer(data):
        """The error of a failed changeset Azurite answered, restated [ERR]."""
        out = []
        for line in data.split(b"\r\n"):
            if line.startswith(b'{"odata.error"'):
                try:
                    err = json.loads(line)["odata.error"]
                    line = cosmos_error(err.get("code", ""), err["message"]["value"].split(
                        "\nRequestId:")[0]).rstrip(b"\r\n")
                except (ValueError, KeyError, TypeError, AttributeError):
                    pass
            out.append(line)
        return b"\r\n".join(out)

    def _pass(self, sock, keep, answer, method):
        status, reason, rh, data = answer
        if status == 202 and b'{"odata.error"' in data:
            data = self._fix_batch_answer(data)
        elif status >= 400:
            rh, data = self._fix_error(status, rh, data)
        elif status in (200, 201):
            data = self._fix_body(rh, data)
        self._send(sock, status, rh, data, keep, method)
        return None

    # -- writes: keys, names and limits ---------------------------------------------
    def _check_entity(self, props, url_keys=None):
        """None, or (status, code, message) of what Cosmos refuses in PROPS
        (the entity of a write; keys from the URL when given)."""
        pk, rk = url_keys if url_keys else (props.get("PartitionKey"), props.get("RowKey"))
        if pk == "" or rk == "":
            # [KEY] Cosmos refuses empty keys (Storage allows them); the exact
            # code is not public: BadRequest as for the other key errors.
            return 400, "BadRequest", "PartitionKey and RowKey cannot be empty."
        # [LIM] "Row keys can only be up to 255 bytes"; code not public.
        if isinstance(rk, str) and len(rk.encode()) > MAX_ROWKEY_BYTES:
            return 400, "BadRequest", "The RowKey exceeds the maximum length of 255 bytes."
        if isinstance(pk, str) and len(pk.encode()) > MAX_PARTKEY_BYTES:
            return 400, "BadRequest", "The PartitionKey exceeds the maximum length of 1 KB."
        for name in props:                # [KEY] reserved names
            base = name.split("@", 1)[0]
            if base.lower() in RESERVED_PROPS:
                return (400, "PropertyNameInvalid",
                        "The property name '%s' is reserved." % base)
        return None

    def _table_name_ok(self, name):
        return COSMOS_TABLE_NAME.match(urllib.parse.unquote(name)) is not None

    # -- batches --------------------------------------------------------------------
    @staticmethod
    def _split_batch(body, ctype):
        """(changeset boundary, [part bytes]) of a $batch body, or None."""
        m = re.search(rb"boundary=(changeset_[^\s;\r\n]+)", body)
        if not m:
            return None
        cs = m.group(1)
        chunks = body.split(b"--" + cs)
        parts = [c for c in chunks[1:] if not c.startswith(b"--")]
        return cs, chunks, parts

    def _batch_failure(self, sock, keep, index, status, code, message, extra=()):
        """A $batch answered 202 whose changeset failed at INDEX (named even at
        0: Cosmos prefixes the index always, "0:..."): the form of a Storage
        batch failure, which is what the SDKs parse for Cosmos too."""
        bb = "batchresponse_%s" % uuid.uuid4()
        cb = "changesetresponse_%s" % uuid.uuid4()
        err = cosmos_error(code, "%d:%s" % (index, message)).decode()
        inner = ["HTTP/1.1 %d %s" % (status, http.client.responses.get(status, "Error")),
                 "X-Content-Type-Options: nosniff", "DataServiceVersion: 3.0;"]
        inner += ["%s: %s" % kv for kv in extra]
        inner += ["Content-Type: application/json;odata=minimalmetadata;charset=utf-8", "",
                  err]
        text = ("--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n"
                "--%s\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary"
                "\r\n\r\n%s\r\n--%s--\r\n--%s--\r\n" % (bb, cb, cb, "\r\n".join(inner), cb, bb))
        self._count("batch_failures")
        self._send(sock, 202, [("Content-Type", "multipart/mixed; boundary=%s" % bb),
                               ("x-ms-activity-id", _activity())] + list(extra),
                   text.encode(), keep)

    def _batch(self, sock, keep, body, headers):
        """None if the batch was answered here, else the body to forward."""
        split = self._split_batch(body, None)
        if split is None:
            return body
        cs, chunks, parts = split
        out = []
        for i, part in enumerate(parts):
            head, sep, rest = part.partition(b"\r\n\r\n")
            req_head, sep2, req_body = rest.partition(b"\r\n\r\n")
            lines = req_head.split(b"\r\n")
            verb, _, tail = lines[0].partition(b" ")
            hdr = [l for l in lines[1:]]
            xm = [l for l in hdr if l.lower().startswith(b"x-http-method:")]
            if verb in (b"MERGE", b"PATCH"):
                # [405][SDK]: the SDKs send batch merges as POST + X-HTTP-Method
                # for Cosmos; the raw verbs are refused as outside a batch.
                self._batch_failure(sock, keep, i, 405, "MethodNotAllowed",
                                    "The requested HTTP method is not allowed.")
                return None
            if verb == b"POST" and xm and xm[0].split(b":", 1)[1].strip().upper() == b"MERGE":
                # Azurite takes a POST part for an insert: give it the verb.
                verb = b"MERGE"
                hdr = [l for l in hdr if l not in xm]
                self._count("batch_merge_rewritten")
            url = tail.rsplit(b" ", 1)[0].decode("latin-1")
            keys = self._url_keys(urllib.parse.urlsplit(url).path)
            if verb in (b"POST", b"PUT", b"MERGE") and req_body.strip():
                try:
                    props = json.loads(req_body)
                except ValueError:
                    props = {}
                bad = self._check_entity(props if isinstance(props, dict) else {}, keys)
                if bad:
                    self._batch_failure(sock, keep, i, *bad)
                    return None
            elif keys and ("" in keys):
                self._batch_failure(sock, keep, i, 400, "BadRequest",
                                    "PartitionKey and RowKey cannot be empty.")
                return None
            out.append(head + sep + b"\r\n".join([verb + b" " + tail] + hdr) + sep2 + req_body)
        # reassemble: preamble, rewritten parts, the closing delimiter and after
        closing = [c for c in chunks[1:] if c.startswith(b"--")]
        return (chunks[0] + b"".join(b"--" + cs + p for p in out)
                + b"".join(b"--" + cs + c for c in closing))

    @staticmethod
    def _url_keys(path):
        m = _ENTITY_PATH.match(path)
        if not m:
            return None
        k = _KEYS.match(urllib.parse.unquote(m.group(2)))
        if not k:
            return None
        return k.group(1).replace("''", "'"), k.group(2).replace("''", "'")

    # -- one request -------------------------------------------------------------------
    def _handle(self, sock, keep, up, method, target, headers, body):
        """Answer one request; returns the upstream connection."""
        hmap = {k.lower(): v for k, v in headers}
        split = urllib.parse.urlsplit(target)
        path = split.path
        with self._lock:
            throttled = self._throttle_rate > 0 and self._throttle_rng.random() < self._throttle_rate
        if throttled:
            # [429] Request rate too large: 429 + x-ms-retry-after-ms.
            self._count("throttled")
            extra = [("x-ms-retry-after-ms", str(self.retry_after_ms))]
            msg = ("Message: {\"Errors\":[\"Request rate is large. More Request Units may be "
                   "needed, so no changes were made. Please retry this request later.\"]}")
            if path.endswith("/$batch"):
                self._batch_failure(sock, keep, 0, 429, "TooManyRequests", msg, extra)
            else:
                self._error(sock, 429, "TooManyRequests", msg, keep, extra)
            return up
        if method in ("MERGE", "PATCH"):
            self._error(sock, 405, "MethodNotAllowed",               # [405]
                        "The requested HTTP method is not allowed.", keep)
            return up
        if len(body) > MAX_BODY_BYTES:
            self._error(sock, 413, "RequestEntityTooLarge",          # [LIM]
                        "The request payload is larger than 2 MB.", keep)
            return up
        m_ent = _ENTITY_PATH.match(path)
        m_q = _QUERY_PATH.match(path)
        table = (m_ent or m_q).group(1) if (m_ent or m_q) else None
        if table and table not in ("Tables", "$batch") and not self._table_name_ok(table):
            self._error(sock, 400, "InvalidInput",                   # [SDK] _error.py
                        "The table name contains an invalid character.", keep)
            return up
        if method == "POST" and path.endswith("/$batch"):
            body = self._batch(sock, keep, body, headers)
            if body is None:
                return up
        elif method == "POST" and table == "Tables":
            try:
                name = json.loads(body).get("TableName", "")
            except (ValueError, AttributeError):
                name = ""
            if not isinstance(name, str) or not COSMOS_TABLE_NAME.match(name):
                # [SDK] _error.py: Cosmos refuses these at create_table
                # (InternalServerError "The resource name presented contains
                # invalid character", or BadRequest "The input name is invalid."
                # past 254 characters); one code for both here.
                self._error(sock, 400, "BadRequest", "The input name is invalid.", keep)
                return up
        elif method in ("POST", "PUT") and table and table != "Tables":
            keys = self._url_keys(path)
            props = {}
            if body.strip():
                try:
                    props = json.loads(body)
                except ValueError:
                    props = {}
            bad = self._check_entity(props if isinstance(props, dict) else {}, keys)
            if bad:
                self._error(sock, bad[0], bad[1], bad[2], keep)
                return up
        elif method in ("GET", "DELETE") and m_ent:
            keys = self._url_keys(path)
            if keys and "" in keys:
                self._error(sock, 400, "BadRequest", "PartitionKey and RowKey cannot be empty.",
                            keep)
                return up
        if method == "GET" and m_q and table not in ("Tables",) and not m_ent:
            return self._query(sock, keep, up, path, table, split.query, headers)
        try:
            answer, up = self._forward(up, method, target, headers, body)
        except Exception:
            if up is not None:
                up.close()
            raise
        self._count("forwarded")
        self._pass(sock, keep, answer, method)
        return up

    def _serve(self, sock):
        rf = sock.makefile("rb")
        up = None
        try:
            while not self._stop.is_set():
                try:
                    req = self._read_request(rf)
                except (_BadRequest, ValueError):
                    self._count("bad_requests")
                    break
                if req is None:
                    break
                method, target, headers, body, keep = req
                self._count("requests")
                try:
                    up = self._handle(sock, keep, up, method, target, headers, body)
                except (OSError, ValueError) as e:
                    self._count("upstream_errors")
                    self._log("error: %r" % (e,))
                    up = None
                    self._send_simple(sock, 502, keep=False)
                    break
                if not keep:
                    break
        except OSError:
            pass
        finally:
            self._close(sock, rf, up)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Azurite answering as Cosmos DB for Table")
    ap.add_argument("--upstream", type=int, required=True, help="Azurite's port on 127.0.0.1")
    ap.add_argument("--listen", type=int, default=0, help="port to listen on (0: any)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the query orders")
    ap.add_argument("--page-size", type=int, default=DEFAULT_PAGE)
    ap.add_argument("--throttle", type=float, default=0.0, help="fraction answered 429")
    ap.add_argument("--throttle-seed", type=int, default=0)
    ap.add_argument("--retry-after-ms", type=int, default=50)
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    log = (lambda m: print(m, file=sys.stderr, flush=True)) if a.verbose else None
    cm = CosmosModel(a.upstream, a.listen, seed=a.seed, page_size=a.page_size, log=log,
                     retry_after_ms=a.retry_after_ms)
    cm.throttle(a.throttle, a.throttle_seed)
    cm.start()
    print("cosmosmodel: 127.0.0.1:%d -> 127.0.0.1:%d, seed %d" % (cm.port, a.upstream, a.seed),
          flush=True)
    return serve_until_stopped(cm, "cosmosmodel")


if __name__ == "__main__":
    sys.exit(main())
