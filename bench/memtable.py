# memtable.py - a read-only Table endpoint in memory that serves requests in parallel.
"""Azurite serves one request at a time (its own time for a page of 1,000
entities is about 25 ms here), so against it requests in flight queue
instead of overlapping. An account's partitions are served by many servers.
This endpoint stands in for one that serves requests in parallel, to see
what aztfs's parallel listings do at a distance when the server is not the
limit: an HTTP/1.1 server on 127.0.0.1 holding bench/seed.py's entities in
memory, answering Query Tables, point queries (one entity by its keys)
and Query Entities with the filters aztfs
and bench/rest_scan.py send (PartitionKey and RowKey comparisons joined
with ``and``, each alone or two joined by ``or`` in parentheses), ``$top``,
and continuation
(NextPartitionKey/NextRowKey: the next matching entity's keys in base64,
as Azurite sends them, or in a form aztfs cannot read with
``--opaque-tokens``; none when no match follows), 1,000 entities a page.
Requests are not authenticated; nothing can be written. Standard library
only.

It runs in a process of its own and forks one per connection, so its
connections are served in parallel on every core and share no
interpreter lock with the benchmark, the proxy or each other. With DELAY
every answer is held that long before it is sent (the server sleeps: no
CPU spent), which is what bench/faultproxy.py's delay does, without
relaying every byte through Python.

    srv = MemTable({"tab": (20000, 20)}, delay=0.025); ... srv.port ...; srv.close()
    /usr/bin/python3 bench/memtable.py --table tab=20000x20 [--delay-ms 25]
"""

import base64
import bisect
import argparse
import gc
import json
import os
import re
import signal
import socketserver
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, unquote, urlparse

from seed import entity

PAGE = 1000
CMP = r"(PartitionKey|RowKey|TableName)\s+(eq|gt|ge|lt|le)\s+'((?:[^']|'')*)'"
TERM = re.compile(r"\s*\(?\s*" + CMP + r"\s*\)?\s*(?:and\b)?")
EITHER = re.compile(r"\s*\(\s*" + CMP + r"\s+or\s+" + CMP + r"\s*\)\s*(?:and\b)?")
OPS = {"eq": lambda a, b: a == b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
       "lt": lambda a, b: a < b, "le": lambda a, b: a <= b}


def parse_filter(text):
    """([(field, op, value)], [((field, op, value), (field, op, value))]):
    the comparisons of a filter joined by ``and``, and its terms that are
    two comparisons joined by ``or`` (what aztfs sends for the keys after
    one); ValueError for anything else."""
    terms, either, pos = [], [], 0
    while pos < len(text):
        m = EITHER.match(text, pos)
        if m:
            g = [x.replace("''", "'") if i % 3 == 2 else x for i, x in enumerate(m.groups())]
            either.append((tuple(g[:3]), tuple(g[3:])))
            pos = m.end()
            continue
        m = TERM.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError("filter not understood: %r" % text)
        terms.append((m.group(1), m.group(2), m.group(3).replace("''", "'")))
        pos = m.end()
    return terms, either


def matches(pk, rk, terms, either):
    """Do keys (PK, RK) pass every term of a parsed filter?"""
    def one(f, op, v):
        return OPS[op](pk if f == "PartitionKey" else rk, v)
    return all(one(*t) for t in terms) and all(one(*a) or one(*b) for a, b in either)


def token(key, opaque):
    """KEY as a continuation token: in base64 (the emulator's form), or
    when OPAQUE "~" and its UTF-8 in hex, which aztfs cannot read a key
    from (as it cannot from a service whose tokens are its own)."""
    return "~" + key.encode().hex() if opaque else base64.b64encode(key.encode()).decode()


def untoken(tok):
    """The key of a token made by token()."""
    return bytes.fromhex(tok[1:]).decode() if tok.startswith("~") else base64.b64decode(tok).decode()


class ForkingHTTPServer(socketserver.ForkingMixIn, HTTPServer):
    """One process per connection."""


POINT = re.compile(r"([^(]+)\(PartitionKey='((?:[^']|'')*)',RowKey='((?:[^']|'')*)'\)")


class Endpoint:
    """The server itself (in the process memtable.py runs as): TABLES
    {name: (entities, partitions)} of bench/seed.py's entities; with
    OPAQUE, continuation tokens that are neither the emulator's nor Azure's
    form (see token())."""

    def __init__(self, tables, delay=0.0, opaque=False):
        self.opaque = opaque
        self.tables = {}
        for name, (n, p) in tables.items():
            rows = []
            for i in range(n):
                e = entity(i, p)
                e["odata.etag"] = "W/\"datetime'2026-11-23T00%%3A00%%3A00.%07dZ'\"" % i
                e["Timestamp"] = "2026-11-23T00:00:00.%07dZ" % i
                rows.append(((e["PartitionKey"], e["RowKey"]), json.dumps(e)))
            rows.sort()
            self.tables[name] = ([k for k, _ in rows], [j for _, j in rows])
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True   # headers and body leave at once

            def log_message(self, *args):
                pass

            def do_GET(self):
                t0 = time.monotonic()
                try:
                    status, body, headers = outer.answer(self.path)
                except ValueError as e:
                    status, headers = 400, {}
                    body = json.dumps({"odata.error": {"code": "InvalidInput",
                                                       "message": {"value": str(e)}}})
                data = body.encode()
                wait = delay - (time.monotonic() - t0)
                if wait > 0:
                    time.sleep(wait)
                self.send_response(status)
                self.send_header("Content-Type",
                                 "application/json;odata=minimalmetadata;charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ForkingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]

    def answer(self, path):
        """(status, body, headers) for GET PATH."""
        url = urlparse(path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        last = unquote(url.path).rstrip("/").rsplit("/", 1)[-1]
        terms, either = parse_filter(q.get("$filter", ""))
        if last == "Tables":
            names = [n for n in sorted(self.tables)
                     if all(OPS[op](n, v) for f, op, v in terms if f == "TableName")]
            return 200, json.dumps({"value": [{"TableName": n} for n in names]}), {}
        name = last.split("(", 1)[0]
        point = POINT.fullmatch(last)
        if name in self.tables and point:           # a point query: one entity
            keys, rows = self.tables[name]
            k = (point.group(2).replace("''", "'"), point.group(3).replace("''", "'"))
            i = bisect.bisect_left(keys, k)
            if i < len(keys) and keys[i] == k:
                return 200, rows[i], {"ETag": json.loads(rows[i])["odata.etag"]}
        if name not in self.tables or not last.endswith("()"):
            return 404, json.dumps({"odata.error": {"code": "ResourceNotFound",
                                                    "message": {"value": "not found"}}}), {}
        return self.query(self.tables[name], terms, either, q, self.opaque)

    @staticmethod
    def span(terms, either):
        """(lo, hi): when the keys a filter matches are exactly those in
        [lo, hi) (hi None: no end), which every filter a scan or a split
        sends is (PartitionKey bounds; "the keys after (pk, rk)": the
        partitions from pk on, and (PartitionKey gt pk or RowKey gt rk));
        else None, and the rows are tested one by one. A slice costs the
        server nothing a row, as the real service's index does: testing
        each row in Python cost the server more CPU for aztfs's split
        queries than for the unfiltered scan it is measured against, on
        the cores they share."""
        lo, hi = ("", ""), None

        def below(k):
            return k if hi is None else min(hi, k)
        for f, op, v in terms:
            if f != "PartitionKey":
                return None
            if op in ("eq", "ge"):
                lo = max(lo, (v, ""))
            if op == "gt":
                lo = max(lo, (v + "\0", ""))
            if op in ("eq", "le"):
                hi = below((v + "\0", ""))
            if op == "lt":
                hi = below((v, ""))
        for a, b in either:
            pk, rk = (a, b) if a[0] == "PartitionKey" else (b, a)
            if (pk[:2], rk[:2]) != (("PartitionKey", "gt"), ("RowKey", "gt")) or \
                    ("PartitionKey", "ge", pk[2]) not in terms:
                return None
            lo = max(lo, (pk[2], rk[2] + "\0"))   # given pk >= x: the keys after (x, y)
        return lo, hi

    @staticmethod
    def query(table, terms, either, q, opaque=False):
        keys, rows = table
        top = min(int(q.get("$top", PAGE)), PAGE)
        start = ("", "")
        for f, op, v in terms:       # where the keys that can match begin
            if f == "PartitionKey" and op in ("eq", "ge", "gt"):
                start = max(start, (v, "") if op != "gt" else (v + "\0", ""))
        pks = [v for f, op, v in terms if f == "PartitionKey" and op == "eq"]
        for f, op, v in terms:
            if f == "RowKey" and op in ("ge", "gt") and pks:
                start = max(start, (pks[0], v if op == "ge" else v + "\0"))
        if "NextPartitionKey" in q:
            nk = (untoken(q["NextPartitionKey"]), untoken(q.get("NextRowKey", "")))
            start = max(start, nk)
        i = bisect.bisect_left(keys, start)
        span = Endpoint.span(terms, either)
        if span:                        # the matches are the keys in a span: one slice
            lo, hi = span
            i = max(i, bisect.bisect_left(keys, lo))
            j = len(keys) if hi is None else bisect.bisect_left(keys, hi)
            out = rows[i:min(j, i + top)] if i < j else []
            nxt = keys[i + top] if i + top < j else None
            i = len(keys)               # the loop below has nothing to do
        else:
            out, nxt = [], None
        while i < len(keys):
            pk, rk = keys[i]
            if any(f == "PartitionKey" and op in ("eq", "lt", "le") and not OPS[op](pk, v)
                   for f, op, v in terms):
                break                   # past the partitions that can match
            if matches(pk, rk, terms, either):
                if len(out) == top:
                    nxt = keys[i]       # a match after the page: it continues there
                    break
                out.append(rows[i])
            i += 1
        headers = {}
        if nxt:
            headers = {"x-ms-continuation-NextPartitionKey": token(nxt[0], opaque),
                       "x-ms-continuation-NextRowKey": token(nxt[1], opaque)}
        return 200, '{"value":[' + ",".join(out) + "]}", headers

    def serve(self):
        self.server.serve_forever()


class MemTable:
    """Endpoint in a process of its own: TABLES {name: (entities,
    partitions)}, every answer held DELAY seconds, continuation tokens
    opaque with OPAQUE_TOKENS (Endpoint); .port, .close()."""

    def __init__(self, tables, delay=0.0, opaque_tokens=False):
        argv = [sys.executable, os.path.abspath(__file__), "--delay-ms", str(delay * 1000.0)]
        if opaque_tokens:
            argv.append("--opaque-tokens")
        for name, (n, p) in tables.items():
            argv += ["--table", "%s=%dx%d" % (name, n, p)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            self.proc.kill()
            raise RuntimeError("memtable.py did not start: %r" % line)
        self.port = int(line.split()[1])

    def close(self):
        """Stop the server and the processes serving its connections."""
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait()
        self.proc.stdout.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", action="append", required=True, help="NAME=ENTITIESxPARTITIONS")
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--opaque-tokens", action="store_true")
    a = ap.parse_args()
    tables = {}
    for t in a.table:
        name, shape = t.split("=")
        tables[name] = tuple(int(x) for x in shape.split("x"))
    ep = Endpoint(tables, a.delay_ms / 1000.0, a.opaque_tokens)
    # the table's objects out of the collector's sight: a collection in a
    # connection's process would walk them all, and so copy every page
    # the fork shares (the cost grew with the table, on the cores aztfs
    # shares with it)
    gc.freeze()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print("port %d" % ep.port, flush=True)
    ep.serve()


if __name__ == "__main__":
    main()
