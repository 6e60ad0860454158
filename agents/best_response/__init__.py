"""Exact yardsticks: how exploitable a 2-player policy is, and the most that any player
can win at a table of fixed bots.

    python -m fivethousand_rl.agents.best_response POLICY [rule flags] [--json]
    python -m fivethousand_rl.agents.best_response --players 3 smart turn-ev [--json]

With one POLICY (any bot name, shipped agent or model file), the game is 2 players: it
prints the win probability of the best response to POLICY from each seat, their mean,
and POLICY's *exploitability*, that mean minus one half: what an opponent who knows
POLICY exactly wins beyond a fair share (0 for the optimal player, ``fivethousand_rl.envs.solver``).
With ``--players N`` and N - 1 bots, the bots sit after the responder in turn order
(as evaluations seat a table) and it prints the best response's win probability from
each seat, its seat rotating as evaluations rotate it, and their mean: what no agent
can beat at that table. The computation is ``fivethousand_rl.envs.best_response``; its results are
cached (per rules and per bot, where each bot is known exactly: below) beside the solver's
cache; ``--no-cache`` (``cache=False``) neither reads nor writes it.

The policies must be deterministic, as every bot made by name is, except ``random``,
which says how it chooses. ``best-response:BOTS`` (``agents.make_policy``; BOTS is one
bot, or the table's bots separated by commas) plays the best response, computed or
loaded the first time a game's rules ask for it.

The bots are named, and made by the ``make_policy`` the caller passes (by default the
package's own, ``agents.make_policy``, which makes this bot too: it is imported only when
needed), or given as Policy objects: ``exploitability(policy)`` is the one-call form for
a 2-player policy of one's own. The command line is ``fivethousand_rl.agents.best_response.cli``.

The cache never answers for other decisions: it holds only bots identified exactly
(``bot_key``), with a digest of the package's code and libraries (``code_key``): a model
file or shipped agent by the digest of its bytes, a name of the package's own bots by
that name, ``best-response:BOTS`` by the keys of BOTS. Any other policy (a Policy object,
a plugin's name, ``module:function`` code, a name made by a caller's ``make_policy``) is
computed every time: what it does is known only by asking all the decisions the best
response reads, which is most of the work (docs/exploitability.md). A policy that
decides differently when asked the same decisions again, with another generator and in
another order, is not deterministic (it draws, or keeps state between calls): its turns
have no exact ends, and it is refused (``check_deterministic``; give it
``action_probabilities`` to be followed on every branch).

Any policy is measured (``exploitability``): one with ``act`` alone is asked once per
decision its turns can reach, about 20 million at full size with 2 players (about a
minute for a simple rule in Python; docs/exact.md). Three optional methods make it
faster or possible:

- ``act_batch(games, idx, rng)``: the actions in the games `idx` of an
  ``fivethousand_rl.envs.batch.BatchGames`` at once (``fivethousand_rl.envs.batch.BatchPolicy``);
- ``turn_view(starts, rules)``: the part of the turn-start scores (rows in the mover's
  order) its choices read, e.g. ``starts[:, :1]`` for its own score alone: starts with
  the same view are followed once (``fivethousand_rl.envs.turn_outcomes.view_keys``);
- ``action_probabilities(games, idx)``: a policy that draws gives the chance of each of
  the 64 actions, ``(len(idx), 64)``, and is followed along every branch.

    from fivethousand_rl.agents.best_response import exploitability
    exploitability(MyBot(), rules=Rules(target=1000, entry=300))  # a short game: seconds
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import sys
from collections.abc import Callable, Sequence
from functools import cache
from importlib import metadata
from pathlib import Path

import numpy as np

from fivethousand_rl.agents.base import MODEL_SUFFIXES, atomic_write
from fivethousand_rl.agents.cache import LRU, MAX_IN_MEMORY, MB, bound_disk, remember, touch
from fivethousand_rl.agents.optimal import cache_dir
from fivethousand_rl.agents.shipped import PACKAGE, SHIPPED, shipped_model
from fivethousand_rl.envs.batch import ROLL_BUST, ROLLS, BatchGames, decide
from fivethousand_rl.envs.best_response import BestResponse, ScoreSpace, solve_best_response
from fivethousand_rl.envs.game import Game, check_players
from fivethousand_rl.envs.policy import Policy, resolve_policy
from fivethousand_rl.envs.rules import NUM_DICE, Rules
from fivethousand_rl.envs.solver import STEP
from fivethousand_rl.envs.turn_outcomes import (
    TurnEnds,
    live_levels,
    turn_chunk,
    turn_ends,
    view_keys,
)

VERSION = 3  # of the cached numbers and keys: a change in how they are computed raises it
PREFIX = "best-response:"
# The names of the package's own bots, whose play its code fixes (``agents.make_policy``
# finds them before any plugin): the only names cached as they are (``bot_key``). A bot
# name added to the package is computed every time until it is added here.
BUILTIN_NAME = re.compile(r"random|smart|turn-ev|optimal|expectimax(:[0-9]+)?|threshold:[0-9]+")
# The libraries whose versions are part of ``code_key`` (the numbers go through them).
KEY_LIBRARIES = ("numpy", "torch", "onnxruntime")
# The decisions a policy is asked twice before its turns are followed
# (``check_deterministic``): this many positions, drawn with this seed.
CHECK_POSITIONS = 4096
CHECK_SEED = 20261204


# ------------------------------------------------------------------ identities
MakePolicy = Callable[[str], Policy]
Bot = str | Policy  # a bot's name (or model file), or the policy itself


class NotDeterministicError(ValueError):
    """A policy that decides differently with different generators: its turns have no
    exact ends (it may say how it chooses instead: ``action_probabilities``)."""


def _is_package_maker(make_policy: MakePolicy | None) -> bool:
    """Whether `make_policy` is the package's own (None stands for it): the bots it makes
    by name are the package's, so a model is known by its file and ``optimal`` by name."""
    if make_policy is None or make_policy is resolve_policy:
        return True
    where = (getattr(make_policy, "__module__", None), getattr(make_policy, "__qualname__", None))
    return where == ("fivethousand_rl.agents", "make_policy")


def _maker(make_policy: MakePolicy | None) -> MakePolicy:
    """`make_policy`, or for None the package's ``agents.make_policy``, reached through
    the policy resolver (``envs.policy``): it makes this module's bot, so importing it
    here would be an import circle."""
    return make_policy or resolve_policy


def bot_name(bot: Bot) -> str:
    """How results name `bot`: the name given, or the policy's ``name``."""
    return bot.strip() if isinstance(bot, str) else str(getattr(bot, "name", type(bot).__name__))


def _file_key(spec: str) -> str | None:
    """A model's key (a shipped agent or a model file): its file name and the digest
    of its contents (and of an exported bot's metadata); None for any other name."""
    if spec not in SHIPPED and not spec.endswith(MODEL_SUFFIXES):
        return None
    path = shipped_model(spec) if spec in SHIPPED else Path(spec)
    digest = hashlib.sha256(Path(path).read_bytes())
    metadata = Path(path).with_suffix(".json")
    if Path(path).suffix == ".onnx" and metadata.is_file():
        digest.update(metadata.read_bytes())
    return f"{spec if spec in SHIPPED else Path(path).name}@{digest.hexdigest()[:16]}"


def bot_key(bot: Bot, make_policy: MakePolicy | None = None) -> str | None:
    """What identifies `bot` in the cache exactly, or None: it is then never cached.
    Only bots that the package's own files fix are cached (with ``code_key``):

    - a model file or shipped agent made by the package: its name and file digest;
    - a name of the package's own bots (``BUILTIN_NAME``) made by the package: that name;
    - ``best-response:BOTS`` made by the package: the keys of BOTS (if each has one).

    A Policy object, a plugin's name, ``module:function`` code or a name made by
    another `make_policy` gets None: nothing short of asking every decision the best
    response reads tells what it does."""
    if not isinstance(bot, str) or not _is_package_maker(make_policy):
        return None
    spec = bot.strip()
    if spec.startswith(PREFIX):
        inner = [bot_key(b) for b in table_of(spec[len(PREFIX) :])]
        return None if None in inner else PREFIX + ",".join(inner)
    return _file_key(spec) or (spec if BUILTIN_NAME.fullmatch(spec) else None)


@cache
def code_key() -> str:
    """A digest of the code that plays the package's bots and computes the best response
    (every module of ``fivethousand_rl.envs`` and ``fivethousand_rl.agents``) and of the
    versions of ``KEY_LIBRARIES``: a cached result is read only by the code that would
    compute it again (a changed bot, or a changed solver, is computed again)."""
    digest = hashlib.sha256()
    for folder in (Path(inspect.getfile(Rules)).resolve().parent, PACKAGE):
        for path in sorted(folder.rglob("*.py")):
            digest.update(f"{path.relative_to(folder.parent).as_posix()}\n".encode())
            digest.update(path.read_bytes())
    for library in KEY_LIBRARIES:
        try:
            version = metadata.version(library)
        except metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{library}={version}\n".encode())
    return digest.hexdigest()[:16]


def _check(policy: Policy, n_players: int, rules: Rules) -> None:
    """The policy's ``check_game``, if it has one (an object that only has ``act``
    plays any game)."""
    if callable(check := getattr(policy, "check_game", None)):
        check(n_players, rules)


def check_positions(n_players: int, rules: Rules) -> BatchGames:
    """The decisions ``check_deterministic`` asks twice: ``CHECK_POSITIONS`` games drawn
    with ``CHECK_SEED``, seat 0 to decide (as the turns of ``turn_ends`` are
    asked): banked scores from the rules' grid, turn totals up to the target (half of
    them up to 2,000, where most turns are), and a scoring roll of 1 to 5 dice (5 at a
    turn total of 0; k < 5 dice only where the dice held can have scored the total)."""
    rng = np.random.default_rng(CHECK_SEED)
    m = CHECK_POSITIONS
    games = BatchGames(m, n_players, rules)
    games.scores[:] = rng.choice(np.array(rules.banked_scores()), size=(m, n_players))
    top = rules.target // STEP
    level = np.where(
        np.arange(m) % 2 == 0,
        rng.integers(0, top + 1, size=m),
        rng.integers(0, min(top, 2000 // STEP) + 1, size=m),
    )
    dice = rng.integers(1, NUM_DICE + 1, size=m)
    dice = np.where((level == 0) | (level < NUM_DICE - dice), NUM_DICE, dice)
    scoring = [
        np.array([i for i, r in enumerate(ROLLS) if len(r) == k and not ROLL_BUST[i]])
        for k in range(NUM_DICE + 1)
    ]
    pick = rng.random(m)
    games.turn_total[:] = level * STEP
    games.dice_left[:] = dice
    games.roll[:] = [scoring[k][int(u * len(scoring[k]))] for k, u in zip(dice, pick, strict=True)]
    return games


def check_deterministic(policy: Policy, n_players: int, rules: Rules) -> None:
    """NotDeterministicError (one line) unless `policy` answers alike when asked the
    decisions of ``check_positions`` twice, the second time with another generator and
    in a shuffled order: a policy that draws, or that keeps state from one call to the
    next (its answers depend on the order it is asked in), has no exact turn ends. Its
    ``action_probabilities``, if it has them, are what is compared. A policy that
    cannot decide there is not checked (following its turns asks it again)."""
    games = check_positions(n_players, rules)
    idx = np.arange(games.n_games)
    order = np.random.default_rng(CHECK_SEED).permutation(idx)
    chances = getattr(policy, "action_probabilities", None)
    try:
        if callable(chances):
            first = np.asarray(chances(games, idx), dtype=np.float64)
            again = np.empty_like(first)
            again[order] = np.asarray(chances(games, order), dtype=np.float64)
        else:
            first = decide(policy, games, idx, np.random.default_rng(1))
            again = np.empty_like(first)
            again[order] = decide(policy, games, order, np.random.default_rng(2))
    except Exception:  # it cannot decide there (or answers in the wrong shape)
        return
    if not np.allclose(first, again, rtol=0.0, atol=1e-12):
        raise NotDeterministicError(
            f"{bot_name(policy)} is not deterministic (asked the same decisions again, with "
            "another generator and in another order, it answered differently): an exact "
            "best response needs a policy whose decisions depend on the game alone, or one "
            "that gives its action_probabilities(games, idx)"
        )


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
# The best responses kept in memory, the most recently used last (``agents.cache``): a
# table of 3 at full size takes about 75 MB.
MAX_BEST_RESPONSE_BYTES = 400 * MB
_MEMORY = LRU(MAX_IN_MEMORY, MAX_BEST_RESPONSE_BYTES)


def _meta(keys: Sequence[str], rules: Rules) -> dict:
    """What a cache entry is for: its file's name is a digest of it, and its file holds it."""
    return {"bots": list(keys), "rules": rules.to_dict(), "version": VERSION, "code": code_key()}


def _cache_path(keys: Sequence[str], rules: Rules) -> Path:
    digest = hashlib.sha256(json.dumps(_meta(keys, rules)).encode()).hexdigest()[:16]
    return cache_dir() / f"best-response-{len(keys) + 1}p-{digest}.npz"


def _load(path: Path, keys: Sequence[str], rules: Rules, names: tuple) -> BestResponse | None:
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            values = data["values"]
        n = len(keys) + 1
        ok = (
            all(meta.get(field) == value for field, value in _meta(keys, rules).items())
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
    values = np.ascontiguousarray(br.values)
    meta = {**_meta(keys, br.rules), "checksum": hashlib.sha256(values.tobytes()).hexdigest()}
    atomic_write(path, lambda aside: np.savez(aside, meta=json.dumps(meta), values=values))


def best_response(
    bots: Sequence[Bot],
    rules: Rules | None = None,
    make_policy: MakePolicy | None = None,
    show_progress: bool = True,
    workers: int = 1,
    cache: bool = True,
) -> BestResponse:
    """The exact best response to `bots` (after the responder in turn order: names or
    model files, made by `make_policy`, by default ``fivethousand_rl.agents.make_policy``, or Policy
    objects) under `rules` (None: the seeds' rules): from memory, from the disk cache,
    or computed now (with progress bars; the bots' turns in `workers` processes) and
    cached, where every bot is identified exactly (``bot_key``; else it is computed
    every time, after ``check_deterministic``). With `cache` False nothing is read from
    or written to either cache."""
    rules = rules or Rules()
    bots = tuple(bots)
    n = check_players(len(bots) + 1)
    names = tuple(bot_name(b) for b in bots)
    make = _maker(make_policy)
    keys = tuple(bot_key(b, make_policy) for b in bots) if cache else ()
    cached = cache and None not in keys
    result = _cached(keys, rules, names) if cached else None
    if result is not None:
        return result
    policies = [make(b.strip()) if isinstance(b, str) else b for b in bots]
    for policy in policies:
        _check(policy, n, rules)
        check_deterministic(policy, n, rules)
    result = _compute(policies, names, rules, show_progress, workers)
    if cached:
        path = _cache_path(keys, rules)
        try:
            _save(path, keys, result)
        except OSError as e:  # a read-only home still gets the numbers
            print(f"could not cache the best response at {path}: {e}", file=sys.stderr)
        else:
            bound_disk(path.parent, keep=path)
        remember(_MEMORY, (keys, rules), result)
    return result


def _cached(keys: tuple[str, ...], rules: Rules, names: tuple[str, ...]) -> BestResponse | None:
    """The best response of the bots keyed `keys` from memory or the disk cache, under
    `names`; None if neither holds it."""
    if (keys, rules) in _MEMORY:
        remember(_MEMORY, (keys, rules), _MEMORY[(keys, rules)])  # the most recently used
        return _named(_MEMORY[(keys, rules)], names)
    path = _cache_path(keys, rules)
    result = _load(path, keys, rules, names)
    if result is not None:
        touch(path)
        remember(_MEMORY, (keys, rules), result)
    return result


def _named(br: BestResponse, names: tuple[str, ...]) -> BestResponse:
    """A remembered result under the names the caller gave (the same play, maybe
    another name)."""
    return br if br.bots == names else BestResponse(br.rules, names, br.values)


def exploitability(
    policy: Bot,
    rules: Rules | None = None,
    workers: int = 1,
    show_progress: bool = True,
    cache: bool = True,
) -> float:
    """The exploitability of a 2-player `policy` (a Policy object, or a name or model
    file for ``agents.make_policy``) under `rules` (None: the seeds' rules): what its
    exact best response wins beyond one half, averaged over the two seats (0 for
    optimal play). Computed as ``best_response`` computes it (with a progress bar, the
    policy's turns in `workers` processes), or read from its cache where the policy is
    identified exactly (``bot_key``; `cache` False: never)."""
    br = best_response((policy,), rules, None, show_progress, workers, cache)
    return float(summary(br)["exploitability"])


def cached_best_response(bots: Sequence[Bot], rules: Rules) -> BestResponse | None:
    """The best response to `bots` under `rules` if it was computed before (in memory or
    in the disk cache), else None: no best response is computed (at full size a table of
    3 takes minutes to an hour), only the bots' keys (``bot_key``). A bot that is not
    identified exactly (a Policy object, a plugin's name) gives None too."""
    names = tuple(bot_name(b) for b in bots)
    try:
        keys = tuple(bot_key(b) for b in bots)
    except (OSError, ValueError):
        return None
    return None if None in keys else _cached(keys, rules, names)


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
    from fivethousand_rl.agents.threads import one_thread_per_process

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
    positions a policy plays alike (``fivethousand_rl.envs.turn_outcomes.view_keys``) go to the same
    worker, side by side, so that each of their turns is followed once; the result
    lists them in that order."""
    done = [0]

    def step(k: int) -> None:
        done[0] += k
        if progress:
            progress(done[0], len(positions))

    chunk = turn_chunk(policy, chunk)  # small for a policy deciding one game at a time
    if workers <= 1:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):  # small products: threads only add waiting (agents.threads)
            return turn_ends(policy, positions, rules, chunk=chunk, progress=step)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    live = live_levels(positions, rules)
    keys = view_keys(policy, positions, rules, live)
    ordered = positions[np.lexsort(keys.T[::-1])]
    # Parts small enough that every worker stays busy to the end: turns from low scores
    # are far longer than those near the target, so a few big parts leave workers idle.
    size = min(chunk, max(1, -(-len(ordered) // (8 * workers))))
    parts = [ordered[i : i + size] for i in range(0, len(ordered), size)]
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
# The planners a bot keeps (one per rules it has played under), with their caches.
PLANNER_BYTES = 256 * MB


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
        self._planners = LRU(MAX_IN_MEMORY, PLANNER_BYTES)

    def check_game(self, n_players: int, rules: Rules) -> None:
        if n_players != len(self.bots) + 1:
            raise ValueError(
                f"{self.name} responds at a table of {len(self.bots) + 1} players, not {n_players}"
            )

    def prepare(self, rules: Rules) -> None:
        self.planner(rules)  # compute (or load) once, before any worker starts

    def planner(self, rules: Rules):
        """The planner of the best response under `rules`."""
        from fivethousand_rl.agents.planner import PlannerBot

        planner = self._planners.get(rules)
        if planner is None:
            br = best_response(self.bots, rules, self.make_policy, self.show_progress)
            planner = PlannerBot(
                br.value_fn(), players=(br.n_players,), rules=rules, name=self.name
            )
            remember(self._planners, rules, planner)
        return planner

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
        return {**self.__dict__, "_planners": LRU(MAX_IN_MEMORY, PLANNER_BYTES)}
