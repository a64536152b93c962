# idp.py - a small Microsoft Entra ID stand-in on loopback for the sign-in tests.
"""``IdentityProvider``: the endpoints aztfs asks for bearer tokens, served
on 127.0.0.1 (plain http: aztfs accepts http identity endpoints on loopback
only), standard library plus ``cryptography`` for the RS256 check:

* ``POST /<tenant>/oauth2/v2.0/token`` (client credentials): a client
  secret; a client assertion (RS256 JWT) whose signature is verified
  against the test certificate and whose x5t, aud, iss, sub, nbf and exp are
  checked; a federated token (workload identity) compared with the one the
  test wrote. Unknown tenant, unknown client, wrong secret, bad assertion:
  the AADSTS errors Entra ID answers (90002, 700016, 7000215, 700027,
  700213).
* ``GET /metadata/identity/oauth2/token`` (instance metadata service:
  needs ``Metadata: true``; ``client_id=`` picks a user-assigned identity)
  and ``GET /msi/token`` (App Service: needs ``X-IDENTITY-HEADER``).
* ``GET /cli/token``: what tests/fakeaz/az prints.

The tokens are JWTs Azurite's ``--oauth basic`` accepts (issuer
https://sts.windows.net/<tenant>/, audience https://storage.azure.com,
nbf/iat/exp; Azurite does not check the signature). ``lifetime`` sets exp;
``claimed_lifetime`` (when set) is the expires_in the answer states instead,
so a token can outlive what aztfs was told (the service then refuses it as
expired). ``mode``: "ok", "garbage" (200 with HTML), "huge" (200 with a
20 MiB body), "hang" (never answers). Every token issued is kept in
``issued`` so tests can grep the logs for them; ``counts`` counts grants.
"""

import base64
import hashlib
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
STORAGE_SCOPE = "https://storage.azure.com/.default"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


class IdentityProvider:
    def __init__(self, tenant, client_id, secret=None, cert_pem=None, federated_token=None,
                 identity_header=None, mi_client_ids=(), lifetime=3600):
        self.tenant = tenant
        self.client_id = client_id
        self.secret = secret
        self.cert = x509.load_pem_x509_certificate(cert_pem) if cert_pem else None
        self.federated_token = federated_token
        self.identity_header = identity_header
        self.mi_client_ids = set(mi_client_ids)
        self.lifetime = lifetime
        self.claimed_lifetime = None
        self.mode = "ok"
        self.audience = "https://storage.azure.com"
        self.issued = []
        self.counts = {}
        self.errors = []
        self.lock = threading.Lock()
        self.hanging = threading.Event()
        idp = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                idp._dispatch(self, "GET")

            def do_POST(self):
                idp._dispatch(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.hanging.set()
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------------
    def mint(self):
        """A new access token Azurite accepts; returns (token, expires_in)."""
        now = int(time.time())
        claims = {"aud": self.audience, "iss": "https://sts.windows.net/%s/" % self.tenant,
                  "iat": now - 5, "nbf": now - 5, "exp": now + self.lifetime,
                  "appid": self.client_id, "tid": self.tenant,
                  "jti": b64url(hashlib.sha256(str(time.time_ns()).encode()).digest()[:9])}
        tok = ".".join([b64url(json.dumps({"alg": "RS256", "typ": "JWT"}).encode()),
                        b64url(json.dumps(claims).encode()), b64url(b"not-checked")])
        with self.lock:
            self.issued.append(tok)
        claimed = self.claimed_lifetime if self.claimed_lifetime is not None else self.lifetime
        return tok, claimed

    def _count(self, what):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1

    def _send(self, h, status, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _aad_error(self, h, status, error, code, text):
        self.errors.append("AADSTS%d" % code)
        self._send(h, status, {"error": error, "error_description":
                               "AADSTS%d: %s\r\nTrace ID: 0000\r\nTimestamp: now" % (code, text),
                               "error_codes": [code]})

    def _dispatch(self, h, method):
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length).decode() if length else ""
        if self.mode == "hang":
            self._count("hang")
            self.hanging.wait(120)
            return
        if self.mode == "garbage":
            self._count("garbage")
            return self._send(h, 200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
        if self.mode == "huge":
            self._count("huge")
            return self._send(h, 200, b'{"access_token":"' + b"A" * (20 << 20) + b'"}')
        path, _, query = h.path.partition("?")
        q = dict(urllib.parse.parse_qsl(query))
        if method == "POST" and path.endswith("/oauth2/v2.0/token"):
            return self._token_endpoint(h, path, dict(urllib.parse.parse_qsl(body)))
        if method == "GET" and path == "/metadata/identity/oauth2/token":
            return self._imds(h, q)
        if method == "GET" and path == "/msi/token":
            return self._app_service(h, q)
        if method == "GET" and path == "/cli/token":
            self._count("cli")
            tok, life = self.mint()
            return self._send(h, 200, {"accessToken": tok, "expiresOn": "2000-01-01 00:00:00",
                                       "expires_on": int(time.time()) + life,
                                       "subscription": "sub", "tenant": self.tenant,
                                       "tokenType": "Bearer"})
        self._send(h, 404, {"error": "not_found", "error_description": h.path})

    # ------------------------------------------------------------------
    def _token_endpoint(self, h, path, form):
        tenant = path.split("/")[1]
        if tenant != self.tenant:
            return self._aad_error(h, 400, "invalid_request", 90002,
                                   "Tenant '%s' not found." % tenant)
        if form.get("client_id") != self.client_id:
            return self._aad_error(h, 400, "unauthorized_client", 700016,
                                   "Application with identifier '%s' was not found in the "
                                   "directory." % form.get("client_id"))
        if form.get("grant_type") != "client_credentials" or form.get("scope") != STORAGE_SCOPE:
            return self._aad_error(h, 400, "invalid_scope", 70011, "bad grant or scope %r"
                                   % form.get("scope"))
        if "client_secret" in form:
            if form["client_secret"] != self.secret:
                return self._aad_error(h, 401, "invalid_client", 7000215,
                                       "Invalid client secret provided.")
            what = "secret"
        elif form.get("client_assertion_type") == ASSERTION_TYPE:
            a = form.get("client_assertion", "")
            if self.federated_token is not None and a == self.federated_token:
                what = "federated"
            else:
                why = self.check_assertion(a, self.url + path)
                if why:
                    if self.federated_token is not None and self.cert is None:
                        return self._aad_error(h, 400, "invalid_request", 700213,
                                               "No matching federated identity record found.")
                    return self._aad_error(h, 401, "invalid_client", 700027,
                                           "Client assertion failed signature validation: "
                                           + why)
                what = "assertion"
        else:
            return self._aad_error(h, 401, "invalid_client", 7000216,
                                   "client_assertion or client_secret is required.")
        self._count(what)
        tok, life = self.mint()
        self._send(h, 200, {"token_type": "Bearer", "expires_in": life,
                            "ext_expires_in": life, "access_token": tok})

    def check_assertion(self, a, audience):
        """Why the client assertion A is not valid for AUDIENCE, or None."""
        if self.cert is None:
            return "no certificate registered"
        try:
            h64, c64, s64 = a.split(".")
            hdr = json.loads(unb64url(h64))
            claims = json.loads(unb64url(c64))
            sig = unb64url(s64)
        except ValueError as e:
            return "malformed: %s" % e
        x5t = b64url(self.cert.fingerprint(hashes.SHA1()))
        if hdr.get("alg") != "RS256" or hdr.get("x5t") != x5t:
            return "header %r (want RS256, x5t %s)" % (hdr, x5t)
        try:
            self.cert.public_key().verify(sig, (h64 + "." + c64).encode(), padding.PKCS1v15(),
                                          hashes.SHA256())
        except Exception:  # cryptography's InvalidSignature
            return "signature does not verify"
        now = time.time()
        if claims.get("aud") != audience:
            return "aud %r (want %r)" % (claims.get("aud"), audience)
        if claims.get("iss") != self.client_id or claims.get("sub") != self.client_id:
            return "iss/sub"
        if not (claims.get("nbf", now + 1) <= now + 60 < claims.get("exp", 0) + 60):
            return "lifetime"
        if not claims.get("jti"):
            return "no jti"
        return None

    def _managed(self, h, q, what):
        if q.get("resource") != "https://storage.azure.com":
            return self._send(h, 400, {"error": "invalid_resource",
                                       "error_description": "bad resource %r" % q.get("resource")})
        cid = q.get("client_id")
        if cid is not None and cid not in self.mi_client_ids:
            return self._send(h, 400, {"error": "invalid_request",
                                       "error_description": "Identity not found"})
        self._count(what + (":user" if cid else ":system"))
        tok, life = self.mint()
        return self._send(h, 200, {"access_token": tok, "expires_in": str(life),
                                   "expires_on": str(int(time.time()) + life),
                                   "resource": q["resource"], "token_type": "Bearer"})

    def _imds(self, h, q):
        if h.headers.get("Metadata") != "true" or q.get("api-version") != "2018-02-01":
            return self._send(h, 400, {"error": "invalid_request",
                                       "error_description": "Required metadata header not specified"})
        return self._managed(h, q, "imds")

    def _app_service(self, h, q):
        if h.headers.get("X-IDENTITY-HEADER") != self.identity_header or \
                q.get("api-version") != "2019-08-01":
            return self._send(h, 401, {"statusCode": 401, "message": "bad identity header"})
        return self._managed(h, q, "appservice")
