# sdk_dump.py - baseline: dump a table with the official Python SDK, one JSON file per entity.
"""What a user would write without aztfs: azure.data.tables'
``list_entities()`` (``query_entities()`` for one partition), writing every
entity to DEST/<PartitionKey>/<RowKey>.json.

    AZURE_STORAGE_CONNECTION_STRING=... /usr/bin/python3 bench/sdk_dump.py TABLE DEST [PARTITION]

Prints one JSON line: {"entities": N, "requests": R, "peak_rss_kib": K}
(R = pages fetched).
"""

import base64
import datetime
import json
import os
import sys
import uuid

from azure.data.tables import EntityProperty, TableClient

from common import peak_rss_kib


def plain(value):
    """VALUE of an SDK entity as a JSON-ready value."""
    if isinstance(value, EntityProperty):
        value = value.value
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def dump(conn_str, table, dest, partition=None):
    """Write every entity of TABLE (or of PARTITION) under DEST; return
    entities and pages."""
    client = TableClient.from_connection_string(conn_str, table_name=table)
    if partition is None:
        pager = client.list_entities()
    else:
        pager = client.query_entities("PartitionKey eq @pk", parameters={"pk": partition})
    entities = pages = 0
    made = set()
    for page in pager.by_page():
        pages += 1
        for e in page:
            folder = os.path.join(dest, e["PartitionKey"])
            if folder not in made:
                os.makedirs(folder, exist_ok=True)
                made.add(folder)
            doc = {k: plain(v) for k, v in e.items()}
            doc["Timestamp"] = plain(e.metadata.get("timestamp"))
            with open(os.path.join(folder, e["RowKey"] + ".json"), "w") as f:
                json.dump(doc, f, indent=2, sort_keys=True)
                f.write("\n")
            entities += 1
    client.close()
    return {"entities": entities, "requests": pages, "peak_rss_kib": peak_rss_kib()}


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit(__doc__)
    result = dump(os.environ["AZURE_STORAGE_CONNECTION_STRING"], argv[1], argv[2],
                  argv[3] if len(argv) == 4 else None)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)
