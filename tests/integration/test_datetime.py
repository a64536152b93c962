"""Edm.DateTime values written through the mount (doc/FORMAT.md, "How aztfs
reads a file you write").

Every accepted spelling (Z, +00:00, other offsets crossing midnight, a month
end, a leap day or the new year, lower-case t/z, 1 to 7 fraction digits, more
digits ending in zeros) is sent in the canonical UTC form
YYYY-MM-DDThh:mm:ss[.fffffff]Z: the service stores exactly that string (raw
GET), the official SDK reads the entity with get_entity() and list_entities()
and gets the right instant, and the file read back shows the canonical form.

A spelling that cannot be normalised (no time zone, no such date, 24:00, an
8th non-zero fraction digit, a year outside 0001-9999 once in UTC...) fails
the close with EINVAL, names the reason in the log, and creates nothing.

A value stored by another client in a spelling the SDK cannot read (an offset)
is shown in the canonical form, and saving the file unchanged repairs it.

One mount for the module; every write goes to its own RowKey."""

import datetime
import errno
import json
import os
import urllib.parse

import pytest
from azure.data.tables import EdmType, EntityProperty

from conftest import WriteHelpers

T = "dtNorm"
T_FOREIGN = "dtForeign"
PK = "p"
UTC = datetime.timezone.utc


def utc(*fields, us=0):
    return datetime.datetime(*fields, microsecond=us, tzinfo=UTC)


# (id, as written in the file, canonical form sent and shown, the SDK's value)
# The SDK keeps microseconds: a 7th fraction digit is cut off on its side.
ACCEPTED = [
    ("z", "2020-01-02T03:04:05Z", "2020-01-02T03:04:05Z", utc(2020, 1, 2, 3, 4, 5)),
    ("plus-0000", "2020-01-02T03:04:05+00:00", "2020-01-02T03:04:05Z", utc(2020, 1, 2, 3, 4, 5)),
    ("minus-0000", "2020-01-02T03:04:05-00:00", "2020-01-02T03:04:05Z", utc(2020, 1, 2, 3, 4, 5)),
    ("lower-case", "2020-01-02t03:04:05z", "2020-01-02T03:04:05Z", utc(2020, 1, 2, 3, 4, 5)),
    ("plus-0530-midnight", "2020-01-02T03:04:05+05:30", "2020-01-01T21:34:05Z",
     utc(2020, 1, 1, 21, 34, 5)),
    ("minus-0800-midnight", "2020-01-02T20:00:00-08:00", "2020-01-03T04:00:00Z",
     utc(2020, 1, 3, 4, 0, 0)),
    ("new-year-forward", "2019-12-31T20:00:00-08:00", "2020-01-01T04:00:00Z",
     utc(2020, 1, 1, 4, 0, 0)),
    ("new-year-back", "2020-01-01T00:30:00+01:00", "2019-12-31T23:30:00Z",
     utc(2019, 12, 31, 23, 30, 0)),
    ("leap-day-back", "2020-03-01T00:30:00+01:00", "2020-02-29T23:30:00Z",
     utc(2020, 2, 29, 23, 30, 0)),
    ("common-year-month-end", "2021-02-28T23:30:00-01:00", "2021-03-01T00:30:00Z",
     utc(2021, 3, 1, 0, 30, 0)),
    ("century-not-leap", "2100-03-01T00:30:00+01:00", "2100-02-28T23:30:00Z",
     utc(2100, 2, 28, 23, 30, 0)),
    ("frac-1", "2020-01-02T03:04:05.1Z", "2020-01-02T03:04:05.1Z",
     utc(2020, 1, 2, 3, 4, 5, us=100000)),
    ("frac-2", "2020-01-02T03:04:05.12Z", "2020-01-02T03:04:05.12Z",
     utc(2020, 1, 2, 3, 4, 5, us=120000)),
    ("frac-3", "2020-01-02T03:04:05.123Z", "2020-01-02T03:04:05.123Z",
     utc(2020, 1, 2, 3, 4, 5, us=123000)),
    ("frac-4", "2020-01-02T03:04:05.1234Z", "2020-01-02T03:04:05.1234Z",
     utc(2020, 1, 2, 3, 4, 5, us=123400)),
    ("frac-5", "2020-01-02T03:04:05.12345Z", "2020-01-02T03:04:05.12345Z",
     utc(2020, 1, 2, 3, 4, 5, us=123450)),
    ("frac-6", "2020-01-02T03:04:05.123456Z", "2020-01-02T03:04:05.123456Z",
     utc(2020, 1, 2, 3, 4, 5, us=123456)),
    ("frac-7", "2020-01-02T03:04:05.1234567Z", "2020-01-02T03:04:05.1234567Z",
     utc(2020, 1, 2, 3, 4, 5, us=123456)),
    ("frac-zeros-sdk-style", "2020-01-02T03:04:05.000000Z", "2020-01-02T03:04:05.000000Z",
     utc(2020, 1, 2, 3, 4, 5)),
    ("frac-9-nanoseconds", "2020-01-02T03:04:05.123456700Z", "2020-01-02T03:04:05.1234567Z",
     utc(2020, 1, 2, 3, 4, 5, us=123456)),
    ("frac-7-with-offset", "2020-01-02T03:04:05.1234567+05:30", "2020-01-01T21:34:05.1234567Z",
     utc(2020, 1, 1, 21, 34, 5, us=123456)),
    ("first-instant", "0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z", utc(1, 1, 1, 0, 0, 0)),
    ("last-instant", "9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.9999999Z",
     utc(9999, 12, 31, 23, 59, 59, us=999999)),
]

# (id, as written, a piece of the reason logged)
REFUSED = [
    ("no-time-zone", "2020-01-02T03:04:05", "no time zone"),
    ("date-only", "2020-01-02", "wrong layout"),
    ("space-for-t", "2020-01-02 03:04:05Z", "wrong layout"),
    ("offset-without-colon", "2020-01-02T03:04:05+0530", "bad time zone"),
    ("offset-24h", "2020-01-02T03:04:05+24:00", "offset beyond 23:59"),
    ("feb-30", "2020-02-30T00:00:00Z", "no such date"),
    ("feb-29-common-year", "2021-02-29T00:00:00Z", "no such date"),
    ("hour-24", "2020-01-02T24:00:00Z", "no such time of day"),
    ("leap-second", "2016-12-31T23:59:60Z", "no such time of day"),
    ("frac-8-digits", "2020-01-02T03:04:05.12345678Z", "more than 7 fraction digits"),
    ("empty-fraction", "2020-01-02T03:04:05.Z", "no digit after the '.'"),
    ("year-0-in-utc", "0001-01-01T00:30:00+01:00", "year outside 0001-9999 once in UTC"),
    ("year-10000-in-utc", "9999-12-31T23:30:00-01:00", "year outside 0001-9999 once in UTC"),
]


def entity_path(mnt, table, rk):
    return os.path.join(str(mnt), table, PK, rk + ".json")


def file_text(value):
    return json.dumps({"When": value, "When@odata.type": "Edm.DateTime"}).encode()


def stored_string(wire, table, rk):
    """The DateTime string as the service stores it (raw GET)."""
    status, _, body = wire("/%s(PartitionKey='%s',RowKey='%s')" % (
        table, urllib.parse.quote(PK), urllib.parse.quote(rk)))
    assert status == 200, body
    doc = json.loads(body)
    assert doc["When@odata.type"] == "Edm.DateTime"
    return doc["When"]


@pytest.fixture(scope="module")
def mnt(sdk, seed, module_mounter):
    seed.table(sdk, T)
    foreign = seed.table(sdk, T_FOREIGN)
    # another client stores an offset verbatim (the SDK passes strings through)
    foreign.create_entity({"PartitionKey": PK, "RowKey": "offset",
                           "When": EntityProperty("2020-01-02T03:04:05+05:30",
                                                  EdmType.DATETIME)})
    return module_mounter.mount()


@pytest.fixture(scope="module")
def written(mnt):
    """Write every accepted spelling to its own new file: {id: close result}."""
    os.mkdir(os.path.join(str(mnt), T, PK))       # the table is empty: a new partition
    return {cid: WriteHelpers.write_fd(entity_path(mnt, T, cid), file_text(text),
                                       os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            for cid, text, _, _ in ACCEPTED}


@pytest.mark.parametrize("cid,text,canonical,want", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_accepted_spelling_round_trips(mnt, written, wire, wh, cid, text, canonical, want):
    assert written[cid] is None, "writing %r failed: %r" % (text, written[cid])
    assert stored_string(wire, T, cid) == canonical
    got = wh.get(T, PK, cid)["When"]
    assert isinstance(got, datetime.datetime) and got.tzinfo is not None
    assert got.astimezone(UTC) == want
    with open(entity_path(mnt, T, cid), "rb") as f:
        doc = json.loads(f.read())
    assert doc["When"] == canonical and doc["When@odata.type"] == "Edm.DateTime"


def test_sdk_lists_the_whole_table(written, sdk):
    """One unreadable DateTime would make the whole listing fail."""
    got = {e["RowKey"]: e["When"] for e in sdk.get_table_client(T).list_entities()}
    assert sorted(got) == sorted(c[0] for c in ACCEPTED)
    for cid, _, _, want in ACCEPTED:
        assert got[cid].astimezone(UTC) == want, cid


@pytest.mark.parametrize("cid,text,why", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_spelling_creates_nothing(mnt, wh, cid, text, why):
    rk = "bad-" + cid
    mark = wh.mark(mnt)
    got = wh.write_fd(entity_path(mnt, T, rk), file_text(text),
                      os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    assert got == ("close", errno.EINVAL)
    assert wh.get(T, PK, rk) is None
    assert not os.path.exists(entity_path(mnt, T, rk))
    log = mnt.stderr()[mark:]
    assert why in log and "expected YYYY-MM-DDThh:mm:ss[.fffffff] then Z or +hh:mm" in log, log


def test_refused_spelling_leaves_an_entity_unchanged(mnt, written, wh):
    rk = "z"
    etag = wh.etag(T, PK, rk)
    got = wh.write_fd(entity_path(mnt, T, rk), file_text("2020-01-02T03:04:05"))
    assert got == ("close", errno.EINVAL)
    assert wh.etag(T, PK, rk) == etag
    assert wh.get(T, PK, rk)["When"] == utc(2020, 1, 2, 3, 4, 5)


def test_foreign_offset_is_shown_canonical_and_a_resave_repairs_it(mnt, wire, wh):
    """Stored with an offset by another client: the SDK cannot read it; the
    file shows it in UTC, and saving that text makes the entity readable."""
    assert stored_string(wire, T_FOREIGN, "offset") == "2020-01-02T03:04:05+05:30"
    with pytest.raises(ValueError):
        wh.get(T_FOREIGN, PK, "offset")
    path = entity_path(mnt, T_FOREIGN, "offset")
    with open(path, "rb") as f:
        text = f.read()
    doc = json.loads(text)
    assert doc["When"] == "2020-01-01T21:34:05Z"
    assert WriteHelpers.write_fd(path, text) is None
    assert stored_string(wire, T_FOREIGN, "offset") == "2020-01-01T21:34:05Z"
    assert wh.get(T_FOREIGN, PK, "offset")["When"] == utc(2020, 1, 1, 21, 34, 5)
