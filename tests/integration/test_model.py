"""The reference-model test (issue 13) over a fixed set of seeds: random
sequences of operations on a mount, checked after every step against an
in-memory model and at the end through the official SDK (tests/integration/
model.py says what is generated and checked). A failure prints the seed and
a shrunk sequence with the command that replays it.

MODEL_SEEDS (e.g. "1-40") and MODEL_STEPS override the set CI runs; the long
mode is `model.py --minutes N` (doc/TESTING.md)."""

import os
import time

import pytest

import model

# Also against the Cosmos DB for Table model (issue 42; conftest.py backend).
pytestmark = pytest.mark.backends

SEEDS = os.environ.get("MODEL_SEEDS", "1-12")
STEPS = int(os.environ.get("MODEL_STEPS", "60"))


def seed_list(spec):
    a, _, b = spec.partition("-")
    return list(range(int(a), int(b or a) + 1))


@pytest.fixture(scope="module")
def session(module_mounter, sdk):
    opts = ["-o", model.MOUNT_OPTIONS]
    return model.Session(module_mounter.mount(options=opts),
                         module_mounter.mount(options=opts), sdk)


@pytest.mark.parametrize("seed", seed_list(SEEDS))
def test_model_seed(session, backend, seed, tmp_path):
    steps = model.gen_steps(seed, STEPS, cosmos=backend.cosmos)
    msg = session.attempt(steps)
    if msg:
        shrunk, smsg = session.shrink(steps, budget=90)
        replay = "--cosmos %d" % backend.model.seed if backend.cosmos else ""
        pytest.fail(model.report(seed, steps, msg, shrunk, smsg,
                                 os.path.join(os.getcwd(), ".run", "model"), replay),
                    pytrace=False)


def excl_refused_steps():
    """Each kind of model.Runner.op_excl_refused, whatever the seeds draw:
    on free names (a new partition, a long-form name), then on a name that
    exists."""
    props = {"tok": ("Edm.String", "tok1")}
    steps = [{"op": "excl_refused", "pk": pk, "rk": rk, "how": how, "bad": bad}
             for pk, rk in (("p1", "r1"), ("a b", "x" * 300))
             for how in ("noclobber", "open") for bad in (0, 1)]
    steps.append({"op": "create", "pk": "p1", "rk": "r1", "props": props})
    steps += [{"op": "excl_refused", "pk": "p1", "rk": "r1", "how": how, "bad": 0}
              for how in ("noclobber", "open")]
    return steps


@pytest.mark.azurite_only(reason="its long-form name has a RowKey of 300 bytes, over "
                          "Cosmos DB's 255")
def test_model_excl_refused(session):
    """Issue 46, item 1: a refused O_EXCL create leaves nothing behind."""
    msg = session.attempt(excl_refused_steps())
    assert msg is None, msg
