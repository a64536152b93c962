#!/usr/bin/python3
"""seed_sample.py - load a small demo dataset into Azure Table Storage / Azurite.

Connection string from the environment variable AZURE_STORAGE_CONNECTION_STRING
("UseDevelopmentStorage=true" = local Azurite on 127.0.0.1:10002).
Tables "customers" and "orders" (and an empty "archive"); a few partitions; every
Edm type; a few awkward keys ("ACME Corp", "café", "a%b", ".hidden").
Rerunning replaces the same entities (upsert): it is idempotent.

Usage: AZURE_STORAGE_CONNECTION_STRING=... /usr/bin/python3 scripts/seed_sample.py
"""
import datetime
import os
import sys
import uuid

try:
    from azure.core.exceptions import ResourceExistsError
    from azure.data.tables import EdmType, EntityProperty, TableServiceClient
except ImportError as e:
    sys.exit("seed_sample.py: azure.data.tables missing (apt-get install python3-azure; "
             "run with /usr/bin/python3): %s" % e)


def utc(*a):
    return datetime.datetime(*a, tzinfo=datetime.timezone.utc)


CUSTOMERS = [
    {"PartitionKey": "FR", "RowKey": "café", "Name": "Café de Flore", "City": "Paris",
     "Active": True, "Employees": 42, "Rating": EntityProperty(4.5, EdmType.DOUBLE),
     "Since": utc(2001, 5, 17, 9, 0, 0)},
    {"PartitionKey": "FR", "RowKey": "boulangerie-42", "Name": "Boulangerie du coin",
     "City": "Lyon", "Active": False, "Employees": 3},
    {"PartitionKey": "US", "RowKey": "ACME Corp", "Name": "ACME Corporation",
     "City": "Phoenix", "Active": True, "Employees": 1200,
     "Revenue": EntityProperty(9007199254740993, EdmType.INT64),
     "Rating": EntityProperty(2.0, EdmType.DOUBLE),
     "AccountId": uuid.UUID("3f2504e0-4f89-11d3-9a0c-0305e82c3301"),
     "Logo": EntityProperty(b"\x89PNG\r\n\x1a\n", EdmType.BINARY),
     "Since": utc(1949, 1, 1, 0, 0, 0),
     "Notes": 'Says "meep meep".\nSecond line.'},
    {"PartitionKey": "US", "RowKey": "a%b", "Name": "Percent & Co", "City": "Boston",
     "Active": True, "Employees": 7},
    {"PartitionKey": "US", "RowKey": ".hidden", "Name": "Dot Startup", "City": "Austin",
     "Active": True, "Employees": 1},
    {"PartitionKey": "JP", "RowKey": "日本-001", "Name": "株式会社サンプル", "City": "東京",
     "Active": True, "Employees": 250, "Rating": EntityProperty(float("nan"), EdmType.DOUBLE)},
]

ORDERS = []
for i in range(1, 13):
    month = "2026-%02d" % ((i - 1) % 3 + 1)
    ORDERS.append({
        "PartitionKey": month, "RowKey": "order-%04d" % i,
        "Customer": ["café", "ACME Corp", "日本-001", "a%b"][i % 4],
        "Quantity": i * 3,
        "Total": EntityProperty(round(i * 19.99, 2), EdmType.DOUBLE),
        "Paid": i % 2 == 0,
        "OrderId": uuid.UUID(int=i),
        "Placed": utc(2026, (i - 1) % 3 + 1, i, 12, 30, 0),
        "Cents": EntityProperty(i * 1999, EdmType.INT64),
    })


def main():
    cs = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
    if not cs:
        sys.exit("seed_sample.py: set AZURE_STORAGE_CONNECTION_STRING "
                 "(e.g. UseDevelopmentStorage=true for Azurite)")
    svc = TableServiceClient.from_connection_string(cs)
    for name, rows in (("customers", CUSTOMERS), ("orders", ORDERS), ("archive", [])):
        try:
            svc.create_table(name)
        except ResourceExistsError:
            pass
        t = svc.get_table_client(name)
        for e in rows:
            t.upsert_entity(e)
        print("seeded %-10s %2d entities" % (name, len(rows)))


if __name__ == "__main__":
    main()
