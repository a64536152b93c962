"""systemd's readiness protocol (Type=notify), tested with a notification
socket of the test's own (no systemd): aztfs sends READY=1 once mounted,
STATUS= every 2 s with write-behind's counts, and at the stop STOPPING=1,
with EXTEND_TIMEOUT_USEC for -o writeback_stop when changes are queued;
a path and an abstract ("@name") socket."""

import os
import socket
import time

import pytest

T = "notifyTbl"


@pytest.fixture
def table(sdk, seed):
    t = seed.table(sdk, T)
    t.upsert_entity({"PartitionKey": "p", "RowKey": "a", "v": 1})
    return t


class Listener:
    """A datagram socket at PATH (or "@name": abstract) that collects what
    aztfs sends, each message a dict of its assignments."""

    def __init__(self, where):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + where[1:] if where.startswith("@") else where)
        self.where = where
        self.got = []

    def read(self, timeout):
        """Messages that arrive within TIMEOUT seconds, appended to got."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096).decode()
            except socket.timeout:
                return
            self.got.append(dict(l.split("=", 1) for l in data.split("\n") if l))

    def wait_for(self, key, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in self.got:
                if key in m:
                    return m
            self.read(0.2)
        raise AssertionError("no %s within %d s: %s" % (key, timeout, self.got))

    def close(self):
        self.sock.close()


@pytest.mark.parametrize("abstract", [False, True])
def test_ready_then_stopping(table, mounter, tmp_path, abstract):
    where = "@aztfs-test-%d" % os.getpid() if abstract else str(tmp_path / "notify.sock")
    ln = Listener(where)
    try:
        mnt = mounter.mount(env_extra={"NOTIFY_SOCKET": where})
        ready = ln.wait_for("READY")
        assert ready["READY"] == "1" and ready["STATUS"] == "serving %s" % mnt, ready
        assert os.listdir(os.path.join(str(mnt), T, "p")) == ["a.json"]   # it answers
        ln.read(2.5)
        status = [m["STATUS"] for m in ln.got if "READY" not in m and "STATUS" in m]
        assert status and all(s == "serving %s" % mnt for s in status), ln.got
        mnt.unmount()
        stop = ln.wait_for("STOPPING")
        assert stop == {"STOPPING": "1", "STATUS": "stopping"}, stop
        assert [m for m in ln.got if "READY" in m] == [ready], ln.got
    finally:
        ln.close()


def test_write_behind_status_and_the_stop_extended(table, mounter, tmp_path):
    """STATUS= carries write-behind's counts; a stop with changes queued
    asks systemd for -o writeback_stop more seconds (plus 10 for the exit)
    and says how many it sends; they all arrive."""
    where = str(tmp_path / "notify.sock")
    journal = tmp_path / "journal"
    journal.mkdir(mode=0o700)
    ln = Listener(where)
    try:
        mnt = mounter.mount(options=["-o", "writeback=60000,writeback_stop=7,journal_dir=%s"
                                     % journal], env_extra={"NOTIFY_SOCKET": where})
        ln.wait_for("READY")
        for i in range(3):
            with open(os.path.join(str(mnt), T, "p", "n%d.json" % i), "w") as f:
                f.write('{"v": %d}' % i)
        want = "serving %s; write-behind: 3 queued, 0 sending, 0 failed" % mnt
        deadline = time.monotonic() + 10
        while not any(m.get("STATUS") == want for m in ln.got):
            assert time.monotonic() < deadline, ln.got
            ln.read(0.5)
        mnt.unmount()
        stop = ln.wait_for("STOPPING")
        assert stop == {"STOPPING": "1",
                        "STATUS": "sending 3 queued changes before exiting (at most 7 s)",
                        "EXTEND_TIMEOUT_USEC": "17000000"}, stop
        assert sorted(e["RowKey"] for e in table.list_entities()) == ["a", "n0", "n1", "n2"]
    finally:
        ln.close()
