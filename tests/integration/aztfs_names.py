"""The aztfs name rule, written from the specification (doc/NAMES.md), not
from the C code, so that the tests cross-check the implementation.

encode(key):
  * the empty key is "%";
  * over the UTF-8 bytes of the key: '%' -> "%25", '/' -> "%2F", bytes
    0x00-0x1F and 0x7F -> "%XX" (upper-case hex), a '.' in first position ->
    "%2E", every other byte literal;
  * if the result is longer than 250 bytes: keep the longest prefix of at most
    200 bytes that splits neither a %XX escape nor a UTF-8 multibyte
    sequence, then "%~", then the first 16 bytes of SHA-256(key as UTF-8) as
    32 lower-case hex digits.
Directory name of a PartitionKey = encode(pk); file name = encode(rk) + ".json".
"""

import hashlib

NAME_MAX = 250
PREFIX_MAX = 200
LONG_MARK = b"%~"
SUFFIX = ".json"


def _escape_units(key_bytes):
    """The encoded form as a list of indivisible units (bytes objects): an
    escape "%XX", a whole UTF-8 sequence, or a single ASCII byte."""
    units = []
    i = 0
    n = len(key_bytes)
    while i < n:
        b = key_bytes[i]
        if b == 0x25 or b == 0x2F or b < 0x20 or b == 0x7F or (i == 0 and b == 0x2E):
            units.append(b"%%%02X" % b)
            i += 1
        elif b < 0x80:
            units.append(bytes([b]))
            i += 1
        else:
            # a UTF-8 lead byte and its continuation bytes (10xxxxxx)
            j = i + 1
            while j < n and (key_bytes[j] & 0xC0) == 0x80:
                j += 1
            units.append(key_bytes[i:j])
            i = j
    return units


def encode_bytes(key):
    """Name component for KEY (str), as bytes."""
    kb = key.encode("utf-8")
    if not kb:
        return b"%"
    units = _escape_units(kb)
    full = b"".join(units)
    if len(full) <= NAME_MAX:
        return full
    prefix = b""
    for u in units:
        if len(prefix) + len(u) > PREFIX_MAX:
            break
        prefix += u
    digest = hashlib.sha256(kb).hexdigest()[:32].encode("ascii")
    return prefix + LONG_MARK + digest


def encode(key):
    """Name component for KEY (str), as str (always valid UTF-8 since only
    whole UTF-8 sequences are kept)."""
    return encode_bytes(key).decode("utf-8")


def dir_name(pk):
    return encode(pk)


def file_name(rk):
    return encode(rk) + SUFFIX


def is_long_form(name):
    return "%~" in name


# --- self-check of the rule's examples (run: python3 aztfs_names.py) ---------
_EXAMPLES = {
    "": "%",
    "a%b": "a%25b",
    ".": "%2E",
    "..": "%2E.",
    ".hidden": "%2Ehidden",
    "a.b": "a.b",
    "100%": "100%25",
    "x/y": "x%2Fy",
    "%2E": "%252E",
    "%~abc": "%25~abc",
    "tab\tx": "tab%09x",
    "del\x7f": "del%7F",
    "with space": "with space",
    "é日本😀": "é日本😀",
}


def _self_test():
    for k, v in _EXAMPLES.items():
        got = encode(k)
        assert got == v, (k, got, v)
    assert encode("k" * 250) == "k" * 250
    long_ = encode("k" * 251)
    assert long_.startswith("k" * 200 + "%~") and len(long_) == 234, long_
    # never split an escape: 100 '%' -> 66 escapes (198 bytes)
    assert encode("%" * 100).startswith("%25" * 66 + "%~")
    # never split a UTF-8 sequence: 'a' + 150 x 'é' -> 'a' + 99 x 'é' (199 bytes)
    assert encode("a" + "é" * 150).startswith("a" + "é" * 99 + "%~")
    for k in ("x" * 300, "é" * 400, "日" * 200, "%" * 300, "😀" * 100):
        assert len(encode_bytes(k) + b".json") <= 255


if __name__ == "__main__":
    _self_test()
    print("ok")
