"""The N-player equilibrium question, as a finding: what max-n value iteration does on
shrunken games of 5000, and what each seat can guarantee (the paranoid values).

    python -m agents.equilibrium --out docs/equilibrium.md [rule flags] [--players 3]
        [--targets 1000,1500,2000] [--sweeps 600] [--sweeps-large 250]

runs, for each target (the first is the main game), max-n value iteration
(``fivethousand_rl.envs.multiplayer_values``) under several variants: plain sweeps of every position
(Jacobi), damping, a running mean, blocks of the highest score from the top
(Gauss-Seidel), and averaging over near ties; the main game gets them all, the larger
ones plain sweeps (while they cost well under a second) and blocks. It says what each
did: settled to 1e-12, or cycled (an exact repeat, the period, how far the values
swing and where); which of the movers' choices change along the main game's cycle;
the paranoid values of every seat at the start, with the 2-player ones beside the
exact solver's as a check. It writes a Markdown page (`--out`, the command line at its
top) and a plot of the residuals beside it (same name, .png). Rule flags other than
--target are the usual ones (``fivethousand_rl.agents.rule_flags``); with 3 players and the seeds'
other rules the main game is the one the issue's trial used (target 1000, entry 500,
hold free).

Nothing here claims an equilibrium unless an iteration settles and the best response
to the settled play (`fivethousand_rl.envs.best_response`) gains nothing against it.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fivethousand_rl.agents.base import atomic_write, check_output_path, duration
from fivethousand_rl.agents.optimal import two_player_solution
from fivethousand_rl.agents.planner import PlannerBot
from fivethousand_rl.agents.rule_flags import add_rule_flags, describe_rules, rules_from_args
from fivethousand_rl.envs.best_response import ScoreSpace, solve_best_response
from fivethousand_rl.envs.multiplayer_values import (
    MaxnRun,
    ParanoidValues,
    Turns,
    end_values,
    maxn_choices,
    maxn_value_iteration,
    solve_paranoid,
    turn_vectors,
)
from fivethousand_rl.envs.rules import Rules
from fivethousand_rl.envs.solver import STEP, option_tables

PROG = "python -m fivethousand_rl.agents.equilibrium"
TOL = 1e-12
# The trial watched the mover's own value at these scores (mover's order).
PROBE = (600, 500, 700)
# Plain sweeps of the whole space are run on the larger games while a sweep is cheap:
# up to this many positions (target 1500 with 3 players: 1,331; target 2000: 4,096, over
# a second a sweep on one core).
JACOBI_LIMIT = 2000
REFERENCE = (
    "Flesch, Thuijsman and Vrieze (1997), *Cyclic Markov equilibria in stochastic games*, "
    "International Journal of Game Theory 26(3): 303-314"
)


@dataclass(frozen=True)
class Variant:
    """One way of running max-n value iteration: ``maxn_value_iteration`` keywords."""

    label: str
    options: dict = field(default_factory=dict)
    main_only: bool = True  # run on the main game only (else on every size)

    @property
    def blocks(self) -> bool:
        return self.options.get("order") == "blocks"

    @property
    def averaging(self) -> bool:
        return bool(self.options.get("averaging"))


VARIANTS = (
    Variant("plain sweeps (Jacobi)", {}, main_only=False),
    Variant("damped, alpha 0.5", {"alpha": 0.5}),
    Variant("running mean, alpha 1/t", {"averaging": True}),
    Variant("blocks from the top (Gauss-Seidel)", {"order": "blocks"}, main_only=False),
    Variant("blocks, damped 0.5", {"order": "blocks", "alpha": 0.5}),
    Variant("near ties averaged, eps 1e-9", {"ties": "average", "eps": 1e-9}),
    Variant("near ties averaged, eps 1e-4", {"ties": "average", "eps": 1e-4}),
)


@dataclass
class Experiment:
    target: int
    variant: Variant
    run: MaxnRun
    seconds: float


@dataclass
class Paranoid:
    target: int
    values: ParanoidValues
    seconds: float
    solver: float | None = None  # with 2 players: the exact solver's first-player value


@dataclass
class Findings:
    rules: Rules  # the main game's
    players: int
    experiments: list[Experiment]
    paranoid: list[Paranoid]
    anatomy: list[str]  # lines on the main game's cycle
    check_2p: list[str]  # lines on max-n with 2 players


def game_rules(base: Rules, target: int) -> Rules:
    """`base` with the target `target` (the entry kept unless past the target)."""
    return dataclasses.replace(base, target=target, entry=min(base.entry, target))


def run_experiments(
    base: Rules, targets: list[int], players: int, sweeps: int, sweeps_large: int, log
) -> list[Experiment]:
    out = []
    for rank, target in enumerate(targets):
        rules = game_rules(base, target)
        space = ScoreSpace(rules, players)
        probe = probe_index(space)
        trace = np.array([probe]) if probe is not None else None
        for variant in VARIANTS:  # the larger games: fewer variants, whole sweeps if small
            if rank and (variant.main_only or (not variant.blocks and space.size > JACOBI_LIMIT)):
                continue
            start = time.perf_counter()
            limit = sweeps if rank == 0 else sweeps_large
            run = maxn_value_iteration(
                rules, players, max_sweeps=limit, tol=TOL, trace=trace, **variant.options
            )
            seconds = time.perf_counter() - start
            out.append(Experiment(target, variant, run, seconds))
            log(
                f"target {target}, {variant.label}: {run.sweeps} sweeps, "
                f"{'settled' if run.settled else 'not settled'} ({duration(seconds)})"
            )
    return out


def run_paranoid(base: Rules, targets: list[int], players: int, log) -> list[Paranoid]:
    out = []
    for target in targets:
        rules = game_rules(base, target)
        for n in sorted({2, players}):
            start = time.perf_counter()
            values = solve_paranoid(rules, n, tol=TOL)
            seconds = time.perf_counter() - start
            solver = None
            if n == 2:
                solver = two_player_solution(rules, show_progress=False)
                solver = solver.first_player_win_probability
            out.append(Paranoid(target, values, seconds, solver))
            log(f"target {target}, {n} players: paranoid values ({duration(seconds)})")
    return out


def probe_index(space: ScoreSpace) -> int | None:
    """The issue's probe position, if it is one of this game's."""
    if space.n_players != len(PROBE):
        return None
    try:
        return int(space.index(np.array([PROBE]))[0])
    except ValueError:
        return None


# ----------------------------------------------------------------- the cycle
def cycle_anatomy(exp: Experiment, limit: int = 8) -> list[str]:
    """Markdown lines on which choices of the movers change along the last cycle of
    `exp` (a plain max-n run that did not settle): the decisions (turn start, turn
    total, roll) whose choice differs between the cycle's iterates, counting only
    those between moves that some player values differently."""
    run = exp.run
    block = next((b for b in run.blocks if not b.settled), None)
    if block is None or block.cycle is None:
        return []
    period = block.repeat or block.cycle.period
    if period is None:
        return []
    rules, space = run.rules, run.space
    positions = space.positions()
    turns = Turns.of(space, block.states, positions)
    tab = option_tables(rules.hold)
    values = run.values.copy()
    choices = []
    for iterate in block.history[-period:]:
        values[block.states] = iterate
        choices.append(maxn_choices(values, turns))
    choices = np.array(choices)  # (period, levels, classes, states)
    changes = (choices != choices[0]).any(axis=0)
    level, klass, row = np.nonzero(changes)
    # The moves' values (every player's) at the last iterate, to drop changes between
    # moves that nobody tells apart (e.g. two totals that both overshoot and pass).
    pass_vec, bank_vec, allowed = end_values(run.values, turns)
    q = turn_vectors(pass_vec, bank_vec, allowed, tab, turns.top, turns.live)
    q = q.reshape(len(turns.states), -1, run.n_players)
    leads = choices[:, level, klass, row]  # (period, decisions)
    vectors = q[row[None, :], leads]  # (period, decisions, N)
    real = (np.abs(vectors - vectors[0]).max(axis=(0, 2))) > 1e-9
    level, klass, row, leads = level[real], klass[real], row[real], leads[:, real]
    if not len(row):
        return []
    states = np.unique(row)
    orbit = block.orbit()
    swings = orbit.max(axis=0) - orbit.min(axis=0)
    lines = [
        f"Along the last cycle of plain sweeps on the target-{exp.target} game (period "
        f"{period}), **{len(row)} decisions** at **{len(states)} turn starts** change between "
        "moves that some player values differently (a decision: a turn start, the turn total "
        "before a roll and the roll's chance class; the play there alternates between the "
        "moves listed). The turn starts with the most such decisions (scores in turn order "
        "from the mover; the swing of the mover's own value over the cycle):",
        "",
        "| turn start | decisions that change | mover's value swings by |",
        "|---|---:|---:|",
    ]
    counts = np.bincount(row, minlength=len(turns.states))
    for r in np.argsort(-counts, kind="stable")[: min(limit, len(states))]:
        pos = tuple(int(x) for x in positions[turns.states[r]])
        lines.append(f"| {pos} | {counts[r]} | {swings[r, 0]:.2e} |")
    first = np.flatnonzero(level == 0)  # the turn's first roll: reached for sure
    if first.size:
        by_chance = first[np.argsort(-tab.class_prob[klass[first]], kind="stable")][:limit]
        lines += [
            "",
            "Examples at the turn's first roll (five dice, reached every turn), the likeliest "
            "rolls first:",
            "",
        ]
        for d in by_chance:
            pos = tuple(int(x) for x in positions[turns.states[row[d]]])
            moves = " / ".join(_move(int(x)) for x in dict.fromkeys(leads[:, d].tolist()))
            lines.append(f"- {pos}, a first roll of chance {tab.class_prob[klass[d]]:.2%}: {moves}")
    return lines


def _move(lead: int) -> str:
    """A choice (``maxn_choices``' row j*6 + k) in words."""
    total, dice = lead // 6 * STEP, lead % 6
    if dice == 0:
        return f"hold to {total} and bank"
    return f"hold to {total}, roll {dice} {'die' if dice == 1 else 'dice'}"


# ------------------------------------------------------------- two players
def two_player_check(base: Rules, target: int) -> list[str]:
    """Max-n with 2 players on the main game, beside the exact solver, and the best
    response to its play (the verification that 3 players never reach)."""
    rules = game_rules(base, target)
    start = time.perf_counter()
    run = maxn_value_iteration(rules, 2, tol=TOL, max_sweeps=5000)
    seconds = time.perf_counter() - start
    sol = two_player_solution(rules, show_progress=False)
    positions = ScoreSpace(rules, 2).positions()
    ia, ib = (np.searchsorted(sol.scores, positions[:, c]) for c in (0, 1))
    diff = float(np.abs(run.values[:, 0] - sol.V[ia, ib]).max())
    gap = verify_equilibrium(run) if run.settled else None
    lines = [
        f"With 2 players on the target-{target} game, plain max-n sweeps "
        + (f"settle in {run.sweeps} sweeps" if run.settled else "do not settle")
        + f" ({duration(seconds)}), on the exact solver's values to {diff:.1e}"
    ]
    if gap is not None:
        lines[0] += (
            f"; the best response to the settled play (a planner on the settled values, "
            f"`fivethousand_rl.envs.best_response`) gains {gap:.1e} over it at any turn start: an "
            "equilibrium, verified."
        )
    else:
        lines[0] += "."
    return lines


def verify_equilibrium(run: MaxnRun) -> float:
    """How much more than its settled value any player can win, at any turn start,
    against the others playing the settled values' play (a ``PlannerBot`` on them):
    the largest gain of the exact best response (0 for an equilibrium)."""
    space, values = run.space, run.values

    def value_fn(positions: np.ndarray) -> np.ndarray:
        return values[space.index(positions)]

    n = run.n_players
    bots = [PlannerBot(value_fn, players=(n,), rules=run.rules, name="max-n") for _ in range(n - 1)]
    br = solve_best_response(bots, run.rules)
    return float((br.values[0, :, 0] - values[:, 0]).max())


# ------------------------------------------------------------------ report
def report(findings: Findings, command: str, seconds: float, plot: str | None) -> str:
    rules, n = findings.rules, findings.players
    exps = findings.experiments
    main = exps[0].target if exps else rules.target
    space = ScoreSpace(rules, n)
    lines = [
        f"# The {n}-player equilibrium question",
        "",
        f"Generated by `{command}` in {duration(seconds)} (one process). Rules of the main "
        f"game: {describe_rules(rules)} (RULES.md R1-R12, V1-V5); the larger games change "
        "only the target.",
        "",
        "With 2 players, 5000 is a zero-sum game and `fivethousand_rl.envs.solver` solves it "
        "exactly: each "
        "player maximizing its own chance of winning is the same as minimizing the other's. "
        f"With {n} players that is no longer so, and the natural generalization, *max-n* "
        "(each player, at its turn, maximizes its own win probability against the values of "
        "where the turn ends), need not have a fixed point: a stochastic game of 3 players "
        "need not have a stationary equilibrium at all (" + REFERENCE + ", give a 3-player "
        "game with no stationary equilibrium, not even an approximate one; its equilibria "
        "are cyclic). This page reports what max-n value iteration "
        "does on shrunken games, and the values that *can* be computed exactly: each seat's "
        "*paranoid* value, what it wins against the others all minimizing its chance (a "
        "zero-sum game, so value iteration converges), which is what that seat can guarantee "
        "whatever the others do.",
        "",
        "## Findings",
        "",
        *_summary(findings, main),
        "",
        "## Max-n value iteration",
        "",
        "A state is a turn start: the banked scores in turn order from the player to move "
        f"(every player alike; {space.size:,} positions on the target-{main} game). One sweep "
        "backs up every state: the mover's best turn against the current values (the exact "
        "recursion over rolls and holds, R4-R9), and every player's value under that turn. "
        "All values start at 1/N. Variants: *plain sweeps* (Jacobi: every state from the "
        "same iterate); *damped* (V <- (1 - alpha) V + alpha backup); *running mean* (alpha "
        "= 1/t at sweep t, as fictitious play averages); *blocks* (Gauss-Seidel: the states "
        "of equal highest score, from the top, each block swept to 1e-12 before the next: "
        "the highest score never drops, so a block's turns only lead into itself and the "
        "blocks above; a block that does not settle keeps its last iterate); *near ties "
        "averaged* (the mover picks each move worth within eps of its best with equal "
        "chances, instead of the first best: how it breaks ties moves the others' values, "
        "not its own). A run stops when the largest change |backup - V| is below 1e-12 "
        "(settled), when an iterate comes back bit for bit (the sweep is a fixed map, so the "
        "run would repeat that cycle for ever), or after the sweep limit (per block for "
        "blocks).",
        "",
        "Columns: *residual*, the largest |backup - V| over states and players at the last "
        "sweep, and the mover's own part of it; *exact repeat*: the period after which an "
        "iterate came back bit for bit; *period*: that period, or else the smallest k with "
        "the last iterate within 1% of the largest swing of the one k sweeps before; *swing*: "
        "the largest range (max - min) of any value over the last period (without one, over "
        "the last half of the last 200 sweeps), where, and whose value (the mover is player "
        "1); then the swing of the "
        f"mover's own value at {PROBE}, the scores the issue's trial watched, and the first "
        "mover's value at the start (0, ..., 0), ± half its swing (for blocks, the block "
        "of the start against the blocks above as they were left). For blocks, the residual "
        "and the swing are those of the first block that did not settle.",
        "",
        "| target | variant | sweeps | time | settled | residual (own) | exact repeat | period "
        f"| swing, where | mover at {PROBE} swings | first mover at start |",
        "|---:|---|---:|---:|---|---:|---:|---:|---|---:|---:|",
    ]
    for e in exps:
        lines.append(_row(e))
    if blocked := [e for e in exps if e.variant.blocks]:
        lines += [
            "",
            "By block (highest score of the block: sweeps, and how it ended: settled, "
            "or the exact repeat's period / the period within 1%, and the largest swing). A "
            "block below one that cycles is swept against that block's last iterate, so "
            "whether it settles says only what it does given those values:",
            "",
        ]
        for e in blocked:
            parts = [_block_cell(b) for b in e.run.blocks]
            lines.append(f"- target {e.target}, {e.variant.label}: " + "; ".join(parts))
    if plot:
        lines += ["", f"![residuals per sweep]({plot})"]
    if findings.anatomy:
        lines += ["", "### What changes along the cycle", "", *findings.anatomy]
    lines += ["", "## Paranoid values", ""]
    lines += [
        "The responder maximizes its win probability, every other player minimizes it: a "
        "zero-sum game of the responder against a coalition, solved by value iteration by "
        "blocks of the highest score (a sweep backs up a whole round of the table) to "
        "1e-12. One solve gives every seat (all players are alike). Seat s moves after s "
        "others at the start (0, ..., 0). With 2 players the paranoid value is the exact "
        "solver's (`fivethousand_rl.envs.solver`), as a check.",
        "",
        "| target | players | positions | "
        + " | ".join(f"seat {s + 1}" for s in range(max(n, 2)))
        + " | sum | exact 2-player solver, seat 1 | sweeps | time |",
        "|---:|---:|---:|" + "---:|" * max(n, 2) + "---:|---:|---:|---:|",
    ]
    for p in findings.paranoid:
        seats = p.values.seat_values()
        cells = [f"{v:.6f}" for v in seats] + [""] * (max(n, 2) - len(seats))
        solver = f"{p.solver:.6f}" if p.solver is not None else ""
        lines.append(
            f"| {p.target} | {p.values.n_players} | {p.values.space.size:,} | "
            + " | ".join(cells)
            + f" | {seats.sum():.6f} | {solver} | {p.values.sweeps} | {duration(p.seconds)} |"
        )
    lines += [
        "",
        "## What was not done",
        "",
        "- No equilibrium is claimed for "
        f"{n} players: none of the runs settled, so there was no settled play to check with "
        "the best response (the check is in the code, `verify_equilibrium`, and passes with "
        "2 players). A cycle of value iteration does not prove that no stationary "
        "equilibrium exists (a mixed one, where a mover randomizes at exactly the decisions "
        "that flip, is not excluded); the shrunken games' cycles are what was found."
        if not any(e.run.settled for e in exps)
        else "- A settled run is a candidate equilibrium only where its check above says so.",
        "- The full game (target 5000: 97,336 positions with 3 players) was not run: one "
        "max-n sweep of it takes over a minute on one core (the turn recursion of every "
        "position, with every player's values), and the cycles above need tens to hundreds "
        "of sweeps per block. Its paranoid values were not computed either: a round of "
        "backups over all its blocks also takes over a minute, and each block needs tens of "
        "rounds (value iteration; a policy-iteration step as in the 2-player solver would "
        "cut that).",
    ]
    return "\n".join(lines) + "\n"


def _summary(findings: Findings, main: int) -> list[str]:
    exps, n = findings.experiments, findings.players
    out = []
    if settled := [e for e in exps if e.run.settled]:
        out.append(
            "- Settled (to 1e-12): "
            + ", ".join(f"{e.variant.label} on target {e.target}" for e in settled)
            + "."
        )
    unsettled = sorted({e.target for e in exps if not e.run.settled})
    if unsettled and not settled:
        out.append(
            f"- **No variant settled** with {n} players, on any game tried (targets "
            + ", ".join(map(str, unsettled))
            + "): max-n value iteration cycles."
        )
    for e in exps:
        if e.variant.label.startswith("plain") and not e.run.settled:
            c = e.run.blocks[0].cycle
            rep = e.run.blocks[0].repeat
            pos = tuple(int(x) for x in e.run.space.positions()[c.swing_state])
            how = (
                f"an exact cycle of period {rep} (an iterate came back bit for bit at sweep "
                f"{e.run.sweeps})"
                if rep
                else f"a cycle of period about {c.period}"
                if c.period
                else "no repeat within the window"
            )
            out.append(
                f"- Plain sweeps, target {e.target}: {how}; the largest swing is "
                f"{c.amplitude:.4f}, player {c.swing_player + 1}'s value at {pos}."
            )
    for e in exps:
        if e.variant.blocks and e.variant.options.get("alpha", 1.0) == 1.0:
            done = [b for b in e.run.blocks if b.settled]
            first = next((b for b in e.run.blocks if not b.settled), None)
            if first is None:
                continue
            above = [b.score for b in e.run.blocks if b.score > first.score]
            cyc = first.cycle
            how = (
                f"an exact cycle of period {first.repeat}"
                if first.repeat
                else f"a period of about {cyc.period}"
            )
            out.append(
                f"- Blocks, target {e.target}: the blocks of highest score "
                + (", ".join(map(str, above)) + " settle; " if above else "")
                + f"the block of highest score {first.score} ({len(first.states)} positions) "
                f"does not, on its own (every block above it settled): {how}, swing "
                f"{cyc.amplitude:.4f}. {len(done)} of {len(e.run.blocks)} blocks settle "
                "(those below a cycling block only against its last iterate)."
            )
    others = [e for e in exps if e.target == main and not e.variant.label.startswith("plain")]
    if others := [e for e in others if not e.variant.blocks]:
        parts = []
        for e in others:
            b = e.run.blocks[0]
            state = (
                "settles"
                if b.settled
                else "still moving (by 1/t of the residual)"
                if e.variant.averaging
                else f"exact cycle of period {b.repeat}"
                if b.repeat
                else f"period about {b.cycle.period}"
                if b.cycle.period
                else "no repeat in the window"
            )
            if not b.settled:
                state += f", swing {b.cycle.amplitude:.4f}, residual {b.residual:.1e}"
            parts.append(f"{e.variant.label}: {state}")
        out.append(f"- Other variants on target {main}: " + "; ".join(parts) + ".")
    para = [p for p in findings.paranoid if p.values.n_players == n and n > 2]
    for p in para:
        seats = p.values.seat_values()
        out.append(
            f"- Paranoid values, target {p.target}: seats 1-{n} can guarantee "
            + ", ".join(f"{v:.4f}" for v in seats)
            + f" (sum {seats.sum():.4f}: a chance of {1 - seats.sum():.4f} is guaranteed to "
            "nobody)."
        )
    if checks := [p for p in findings.paranoid if p.values.n_players == 2]:
        worst = max(abs(p.values.seat_values()[0] - p.solver) for p in checks)
        out.append(
            f"- Check: with 2 players the paranoid values are the exact solver's (largest "
            f"difference at the start {worst:.1e}, targets "
            + ", ".join(str(p.target) for p in checks)
            + ")."
        )
    out += [f"- {line}" for line in findings.check_2p]
    return out


def _row(e: Experiment) -> str:
    run = e.run
    space = run.space
    block = next((b for b in run.blocks if not b.settled), run.blocks[-1])
    swings = run.swings()
    start = int(space.index(np.zeros((1, space.n_players), dtype=np.int64))[0])
    probe = probe_index(space)
    if run.settled:
        where = repeat = period = ""
    else:
        c = block.cycle
        pos = tuple(int(x) for x in space.positions()[c.swing_state])
        where = f"{c.amplitude:.4f} at {pos}, player {c.swing_player + 1}"
        repeat = str(block.repeat) if block.repeat else "none"
        period = str(c.period) if c.period else "none"
        if e.variant.averaging:  # it moves by 1/t of the residual: no period to speak of
            period = "n/a"
        if e.variant.blocks:
            where = f"block {block.score}: {where}"
    probe_swing = f"{swings[probe, 0]:.2e}" if probe is not None else ""
    first = f"{run.values[start, 0]:.4f} ± {swings[start, 0] / 2:.1e}"
    return (
        f"| {e.target} | {e.variant.label} | {run.sweeps} | {duration(e.seconds)} | "
        f"{'yes' if run.settled else 'no'} | {block.residual:.1e} "
        f"({block.own_residual:.1e}) | {repeat} | {period} | {where} | {probe_swing} | "
        f"{first} |"
    )


def _block_cell(b) -> str:
    if b.settled:
        return f"{b.score}: {b.sweeps}, settled"
    how = f"repeat {b.repeat}" if b.repeat else f"period {b.cycle.period or 'none'}"
    return f"{b.score}: {b.sweeps}, **{how}**, swing {b.cycle.amplitude:.3f}"


def plot_residuals(experiments: list[Experiment], path: Path) -> None:
    """The residual of every sweep, per run (log scale): the main game's variants, then
    the larger games; last, the mover's value at the issue's probe position, sweep by
    sweep, in the main game's runs over the whole space (not by blocks)."""
    from fivethousand_rl.agents.base import figure  # saved without a display

    main = experiments[0].target
    with figure(path, ncols=3, figsize=(18, 5)) as (_, axes):
        for e in experiments:
            ax = axes[0] if e.target == main else axes[1]
            label = e.variant.label if e.target == main else f"target {e.target}, {e.variant.label}"
            ax.semilogy(np.maximum(e.run.residuals, 1e-16), lw=0.8, label=label)
            if e.target == main and not e.variant.blocks and e.run.trace and len(e.run.trace[0]):
                axes[2].plot([v[0, 0] for v in e.run.trace], lw=0.8, label=e.variant.label)
        titles = (f"target {main}", "larger games (blocks: one block after another)")
        for ax, title in zip(axes[:2], titles, strict=True):
            ax.set_title(f"max-n residual per sweep, {title}")
            ax.set_xlabel("sweep")
            ax.set_ylabel("max |backup - V|")
            ax.axhline(TOL, color="grey", lw=0.5, ls=":")
        axes[2].set_title(f"the mover's own value at {PROBE}, target {main}")
        axes[2].set_xlabel("sweep")
        for ax in axes:
            if ax.lines and any(not line.get_label().startswith("_") for line in ax.lines):
                ax.legend(fontsize=7)


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="docs/equilibrium.md", help="the report (.md)")
    parser.add_argument("--players", type=int, default=3, help="players (3 or more)")
    parser.add_argument(
        "--targets",
        default="1000,1500,2000",
        help="targets of the shrunken games, the main one first (default: 1000,1500,2000)",
    )
    parser.add_argument(
        "--sweeps", type=int, default=600, help="sweep limit on the main game (per block)"
    )
    parser.add_argument(
        "--sweeps-large", type=int, default=250, help="sweep limit on the larger games"
    )
    add_rule_flags(parser, skip=("target",))
    args = parser.parse_args(argv)
    try:
        if not (targets := [int(t) for t in args.targets.split(",") if t.strip()]):
            raise ValueError("--targets needs at least one target")
        if args.players < 3:
            raise ValueError(f"--players must be 3 or more, got {args.players}")
        if args.sweeps < 1 or args.sweeps_large < 1:
            raise ValueError("--sweeps and --sweeps-large must be >= 1")
        base = rules_from_args(args)
        for t in targets:
            game_rules(base, t)  # a bad target fails here, before any work
        out = Path(args.out)
        if out.suffix != ".md":
            raise ValueError(f"--out must name a .md file, got {args.out}")
        check_output_path(out, "--out")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    log = functools.partial(print, file=sys.stderr, flush=True)
    start = time.perf_counter()
    experiments = run_experiments(base, targets, args.players, args.sweeps, args.sweeps_large, log)
    paranoid = run_paranoid(base, targets, args.players, log)
    plain = next(e for e in experiments if e.target == targets[0])
    anatomy = [] if plain.run.settled else cycle_anatomy(plain)
    check = two_player_check(base, targets[0])
    findings = Findings(
        game_rules(base, targets[0]), args.players, experiments, paranoid, anatomy, check
    )
    plot = out.with_suffix(".png")
    plot_residuals(experiments, plot)
    command = " ".join([prog, *(argv if argv is not None else sys.argv[1:])])
    text = report(findings, command, time.perf_counter() - start, plot.name)
    atomic_write(out, text)
    print(f"wrote {out} and {plot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
