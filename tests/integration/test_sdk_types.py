"""Entities written with the Azure SDK, read through the mount: every Edm
type, its value, its "@odata.type" annotation, and the exact canonical text."""

import base64
import datetime
import json
import math
import os
import re
import urllib.parse
import uuid

import pytest
from azure.data.tables import EdmType, EntityProperty

from aztfs_names import dir_name, file_name

TABLE = "sdkTypes"
PK = "types"

GUID = uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e")
DT = datetime.datetime(2021, 3, 4, 5, 6, 7, tzinfo=datetime.timezone.utc)
BIN = b"\x00\x01\xfe\xffhello"          # base64 "AAH+/2hlbGxv": has '+' and '/'
ESCAPES = 'line1\nline2 "quoted" back\\slash\ttab /slash'
UNICODE = "é日本😀 ünïcödé"

ALL_TYPES = {
    "PartitionKey": PK, "RowKey": "all",
    "Zeta": "upper-case names sort first",
    "bin": EntityProperty(BIN, EdmType.BINARY),
    "bool_f": False,
    "bool_t": True,
    "dbl": EntityProperty(2.0, EdmType.DOUBLE),
    "dbl_frac": 2.5,
    "dbl_inf": float("inf"),
    "dbl_nan": float("nan"),
    "dbl_neg": -0.5,
    "dbl_ninf": float("-inf"),
    "dbl_plain": 3.0,                       # a bare Python float: the SDK sends Edm.Double
    "dt": DT,
    "empty": "",
    "guid": GUID,
    "i32": 42,
    "i32_max": 2147483647,
    "i32_min": -2147483648,
    "i32_neg": -7,
    "i64_big": EntityProperty(9007199254740993, EdmType.INT64),
    "i64_neg": EntityProperty(-9007199254740993, EdmType.INT64),
    "i64_small": EntityProperty(5, EdmType.INT64),
    "s_escapes": ESCAPES,
    "s_unicode": UNICODE,
}

# name -> (JSON text of the value in the file, Edm type name or None)
# (DateTime text comes from the wire: the file keeps it "as received")
EXPECTED = {
    "Zeta": ('"upper-case names sort first"', None),
    "bin": ('"AAH+/2hlbGxv"', "Edm.Binary"),
    "bool_f": ("false", None),
    "bool_t": ("true", None),
    "dbl": ("2.0", "Edm.Double"),
    "dbl_frac": ("2.5", "Edm.Double"),
    "dbl_inf": ('"Infinity"', "Edm.Double"),
    "dbl_nan": ('"NaN"', "Edm.Double"),
    "dbl_neg": ("-0.5", "Edm.Double"),
    "dbl_ninf": ('"-Infinity"', "Edm.Double"),
    "dbl_plain": ("3.0", "Edm.Double"),
    "dt": (None, "Edm.DateTime"),
    "empty": ('""', None),
    "guid": ('"0f8fad5b-d9cb-469f-a165-70867728950e"', "Edm.Guid"),
    "i32": ("42", None),
    "i32_max": ("2147483647", None),
    "i32_min": ("-2147483648", None),
    "i32_neg": ("-7", None),
    "i64_big": ('"9007199254740993"', "Edm.Int64"),
    "i64_neg": ('"-9007199254740993"', "Edm.Int64"),
    "i64_small": ('"5"', "Edm.Int64"),
    "s_escapes": ('"line1\\nline2 \\"quoted\\" back\\\\slash\\ttab /slash"', None),
    "s_unicode": ('"%s"' % UNICODE, None),
}

DOUBLES = {   # name -> value; checked by value (any shortest spelling is fine)
    "third": 1.0 / 3.0, "tiny": 1e-7, "huge": 1e300, "neg_big": -12345678.875,
    "pi": math.pi, "tenth": 0.1, "int_like": 1024.0,
}


@pytest.fixture(scope="module")
def mnt(sdk, seed, module_mounter):
    t = seed.table(sdk, TABLE)
    t.create_entity(ALL_TYPES)
    t.create_entity({"PartitionKey": PK, "RowKey": "bare"})
    dbl = {"PartitionKey": PK, "RowKey": "doubles"}
    for k, v in DOUBLES.items():
        dbl[k] = EntityProperty(v, EdmType.DOUBLE)
    dbl["ctl"] = "bell\x07 esc\x1b nul-free \x01"
    t.create_entity(dbl)
    return module_mounter.mount()


def entity_path(mnt, rk):
    return os.path.join(str(mnt), TABLE, dir_name(PK), file_name(rk))


def read_text(mnt, rk):
    with open(entity_path(mnt, rk), "rb") as f:
        return f.read().decode("utf-8")


def wire_entity(wire, rk):
    path = "/%s(PartitionKey='%s',RowKey='%s')" % (
        TABLE, urllib.parse.quote(PK), urllib.parse.quote(rk))
    status, headers, body = wire(path)
    assert status == 200, body
    return json.loads(body)


def test_values_and_annotations(mnt):
    doc = json.loads(read_text(mnt, "all"))
    assert doc["PartitionKey"] == PK and doc["RowKey"] == "all"
    assert doc["Zeta"] == "upper-case names sort first"
    assert base64.b64decode(doc["bin"]) == BIN
    assert doc["bin@odata.type"] == "Edm.Binary"
    assert doc["bool_f"] is False and doc["bool_t"] is True
    assert doc["dbl"] == 2.0 and isinstance(doc["dbl"], float)
    assert doc["dbl@odata.type"] == "Edm.Double"
    assert doc["dbl_frac"] == 2.5 and doc["dbl_neg"] == -0.5
    assert doc["dbl_plain"] == 3.0 and isinstance(doc["dbl_plain"], float)
    assert doc["dbl_inf"] == "Infinity" and doc["dbl_ninf"] == "-Infinity"
    assert doc["dbl_nan"] == "NaN"
    for k in ("dbl_frac", "dbl_neg", "dbl_plain", "dbl_inf", "dbl_ninf", "dbl_nan"):
        assert doc[k + "@odata.type"] == "Edm.Double", k
    got_dt = datetime.datetime.strptime(re.sub(r"\.\d+Z$", "Z", doc["dt"]), "%Y-%m-%dT%H:%M:%SZ")
    assert got_dt.replace(tzinfo=datetime.timezone.utc) == DT
    assert doc["dt@odata.type"] == "Edm.DateTime"
    assert doc["empty"] == ""
    assert uuid.UUID(doc["guid"]) == GUID and doc["guid@odata.type"] == "Edm.Guid"
    assert doc["i32"] == 42 and doc["i32_neg"] == -7
    assert doc["i32_max"] == 2147483647 and doc["i32_min"] == -2147483648
    for k in ("i32", "i32_neg", "i32_max", "i32_min", "bool_t", "bool_f", "Zeta",
              "empty", "s_escapes", "s_unicode"):
        assert k + "@odata.type" not in doc, k
    assert doc["i64_big"] == "9007199254740993" and doc["i64_big@odata.type"] == "Edm.Int64"
    assert doc["i64_neg"] == "-9007199254740993" and doc["i64_neg@odata.type"] == "Edm.Int64"
    assert doc["i64_small"] == "5" and doc["i64_small@odata.type"] == "Edm.Int64"
    assert doc["s_escapes"] == ESCAPES
    assert doc["s_unicode"] == UNICODE
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,7})?Z$", doc["Timestamp"])
    assert "Timestamp@odata.type" not in doc
    assert not any(k.startswith("odata.") for k in doc)
    annotated = {k for k in doc if k.endswith("@odata.type")}
    assert annotated == {k + "@odata.type" for k, (_, t) in EXPECTED.items() if t}


def expected_text(doc_timestamp, props):
    lines = ["{",
             '  "PartitionKey": %s,' % json.dumps(PK),
             '  "RowKey": %s,' % json.dumps(props.pop("__rk")),
             '  "Timestamp": %s,' % json.dumps(doc_timestamp)]
    for name in sorted(props, key=lambda n: n.encode("utf-8")):
        value, typ = props[name]
        lines.append('  "%s": %s,' % (name, value))
        if typ:
            lines.append('  "%s@odata.type": "%s",' % (name, typ))
    lines[-1] = lines[-1][:-1]          # no comma after the last member
    lines.append("}")
    return "\n".join(lines) + "\n"


def test_exact_canonical_text(mnt, wire):
    text = read_text(mnt, "all")
    doc = json.loads(text)
    w = wire_entity(wire, "all")
    assert doc["Timestamp"] == w["Timestamp"]
    props = dict(EXPECTED)
    props["dt"] = (json.dumps(w["dt"]), "Edm.DateTime")
    props["__rk"] = "all"
    want = expected_text(doc["Timestamp"], props)
    assert text == want, "\n--- got ---\n%s\n--- want ---\n%s" % (text, want)


def test_entity_without_properties(mnt, sdk):
    text = read_text(mnt, "bare")
    ts = json.loads(text)["Timestamp"]
    assert text == '{\n  "PartitionKey": "types",\n  "RowKey": "bare",\n  "Timestamp": %s\n}\n' % json.dumps(ts)


def test_order_and_one_member_per_line(mnt):
    text = read_text(mnt, "all")
    assert text.startswith("{\n") and text.endswith("\n}\n")
    body = text.split("\n")[1:-2]
    names = []
    for line in body:
        m = re.match(r'^  ("(?:[^"\\]|\\.)*"): (.*?),?$', line)
        assert m, repr(line)
        names.append(json.loads(m.group(1)))
    assert names[:3] == ["PartitionKey", "RowKey", "Timestamp"]
    props = [n for n in names[3:] if not n.endswith("@odata.type")]
    assert props == sorted(props, key=lambda n: n.encode("utf-8"))
    assert props[0] == "Zeta"
    # each annotation directly follows its property
    for i, n in enumerate(names):
        if n.endswith("@odata.type"):
            assert names[i - 1] == n[:-len("@odata.type")]
    # every line but the last member ends with a comma
    assert all(l.endswith(",") for l in body[:-1]) and not body[-1].endswith(",")


def test_grep_one_line_per_property(mnt, sh):
    p = entity_path(mnt, "all")
    r = sh(["grep", '"i64_big"', p])
    assert r.lines() == ['  "i64_big": "9007199254740993",']
    r = sh(["grep", "i64_big", p])
    assert r.lines() == ['  "i64_big": "9007199254740993",',
                         '  "i64_big@odata.type": "Edm.Int64",']
    r = sh(["grep", "-c", "@odata.type", p])
    assert int(r.stdout) == sum(1 for _, t in EXPECTED.values() if t)
    r = sh(["grep", '"dbl":', p])
    assert r.lines() == ['  "dbl": 2.0,']


def test_doubles_round_trip(mnt):
    text = read_text(mnt, "doubles")
    doc = json.loads(text)
    for k, v in DOUBLES.items():
        assert doc[k] == v, (k, doc[k], v)        # exact: shortest round-trip form
        assert isinstance(doc[k], float), k
        assert doc[k + "@odata.type"] == "Edm.Double", k
        line = [l for l in text.split("\n") if l.startswith('  "%s": ' % k)][0]
        num = line.split(": ", 1)[1].rstrip(",")
        assert re.search(r"[.eE]", num), line       # always looks like a double
        assert len(num) <= len(repr(v)) + 4, line    # no %.17g noise


def test_control_characters_escaped(mnt):
    text = read_text(mnt, "doubles")
    assert "\x07" not in text and "\x1b" not in text and "\x01" not in text
    assert json.loads(text)["ctl"] == "bell\x07 esc\x1b nul-free \x01"


def test_size_matches_content(mnt, sh):
    p = entity_path(mnt, "all")
    data = read_text(mnt, "all").encode("utf-8")
    assert os.stat(p).st_size == len(data)
    assert int(sh("wc -c < '%s'" % p).stdout) == len(data)
