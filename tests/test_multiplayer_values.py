"""Max-n value iteration and paranoid values (envs.multiplayer_values) on shrunken games.

Oracles: with 2 players both are the exact 2-player solver's values (zero-sum: the
opponent maximizing its own chance minimizes the other's), under the seeds' rules and
house rules; one max-n backup is the single-turn planner's (fivethousand_rl.envs.turn_planner) every
player's values against the same values; the paranoid values satisfy their Bellman
equations, rebuilt from the engine's banking (fivethousand_rl.envs.game.bank_outcome, R8-R9) and the
single-turn recursion; and no fixed bots can hold a player below its paranoid value."""

import numpy as np
import pytest

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.optimal import two_player_solution
from fivethousand_rl.envs.best_response import ScoreSpace, solve_best_response
from fivethousand_rl.envs.game import bank_outcome, in_turn_order
from fivethousand_rl.envs.multiplayer_values import (
    Turns,
    detect_cycle,
    end_values,
    maxn_backup,
    maxn_value_iteration,
    solve_paranoid,
    turn_vectors,
)
from fivethousand_rl.envs.rules import NUM_DICE, Rules, can_bank
from fivethousand_rl.envs.solver import STEP, option_tables
from fivethousand_rl.envs.turn_planner import plan_turn, solve_turn

SMALL = Rules(target=1000, entry=300)
TINY = Rules(target=700, entry=300)  # 5 scores a player can start a turn with
TWO_PLAYER_RULES = [
    pytest.param(SMALL, id="R1-R12 target 1000"),
    pytest.param(Rules(target=800, entry=300, bump=False), id="V2 no bumps"),
    pytest.param(Rules(target=800, entry=300, overshoot="lost"), id="V3 overshoot lost"),
    pytest.param(Rules(target=800, entry=300, hold="all"), id="R5 hold all"),
]


def solver_values(rules: Rules) -> np.ndarray:
    """The 2-player solver's V[a, b] at every position (a, b) of ``ScoreSpace`` order."""
    sol = two_player_solution(rules, show_progress=False)
    positions = ScoreSpace(rules, 2).positions()
    return sol.V[
        np.searchsorted(sol.scores, positions[:, 0]), np.searchsorted(sol.scores, positions[:, 1])
    ]


@pytest.mark.parametrize("rules", TWO_PLAYER_RULES)
def test_two_player_paranoid_values_are_the_solvers(rules):
    """Against one opponent minimizing its chance, a player wins what optimal play
    wins: at its own turns V[a, b], at the opponent's 1 - V[b, a] (position (b, a) in
    the opponent's order)."""
    v = solver_values(rules)
    paranoid = solve_paranoid(rules, 2)
    assert paranoid.values[0] == pytest.approx(v, abs=1e-9)
    assert paranoid.values[1] == pytest.approx(1 - v, abs=1e-9)
    first = two_player_solution(rules, show_progress=False).first_player_win_probability
    assert paranoid.seat_values() == pytest.approx([first, 1 - first], abs=1e-9)


@pytest.mark.parametrize(
    "rules, order",
    [
        pytest.param(SMALL, "jacobi", id="R1-R12 Jacobi"),
        pytest.param(Rules(target=800, entry=300, overshoot="lost"), "blocks", id="V3 blocks"),
    ],
)
def test_two_player_max_n_settles_on_the_solvers_values(rules, order):
    """With 2 players max-n value iteration is the zero-sum game's: it settles, on the
    exact solution (both players' values, which add up to 1)."""
    run = maxn_value_iteration(rules, 2, order=order, max_sweeps=3000)
    assert run.settled
    v = solver_values(rules)
    assert run.values[:, 0] == pytest.approx(v, abs=1e-9)
    assert run.values[:, 1] == pytest.approx(1 - v, abs=1e-9)
    assert len(run.residuals) == len(run.own_residuals) == run.sweeps


@pytest.mark.parametrize(
    "rules, ties",
    [
        pytest.param(Rules(target=1000, entry=500), "first", id="3p first best"),
        pytest.param(Rules(target=1000, entry=500), "average", id="3p average, eps 0"),
        pytest.param(Rules(target=700, entry=300, overshoot="lost"), "first", id="3p V3"),
        pytest.param(Rules(target=700, entry=300, hold="all"), "first", id="3p R5 hold all"),
    ],
)
def test_a_max_n_backup_is_the_single_turn_planners(rules, ties):
    """The backup of a turn start, against random values (no ties: averaging exact ties
    is then the first best), is what the turn planner gives every player when the mover
    plays its plan (``TurnPlan.probabilities``), at the turn's start and at every (turn
    total, dice to roll) of it; 60 turn starts of each game."""
    space = ScoreSpace(rules, 3)
    positions = space.positions()
    values = np.random.default_rng(7).dirichlet(np.ones(3), size=space.size)
    turns = Turns.of(space, np.arange(space.size), positions)
    backup = maxn_backup(values, turns, ties)
    pass_vec, bank_vec, allowed = end_values(values, turns)
    tab = option_tables(rules.hold)
    q = turn_vectors(pass_vec, bank_vec, allowed, tab, turns.top, turns.live, ties)

    def value_fn(p):
        return values[space.index(p)]

    for row in np.random.default_rng(0).choice(len(turns.states), size=60, replace=False):
        plan = plan_turn(tuple(int(s) for s in positions[turns.states[row]]), rules, value_fn)
        np.testing.assert_allclose(backup[row], plan.probabilities[0, NUM_DICE], atol=1e-12)
        np.testing.assert_allclose(q[row, :, 1:], plan.probabilities[:, 1:], atol=1e-12)


def test_near_ties_cost_the_mover_at_most_eps_per_decision():
    """Averaging over the moves within eps of the best (a mover indifferent among
    them) loses the mover at most eps at each decision, and a turn holds at most one
    decision per turn-total level; every player's values still add up to 1."""
    rules = Rules(target=1000, entry=500)
    space = ScoreSpace(rules, 3)
    values = np.random.default_rng(3).dirichlet(np.ones(3), size=space.size)
    turns = Turns.of(space, np.arange(space.size), space.positions())
    best = maxn_backup(values, turns, "first")
    eps = 1e-3
    near = maxn_backup(values, turns, "average", eps)
    assert (near[:, 0] <= best[:, 0] + 1e-12).all()
    assert (near[:, 0] >= best[:, 0] - eps * (turns.top + 1)).all()
    assert near.sum(axis=1) == pytest.approx(1.0, abs=1e-12)
    assert np.abs(near - best).max() > 1e-6  # it does change the play


def responder_turn_value(paranoid, position, r: int) -> float:
    """The Bellman right-hand side of the paranoid value at `position` (mover's order),
    mover r seats after the responder, rebuilt from the engine's banking of every turn
    total (R8, R9) and the single-turn recursion (``solve_turn``)."""
    rules, n = paranoid.rules, paranoid.n_players
    space = paranoid.space
    after = paranoid.values[(r + 1) % n]  # where the next player moves
    responder = (n - r) % n  # the responder's index in the mover's order

    def objective(responder_value: float) -> float:  # what the mover maximizes
        return responder_value if r == 0 else 1.0 - responder_value

    def at(scores) -> float:  # the responder's value where the next player moves
        return float(after[space.index(np.array([in_turn_order(scores, 1)]))[0]])

    top = rules.target // STEP
    size = top + 1 + int(option_tables(rules.hold).steps.max()) + 1
    pass_value = objective(at(position))
    bank = np.full(size, -np.inf)
    for i in range(1, size):
        if not can_bank(int(position[0]), i * STEP, rules):
            continue
        out = bank_outcome(tuple(position), 0, i * STEP, rules)
        if out.winner is not None:
            bank[i] = objective(float(out.winner == responder))
        elif out.lost:
            bank[i] = pass_value
        else:
            bank[i] = objective(at(out.scores))
    w, _ = solve_turn(pass_value, bank, rules.hold, top)
    return objective(float(w[0, NUM_DICE]))  # the objective is its own inverse


@pytest.mark.parametrize(
    "rules",
    [
        pytest.param(TINY, id="R1-R12"),
        pytest.param(Rules(target=700, entry=300, bump=False, overshoot="lost"), id="V2+V3"),
    ],
)
def test_three_player_paranoid_values_satisfy_their_bellman_equations(rules):
    """The responder's value at each of its turn starts is its best turn's, and at each
    other player's the turn worst for the responder, against the values where the turn
    ends (a win is certain: the mover's, or a gift's receiver's, R9)."""
    paranoid = solve_paranoid(rules, 3)
    positions = paranoid.space.positions()
    for r in range(3):
        for p, position in enumerate(positions):
            expected = responder_turn_value(paranoid, position, r)
            assert paranoid.values[r, p] == pytest.approx(expected, abs=1e-9), (r, position)
    assert ((paranoid.values >= 0) & (paranoid.values <= 1)).all()
    assert paranoid.seat_values().sum() < 1  # nobody can guarantee a fair share


def test_no_fixed_bots_hold_a_player_below_its_paranoid_value():
    """The best response to two fixed bots wins at least the paranoid value at every
    state (the bots are one way of playing against the responder; the paranoid value is
    the worst), and more at the start of the game."""
    rules = TINY
    paranoid = solve_paranoid(rules, 3)
    br = solve_best_response([make_policy("smart"), make_policy("turn-ev")], rules)
    for j in range(3):  # table index j: the player j seats after the responder moves
        responder = br.values[j, :, (3 - j) % 3]
        assert (responder >= paranoid.values[j] - 1e-9).all()
    assert (br.seat_values() > paranoid.seat_values()).all()


def test_a_cycle_is_found_with_its_period_and_swing():
    """Iterates that repeat every 3 sweeps have period 3; the largest swing is found
    where it is; iterates that do not move have no cycle."""
    phases = np.array([[0.1, 0.9], [0.2, 0.8], [0.6, 0.4]])
    history = np.zeros((12, 4, 2))
    history[:, 2] = phases[np.arange(12) % 3]
    cycle = detect_cycle(history)
    assert cycle.period == 3
    assert cycle.amplitude == pytest.approx(0.5)
    assert (cycle.swing_state, cycle.swing_player) == (2, 0)
    assert cycle.distances[:3] == pytest.approx([0.4, 0.5, 0.0])
    assert detect_cycle(np.zeros((5, 4, 2))).period is None


def test_the_command_writes_the_page_and_its_plot(tmp_path, capsys):
    """``python -m agents.equilibrium`` writes the page, its command line at the top,
    every variant's row, the paranoid values and the plot beside it; a bad flag costs
    one line and no work."""
    from fivethousand_rl.agents.equilibrium import VARIANTS, main

    out = tmp_path / "eq.md"
    argv = ["--out", str(out), "--targets", "700", "--entry", "300", "--sweeps", "5"]
    assert main(argv) == 0
    text = out.read_text()
    assert text.startswith("# The 3-player equilibrium question")
    assert "`python -m fivethousand_rl.agents.equilibrium " + " ".join(argv) + "`" in text
    assert all(f"| 700 | {v.label} |" in text for v in VARIANTS)
    assert "Flesch, Thuijsman and Vrieze (1997)" in text
    assert "## Paranoid values" in text
    assert out.with_suffix(".png").stat().st_size > 0
    assert main(["--out", str(out), "--players", "2"]) == 2
    assert "--players must be 3 or more" in capsys.readouterr().err
