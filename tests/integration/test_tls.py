"""https: certificates are always verified. A TLS front (this file) sits
before Azurite with a certificate made for the test: without -o cafile=
the mount is refused, with the CA that signed it the mount works, and a
certificate for another host name is refused even with that CA; neither
refusal is retried."""

import os
import socket
import ssl
import subprocess
import threading

import pytest

from conftest import KEY, aztfs_env, conn_str_for

TABLE = "tlsProbe"


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA, and two server certificates it signed: one for 127.0.0.1, one
    for another name. Returns the directory."""
    d = tmp_path_factory.mktemp("tls")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=aztfs test CA", cwd=d)
    for name, san in (("good", "IP:127.0.0.1"), ("wrongname", "DNS:other.example")):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key",
                "-out", name + ".csr", "-subj", "/CN=" + san.split(":")[1], cwd=d)
        (d / (name + ".ext")).write_text("subjectAltName=%s\n" % san)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-out", name + ".pem",
                "-extfile", name + ".ext", cwd=d)
    return d


class TlsFront:
    """Accepts TLS on 127.0.0.1 with CERT and pipes the plain bytes to Azurite."""

    def __init__(self, upstream_port, cert, key):
        self.upstream = upstream_port
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(str(cert), str(key))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            t = self.ctx.wrap_socket(c, server_side=True)
        except (ssl.SSLError, OSError):
            c.close()
            return
        up = socket.create_connection(("127.0.0.1", self.upstream))
        threading.Thread(target=self._pipe, args=(up, t), daemon=True).start()
        self._pipe(t, up)

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.close()
            except OSError:
                pass

    def close(self):
        self.sock.close()


@pytest.fixture
def front(azurite, certs, request):
    fronts = []

    def make(name):
        f = TlsFront(azurite.port, certs / (name + ".pem"), certs / (name + ".key"))
        fronts.append(f)
        return f
    yield make
    for f in fronts:
        f.close()


@pytest.fixture(scope="module")
def probe(sdk, seed):
    t = seed.table(sdk, TABLE)
    t.upsert_entity({"PartitionKey": "p", "RowKey": "r", "via": "tls"})
    return TABLE


def test_https_with_the_right_ca_mounts(probe, front, certs, mounter):
    f = front("good")
    m = mounter.mount(conn_str=conn_str_for(f.port, scheme="https"),
                      options=["-o", "cafile=%s" % (certs / "ca.pem")])
    with open(os.path.join(m, TABLE, "p", "r.json")) as fh:
        assert '"via": "tls"' in fh.read()


@pytest.mark.parametrize("cert,cafile", [
    ("good", None),               # unknown CA: the system bundle does not hold it
    ("wrongname", "ca.pem"),      # known CA, certificate for another host
])
def test_https_unverified_certificate_refused(probe, front, certs, tmp_path, aztfs_run,
                                              cert, cafile):
    f = front(cert)
    mp = tmp_path / "mp"
    mp.mkdir()
    args = ["-f", "-o", "retries=4"]
    if cafile:
        args += ["-o", "cafile=%s" % (certs / cafile)]
    res = aztfs_run(args + [str(mp)], aztfs_env(conn_str_for(f.port, scheme="https")))
    assert res.returncode != 0, res
    assert not os.path.ismount(str(mp))
    assert "cannot reach the table endpoint" in res.stderr, res.stderr
    assert "certificate" in res.stderr.lower() or "SSL" in res.stderr, res.stderr
    assert KEY not in res.stderr
    # a certificate that does not verify is not retried
    assert f.connections == 1, f.connections
