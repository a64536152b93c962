# tablerest.py - minimal Table service REST client: SharedKey signing, paged scans, $batch inserts.
"""Raw Table service REST over one keep-alive HTTP/1.1 connection (Python's
stdlib http.client), as the protocol defines it and nothing more:

* every request signed with SharedKey (string to sign
  ``VERB\\n\\nContent-Type\\nx-ms-date\\n/<account><path>``);
* ``scan()``: Query Entities pages of up to 1000 entities, following the
  ``x-ms-continuation-NextPartitionKey/NextRowKey`` headers until there are
  none, with ``Accept: application/json;odata=minimalmetadata``;
* ``insert_batch()``: one entity group transaction (``$batch``) of up to 100
  inserts into one partition;
* ``create_table()`` / ``delete_table()``.

The benchmark uses it to seed tables quickly and as the protocol floor
(bench/rest_scan.py).
"""

import base64
import email.utils
import hashlib
import hmac
import http.client
import json
import urllib.parse
import uuid

from common import BenchError, parse_conn_str

API_VERSION = "2019-02-02"
ACCEPT = "application/json;odata=minimalmetadata"
CONTINUATION = ("NextPartitionKey", "NextRowKey")


class TableRest:
    """A signed keep-alive connection to one Table service account."""

    def __init__(self, conn_str, timeout=120):
        endpoint, self.account, key = parse_conn_str(conn_str)
        url = urllib.parse.urlsplit(endpoint)
        if url.scheme != "http":
            raise BenchError("tablerest speaks plain http only (Azurite): %s" % endpoint)
        self.base_path = url.path.rstrip("/")
        self.origin = "%s://%s" % (url.scheme, url.netloc)
        self.key = base64.b64decode(key)
        self.conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=timeout)
        self.requests = 0
        self.bytes_in = 0

    def close(self):
        self.conn.close()

    def _sign(self, method, path, content_type, date):
        sts = "%s\n\n%s\n%s\n/%s%s" % (method, content_type, date, self.account, path)
        mac = hmac.new(self.key, sts.encode("utf-8"), hashlib.sha256).digest()
        return "SharedKey %s:%s" % (self.account, base64.b64encode(mac).decode())

    def request(self, method, resource, query=None, body=None,
                content_type="", headers=None):
        """Send METHOD to <endpoint>/RESOURCE[?QUERY]; return (status,
        headers with lower-case names, body bytes)."""
        path = self.base_path + "/" + resource
        target = path + ("?" + urllib.parse.urlencode(query) if query else "")
        date = email.utils.formatdate(usegmt=True)
        hdrs = {"x-ms-date": date, "x-ms-version": API_VERSION, "Accept": ACCEPT,
                "DataServiceVersion": "3.0", "MaxDataServiceVersion": "3.0;NetFx",
                "Authorization": self._sign(method, path, content_type, date)}
        if content_type:
            hdrs["Content-Type"] = content_type
        hdrs.update(headers or {})
        self.conn.request(method, target, body=body, headers=hdrs)
        resp = self.conn.getresponse()
        data = resp.read()
        self.requests += 1
        self.bytes_in += len(data)
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data

    def _expect(self, what, status, data, *ok):
        if status not in ok:
            raise BenchError("%s: HTTP %d: %s"
                             % (what, status, data[:500].decode(errors="replace")))

    def create_table(self, name):
        status, _, data = self.request("POST", "Tables", body=json.dumps({"TableName": name}),
                                       content_type="application/json",
                                       headers={"Prefer": "return-no-content"})
        self._expect("create table %s" % name, status, data, 201, 204)

    def delete_table(self, name, missing_ok=False):
        status, _, data = self.request("DELETE", "Tables('%s')" % name)
        self._expect("delete table %s" % name, status, data, 204, *((404,) if missing_ok else ()))

    def pages(self, table, partition=None):
        """Yield the decoded ``value`` list of every page of a scan of TABLE
        (of one PARTITION if given)."""
        query = {"$filter": "PartitionKey eq '%s'" % partition.replace("'", "''")} \
            if partition is not None else {}
        seen = set()
        while True:
            status, headers, data = self.request("GET", "%s()" % table, query=query)
            self._expect("scan %s" % table, status, data, 200)
            yield json.loads(data)["value"]
            token = tuple(headers.get("x-ms-continuation-" + k.lower()) for k in CONTINUATION)
            if not any(token):
                return
            if token in seen:
                raise BenchError("scan %s: continuation %r did not advance" % (table, token))
            seen.add(token)
            for name, value in zip(CONTINUATION, token):
                if value is None:
                    query.pop(name, None)
                else:
                    query[name] = value

    def insert_batch(self, table, entities):
        """Insert ENTITIES (wire-format dicts, one partition, at most 100) in
        one entity group transaction."""
        batch, changeset = "batch_" + uuid.uuid4().hex, "changeset_" + uuid.uuid4().hex
        url = "%s%s/%s" % (self.origin, self.base_path, table)
        parts = ["--%s\r\nContent-Type: multipart/mixed; boundary=%s\r\n\r\n" % (batch, changeset)]
        for e in entities:
            parts.append(
                "--%s\r\nContent-Type: application/http\r\n"
                "Content-Transfer-Encoding: binary\r\n\r\n"
                "POST %s HTTP/1.1\r\nContent-Type: application/json\r\nAccept: %s\r\n"
                "Prefer: return-no-content\r\nDataServiceVersion: 3.0\r\n\r\n%s\r\n"
                % (changeset, url, ACCEPT, json.dumps(e)))
        parts.append("--%s--\r\n\r\n--%s--\r\n" % (changeset, batch))
        status, _, data = self.request("POST", "$batch", body="".join(parts).encode("utf-8"),
                                       content_type="multipart/mixed; boundary=" + batch)
        self._expect("batch insert into %s" % table, status, data, 202)
        answers = data.count(b"HTTP/1.1 204") + data.count(b"HTTP/1.1 201")
        if answers != len(entities):
            raise BenchError("batch insert into %s: %d of %d operations succeeded: %s"
                             % (table, answers, len(entities), data[:800].decode(errors="replace")))
