"""Listings that never end (issue 12, item 4): a server answering empty
pages with ever-advancing continuation tokens. A listing stops with EIO after
TABLE_MAX_EMPTY_PAGES (100) empty pages in a row, with one log line; a reader
killed while it waits is let go at once, and unmount or SIGTERM stops every
request. The server is a stub on 127.0.0.1 that speaks just enough of the
Table protocol (no Azurite needed for what it checks)."""

import json
import os
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import conn_str_for

MAX_EMPTY_PAGES = 100       # TABLE_MAX_EMPTY_PAGES in src/table.h


class Endless:
    """Answers Query Tables with one table, and every entity query with an
    empty page and a new continuation, after DELAY seconds."""

    def __init__(self, delay=0.0):
        self.delay = delay
        self.queries = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                headers = {}
                if "/Tables" in self.path:
                    body = {"value": [{"TableName": "endless"}]}
                else:
                    with outer.lock:
                        outer.queries += 1
                        n = outer.queries
                    if outer.delay:
                        time.sleep(outer.delay)
                    body = {"value": []}
                    headers = {"x-ms-continuation-NextPartitionKey": "1!8!p%06d" % n,
                               "x-ms-continuation-NextRowKey": "1!8!r%06d" % n}
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type",
                                 "application/json;odata=minimalmetadata;charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self):
        with self.lock:
            return self.queries

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endless():
    srv = Endless()
    yield srv
    srv.close()


def test_endless_empty_pages_end_with_eio(endless, mounter):
    m = mounter.mount(conn_str=conn_str_for(endless.port))
    t0 = time.monotonic()
    with pytest.raises(OSError) as ei:
        os.listdir(os.path.join(m, "endless"))
    assert ei.value.errno == 5                                  # EIO
    assert time.monotonic() - t0 < 30
    assert MAX_EMPTY_PAGES <= endless.count() <= MAX_EMPTY_PAGES + 5, endless.count()
    assert "pages in a row without an entity" in m.stderr()
    time.sleep(0.3)                     # a page fetched ahead may still land
    before = endless.count()
    time.sleep(0.5)
    assert endless.count() == before                            # nothing goes on


def test_killed_reader_is_let_go_and_requests_stop(endless, mounter, sh):
    endless.delay = 0.2                 # 100 pages would take 20 s
    m = mounter.mount(conn_str=conn_str_for(endless.port))
    ls = subprocess.Popen(["ls", os.path.join(m, "endless")],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    assert ls.poll() is None and endless.count() >= 2
    t0 = time.monotonic()
    ls.kill()
    ls.wait(timeout=10)
    assert time.monotonic() - t0 < 3, "ls stayed in D state after SIGKILL"
    time.sleep(0.6)                     # one page in flight may finish
    before = endless.count()
    time.sleep(1.0)
    assert endless.count() == before, "the daemon kept listing for a reader that is gone"
    assert os.listdir(m) == ["endless"]                         # still serving


def test_sigterm_stops_an_endless_listing(endless, mounter):
    endless.delay = 0.2
    m = mounter.mount(conn_str=conn_str_for(endless.port))
    ls = subprocess.Popen(["ls", os.path.join(m, "endless")],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    t0 = time.monotonic()
    m.proc.send_signal(signal.SIGTERM)
    m.proc.wait(timeout=15)
    assert time.monotonic() - t0 < 5
    ls.wait(timeout=10)
    before = endless.count()
    time.sleep(0.6)
    assert endless.count() == before
    m.unmount(check=False)
