"""What the official SDK hands back, in a form tests can compare: shared by
conftest.py (WriteHelpers.typed) and the reference-model test (model.py)."""

import datetime
import math
import uuid


def edm_type(v):
    """The Edm type name of an SDK value (an EntityProperty carries its own)."""
    from azure.data.tables import EntityProperty
    if isinstance(v, EntityProperty):
        return getattr(v.edm_type, "value", v.edm_type)
    for cls, name in ((bool, "Edm.Boolean"), (int, "Edm.Int32"), (float, "Edm.Double"),
                      (str, "Edm.String"), (bytes, "Edm.Binary"), (uuid.UUID, "Edm.Guid"),
                      (datetime.datetime, "Edm.DateTime")):
        if isinstance(v, cls):
            return name
    return type(v).__name__


def typed(e):
    """{name: (Edm type, comparable value)} of an SDK entity, keys included:
    NaN as "NaN", a Guid as its string, a DateTime as naive UTC isoformat."""
    from azure.data.tables import EntityProperty
    out = {}
    for k, v in e.items():
        t = edm_type(v)
        if isinstance(v, EntityProperty):
            v = v.value
        if isinstance(v, float) and math.isnan(v):
            v = "NaN"
        elif isinstance(v, uuid.UUID):
            v = str(v)
        elif isinstance(v, datetime.datetime):
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None).isoformat()
        out[k] = (t, v)
    return out
