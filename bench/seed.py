# seed.py - create and fill the benchmark tables with raw $batch transactions.
"""Benchmark data: tables of N entities of about 300 bytes each, spread
round-robin over P partitions ``p00``, ``p01``, ... with RowKeys
``r0000000``, ``r0000001``, ... (entity i goes to partition i % P).

Entities mix the usual types: strings, an Int32, an Int64, a Double, a
Boolean and a DateTime (in their wire form, with ``@odata.type``
annotations). Seeding sends entity group transactions of 100 inserts (one
partition each) over a few keep-alive connections in parallel: the Python
SDK's ``submit_transaction`` costs about 1 ms of client CPU per entity,
which would make seeding 200k entities take minutes of SDK time alone.

As a script (connection string in AZURE_STORAGE_CONNECTION_STRING):
    /usr/bin/python3 bench/seed.py TABLE N [P]
"""

import datetime
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from tablerest import TableRest

BATCH = 100          # operations per entity group transaction (the service's maximum)
THREADS = 2          # connections sending transactions at once (Azurite is the bottleneck)
CITIES = ["Paris", "Lyon", "Berlin", "Madrid", "Lisbon", "Vienna", "Prague", "Oslo"]
EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


def partition_key(i, partitions):
    """PartitionKey of entity number I."""
    return "p%02d" % (i % partitions)


def row_key(i):
    """RowKey of entity number I."""
    return "r%07d" % i


def needle(i):
    """A string found in entity I and in no other (for grep)."""
    return "user%07d@" % i


def entity_path(i, partitions):
    """Path of entity I inside its table's directory on the mount."""
    return "%s/%s.json" % (partition_key(i, partitions), row_key(i))


def entity(i, partitions):
    """Entity number I as sent on the wire: about 300 bytes of JSON."""
    created = EPOCH + datetime.timedelta(minutes=i)
    return {
        "PartitionKey": partition_key(i, partitions),
        "RowKey": row_key(i),
        "Name": "Customer %d" % i,
        "Email": needle(i) + "example.com",
        "City": CITIES[i % len(CITIES)],
        "Address": "%d rue de la Republique, %05d" % (i % 997 + 1, (i * 37) % 100000),
        "Notes": "Prefers email contact; tier %d." % (i % 5),
        "Visits": i % 1000,
        "Balance": str(10_000_000_000 + i * 7919),
        "Balance@odata.type": "Edm.Int64",
        "Score": (i % 1000) / 8.0,
        "Score@odata.type": "Edm.Double",
        "Active": i % 3 != 0,
        "Created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "Created@odata.type": "Edm.DateTime",
    }


def _batches(n, partitions):
    """Ranges of entity numbers: at most BATCH per range, one partition each."""
    for p in range(partitions):
        members = range(p, n, partitions)
        for start in range(0, len(members), BATCH):
            yield members[start:start + BATCH]


def seed_table(conn_str, table, n, partitions, threads=THREADS):
    """Recreate TABLE with N entities in PARTITIONS partitions; return the
    seconds it took."""
    t0 = time.perf_counter()
    admin = TableRest(conn_str)
    admin.delete_table(table, missing_ok=True)
    admin.create_table(table)
    admin.close()
    local = threading.local()
    clients = []

    def submit(numbers):
        if not hasattr(local, "client"):
            local.client = TableRest(conn_str)
            clients.append(local.client)
        local.client.insert_batch(table, [entity(i, partitions) for i in numbers])

    try:
        with ThreadPoolExecutor(threads) as pool:
            for _ in pool.map(submit, _batches(n, partitions)):
                pass
    finally:
        for c in clients:
            c.close()
    return time.perf_counter() - t0


def delete_table(conn_str, table):
    """Drop TABLE (gives Azurite its memory back)."""
    client = TableRest(conn_str)
    client.delete_table(table)
    client.close()


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit(__doc__)
    conn_str = os.environ["AZURE_STORAGE_CONNECTION_STRING"]
    n, partitions = int(argv[2]), int(argv[3]) if len(argv) == 4 else 1
    secs = seed_table(conn_str, argv[1], n, partitions)
    print("%s: %d entities in %d partitions, %.1f s" % (argv[1], n, partitions, secs))


if __name__ == "__main__":
    main(sys.argv)
