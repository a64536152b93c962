# sdk_restore.py - baseline: load a backup of aztfs files into a table with the official SDK.
"""What a user would write without aztfs to restore a backup made from the
mount (SRC/<PartitionKey>/<RowKey>.json, aztfs' file format): create TABLE,
then insert every entity, either one request per entity or in entity
group transactions of up to 100 operations per partition (--batch).

    AZURE_STORAGE_CONNECTION_STRING=... /usr/bin/python3 bench/sdk_restore.py \\
        TABLE SRC [--batch]

Prints one JSON line: {"entities": N, "requests": R}.
"""

import argparse
import base64
import datetime
import json
import os
import sys
import uuid

from azure.data.tables import EdmType, EntityProperty, TableClient

TYPES = {"Edm.Int64": EdmType.INT64, "Edm.Double": EdmType.DOUBLE}


def sdk_value(value, edm):
    """The SDK's value for VALUE annotated EDM (None: no annotation)."""
    if edm == "Edm.DateTime":
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if edm == "Edm.Guid":
        return uuid.UUID(value)
    if edm == "Edm.Binary":
        return base64.b64decode(value)
    if edm == "Edm.Int64":
        return EntityProperty(int(value), EdmType.INT64)
    if edm == "Edm.Double":
        return EntityProperty(float(value), EdmType.DOUBLE)
    return value


def entity(pk, rk, text):
    """The SDK entity of one aztfs file."""
    doc = json.loads(text)
    out = {"PartitionKey": pk, "RowKey": rk}
    for k, v in doc.items():
        if k in ("PartitionKey", "RowKey", "Timestamp") or k.endswith("@odata.type"):
            continue
        out[k] = sdk_value(v, doc.get(k + "@odata.type"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("table")
    ap.add_argument("src")
    ap.add_argument("--batch", action="store_true")
    a = ap.parse_args()
    client = TableClient.from_connection_string(os.environ["AZURE_STORAGE_CONNECTION_STRING"],
                                                table_name=a.table)
    client.create_table()
    n, requests = 0, 1
    for pk in sorted(os.listdir(a.src)):
        ents = []
        for name in sorted(os.listdir(os.path.join(a.src, pk))):
            with open(os.path.join(a.src, pk, name)) as f:
                ents.append(entity(pk, name[:-len(".json")], f.read()))
        if a.batch:
            for i in range(0, len(ents), 100):
                client.submit_transaction([("create", e) for e in ents[i:i + 100]])
                requests += 1
        else:
            for e in ents:
                client.create_entity(e)
                requests += 1
        n += len(ents)
    print(json.dumps({"entities": n, "requests": requests}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
