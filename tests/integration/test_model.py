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
