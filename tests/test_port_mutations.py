"""Issue 55 item 6: a bundle's test vectors catch a port that misreads the observation.
Each mutation perturbs one field of the Python port's encoder (ports/python): a field
zeroed, a cap dropped, a clip undone, a rounding or a column left out, the two
misreadings issue 55 found passing every vector among them (no `turn_total` cap, `NEED`
unclipped); each one must fail at least one vector, as it would a port written that way."""

from pathlib import Path

import numpy as np
import pytest

from fivethousand_rl import export
from fivethousand_rl.envs.encoding import Col, ObsSpec
from fivethousand_rl.envs.rules import Rules
from tests.helpers import load_python_port

ROOT = Path(__file__).resolve().parent.parent
PYTHON_PORT = ROOT / "ports" / "python" / "fivethousand_port.py"


PORT = load_python_port()


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """policy-2p's bundle with the built positions and one game: the edges come from
    the built ones, so a shipped bundle (the same, then more games) fails as often."""
    out = tmp_path_factory.mktemp("bundles") / "policy-2p"
    assert export.main(["policy-2p", "--out", str(out), "--vectors", "1"]) == 0
    return PORT.Bundle(out)


def failing(bundle, observe) -> int:
    """How many of the bundle's vectors `observe(state, seat)` gets wrong (a port
    reading past its table fails too)."""
    cases = PORT._read_json(bundle.folder / "test_vectors.json", "the test vectors")
    wrong = 0
    for case in cases["vectors"]:
        want = np.zeros(bundle.size, dtype=np.float32)
        want[case["obs"]["index"]] = case["obs"]["value"]
        try:
            got = observe(case["state"], case["seat"])
        except IndexError:
            got = None
        wrong += got is None or got.tobytes() != want.tobytes()
    return wrong


# ------------------------------------------------------------------ the mutations
# Each takes (bundle, state, seat, obs: the port's observation, a copy) and returns it
# changed as a port that misread one field would compute it.
def zeroed(field: str):
    def mutate(b, state, seat, obs):
        offset, size = b.slices[field]
        obs[offset : offset + size] = 0
        return obs

    return mutate


def rows_of(b, obs) -> np.ndarray:
    offset = b.slices["actions"][0]
    return obs[offset:].reshape(64, b.row_size)  # a view: writing it writes obs


def column_zeroed(name: str, banking_rows_only: bool = False):
    def mutate(b, state, seat, obs):
        columns = b.meta["observation"]["action_row"]["columns"]
        size = next(c["size"] for c in columns if c["name"] == name)
        rows = rows_of(b, obs)
        which = rows[:, b.col["BANKS"]] == 1 if banking_rows_only else slice(None)
        rows[which, b.col[name] : b.col[name] + size] = 0
        return obs

    return mutate


def per_move(write):
    """A mutation writing each legal action's row: write(b, row, move, target, own)."""

    def mutate(b, state, seat, obs):
        rows, target = rows_of(b, obs), b.rules["target"]
        own = state["scores"][state["current"]]
        for move in PORT.moves(state, b.rules):
            write(b, rows[move["action"]], move, target, own)
        return obs

    return mutate


def uncapped_turn_total(b, state, seat, obs):  # issue 55: passed every vector
    obs[b.slices["turn_total"][0]] = state["turn_total"] / b.rules["target"]
    return obs


def unclipped_need_after_bank(b, state, seat, obs):
    target, mover = b.rules["target"], state["current"]
    need = target - state["scores"][mover] - state["turn_total"]
    obs[b.slices["need_after_bank"][0]] = need / target
    return obs


def unclipped_need(b, row, move, target, own):  # issue 55: passed every vector
    row[b.col["NEED"]] = (target - own - move["total"]) / target


def capped_turn_total_column(b, row, move, target, own):  # the compact field's cap, misapplied
    row[b.col["TURN_TOTAL"]] = min(move["total"] / target, 2.0)


def expected_points(b, move, own, table_cap: bool = True) -> float:
    """The TURN_EV column's points before the division (the table's float64 value)."""
    if move["bank"] is not None:
        return move["total"]
    if table_cap:
        return b.turn_ev_value(own > 0, move["total"], move["dice_left"])
    return float(b.turn_ev[int(own > 0), move["total"] // b.turn_ev_step, move["dice_left"]])


def uncapped_turn_ev(b, row, move, target, own):
    row[b.col["TURN_EV"]] = expected_points(b, move, own) / 1000


def turn_ev_past_the_table_cap(b, row, move, target, own):
    row[b.col["TURN_EV"]] = min(expected_points(b, move, own, table_cap=False) / 1000, 5.0)


def turn_ev_rounded_twice(b, row, move, target, own):
    """The table's value rounded to float32 before the division, then the quotient."""
    points = np.float32(expected_points(b, move, own))
    row[b.col["TURN_EV"]] = min(points / np.float32(1000), np.float32(5))


FIELDS = [name for name in ObsSpec("rich", 2, Rules()).slices if name != "actions"]
MUTATIONS = {f"{name} zeroed": zeroed(name) for name in FIELDS}
MUTATIONS |= {f"column {c.name} zeroed": column_zeroed(c.name) for c in Col}
MUTATIONS |= {
    "no turn_total cap (at most 2)": uncapped_turn_total,
    "need_after_bank not clipped at -1": unclipped_need_after_bank,
    "column NEED not clipped at -1": per_move(unclipped_need),
    "column TURN_TOTAL capped at 2 as the compact field is": per_move(capped_turn_total_column),
    "column TURN_EV not capped at 5": per_move(uncapped_turn_ev),
    "the turn-EV index not capped at the table's cap": per_move(turn_ev_past_the_table_cap),
    "column TURN_EV from the table value rounded to float32 first": per_move(turn_ev_rounded_twice),
    "banking rows without DICE_LEFT_AT": column_zeroed("DICE_LEFT_AT", banking_rows_only=True),
    "banking rows without MAY_BANK": column_zeroed("MAY_BANK", banking_rows_only=True),
}


def test_the_port_itself_reproduces_every_vector(bundle):
    assert failing(bundle, bundle.observe) == 0


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_each_misreading_of_a_field_fails_a_vector(mutation, bundle):
    mutate = MUTATIONS[mutation]

    def observe(state: dict, seat: int) -> np.ndarray:
        return mutate(bundle, state, seat, bundle.observe(state, seat).copy())

    assert failing(bundle, observe) > 0
