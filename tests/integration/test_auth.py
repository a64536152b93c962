"""Microsoft Entra ID sign-in (bearer tokens) against Azurite started with
``--oauth basic`` over https: it checks each token's nbf/exp, issuer and
audience, not its signature. Tokens come from tests/idp.py, an identity
provider of our own on loopback (client secret; client assertion whose
RS256 signature it verifies; federated token; instance metadata and App
Service managed identity endpoints) and from tests/fakeaz/az (the Azure
CLI). Nothing is sent beyond 127.0.0.1: the token endpoint is set with
AZURE_AUTHORITY_HOST, the instance metadata endpoint with
AZTFS_IMDS_ENDPOINT. The official SDK (with the account key) checks what
the mounts wrote; every mount logs at debug, and its log must hold no
secret and no token."""

import errno
import json
import os
import re
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import ACCOUNT, KEY, ROOT, Azurite, loud, free_port

sys.path.insert(0, str(ROOT / "tests"))
from idp import IdentityProvider  # noqa: E402

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
CLIENT = "0e5e5a5e-1111-4222-8333-944445555666"
SECRET = "Sup3r~Secret.Value_for-tests"
FEDERATED = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.federated-token-sig"
ID_HEADER = "identity-header-secret-7f3a"
MI_CLIENT = "9d9d9d9d-aaaa-4bbb-8ccc-dddddddddddd"
CERT_PASSWORD = "cert-pa55word"
TABLE = "authProbe"
FAKEAZ = ROOT / "tests" / "fakeaz"


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA and a server certificate for 127.0.0.1 (Azurite's https), and the
    service principal's certificate with its key (plain and encrypted)."""
    d = tmp_path_factory.mktemp("authcerts")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=aztfs auth test CA", cwd=d)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
            "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=d)
    (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-out", "server.pem", "-extfile", "server.ext",
            cwd=d)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", "sp.key", "-out", "sp.crt", "-subj", "/CN=aztfs test principal", cwd=d)
    (d / "sp.pem").write_text((d / "sp.crt").read_text() + (d / "sp.key").read_text())
    openssl("pkey", "-in", "sp.key", "-aes256", "-passout", "pass:" + CERT_PASSWORD,
            "-out", "sp-enc.key", cwd=d)
    (d / "sp-enc.pem").write_text((d / "sp.crt").read_text() + (d / "sp-enc.key").read_text())
    for f in ("sp.pem", "sp-enc.pem", "sp.key", "sp-enc.key"):
        os.chmod(d / f, 0o600)
    return d


@pytest.fixture(scope="module")
def oauth_azurite(tmp_path_factory, certs):
    """Azurite over https with --oauth basic."""
    az = loud(Azurite(tmp_path_factory.mktemp("oauth-azurite"),
                      extra_args=["--oauth", "basic", "--cert", certs / "server.pem",
                                  "--key", certs / "server.key"]).start)
    yield az
    az.stop()


@pytest.fixture(scope="module")
def endpoint(oauth_azurite):
    return "https://127.0.0.1:%d/%s" % (oauth_azurite.port, ACCOUNT)


@pytest.fixture(scope="module")
def key_sdk(oauth_azurite, certs, endpoint):
    """The official SDK on the oauth Azurite, signed with the account key."""
    from azure.core.credentials import AzureNamedKeyCredential
    from azure.data.tables import TableServiceClient
    return TableServiceClient(endpoint=endpoint, credential=AzureNamedKeyCredential(ACCOUNT, KEY),
                              connection_verify=str(certs / "ca.pem"))


@pytest.fixture(scope="module")
def table(key_sdk):
    try:
        key_sdk.delete_table(TABLE)
    except Exception:
        pass
    t = key_sdk.create_table(TABLE)
    t.upsert_entity({"PartitionKey": "p", "RowKey": "r", "via": "entra"})
    return t


@pytest.fixture
def idp(certs):
    p = IdentityProvider(TENANT, CLIENT, secret=SECRET,
                         cert_pem=(certs / "sp.crt").read_bytes(),
                         federated_token=FEDERATED, identity_header=ID_HEADER,
                         mi_client_ids=[MI_CLIENT])
    yield p
    p.close()


def conn_str(endpoint):
    """The account without key or SAS: it signs in with Entra ID."""
    return "DefaultEndpointsProtocol=https;AccountName=%s;TableEndpoint=%s;" % (ACCOUNT, endpoint)


def base_env(idp, **more):
    """What every Entra mount of these tests gets: the loopback endpoints,
    and a PATH without a real az."""
    env = {"AZURE_AUTHORITY_HOST": idp.url, "AZTFS_IMDS_ENDPOINT": idp.url,
           "PATH": "/usr/bin:/bin", "FAKEAZ_IDP": idp.url}
    for k in ("AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET",
              "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_CLIENT_CERTIFICATE_PASSWORD",
              "AZURE_FEDERATED_TOKEN_FILE", "IDENTITY_ENDPOINT", "IDENTITY_HEADER"):
        os.environ.pop(k, None)
    env.update(more)
    return env


def credential_setups(certs, tmp_path, idp):
    """name -> (env, options, idp counter the grant shows in)."""
    fed = tmp_path / "federated-token"
    fed.write_text(FEDERATED + "\n")
    sp = {"AZURE_TENANT_ID": TENANT, "AZURE_CLIENT_ID": CLIENT}
    return {
        "secret": (dict(sp, AZURE_CLIENT_SECRET=SECRET), ["-o", "auth=secret"], "secret"),
        "certificate": (dict(sp, AZURE_CLIENT_CERTIFICATE_PATH=str(certs / "sp.pem")),
                        ["-o", "auth=certificate"], "assertion"),
        "certificate-password": (dict(sp, AZURE_CLIENT_CERTIFICATE_PATH=str(certs / "sp-enc.pem"),
                                      AZURE_CLIENT_CERTIFICATE_PASSWORD=CERT_PASSWORD),
                                 ["-o", "auth=certificate"], "assertion"),
        "workload": (dict(sp, AZURE_FEDERATED_TOKEN_FILE=str(fed)), ["-o", "auth=workload"],
                     "federated"),
        "managed-imds": ({}, ["-o", "auth=managed"], "imds:system"),
        "managed-imds-user": ({}, ["-o", "auth=managed", "-o", "client_id=" + MI_CLIENT],
                              "imds:user"),
        "managed-appservice": ({"IDENTITY_ENDPOINT": idp.url + "/msi/token",
                                "IDENTITY_HEADER": ID_HEADER}, ["-o", "auth=managed"],
                               "appservice:system"),
        "cli": ({"PATH": "%s:/usr/bin:/bin" % FAKEAZ}, ["-o", "auth=cli"], "cli"),
    }


SECRETS = [SECRET, FEDERATED, ID_HEADER, CERT_PASSWORD]


def assert_no_secret_in(text, idp):
    """No secret, no token (and no part of one), no assertion in TEXT."""
    for s in SECRETS + idp.issued:
        assert s not in text, "a secret or token is in the log"
    for tok in idp.issued:                       # not even the signature part
        assert tok.split(".")[2] + "." not in text and tok.split(".")[1] not in text
    assert "BEGIN" not in text and "client_assertion=" not in text


def mount_entra(mounter, endpoint, certs, env, options=(), level="debug"):
    return mounter.mount(conn_str=conn_str(endpoint),
                         options=["-o", "cafile=%s" % (certs / "ca.pem"),
                                  "-o", "loglevel=" + level] + list(options),
                         env_extra=env)


@pytest.mark.parametrize("name", ["secret", "certificate", "certificate-password", "workload",
                                  "managed-imds", "managed-imds-user", "managed-appservice",
                                  "cli"])
def test_each_credential_mounts_lists_reads_writes(name, table, key_sdk, endpoint, certs, idp,
                                                   mounter, tmp_path):
    env, opts, counter = credential_setups(certs, tmp_path, idp)[name]
    m = mount_entra(mounter, endpoint, certs, base_env(idp, **env), opts)
    assert TABLE in os.listdir(m)
    assert "r.json" in os.listdir(os.path.join(m, TABLE, "p"))
    with open(os.path.join(m, TABLE, "p", "r.json")) as f:
        assert '"via": "entra"' in f.read()
    row = "w-" + name
    with open(os.path.join(m, TABLE, "p", row + ".json"), "w") as f:
        f.write('{"by": "%s"}\n' % name)
    assert key_sdk.get_table_client(TABLE).get_entity("p", row)["by"] == name
    assert idp.counts.get(counter, 0) >= 1, idp.counts
    assert not idp.errors, idp.errors
    stderr = m.unmount()
    assert "Authorization: Bearer" not in stderr
    assert_no_secret_in(stderr, idp)


def raw_tables(endpoint, certs, token=None):
    """GET /Tables on the oauth Azurite with TOKEN (None: no Authorization);
    returns (status, body)."""
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    hdrs = {"x-ms-version": "2019-02-02", "Accept": "application/json;odata=nometadata",
            "x-ms-date": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())}
    if token:
        hdrs["Authorization"] = "Bearer " + token
    req = urllib.request.Request(endpoint + "/Tables", headers=hdrs)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_azurite_refuses_requests_without_a_valid_token(table, endpoint, certs, idp):
    """The emulator really checks: no token, an expired one, one for another
    audience or issuer are refused; a fresh one from the idp is accepted."""
    status, body = raw_tables(endpoint, certs)
    assert status in (401, 403), (status, body)
    good, _ = idp.mint()
    assert raw_tables(endpoint, certs, good)[0] == 200
    idp.lifetime = -60
    expired, _ = idp.mint()
    status, body = raw_tables(endpoint, certs, expired)
    assert status == 403 and "expired" in body, (status, body)
    idp.lifetime = 3600
    idp.audience = "https://vault.azure.net"
    wrong_aud, _ = idp.mint()
    assert raw_tables(endpoint, certs, wrong_aud)[0] == 403
    idp.audience = "https://storage.azure.com"
    idp.tenant = "x"
    tok, _ = idp.mint()
    assert raw_tables(endpoint, certs, tok)[0] == 200       # any tenant, right prefix


def refused_mount(aztfs_run, endpoint, certs, tmp_path, env, options=(), conn=None):
    """Run aztfs expecting it to refuse the mount; returns (rc, stderr, seconds)."""
    from conftest import aztfs_env
    mnt = tmp_path / "mnt"
    mnt.mkdir(exist_ok=True)
    t0 = time.monotonic()
    r = aztfs_run(["-f", "-o", "cafile=%s" % (certs / "ca.pem"), "-o", "loglevel=debug"]
                  + list(options) + [mnt],
                  aztfs_env(conn if conn is not None else conn_str(endpoint), env), timeout=20)
    from conftest import sanitizer_report, stderr_excerpt
    assert not sanitizer_report(r.stderr), stderr_excerpt(r.stderr, 4000)
    return r.returncode, r.stderr, time.monotonic() - t0


SP = {"AZURE_TENANT_ID": TENANT, "AZURE_CLIENT_ID": CLIENT}


@pytest.mark.parametrize("case,env,want", [
    ("wrong secret", dict(SP, AZURE_CLIENT_SECRET="not-the-secret"),
     "the client secret is wrong: check AZURE_CLIENT_SECRET"),
    ("unknown tenant", dict(SP, AZURE_TENANT_ID="no-such-tenant", AZURE_CLIENT_SECRET=SECRET),
     "AADSTS90002: Tenant 'no-such-tenant' not found.; the tenant is unknown: check "
     "AZURE_TENANT_ID"),
    ("unknown client", dict(SP, AZURE_CLIENT_ID="other", AZURE_CLIENT_SECRET=SECRET),
     "the application (client) is unknown in this tenant: check AZURE_CLIENT_ID"),
])
def test_sign_in_refusals_fail_the_mount_naming_the_fix(case, env, want, table, endpoint, certs,
                                                         idp, aztfs_run, tmp_path):
    rc, err, _ = refused_mount(aztfs_run, endpoint, certs, tmp_path, base_env(idp, **env))
    assert rc != 0
    assert want in err, err
    assert "not-the-secret" not in err
    assert_no_secret_in(err, idp)


def test_unreachable_identity_endpoint_is_named(table, endpoint, certs, idp, aztfs_run,
                                                tmp_path):
    port = free_port()
    env = base_env(idp, AZURE_AUTHORITY_HOST="http://127.0.0.1:%d" % port,
                   AZURE_CLIENT_SECRET=SECRET, **SP)
    rc, err, _ = refused_mount(aztfs_run, endpoint, certs, tmp_path, env,
                               ["-o", "auth=secret", "-o", "retries=0"])
    assert rc != 0
    assert ("cannot reach the identity endpoint http://127.0.0.1:%d/%s/oauth2/v2.0/token"
            % (port, TENANT)) in err, err
    env = base_env(idp, AZTFS_IMDS_ENDPOINT="http://127.0.0.1:%d" % port)
    rc, err, _ = refused_mount(aztfs_run, endpoint, certs, tmp_path, env,
                               ["-o", "auth=managed", "-o", "retries=0"])
    assert rc != 0
    assert "cannot reach the identity endpoint http://127.0.0.1:%d/metadata/identity" % port \
        in err, err


@pytest.mark.parametrize("mode,want", [
    ("garbage", "answered HTTP 200 with no usable token: the answer is not a JSON object"),
    ("huge", "answered more than 65536 bytes"),
    ("hang", "cannot reach the identity endpoint"),
])
def test_bad_token_endpoint_cannot_crash_or_hang_the_mount(mode, want, table, endpoint, certs,
                                                           idp, aztfs_run, tmp_path):
    idp.mode = mode
    env = base_env(idp, AZURE_CLIENT_SECRET=SECRET, **SP)
    rc, err, secs = refused_mount(aztfs_run, endpoint, certs, tmp_path, env,
                                  ["-o", "auth=secret", "-o", "timeout=2", "-o", "retries=1"])
    assert rc == 1, (rc, err)
    assert want in err, err
    assert secs < 12, secs
    assert_no_secret_in(err, idp)
    assert idp.counts.get(mode, 0) >= 1


def test_no_credential_found_says_what_was_tried(table, endpoint, certs, idp, aztfs_run,
                                                 tmp_path):
    env = base_env(idp, AZTFS_IMDS_ENDPOINT="http://127.0.0.1:%d" % free_port())
    rc, err, _ = refused_mount(aztfs_run, endpoint, certs, tmp_path, env)
    assert rc != 0
    line = [l for l in err.splitlines() if "no credential found" in l]
    assert line, err
    for what in ("secret (AZURE_CLIENT_SECRET is not set)",
                 "certificate (AZURE_CLIENT_CERTIFICATE_PATH is not set)",
                 "workload (AZURE_FEDERATED_TOKEN_FILE is not set)",
                 "managed (cannot reach the identity endpoint", "cli (az not found on PATH)"):
        assert what in line[0], line[0]


def test_cli_not_signed_in_and_hanging(table, endpoint, certs, idp, aztfs_run, tmp_path):
    env = base_env(idp, PATH="%s:/usr/bin:/bin" % FAKEAZ, FAKEAZ_MODE="login")
    rc, err, _ = refused_mount(aztfs_run, endpoint, certs, tmp_path, env, ["-o", "auth=cli"])
    assert rc != 0 and "Please run 'az login' to setup account." in err, err
    env["FAKEAZ_MODE"] = "hang"
    rc, err, secs = refused_mount(aztfs_run, endpoint, certs, tmp_path, env,
                                  ["-o", "auth=cli", "-o", "timeout=2"])
    assert rc != 0 and "az did not answer within 2000 ms" in err, err
    assert secs < 10


class Forbidden(BaseHTTPRequestHandler):
    """A Table endpoint that knows the token but not the role: 403
    AuthorizationPermissionMismatch, as Azure answers an identity without a
    data role."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        body = json.dumps({"odata.error": {"code": "AuthorizationPermissionMismatch", "message": {
            "lang": "en-US", "value": "This request is not authorized to perform this "
            "operation using this permission."}}}).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("x-ms-error-code", "AuthorizationPermissionMismatch")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_missing_data_role_names_the_roles(certs, idp, aztfs_run, tmp_path):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Forbidden)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        conn = ("DefaultEndpointsProtocol=http;AccountName=%s;TableEndpoint=http://127.0.0.1:%d/%s;"
                % (ACCOUNT, srv.server_address[1], ACCOUNT))
        env = base_env(idp, AZURE_CLIENT_SECRET=SECRET, **SP)
        rc, err, _ = refused_mount(aztfs_run, None, certs, tmp_path, env, conn=conn)
    finally:
        srv.shutdown()
        srv.server_close()
    assert rc != 0
    assert "no data role on account 'devstoreaccount1' (HTTP 403 " \
           "AuthorizationPermissionMismatch): assign it Storage Table Data Reader" in err, err
    assert "Storage Table Data Contributor" in err


@pytest.mark.parametrize("name,env,counter,described", [
    ("secret", dict(SP, AZURE_CLIENT_SECRET=SECRET), "secret",
     "service principal with a client secret"),
    ("managed", {}, "imds:system", "managed identity"),
    ("cli", {"PATH": "%s:/usr/bin:/bin" % FAKEAZ}, "cli", "Azure CLI"),
])
def test_default_order_without_auth_option(name, env, counter, described, table, key_sdk,
                                           endpoint, certs, idp, mounter, aztfs_run, tmp_path):
    """No -o auth= and no key or SAS: DefaultAzureCredential's order. With
    nothing else set up, the managed identity (here: the idp's instance
    metadata endpoint) answers; with az on PATH and no managed identity,
    the CLI."""
    e = base_env(idp, **env)
    if name == "cli":
        e["AZTFS_IMDS_ENDPOINT"] = "http://127.0.0.1:%d" % free_port()
        e["FAKEAZ_LOG"] = str(tmp_path / "az-args")
    m = mount_entra(mounter, endpoint, certs, e)
    with open(os.path.join(m, TABLE, "p", "d-%s.json" % name), "w") as f:
        f.write('{"order": "%s"}\n' % name)
    assert key_sdk.get_table_client(TABLE).get_entity("p", "d-" + name)["order"] == name
    assert idp.counts.get(counter, 0) >= 1, idp.counts
    stderr = m.unmount()
    assert "signed in with the %s (DefaultAzureCredential order)" % described in stderr
    assert_no_secret_in(stderr, idp)
    if name == "cli":       # the arguments az was run with: no shell, no secret
        runs = [json.loads(l) for l in (tmp_path / "az-args").read_text().splitlines()]
        assert runs and all(r == ["account", "get-access-token", "--output", "json",
                                  "--resource", "https://storage.azure.com"] for r in runs)


def test_default_order_stops_at_a_refused_credential(table, endpoint, certs, idp, aztfs_run,
                                                     tmp_path):
    """A service principal that is set up but refused ends the search with
    its error (as the SDKs do), instead of falling through to a managed
    identity that happens to answer."""
    env = base_env(idp, AZURE_CLIENT_SECRET="wrong", **SP)
    rc, err, _ = refused_mount(aztfs_run, endpoint, certs, tmp_path, env)
    assert rc != 0 and "the client secret is wrong" in err, err
    assert not any(k.startswith("imds") for k in idp.counts), idp.counts


def test_settings_in_the_config_file(table, key_sdk, endpoint, certs, idp, mounter, aztfs_run,
                                     tmp_path):
    cfg = tmp_path / "account.conf"
    cfg.write_text("# Entra ID sign-in\nAccountName=%s\nTableEndpoint=%s\nAuth=secret\n"
                   "AZURE_TENANT_ID=%s\nAZURE_CLIENT_ID=%s\nAZURE_CLIENT_SECRET=%s\n"
                   "AZURE_AUTHORITY_HOST=%s\n" % (ACCOUNT, endpoint, TENANT, CLIENT, SECRET,
                                                  idp.url))
    os.chmod(cfg, 0o644)
    rc, err, _ = refused_mount(aztfs_run, endpoint, certs, tmp_path, base_env(idp),
                               ["-o", "config=%s" % cfg])
    assert rc != 0 and "chmod 600" in err and SECRET not in err, err
    os.chmod(cfg, 0o600)
    m = mounter.mount(conn_str="", env_extra=base_env(idp), options=[
        "-o", "config=%s" % cfg, "-o", "cafile=%s" % (certs / "ca.pem"), "-o", "loglevel=debug"])
    with open(os.path.join(m, TABLE, "p", "cfg.json"), "w") as f:
        f.write('{"from": "config"}\n')
    assert key_sdk.get_table_client(TABLE).get_entity("p", "cfg")["from"] == "config"
    assert idp.counts.get("secret", 0) >= 1
    assert_no_secret_in(m.unmount(), idp)


def test_secrets_leave_the_daemon_environment(table, endpoint, certs, idp, mounter):
    env = base_env(idp, AZURE_CLIENT_SECRET=SECRET, IDENTITY_ENDPOINT=idp.url + "/msi/token",
                   IDENTITY_HEADER=ID_HEADER, AZURE_CLIENT_CERTIFICATE_PASSWORD=CERT_PASSWORD)
    m = mount_entra(mounter, endpoint, certs, env, ["-o", "auth=managed"])
    environ = Path("/proc/%d/environ" % m.proc.pid).read_bytes()
    for s in (SECRET, ID_HEADER, CERT_PASSWORD):
        assert s.encode() not in environ
    # env_scrub zeroes each NAME=value in the block the kernel shows: names gone too
    for name in (b"AZURE_CLIENT_SECRET", b"IDENTITY_HEADER", b"AZURE_CLIENT_CERTIFICATE_PASSWORD"):
        assert name not in environ
    assert b"AZURE_AUTHORITY_HOST=" in environ     # not a secret: kept
    cmdline = Path("/proc/%d/cmdline" % m.proc.pid).read_bytes()
    assert SECRET.encode() not in cmdline
    assert idp.counts.get("appservice:system") == 1
    assert_no_secret_in(m.unmount(), idp)


def rsync_rounds(m, tmp_path, seconds):
    """Back the table up with rsync (mount -> local) and push a changed local
    copy back (local -> mount) in rounds for SECONDS; returns the rsync
    results and the number of rounds."""
    results, rounds = [], 0
    src = tmp_path / "push"
    src.mkdir(exist_ok=True)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rounds += 1
        for i in range(20):
            (src / ("f%02d.json" % i)).write_text('{"round": %d}\n' % rounds)
        results.append(subprocess.run(["rsync", "-a", str(src) + "/",
                                       os.path.join(m, TABLE, "rs") + "/"],
                                      capture_output=True, timeout=60))
        results.append(subprocess.run(["rsync", "-a", os.path.join(m, TABLE) + "/",
                                       str(tmp_path / ("backup%d" % rounds)) + "/"],
                                      capture_output=True, timeout=60))
        time.sleep(0.3)
    return results, rounds


@pytest.mark.parametrize("told", ["truth", "longer"])
def test_token_expiring_during_rsync_is_refreshed(told, table, key_sdk, endpoint, certs, idp,
                                                  mounter, tmp_path):
    """Tokens live 4 s. Told the truth, aztfs refreshes before expiry (half
    the lifetime ahead); told an hour, it learns from the service's refusal
    ("The token is expired") and refreshes at once, once. Either way no
    rsync fails and every file arrives."""
    idp.lifetime = 4
    if told == "longer":
        idp.claimed_lifetime = 3600
    fed = tmp_path / "federated"
    fed.write_text(FEDERATED)
    env = base_env(idp, AZURE_FEDERATED_TOKEN_FILE=str(fed), **SP)
    m = mount_entra(mounter, endpoint, certs, env, ["-o", "auth=workload",
                                                    "-o", "cache_timeout=0"])
    os.makedirs(os.path.join(m, TABLE, "rs"), exist_ok=True)
    results, rounds = rsync_rounds(m, tmp_path, 12)
    failed = [r for r in results if r.returncode != 0]
    assert not failed, failed[0].stderr.decode()[-2000:]
    got = {e["RowKey"]: e["round"] for e in
           key_sdk.get_table_client(TABLE).query_entities("PartitionKey eq 'rs'")}
    assert got == {"f%02d" % i: rounds for i in range(20)}
    assert len(idp.issued) >= 3, idp.counts
    stderr = m.unmount()
    if told == "longer":
        assert "the service refused the bearer token as expired: fetching a new one" in stderr
    assert_no_secret_in(stderr, idp)


def test_concurrent_requests_share_one_refresh(table, endpoint, certs, idp, mounter, tmp_path):
    """Eight readers for 8 s on 3 s tokens: the refreshes come from the
    lifetime (about one per 1.5 s), not from the number of readers."""
    idp.lifetime = 3
    m = mount_entra(mounter, endpoint, certs, base_env(idp, AZURE_CLIENT_SECRET=SECRET, **SP),
                    ["-o", "auth=secret", "-o", "cache_timeout=0", "-o", "attr_timeout=0"],
                    level="info")
    errors = []
    stop = time.monotonic() + 8

    def reader():
        while time.monotonic() < stop:
            try:
                with open(os.path.join(m, TABLE, "p", "r.json")) as f:
                    assert "entra" in f.read()
                os.listdir(os.path.join(m, TABLE, "p"))
            except (OSError, AssertionError) as e:
                errors.append(e)
    threads = [threading.Thread(target=reader) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    grants = idp.counts.get("secret", 0)
    assert 4 <= grants <= 10, idp.counts
    m.unmount()


def test_workload_token_file_is_read_at_each_refresh(table, endpoint, certs, idp, mounter,
                                                     tmp_path):
    """Kubernetes rotates the projected token: the new one is sent."""
    idp.lifetime = 3
    fed = tmp_path / "federated"
    fed.write_text(FEDERATED)
    m = mount_entra(mounter, endpoint, certs, base_env(idp, AZURE_FEDERATED_TOKEN_FILE=str(fed),
                                                       **SP),
                    ["-o", "auth=workload", "-o", "cache_timeout=0"])
    rotated = FEDERATED.replace("federated-token-sig", "rotated-token-sig")
    idp.federated_token = rotated
    fed.write_text(rotated)
    time.sleep(3.5)
    os.listdir(os.path.join(m, TABLE, "p"))
    assert idp.counts.get("federated", 0) >= 2 and not idp.errors, (idp.counts, idp.errors)
    stderr = m.unmount()
    assert rotated not in stderr


def test_failed_refresh_keeps_the_old_token_then_recovers(table, endpoint, certs, idp, mounter):
    """Tokens of 6 s (refreshed from 3 s on). The token endpoint breaks
    right after the mount: reads go on with the old token while it is
    valid, fail once it has expired (the mount stays up), and work again
    once the endpoint is back (within the 5 s a failure is held)."""
    idp.lifetime = 6
    m = mount_entra(mounter, endpoint, certs, base_env(idp, AZURE_CLIENT_SECRET=SECRET, **SP),
                    ["-o", "auth=secret", "-o", "cache_timeout=0", "-o", "attr_timeout=0",
                     "-o", "retries=0"], level="info")
    t0 = time.monotonic()
    idp.mode = "garbage"

    def read():
        with open(os.path.join(m, TABLE, "p", "r.json")) as f:
            return f.read()
    while time.monotonic() - t0 < 4.5:          # fresh, then within the margin
        assert "entra" in read()
        time.sleep(0.3)
    assert idp.counts.get("garbage", 0) >= 1    # a refresh was tried and failed
    time.sleep(max(0, 7 - (time.monotonic() - t0)))
    with pytest.raises(OSError) as ei:          # expired, no new one
        read()
    assert ei.value.errno == errno.EIO
    idp.mode = "ok"
    deadline = time.monotonic() + 8
    while True:
        try:
            assert "entra" in read()
            break
        except OSError:
            assert time.monotonic() < deadline, "no recovery"
            time.sleep(0.5)
    stderr = m.unmount()
    assert "bearer token refresh failed: the identity endpoint" in stderr
    assert_no_secret_in(stderr, idp)
