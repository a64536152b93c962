# rest_scan.py - baseline: the raw paged REST scan of a table or partition (the protocol floor).
"""Read every entity of TABLE (or of one partition) with Query Entities
requests over one keep-alive connection, following continuation headers,
and nothing else: no files written. This is the least any client can do to
see the data, so it is the floor the benchmark compares against.

    AZURE_STORAGE_CONNECTION_STRING=... /usr/bin/python3 bench/rest_scan.py TABLE [PARTITION]

Prints one JSON line: {"entities": N, "requests": R, "bytes": B, "peak_rss_kib": K}.
"""

import json
import os
import sys

from common import peak_rss_kib
from tablerest import TableRest


def scan(conn_str, table, partition=None):
    """Scan TABLE (or PARTITION of it); return entities, requests and bytes read."""
    client = TableRest(conn_str)
    try:
        entities = sum(len(page) for page in client.pages(table, partition))
        return {"entities": entities, "requests": client.requests, "bytes": client.bytes_in,
                "peak_rss_kib": peak_rss_kib()}
    finally:
        client.close()


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    result = scan(os.environ["AZURE_STORAGE_CONNECTION_STRING"], argv[1],
                  argv[2] if len(argv) == 3 else None)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)
