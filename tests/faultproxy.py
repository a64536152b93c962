#!/usr/bin/python3
"""faultproxy.py - an HTTP/1.1 reverse proxy that injects faults (stdlib only).

Sits between aztfs and Azurite on 127.0.0.1 and, for a configurable fraction
of the requests (seeded RNG, so a run can be replayed), injects one fault:

  kind            when                      what the client sees
  --------------  ------------------------  -----------------------------------
  500             before forwarding         500 Internal Server Error
  503             before forwarding         503 Server Busy
  503_retry       before forwarding         503 with "Retry-After: N" (N =
                                            retry_after, default 1)
  404             before forwarding         404 whose error code is not the
                                            service's not-found code (only
                                            when asked for: not in the default
                                            mix, it is not transient)
  400             before forwarding         400 whose error names no operation
                                            (a batch refused as a whole; only
                                            when asked for, as 404)
  reset           before forwarding         connection closed (RST) with no answer
  stall           before forwarding         no answer for STALL seconds, then close
  reset_after     after forwarding          request applied, connection reset
  503_after       after forwarding          request applied, 503 instead of the answer
  stall_after     after forwarding          request applied, no answer for STALL s
  truncate_after  after forwarding          request applied, headers announce
                                            Content-Length N, fewer bytes, close

With DELAY (seconds; --delay-ms from the shell) every request is held that
long before it is forwarded: what a client in another region sees.

With LIMIT_RPS (throttle()) the proxy is a service that throttles: past
that many requests served in the last second it answers 503 ServerBusy with
"Retry-After: 1" (counted as 'throttled'), as the service's scalability
targets say it will. arrivals() gives the time of every request received.

A subclass modelling a service overrides _answer_here() (answer a request
itself, before any fault and without forwarding it) and _answered() (see the
server's answer of a forwarded one): bench/limitmodel.py does.

"Before" faults never reach the server; "after" faults are applied by the
server and only the answer is lost, which is what makes a write ambiguous.

Keep-alive is supported on both sides: one upstream connection per client
connection, re-opened when it breaks. Chunked upstream bodies are de-chunked
and re-sent with a Content-Length.

The last faulted requests are kept (faulted(): kind, method, target, body,
and whether the server has answered it), so a test can see what a lost
answer belonged to.

From Python (the tests take it from tests/harness.py, with Azurite and mounts):

    from harness import FaultProxy
    with FaultProxy(upstream_port=az.port, rate=0.2, seed=7) as px:
        ... px.port ...; px.counts() ; px.set_faults(rate=1.0, kinds=["stall"])
        px.faulted()[-1]["body"]      # the request the last fault hit

From the shell:

    /usr/bin/python3 tests/faultproxy.py --upstream 10002 --listen 10003 \\
        --rate 0.2 --seed 1 [--kinds 500,reset,stall] [--stall 10]

prints the counts when stopped (Ctrl-C / SIGTERM).
"""

import argparse
import collections
import http.client
import random
import signal
import socket
import struct
import sys
import threading
import time

BEFORE_KINDS = ("500", "503", "503_retry", "reset", "stall", "404", "400")
AFTER_KINDS = ("reset_after", "503_after", "stall_after", "truncate_after")
ALL_KINDS = BEFORE_KINDS + AFTER_KINDS
# What a client can retry its way through (the mix when no kinds are named).
# Answered with an error status before forwarding, not forwarded.
STATUS_KINDS = ("500", "503", "503_retry", "404", "400")
# Not transient: only when asked for.
ASKED_ONLY = ("404", "400")
DEFAULT_KINDS = tuple(k for k in ALL_KINDS if k not in ASKED_ONLY)

FAULTED_KEPT = 16      # faulted requests faulted() remembers (the latest)

# Default mix: stalls are expensive (each costs one client timeout), so rarer.
DEFAULT_WEIGHTS = {
    "500": 2, "503": 2, "503_retry": 1, "reset": 2, "stall": 1,
    "reset_after": 2, "503_after": 2, "stall_after": 1, "truncate_after": 2,
}

REASONS = {400: "Bad Request", 404: "Not Found", 500: "Internal Server Error",
           503: "Service Unavailable"}


class _BadRequest(Exception):
    pass


def _hard_close(sock):
    """Close SOCK with a TCP RST (SO_LINGER 0) so the peer sees a reset."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class FaultProxy:
    """A threaded fault-injecting reverse proxy; see the module docstring."""

    def __init__(self, upstream_port, listen_port=0, rate=0.2, seed=0, kinds=None,
                 weights=None, stall=10.0, upstream_host="127.0.0.1", log=None,
                 retry_after=1, delay=0.0):
        self.upstream = (upstream_host, upstream_port)
        self.delay = float(delay)           # seconds every request is held
                                            # (a client at a distance)
        self.stall_secs = float(stall)
        self.limit_rps = None               # throttle(): served per second at most
        self._served = collections.deque()  # times of the requests let through
        self._arrivals = []                 # times of every request
        self.retry_after = retry_after      # seconds, or an HTTP date (str)
        self.log = log
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._counts = {}
        self._faulted = collections.deque(maxlen=FAULTED_KEPT)
        self._stop = threading.Event()
        self._threads = []
        self._conns = set()
        self.set_faults(rate, kinds, weights)
        self._lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._lsock.bind(("127.0.0.1", listen_port))
        self._lsock.listen(64)
        self.port = self._lsock.getsockname()[1]
        self._acceptor = None

    # -- configuration and counters -------------------------------------------
    def set_faults(self, rate=None, kinds=None, weights=None, limit=None, methods=None,
                   match=None):
        """Change the fault rate (0..1) and/or the kinds injected. LIMIT: inject
        at most this many more faults (None: no limit). METHODS: fault only
        requests with one of these methods (None: any). MATCH: fault only
        requests for which MATCH(method, target, body) is true (None: any)."""
        with self._lock:
            self._limit = limit
            self._methods = set(methods) if methods is not None else None
            self._match = match
            if rate is not None:
                if not 0.0 <= rate <= 1.0:
                    raise ValueError("rate must be between 0 and 1")
                self.rate = float(rate)
            if kinds is not None or weights is not None or not hasattr(self, "_kinds"):
                w = dict(DEFAULT_WEIGHTS)
                if weights:
                    w.update(weights)
                ks = list(kinds) if kinds is not None else list(DEFAULT_KINDS)
                for k in ks:
                    if k not in ALL_KINDS:
                        raise ValueError("unknown fault kind %r" % k)
                self._kinds = [(k, w.get(k, 1)) for k in ks if w.get(k, 1) > 0]

    def throttle(self, limit_rps):
        """Answer 503 ServerBusy + Retry-After: 1 past LIMIT_RPS requests let
        through in the last second (None: never)."""
        with self._lock:
            self.limit_rps = limit_rps
            self._served.clear()

    def arrivals(self):
        """time.monotonic() of every request received, in order."""
        with self._lock:
            return list(self._arrivals)

    def _over_limit(self):
        now = time.monotonic()
        with self._lock:
            self._arrivals.append(now)
            if self.limit_rps is None:
                return False
            while self._served and self._served[0] <= now - 1.0:
                self._served.popleft()
            if len(self._served) >= self.limit_rps:
                return True
            self._served.append(now)
            return False

    def _count(self, what, n=1):
        with self._lock:
            self._counts[what] = self._counts.get(what, 0) + n

    def counts(self):
        """Copy of the counters: 'requests', 'forwarded', 'upstream_errors' and
        one entry per injected fault kind."""
        with self._lock:
            return dict(self._counts)

    def faulted(self):
        """The last FAULTED_KEPT requests a fault was injected into, oldest
        first: dicts of 'kind', 'method', 'target', 'body' (bytes) and
        'forwarded' (an "after" fault's request has reached the server and
        been answered)."""
        with self._lock:
            return [dict(f) for f in self._faulted]

    def injected(self):
        c = self.counts()
        return sum(v for k, v in c.items() if k in ALL_KINDS)

    def _pick(self, method, target, body):
        with self._lock:
            if self._methods is not None and method not in self._methods:
                return None
            if self._match is not None and not self._match(method, target, body):
                return None
            if not self._kinds or self._rng.random() >= self.rate:
                return None
            if self._limit is not None:
                if self._limit <= 0:
                    return None
                self._limit -= 1
            total = sum(w for _, w in self._kinds)
            x = self._rng.uniform(0, total)
            for k, w in self._kinds:
                x -= w
                if x <= 0:
                    return k
            return self._kinds[-1][0]

    def _log(self, msg):
        if self.log:
            self.log("faultproxy: " + msg)

    # -- lifecycle ---------------------------------------------------------------
    def start(self):
        self._acceptor = threading.Thread(target=self._accept_loop, name="faultproxy-accept",
                                          daemon=True)
        self._acceptor.start()
        return self

    def stop(self):
        self._stop.set()
        try:
            self._lsock.close()
        except OSError:
            pass
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            _hard_close(c)
        if self._acceptor:
            self._acceptor.join(5)
        for t in list(self._threads):
            t.join(2)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _accept_loop(self):
        self._lsock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                c, _ = self._lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            c.settimeout(None)
            with self._lock:
                self._conns.add(c)
            t = threading.Thread(target=self._serve, args=(c,), daemon=True,
                                 name="faultproxy-conn")
            self._threads = [x for x in self._threads if x.is_alive()]
            self._threads.append(t)
            t.start()

    # -- one client connection ---------------------------------------------------
    def _read_request(self, rf):
        line = rf.readline(65537)
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            line = rf.readline(65537)
            if not line:
                return None
        parts = line.decode("latin-1").rstrip("\r\n").split(" ")
        if len(parts) != 3:
            raise _BadRequest(line)
        method, target, version = parts
        headers = []
        while True:
            h = rf.readline(65537)
            if not h:
                raise _BadRequest("eof in headers")
            if h in (b"\r\n", b"\n"):
                break
            k, _, v = h.decode("latin-1").partition(":")
            headers.append((k.strip(), v.strip()))
        hmap = {k.lower(): v for k, v in headers}
        body = b""
        if "chunked" in hmap.get("transfer-encoding", "").lower():
            chunks = []
            while True:
                size = int(rf.readline(1024).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while rf.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(rf.read(size))
                rf.readline(1024)
            body = b"".join(chunks)
            headers = [(k, v) for k, v in headers if k.lower() != "transfer-encoding"]
        elif "content-length" in hmap:
            n = int(hmap["content-length"])
            body = rf.read(n)
            if len(body) != n:
                raise _BadRequest("short body")
        keep = not (hmap.get("connection", "").lower() == "close" or version == "HTTP/1.0")
        return method, target, headers, body, keep

    def _send_simple(self, sock, status, extra=(), keep=True, code="InjectedFault"):
        body = (b'{"odata.error":{"code":"%s","message":{"lang":"en-US",'
                b'"value":"faultproxy injected %d"}}}' % (code.encode(), status))
        lines = ["HTTP/1.1 %d %s" % (status, REASONS.get(status, "Error")),
                 "Content-Type: application/json;odata=minimalmetadata;charset=utf-8",
                 "x-ms-error-code: %s" % code,
                 "Content-Length: %d" % len(body),
                 "Connection: %s" % ("keep-alive" if keep else "close")]
        lines.extend(extra)
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    # -- hooks for a subclass that models a service (bench/limitmodel.py) ---------
    def _answer_here(self, sock, keep, method, target, headers, body):
        """Called for every request after DELAY, before any fault is drawn and
        before forwarding: return True after answering it on SOCK (it is then
        not forwarded), False to go on. Default: False."""
        return False

    def _answered(self, method, target, headers, body, status, rheaders, data):
        """Called after the server answered a forwarded request, before the
        answer is passed on (STATUS, RHEADERS, DATA are the server's). Default:
        nothing."""

    def _stall(self):
        self._stop.wait(self.stall_secs)

    def _forward(self, up, method, target, headers, body):
        """Send the request upstream; returns (status, reason, headers, body) and
        the (possibly new) upstream connection."""
        hdrs = {}
        for k, v in headers:
            if k.lower() in ("connection", "keep-alive", "proxy-connection", "content-length",
                             "transfer-encoding"):
                continue
            hdrs[k] = v
        for attempt in (1, 2):
            if up is None:
                up = http.client.HTTPConnection(self.upstream[0], self.upstream[1], timeout=60)
            try:
                up.putrequest(method, target, skip_host="host" in (k.lower() for k in hdrs),
                              skip_accept_encoding=True)
                for k, v in hdrs.items():
                    up.putheader(k, v)
                if body or method not in ("GET", "HEAD", "DELETE"):
                    up.putheader("Content-Length", str(len(body)))
                up.endheaders(body if body else None)
                r = up.getresponse()
                data = r.read()
                rh = [(k, v) for k, v in r.getheaders()
                      if k.lower() not in ("connection", "keep-alive", "content-length",
                                           "transfer-encoding")]
                if r.will_close:
                    up.close()
                    up = None
                return (r.status, r.reason, rh, data), up
            except (http.client.RemoteDisconnected, BrokenPipeError,
                    ConnectionResetError) as e:
                # A stale keep-alive connection: retry once on a fresh one only
                # if the server cannot have seen the request.
                up.close()
                up = None
                if attempt == 2 or not isinstance(e, (http.client.RemoteDisconnected,
                                                      BrokenPipeError)):
                    raise
        raise OSError("unreachable")

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
                if self._over_limit():
                    self._count("throttled")
                    self._send_simple(sock, 503, ["Retry-After: 1"], keep, code="ServerBusy")
                    if not keep:
                        break
                    continue
                if self.delay > 0:
                    time.sleep(self.delay)
                if self._answer_here(sock, keep, method, target, headers, body):
                    if not keep:
                        break
                    continue
                kind = self._pick(method, target, body)
                seen = None
                if kind:
                    seen = {"kind": kind, "method": method, "target": target, "body": body,
                            "forwarded": False}
                    with self._lock:        # kept before it is counted: see faulted()
                        self._faulted.append(seen)
                    self._count(kind)
                    self._log("%s %s -> %s" % (method, target, kind))
                if kind in STATUS_KINDS:
                    status = int(kind[:3])
                    extra = (["Retry-After: %s" % self.retry_after]
                             if kind == "503_retry" else [])
                    self._send_simple(sock, status, extra, keep)
                    if not keep:
                        break
                    continue
                if kind == "reset":
                    return self._drop(sock, rf, up)
                if kind == "stall":
                    self._stall()
                    return self._drop(sock, rf, up)

                try:
                    (status, reason, rh, data), up = self._forward(up, method, target,
                                                                   headers, body)
                except (OSError, http.client.HTTPException) as e:
                    self._count("upstream_errors")
                    self._log("upstream error: %r" % (e,))
                    if up is not None:
                        up.close()
                        up = None
                    self._send_simple(sock, 502, keep=False)
                    break
                self._count("forwarded")
                self._answered(method, target, headers, body, status, rh, data)
                if seen is not None:
                    with self._lock:
                        seen["forwarded"] = True

                if kind == "reset_after":
                    return self._drop(sock, rf, up)
                if kind == "stall_after":
                    self._stall()
                    return self._drop(sock, rf, up)
                if kind == "503_after":
                    self._send_simple(sock, 503, keep=keep)
                    if not keep:
                        break
                    continue
                head = ["HTTP/1.1 %d %s" % (status, reason)]
                head += ["%s: %s" % (k, v) for k, v in rh]
                no_body = status in (204, 304) or 100 <= status < 200 or method == "HEAD"
                if kind == "truncate_after":
                    # Announce more than is sent, then close.
                    n = max(len(data), 64)
                    head.append("Content-Length: %d" % n)
                    head.append("Connection: close")
                    if status in (204, 304):
                        head[0] = "HTTP/1.1 200 OK"   # so the length counts
                    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
                                 + data[: len(data) // 2])
                    return self._drop(sock, rf, up)
                if not no_body:
                    head.append("Content-Length: %d" % len(data))
                head.append("Connection: %s" % ("keep-alive" if keep else "close"))
                sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
                             + (b"" if no_body else data))
                if not keep:
                    break
        except OSError:
            pass
        finally:
            self._close(sock, rf, up)

    def _drop(self, sock, rf, up):
        self._close(sock, rf, up, rst=True)

    def _close(self, sock, rf, up, rst=False):
        with self._lock:
            self._conns.discard(sock)
        try:
            rf.close()
        except OSError:
            pass
        if up is not None:
            up.close()
        if rst:
            _hard_close(sock)
        else:
            try:
                sock.close()
            except OSError:
                pass


def serve_until_stopped(px, name):
    """Serve PX (started) until SIGTERM or Ctrl-C, then stop it and print
    NAME and its counts: the end of every proxy's main(). Returns 0."""
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    px.stop()
    print("%s: %s" % (name, px.counts()), flush=True)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description="fault-injecting HTTP/1.1 reverse proxy")
    ap.add_argument("--upstream", type=int, required=True, help="upstream port on 127.0.0.1")
    ap.add_argument("--listen", type=int, default=0, help="port to listen on (0: any)")
    ap.add_argument("--rate", type=float, default=0.2, help="fraction of requests to fault")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", default=",".join(DEFAULT_KINDS),
                    help="comma-separated fault kinds (%s)" % ",".join(ALL_KINDS))
    ap.add_argument("--stall", type=float, default=10.0, help="seconds a stall lasts")
    ap.add_argument("--retry-after", default="1",
                    help="Retry-After value of 503_retry: seconds or an HTTP date")
    ap.add_argument("--delay-ms", type=float, default=0.0,
                    help="hold every request this long before forwarding it")
    ap.add_argument("-v", "--verbose", action="store_true", help="log every fault")
    a = ap.parse_args(argv)
    log = (lambda m: print(m, file=sys.stderr, flush=True)) if a.verbose else None
    px = FaultProxy(a.upstream, a.listen, a.rate, a.seed, a.kinds.split(","),
                    stall=a.stall, log=log, retry_after=a.retry_after,
                    delay=a.delay_ms / 1000.0)
    px.start()
    print("faultproxy: 127.0.0.1:%d -> 127.0.0.1:%d, rate %.2f, seed %d"
          % (px.port, a.upstream, a.rate, a.seed), flush=True)
    return serve_until_stopped(px, "faultproxy")


if __name__ == "__main__":
    sys.exit(main())
