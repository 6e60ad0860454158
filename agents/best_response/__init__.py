"""Exact yardsticks: how exploitable a 2-player policy is, and the most that any player
can win at a table of fixed bots.

    python -m agents.best_response POLICY [rule flags] [--json]
    python -m agents.best_response --players 3 smart turn-ev [--json]

With one POLICY (any bot name, shipped agent or model file), the game is 2 players: it
prints the win probability of the best response to POLICY from each seat, their mean,
and POLICY's *exploitability*, that mean minus one half: what an opponent who knows
POLICY exactly wins beyond a fair share (0 for the optimal player, ``envs.solver``).
With ``--players N`` and N - 1 bots, the bots sit after the responder in turn order
(as evaluations seat a table) and it prints the best response's win probability from
each seat, its seat rotating as evaluations rotate it, and their mean: what no agent
can beat at that table. The computation is ``envs.best_response``; its results are
cached (per bots, their files' contents and the rules) beside the solver's cache.

The policies must be deterministic, as every bot made by name is, except ``random``,
which says how it chooses. ``best-response:BOTS`` (``agents.make_policy``; BOTS is one
bot, or the table's bots separated by commas) plays the best response, computed or
loaded the first time a game's rules ask for it.

The bots are named, and made by the ``make_policy`` the caller passes (the package's
own, ``agents.make_policy``, which makes this bot too: it cannot be imported here).
The command line is ``agents.best_response.cli``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from agents.base import MODEL_SUFFIXES, atomic_write
from agents.optimal import cache_dir, remember
from agents.shipped import SHIPPED, shipped_model
from envs.best_response import BestResponse, ScoreSpace, solve_best_response
from envs.game import Game, check_players
from envs.policy import Policy
from envs.rules import Rules
from envs.turn_outcomes import TurnEnds, live_levels, turn_ends, view_keys

VERSION = 1  # of the cached numbers: a change in how they are computed raises it
PREFIX = "best-response:"


# ------------------------------------------------------------------ identities
def bot_key(spec: str) -> str:
    """What identifies a bot in the cache: its name, or for a model (a shipped agent or
    a file) its file name and the digest of its contents (and of an exported bot's
    metadata), so that a retrained model is never answered with an old result."""
    spec = spec.strip()
    path = shipped_model(spec) if spec in SHIPPED else Path(spec)
    if spec not in SHIPPED and not spec.endswith(MODEL_SUFFIXES):
        return spec
    digest = hashlib.sha256(Path(path).read_bytes())
    metadata = Path(path).with_suffix(".json")
    if Path(path).suffix == ".onnx" and metadata.is_file():
        digest.update(metadata.read_bytes())
    return f"{spec if spec in SHIPPED else Path(path).name}@{digest.hexdigest()[:16]}"


def table_of(spec: str, players: int | None = None) -> tuple[str, ...]:
    """The bots of a table from ``BOTS`` (comma-separated, or one bot repeated to fill
    `players` seats with the responder)."""
    bots = tuple(part.strip() for part in spec.split(",") if part.strip())
    if not bots:
        raise ValueError("a best response needs at least one bot to respond to")
    if players is not None and len(bots) == 1:
        bots = bots * (players - 1)
    if players is not None and len(bots) != players - 1:
        raise ValueError(
            f"{players} players: the responder and {players - 1} bots, got {len(bots)}"
        )
    check_players(len(bots) + 1)
    return bots


# ------------------------------------------------------------------ the cache
_MEMORY: dict[tuple, BestResponse] = {}


def _cache_path(keys: Sequence[str], rules: Rules) -> Path:
    key = json.dumps({"bots": list(keys), "rules": rules.to_dict(), "version": VERSION})
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / f"best-response-{len(keys) + 1}p-{digest}.npz"


def _load(path: Path, keys: Sequence[str], rules: Rules, names: tuple) -> BestResponse | None:
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            values = data["values"]
        n = len(keys) + 1
        ok = (
            meta.get("bots") == list(keys)
            and meta.get("rules") == rules.to_dict()
            and meta.get("version") == VERSION
            and values.shape == (n, ScoreSpace(rules, n).size, n)
            and meta.get("checksum") == hashlib.sha256(values.tobytes()).hexdigest()
        )
    except FileNotFoundError:
        return None
    except Exception:  # unreadable, truncated, not an npz: compute again
        ok = False
    if not ok:
        print(f"cache {path} is corrupt or stale; computing again", file=sys.stderr)
        return None
    return BestResponse(rules, names, values)


def _save(path: Path, keys: Sequence[str], br: BestResponse) -> None:
    meta = {
        "bots": list(keys),
        "rules": br.rules.to_dict(),
        "version": VERSION,
        "checksum": hashlib.sha256(np.ascontiguousarray(br.values).tobytes()).hexdigest(),
    }
    values = np.ascontiguousarray(br.values)
    atomic_write(path, lambda aside: np.savez(aside, meta=json.dumps(meta), values=values))


MakePolicy = Callable[[str], Policy]


def best_response(
    bots: Sequence[str],
    rules: Rules | None,
    make_policy: MakePolicy,
    show_progress: bool = True,
    workers: int = 1,
) -> BestResponse:
    """The exact best response to `bots` (names or model files, after the responder in
    turn order, made by `make_policy`: pass ``agents.make_policy``) under `rules`: from
    memory, from the disk cache, or computed now (with progress bars; the bots' turns in
    `workers` processes) and cached."""
    rules = rules or Rules()
    bots = tuple(b.strip() for b in bots)
    check_players(len(bots) + 1)
    keys = tuple(bot_key(b) for b in bots)
    memory_key = (keys, rules)
    if memory_key in _MEMORY:
        remember(_MEMORY, memory_key, _MEMORY[memory_key])
        return _MEMORY[memory_key]
    path = _cache_path(keys, rules)
    result = _load(path, keys, rules, bots)
    if result is None:
        policies = [make_policy(b) for b in bots]
        for policy in policies:
            if callable(check := getattr(policy, "check_game", None)):
                check(len(bots) + 1, rules)
        result = _compute(policies, bots, rules, show_progress, workers)
        try:
            _save(path, keys, result)
        except OSError as e:  # a read-only home still gets the numbers
            print(f"could not cache the best response at {path}: {e}", file=sys.stderr)
    remember(_MEMORY, memory_key, result)
    return result


def cached_best_response(bots: Sequence[str], rules: Rules) -> BestResponse | None:
    """The best response to `bots` under `rules` if it was computed before (in memory or
    in the disk cache), else None: nothing is computed (at full size a table of 3 takes
    minutes to an hour). A bot that is not a name or a readable model gives None too."""
    try:
        keys = tuple(bot_key(b) for b in bots)
    except OSError:
        return None
    if (keys, rules) in _MEMORY:
        return _MEMORY[(keys, rules)]
    path = _cache_path(keys, rules)
    result = _load(path, keys, rules, tuple(bots)) if path.is_file() else None
    if result is not None:
        remember(_MEMORY, (keys, rules), result)
    return result


def _compute(
    policies: Sequence[Policy], names: tuple, rules: Rules, show: bool, workers: int
) -> BestResponse:
    positions = ScoreSpace(rules, len(policies) + 1).positions()
    with _progress(show) as report:
        ends = [
            parallel_turn_ends(p, positions, rules, workers, report(f"turns of {name}"))
            for p, name in zip(policies, names, strict=True)
        ]
        solved = report("best response")
        result = solve_best_response(
            policies, rules, progress=lambda _stage, done, total: solved(done, total), ends=ends
        )
    return BestResponse(rules, names, result.values)


class _progress:
    """Rich progress bars, one per stage (or nothing): ``report(stage)`` gives the
    stage's ``update(done, total)``."""

    def __init__(self, show: bool) -> None:
        self.show = show

    def __enter__(self) -> Callable[[str], Callable[[int, int], None]]:
        if not self.show:
            return lambda _stage: lambda _done, _total: None
        from rich.progress import Progress

        self.bar = Progress(transient=True)
        self.bar.__enter__()

        def stage(name: str) -> Callable[[int, int], None]:
            task = self.bar.add_task(name, total=None)
            return lambda done, total: self.bar.update(task, completed=done, total=total)

        return stage

    def __exit__(self, *exc) -> None:
        if self.show:
            self.bar.__exit__(*exc)


# ------------------------------------------------------------------ parallel turns
_WORKER: dict = {}


def _init_worker(policy: Policy, rules: Rules) -> None:
    from agents.threads import one_thread_per_process

    one_thread_per_process()
    _WORKER.update(policy=policy, rules=rules)


def _worker_ends(positions: np.ndarray) -> TurnEnds:
    return turn_ends(_WORKER["policy"], positions, _WORKER["rules"])


def parallel_turn_ends(
    policy: Policy,
    positions: np.ndarray,
    rules: Rules,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    chunk: int = 2048,
) -> TurnEnds:
    """``turn_ends`` of `policy` from every position, in `workers` processes (the same
    numbers whatever their number); `progress(done, total)` counts positions. The
    positions a policy plays alike (``envs.turn_outcomes.view_keys``) go to the same
    worker, side by side, so that each of their turns is followed once; the result
    lists them in that order."""
    done = [0]

    def step(k: int) -> None:
        done[0] += k
        if progress:
            progress(done[0], len(positions))

    if workers <= 1:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):  # small products: threads only add waiting (agents.threads)
            return turn_ends(policy, positions, rules, chunk=chunk, progress=step)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    live = live_levels(positions, rules)
    keys = view_keys(policy, positions, rules, live)
    ordered = positions[np.lexsort(keys.T[::-1])]
    parts = [ordered[i : i + chunk] for i in range(0, len(ordered), chunk)]
    results = []
    with ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_init_worker,
        initargs=(policy, rules),
    ) as pool:
        for part in pool.map(_worker_ends, parts):
            results.append(part)
            step(len(part))
    return TurnEnds.concat(results)


# ------------------------------------------------------------------ the numbers
def summary(br: BestResponse) -> dict:
    """What the command prints: the best response's win probability from each seat,
    their mean, and with 2 players the exploitability (the mean minus one half)."""
    seats = br.seat_values()
    out = {
        "bots": list(br.bots),
        "players": br.n_players,
        "seat_values": [float(v) for v in seats],
        "mean": float(seats.mean()),
    }
    if br.n_players == 2:
        out["exploitability"] = float(seats.mean() - 0.5)
    if br.rules != Rules(hold=br.rules.hold) or br.rules.hold != "free":
        out["rules"] = br.rules.to_dict()
    return out


# ------------------------------------------------------------------ the bot
class BestResponseBot(Policy):
    """Plays the exact best response to a table of bots (``bots``, after it in turn
    order): each turn planned exactly (``agents.planner.PlannerBot``) against the best
    response's values, computed or loaded the first time a game's rules ask for them.
    It assumes the table it was made for: with other players it still plays, but its
    values are then those of the wrong game."""

    def __init__(
        self, bots: Sequence[str], make_policy: MakePolicy, show_progress: bool = True
    ) -> None:
        self.bots = tuple(bots)
        self.make_policy = make_policy
        self.show_progress = show_progress
        self.name = PREFIX + ",".join(self.bots)
        self._planners: dict[Rules, Policy] = {}

    def check_game(self, n_players: int, rules: Rules) -> None:
        if n_players != len(self.bots) + 1:
            raise ValueError(
                f"{self.name} responds at a table of {len(self.bots) + 1} players, not {n_players}"
            )

    def prepare(self, rules: Rules) -> None:
        self.planner(rules)  # compute (or load) once, before any worker starts

    def planner(self, rules: Rules):
        """The planner of the best response under `rules`."""
        from agents.planner import PlannerBot

        if rules not in self._planners:
            br = best_response(self.bots, rules, self.make_policy, self.show_progress)
            planner = PlannerBot(
                br.value_fn(), players=(br.n_players,), rules=rules, name=self.name
            )
            remember(self._planners, rules, planner)
        return self._planners[rules]

    def act(self, game: Game, rng: np.random.Generator) -> int:
        return self.planner(game.rules).act(game, rng)

    def act_batch(self, games, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self.planner(games.rules).act_batch(games, idx, rng)

    def action_values(self, game: Game) -> dict[int, float]:
        return self.planner(game.rules).action_values(game)

    def win_probabilities(self, game: Game) -> np.ndarray:
        return self.planner(game.rules).win_probabilities(game)

    def __getstate__(self) -> dict:
        """Pickled without its planners (their values are a local function of the best
        response): the copy computes or loads them again when first asked, the same
        values, so the same decisions."""
        return {**self.__dict__, "_planners": {}}
