# stubtable.py - a stub Table endpoint on 127.0.0.1 for what Azurite never does.
"""Just enough of the Table protocol for tests that need answers Azurite
never gives (pages without an entity, continuation without end): Query
Tables names one table, and every entity query is answered by
``page(n, query)`` of a subclass, where N counts the entity queries from 1.

    class Endless(StubTable):
        def page(self, n, query):
            return [], True          # (entities, continue?)

    srv = Endless("endless", delay=0.0); ... srv.port ...; srv.close()

Each entity query's $filter is recorded in ``filters``; ``count()`` is the
number of entity queries so far. Standard library only.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class StubTable:
    """A threaded HTTP/1.1 server answering as a Table service holding
    TABLE; DELAY seconds before each entity page."""

    def __init__(self, table, delay=0.0):
        self.table = table
        self.delay = delay
        self.filters = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                headers = {}
                if "/Tables" in self.path:
                    body = {"value": [{"TableName": outer.table}]}
                else:
                    q = parse_qs(urlparse(self.path).query)
                    with outer.lock:
                        outer.filters.append(q.get("$filter", [None])[0])
                        n = len(outer.filters)
                    if outer.delay:
                        time.sleep(outer.delay)
                    rows, more = outer.page(n, q)
                    body = {"value": rows}
                    if more:
                        headers = {"x-ms-continuation-NextPartitionKey": "1!8!p%06d" % n,
                                   "x-ms-continuation-NextRowKey": "1!8!r%06d" % n}
                outer._send(self, body, headers)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def _send(handler, body, headers):
        data = json.dumps(body).encode()
        handler.send_response(200)
        handler.send_header("Content-Type",
                            "application/json;odata=minimalmetadata;charset=utf-8")
        handler.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(data)

    def page(self, n, query):
        """The entities of the Nth entity query's page, and whether a
        continuation follows. Subclasses say."""
        raise NotImplementedError

    def count(self):
        with self.lock:
            return len(self.filters)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
