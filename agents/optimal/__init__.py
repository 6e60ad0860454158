"""The exactly optimal player, its on-disk cache, and the numbers and picture it gives.

    python -m fivethousand_rl.agents.optimal [rule flags] [--json] [--plot PATH.png]

prints the first player's probability of winning a 2-player game when both play
optimally, and the best expected points of one turn for a player who has entered,
under the rules the flags name (``fivethousand_rl.agents.rule_flags``; the seeds' rules
by default). Every variant is solved exactly and cached under its own file.

With 2 players ``OptimalBot`` maximizes its probability of winning, exactly (see
``fivethousand_rl.envs.solver``). With 3 or more players no exact solution is computed; the bot then
plays the 2-player optimal policy against the *leader*, the opponent with the highest
banked score, as if that were the only opponent. The engine still applies every rule
to every player (bumps, gifts to the lowest qualified player); the approximation only
concerns how the bot values them.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from contextvars import ContextVar
from pathlib import Path

import numpy as np

from fivethousand_rl.agents.base import atomic_write, check_plot_path
from fivethousand_rl.agents.cache import LRU, MAX_IN_MEMORY, MB, bound_disk, remember, touch
from fivethousand_rl.agents.rule_flags import DEFAULTS, add_rule_flags, rules_from_args
from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import NUM_DICE, Rules
from fivethousand_rl.envs.solver import STEP, TwoPlayerSolution, solve_two_player, turn_ev_table

SOLVER_VERSION = 1
CACHE_ENV = "FIVETHOUSAND_CACHE"


def cache_dir() -> Path:
    """Where solutions are cached: $FIVETHOUSAND_CACHE, else ~/.cache/fivethousand-rl."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "fivethousand-rl")


def _cache_path(rules: Rules) -> Path:
    key = json.dumps({"rules": rules.to_dict(), "version": SOLVER_VERSION}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / f"optimal-2p-{rules.hold}-{rules.target}-{rules.entry}-{digest}.npz"


def _checksum(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _load(path: Path, rules: Rules) -> TwoPlayerSolution | None:
    """The cached solution at `path`, or None if it is missing, stale or corrupt."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            scores, V, W = data["scores"], data["V"], data["W"]
        n = len(scores)
        ok = (
            meta.get("rules") == rules.to_dict()
            and meta.get("version") == SOLVER_VERSION
            and V.shape == (n, n)
            and W.shape == (n, n, rules.target // STEP + 1, NUM_DICE + 1)
            and meta.get("checksum") == _checksum(scores, V, W)
        )
    except FileNotFoundError:
        return None
    except Exception:  # unreadable, truncated, not an npz: rebuild
        ok = False
    if not ok:
        print(f"cache {path} is corrupt or stale; solving again", file=sys.stderr)
        return None
    return TwoPlayerSolution(rules=rules, scores=scores, V=V, W=W)


def _save(path: Path, sol: TwoPlayerSolution) -> None:
    meta = {"rules": sol.rules.to_dict(), "version": SOLVER_VERSION}
    meta["checksum"] = _checksum(sol.scores, sol.V, sol.W)
    arrays = {"meta": json.dumps(meta), "scores": sol.scores, "V": sol.V, "W": sol.W}
    atomic_write(path, lambda aside: np.savez(aside, **arrays))


# The solutions kept in memory, the most recently used last (``fivethousand_rl.agents.cache``). A
# full-size solution takes about 50 MB, and a server offering house rules must not keep
# every variant it is asked for: past this many (or bytes), the least recently used is
# dropped (the disk cache still has it).
MAX_SOLUTION_BYTES = 400 * MB
_MEMORY = LRU(MAX_IN_MEMORY, MAX_SOLUTION_BYTES)


# ------------------------------------------------------------------ the solve gate
# Every solve of this process passes through ``two_player_solution``, so the bounds on
# solving sit there, whoever asks (a hint, a table's bot, any later feature): one solve
# of a rule set at a time (a second caller waits for it, then finds it solved), and,
# where a server admits solves (``solves_admitted_by``), only within its slot.
SolveSlot = Callable[[], AbstractContextManager[object]]
_admission: ContextVar[SolveSlot | None] = ContextVar("solve_admission", default=None)
_turns_guard = threading.Lock()
_turns: dict[Rules, list] = {}  # rules being solved or awaited: [their lock, callers]


@contextlib.contextmanager
def solves_admitted_by(slot: SolveSlot) -> Iterator[None]:
    """Within this block (this thread or task, and the worker threads it hands work to
    with its context), every solve first enters ``slot()``, which may refuse at once by
    raising; a solution in memory or on disk needs no slot."""
    token = _admission.set(slot)
    try:
        yield
    finally:
        _admission.reset(token)


@contextlib.contextmanager
def _solve_turn(rules: Rules) -> Iterator[None]:
    """The admission's slot (if any: first, so that a waiter holds one too and waiters
    stay bounded), then the turn of `rules`: one solve of them at a time."""
    slot = _admission.get()
    with slot() if slot is not None else contextlib.nullcontext():
        with _turns_guard:
            turn = _turns.setdefault(rules, [threading.Lock(), 0])
            turn[1] += 1
        try:
            with turn[0]:
                yield
        finally:
            with _turns_guard:
                turn[1] -= 1
                if not turn[1]:
                    del _turns[rules]


def _known_solution(rules: Rules) -> TwoPlayerSolution | None:
    """The solution of `rules` from memory or from the disk cache, else None."""
    if (kept := _MEMORY.get(rules)) is not None:
        return kept
    path = _cache_path(rules)
    sol = _load(path, rules)
    if sol is not None:
        touch(path)
    return sol


def two_player_solution(
    rules: Rules | None = None, show_progress: bool = True
) -> TwoPlayerSolution:
    """The exact 2-player solution for `rules`: from memory, from the disk cache, or
    solved now (with a progress bar, through the solve gate: ``solves_admitted_by``)
    and cached."""
    rules = rules or Rules()
    sol = _known_solution(rules)
    if sol is None:
        with _solve_turn(rules):
            sol = _known_solution(rules)  # solved while this caller waited its turn
            if sol is None:
                sol = _solve_with_progress(rules, show_progress)
                remember(_MEMORY, rules, sol)  # before the turn ends: the next finds it
                path = _cache_path(rules)
                try:
                    _save(path, sol)
                except OSError as e:  # a read-only home still gets a working bot
                    print(f"could not cache the solution at {path}: {e}", file=sys.stderr)
                else:
                    bound_disk(path.parent, keep=path)
    remember(_MEMORY, rules, sol)
    return sol


def solution_known(rules: Rules | None = None) -> bool:
    """Whether ``two_player_solution(rules)`` needs no solve: the solution is in memory
    or in the disk cache (a server restricting what it solves asks this first)."""
    rules = rules or Rules()
    return rules in _MEMORY or _cache_path(rules).is_file()


def _solve_with_progress(rules: Rules, show: bool) -> TwoPlayerSolution:
    if not show:
        return solve_two_player(rules)
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task(f"solving 2-player 5000 ({rules_line(rules)})", total=1)
        return solve_two_player(
            rules, progress=lambda done, total: bar.update(task, completed=done, total=total)
        )


class OptimalBot(Policy):
    """Maximizes the probability of winning (exact for 2 players; for more, plays the
    2-player optimum against the leading opponent, see the module docstring). The
    solution for a game's rules is loaded (or solved) the first time it is needed."""

    name = "optimal"

    def __init__(self, show_progress: bool = True) -> None:
        self.show_progress = show_progress

    def solution(self, rules: Rules) -> TwoPlayerSolution:
        return two_player_solution(rules, self.show_progress)

    def prepare(self, rules: Rules) -> None:
        self.solution(rules)  # solve (or load the cache) once, before any worker starts

    @staticmethod
    def turn_view(starts: np.ndarray, rules: Rules) -> np.ndarray:
        """What its choices read of the scores (mover's order): its own and the leading
        opponent's (``fivethousand_rl.envs.turn_outcomes.view_keys``)."""
        return np.column_stack([starts[:, 0], starts[:, 1:].max(axis=1)])

    def action_values(self, game: Game) -> dict[int, float]:
        """Win probability of every legal action (exact with 2 players)."""
        s = game.state
        sol = self.solution(game.rules)
        own = s.scores[s.current]
        opp = max(score for seat, score in enumerate(s.scores) if seat != s.current)
        return {
            move.action: sol.bank_value(own, opp, move.turn_total)
            if move.banks
            else sol.roll_value(own, opp, move.turn_total, move.dice_left)
            for move in game.moves()
        }

    def act(self, game: Game, rng: np.random.Generator) -> int:
        values = self.action_values(game)
        return max(values, key=values.__getitem__)  # first of equal values: deterministic


# ------------------------------------------------------------------ the picture
def bank_thresholds(sol: TwoPlayerSolution) -> tuple[np.ndarray, np.ndarray]:
    """Where the optimal player stops, for every (own, opponent, dice left k).

    Among the turn totals it may bank without overshooting, ``threshold[ia, ib, k]`` is
    the smallest total from which it banks every allowed total rather than roll k dice
    ("bank from here on"); ``isolated[ia, ib, k]`` is True when it also banks some lower
    totals, where banking is not a simple threshold (typically the total that bumps
    the opponent).
    """
    rules, scores = sol.rules, sol.scores
    n = len(scores)
    thresholds = np.full((n, n, NUM_DICE + 1), np.nan)
    isolated = np.zeros((n, n, NUM_DICE + 1), dtype=bool)
    for ia, a in enumerate(scores):
        totals = list(range(STEP, rules.target - int(a) + 1, STEP))  # R8 is bank_value's
        for ib, b in enumerate(scores):
            bank = np.array([sol.bank_value(int(a), int(b), t) for t in totals])
            allowed = bank > -np.inf
            for k in range(1, NUM_DICE + 1):
                roll = sol.W[ia, ib, np.array(totals) // STEP, k]
                banks = allowed & (bank >= roll)
                # Smallest index from which every allowed total is banked.
                start = len(totals)
                while start > 0 and (banks[start - 1] or not allowed[start - 1]):
                    start -= 1
                if start < len(totals):
                    thresholds[ia, ib, k] = totals[start]
                isolated[ia, ib, k] = bool(banks[:start].any())
    return thresholds, isolated


def plot_strategy(sol: TwoPlayerSolution, path: str) -> None:
    """One panel per number of dice left: the banking threshold over (own, opponent)."""
    from fivethousand_rl.agents.base import figure

    thresholds, isolated = bank_thresholds(sol)
    scores = sol.scores
    scale = {"vmin": 0, "vmax": np.nanmax(thresholds)}  # one colour scale for every panel
    with figure(path, ncols=NUM_DICE, figsize=(4.2 * NUM_DICE, 4.6)) as (fig, axes):
        for k, ax in zip(range(1, NUM_DICE + 1), axes, strict=True):
            grid = thresholds[:, :, k].T  # rows: opponent score, columns: own score
            image = ax.imshow(grid, origin="lower", cmap="viridis", aspect="auto", **scale)
            ys, xs = np.nonzero(isolated[:, :, k].T)
            ax.scatter(xs, ys, marker=".", s=6, c="red", label="also banks a lower total")
            ticks = np.arange(0, len(scores), 5)
            ax.set_xticks(ticks, [str(scores[i]) for i in ticks], rotation=90, fontsize=7)
            ax.set_yticks(ticks, [str(scores[i]) for i in ticks], fontsize=7)
            ax.set_title("hot dice: 5 dice to roll" if k == NUM_DICE else f"{k} dice left to roll")
            ax.set_xlabel("own banked score")
            if k == 1:
                ax.set_ylabel("opponent's banked score")
                ax.legend(loc="upper left", fontsize=7)
        fig.colorbar(image, ax=axes, label="banks every turn total from here up", shrink=0.8)
        fig.suptitle(
            f"Optimal 2-player play, {rules_line(sol.rules)}: the turn total from which it banks "
            "rather than roll (red dot: it also banks some lower total, e.g. to bump)"
        )


def rules_line(rules: Rules) -> str:
    """The rules in one line as the command prints them: ``hold=free``, then each rule
    that differs from the seeds' rules, e.g. ``hold=free target=1000 bump=False``."""
    changed = [f"{k}={v}" for k, v in rules.to_dict().items() if k != "hold" and v != DEFAULTS[k]]
    return " ".join([f"hold={rules.hold}", *changed])


def exact_numbers(rules: Rules, show_progress: bool = False) -> dict:
    """What ``python -m agents.optimal --json`` prints for `rules` (the module's two
    numbers), with the rules when they are not the seeds' (so the seeds' numbers print
    as they always did)."""
    sol = two_player_solution(rules, show_progress=show_progress)
    numbers = {
        "hold": rules.hold,
        "first_player_win_probability": sol.first_player_win_probability,
        "best_expected_turn_points_entered": turn_ev_table(rules).entered_turn_value,
    }
    if rules != Rules(hold=rules.hold):
        numbers["rules"] = rules.to_dict()
    return numbers


def main(
    argv: list[str] | None = None, prog: str = "python -m fivethousand_rl.agents.optimal"
) -> int:
    """The command line of ``python -m agents.optimal`` (run by ``__main__.py``; `prog`:
    the command as typed, for its usage): the exit code."""
    parser = argparse.ArgumentParser(prog=prog, description="Exact values of optimal 5000 play.")
    add_rule_flags(parser)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--plot", metavar="PATH.png", help="draw the optimal banking strategy")
    args = parser.parse_args(argv)
    try:
        rules = rules_from_args(args)
        if args.plot:
            check_plot_path(args.plot)  # before the solve, not after
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    numbers = exact_numbers(rules, show_progress=not args.json)
    if args.json:
        print(json.dumps(numbers, indent=2))
    else:
        win = numbers["first_player_win_probability"]
        points = numbers["best_expected_turn_points_entered"]
        print(rules_line(rules))
        print(f"  first player's win probability, both optimal: {win:.10f}")
        print(f"  best expected points of one turn (entered):   {points:.6f}")
    if args.plot:
        try:
            plot_strategy(two_player_solution(rules), args.plot)
        except Exception as e:  # checked before; the disk may still fill: one line
            print(f"error: could not write {args.plot}: {e}", file=sys.stderr)
            return 1
        if not args.json:
            print(f"  strategy picture written to {args.plot}")
    return 0
