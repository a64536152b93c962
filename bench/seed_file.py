# seed_file.py - seed big partitions by writing Azurite's own database file instead of the REST API.
"""Benchmark tables written straight into the database file of a
file-backed Azurite (``--location DIR``: LokiJS "fs" persistence in
``DIR/__azurite_db_table__.json``, loaded when Azurite starts).

Why: Azurite checks every insert against the whole partition (LokiJS
narrows the lookup by its PartitionKey index only, then scans), so filling
one partition through the API is quadratic in its size: 20,000 entities
take ~25 s, 40,000 ~170 s, and 100,000 did not finish in 45 minutes.
Writing the file takes seconds.

How (``build_database``):

1. Azurite itself, started on the empty directory, creates every table and
   receives the first ``SKELETON`` entities of each through the API, then
   closes (SIGINT), saving the file. So every collection, option and field
   is exactly what this Azurite version writes.
2. Each entity document Azurite wrote is compared with the one this module
   would write for it (same timestamps): if this Azurite stores entities
   differently, the build fails instead of producing a subtly different
   table.
3. The remaining entities are appended to each table's collection as
   documents of that same shape (entity i is ``seed.entity(i,
   partitions)``, with its own Timestamp, ETag and ``$loki`` id), the
   collection's ``maxId`` is raised and its binary indices (PartitionKey,
   RowKey) are rebuilt sorted, as LokiJS keeps them. Azurite's collections
   use adaptive binary indices, which LokiJS trusts as loaded: it does not
   rebuild them, even when marked dirty, so they must be right.
4. The caller starts Azurite with ``--location DIR`` (harness.Azurite, via common).

The database is one JSON text that Node.js reads and writes as a single
string, so it must stay below V8's maximum string length (~512 MiB, about
700,000 of these entities); larger databases are refused.

As a script:
    /usr/bin/python3 bench/seed_file.py DIR TABLE:N[:P] [TABLE:N[:P] ...]
"""

import datetime
import json
import os
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import seed
from common import ACCOUNT, Azurite, BenchError, HarnessError

DB_FILE = "__azurite_db_table__.json"
SKELETON = seed.BATCH                # entities per table that Azurite receives through the API
MAX_DB_CHARS = (1 << 29) - 24        # V8's String::kMaxLength on 64-bit: Node's limit for the file


def database_path(location):
    """Path of the table database file of an Azurite run with --location LOCATION."""
    return Path(location) / DB_FILE


def _stamp(moment):
    """MOMENT (aware UTC datetime) as Azurite writes Timestamp: 7 fraction digits."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "0Z"


def document(i, partitions, timestamp, created_ms):
    """The LokiJS document (without ``$loki``) in which Azurite stores
    entity I of a table of PARTITIONS partitions, inserted at TIMESTAMP
    (Azurite's string form) = CREATED_MS (milliseconds since the epoch)."""
    props = seed.entity(i, partitions)
    props["Timestamp"] = timestamp
    props["Timestamp@odata.type"] = "Edm.DateTime"
    return {
        "PartitionKey": props["PartitionKey"],
        "RowKey": props["RowKey"],
        "properties": props,
        "lastModifiedTime": timestamp,
        "eTag": "W/\"datetime'%s'\"" % urllib.parse.quote(timestamp, safe=""),
        "meta": {"revision": 0, "created": created_ms, "version": 0},
    }


def _index_key(value):
    """VALUE as LokiJS orders it in a binary index. LokiJS compares values
    that JavaScript's Number() parses as numbers, and everything else as
    strings; the keys written here (ASCII, starting with a letter, not
    "Infinity") are all of the second kind, so they sort as Python strings."""
    if not (isinstance(value, str) and value.isascii() and value[:1].isalpha()
            and value != "Infinity"):
        raise BenchError("seed_file cannot order the index key %r as LokiJS does" % (value,))
    return value


def _collection(db, table):
    """The LokiJS collection of TABLE's entities in the database DB."""
    name = ("%s$%s" % (ACCOUNT, table)).lower()
    for coll in db["collections"]:
        if coll["name"].lower() == name:
            return coll
    raise BenchError("no collection for table %s in the Azurite database" % table)


def _check_shape(coll, partitions):
    """Fail unless every document Azurite wrote in COLL equals the one
    document() gives for the same entity and timestamps."""
    numbers = {seed.row_key(i): i for i in range(len(coll["data"]))}
    for doc in coll["data"]:
        if doc.get("RowKey") not in numbers:
            raise BenchError("unexpected entity in the Azurite database: %s" % json.dumps(doc))
        mine = document(numbers[doc["RowKey"]], partitions, doc["lastModifiedTime"],
                        doc["meta"]["created"])
        theirs = {k: v for k, v in doc.items() if k != "$loki"}
        if mine != theirs:
            raise BenchError("this Azurite stores entities differently from seed_file:\n"
                             "Azurite:   %s\nseed_file: %s"
                             % (json.dumps(theirs, sort_keys=True),
                                json.dumps(mine, sort_keys=True)))


def _extend(coll, n, partitions):
    """Append entities len(data) .. N-1 to the table collection COLL and
    bring its maxId and binary indices up to date."""
    data = coll["data"]
    start = datetime.datetime.now(datetime.timezone.utc)
    next_id = coll["maxId"] + 1
    for i in range(len(data), n):
        moment = start + datetime.timedelta(microseconds=i)    # distinct, increasing
        doc = document(i, partitions, _stamp(moment), int(moment.timestamp() * 1000))
        doc["$loki"] = next_id
        next_id += 1
        data.append(doc)
    coll["maxId"] = next_id - 1
    coll["idIndex"] = None           # LokiJS rebuilds it on first use (ensureId)
    for name, index in coll["binaryIndices"].items():
        index["values"] = sorted(range(len(data)), key=lambda pos: _index_key(data[pos][name]))
        index["dirty"] = False


def build_database(location, specs, logdir):
    """Create, in the directory LOCATION (made if missing, database file
    replaced), an Azurite table database with the tables SPECS, a list of
    (table, n, partitions): n entities ``seed.entity(i, partitions)``, i < n,
    each. Azurite's log goes to LOGDIR. Returns the seconds it took; start
    ``Azurite(logdir, location=LOCATION)`` on it afterwards."""
    t0 = time.perf_counter()
    location = Path(location)
    location.mkdir(parents=True, exist_ok=True)
    path = database_path(location)
    if path.exists():
        path.unlink()
    with Azurite(logdir, location=location) as azurite:
        for table, n, partitions in specs:
            seed.seed_table(azurite.conn_str, table, min(n, SKELETON), partitions)
        azurite.stop(save=True)
    try:
        db = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise BenchError("Azurite did not leave a readable database in %s: %s" % (path, e))
    for table, n, partitions in specs:
        coll = _collection(db, table)
        if len(coll["data"]) != min(n, SKELETON):
            raise BenchError("Azurite saved %d entities of %s, expected %d"
                             % (len(coll["data"]), table, min(n, SKELETON)))
        _check_shape(coll, partitions)
        _extend(coll, n, partitions)
    text = json.dumps(db, separators=(",", ":"))
    del db
    if len(text) > MAX_DB_CHARS:
        raise BenchError("database of %s would be %d characters, more than Node.js can read "
                         "as one string (%d)" % (specs, len(text), MAX_DB_CHARS))
    fd, tmp = tempfile.mkstemp(prefix=DB_FILE, dir=str(location))
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o644)
        f.write(text)
    os.replace(tmp, path)
    return time.perf_counter() - t0


def parse_spec(text):
    """TABLE:N[:P] -> (table, n, p); P defaults to 1."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise ValueError("expected TABLE:N[:P], got %r" % text)
    return parts[0], int(parts[1]), int(parts[2]) if len(parts) == 3 else 1


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    try:
        specs = [parse_spec(s) for s in argv[2:]]
    except ValueError as e:
        sys.exit("seed_file: %s" % e)
    secs = build_database(argv[1], specs, argv[1])
    print("%s: %s, %.1f s, %d bytes" % (database_path(argv[1]), ", ".join(
        "%s %d entities in %d partitions" % s for s in specs), secs,
        database_path(argv[1]).stat().st_size))


if __name__ == "__main__":
    try:
        main(sys.argv)
    except HarnessError as e:         # BenchError too
        sys.exit("seed_file: error: %s" % e)
