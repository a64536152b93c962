# sdk_import.py - baseline: load an NDJSON backup into a table with the official SDK.
"""What a user would write without aztfs to restore an NDJSON backup (one
entity a line, aztfs' format: keys and "@odata.type" annotations inline):
create TABLE, then send the lines in entity group transactions of up to 100
upserts (Insert Or Replace) per partition, in file order, one at a time, as
the SDK's samples do.

    AZURE_STORAGE_CONNECTION_STRING=... /usr/bin/python3 bench/sdk_import.py TABLE FILE

Prints one JSON line: {"entities": N, "requests": R}.
"""

import argparse
import json
import os
import sys

from azure.data.tables import TableClient, UpdateMode

from sdk_restore import entity


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("table")
    ap.add_argument("file")
    a = ap.parse_args()
    client = TableClient.from_connection_string(os.environ["AZURE_STORAGE_CONNECTION_STRING"],
                                                table_name=a.table)
    client.create_table()
    n, requests, ops, pk = 0, 1, [], None

    def send():
        nonlocal requests
        if ops:
            client.submit_transaction(ops)
            requests += 1
            ops.clear()

    with open(a.file, encoding="utf-8") as f:
        for text in f:
            doc = json.loads(text)
            if doc["PartitionKey"] != pk or len(ops) == 100:
                send()
                pk = doc["PartitionKey"]
            ops.append(("upsert", entity(pk, doc["RowKey"], text), {"mode": UpdateMode.REPLACE}))
            n += 1
    send()
    print(json.dumps({"entities": n, "requests": requests}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
