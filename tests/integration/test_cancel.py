"""Listings that never end (issue 12, item 4): a server answering empty
pages with ever-advancing continuation tokens. A listing stops with EIO after
TABLE_MAX_EMPTY_PAGES (100) empty pages in a row, with one log line; a reader
killed while it waits is let go at once, and unmount or SIGTERM stops every
request. The server is a stub on 127.0.0.1 that speaks just enough of the
Table protocol (no Azurite needed for what it checks)."""

import os
import signal
import subprocess
import time

import pytest

from conftest import conn_str_for
from stubtable import StubTable

MAX_EMPTY_PAGES = 100       # TABLE_MAX_EMPTY_PAGES in src/table.h


class Endless(StubTable):
    """Answers Query Tables with one table, and every entity query with an
    empty page and a new continuation, after DELAY seconds."""

    def __init__(self, delay=0.0):
        super().__init__("endless", delay)

    def page(self, n, query):
        return [], True


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
