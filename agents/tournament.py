"""Tournaments: many seeded games between agents, seats rotated, in parallel workers
(local processes, or Ray actors on one machine or a cluster: ``fivethousand_rl.agents.ray_tools``).

Two ways to play them, with the same schedule and the same results format:

- *batched* (when every agent has a batched side, ``fivethousand_rl.envs.batch.BatchPolicy``: the
  table-driven bots random, threshold:T, smart, turn-ev, optimal): the games are played
  thousands at a time by ``envs.batch.play_games``, in blocks of ``BLOCK`` games; block
  b of a tournament with seed S draws everything from
  ``numpy.random.SeedSequence([S, BATCHED, b])``. Results depend on the seed alone (not
  on the workers), but are not the per-game path's games: the same statistics, other
  dice.
- *per game* (any agent; forced by ``batched=False``): game number g draws everything
  (dice, random bots) from ``numpy.random.SeedSequence([S, g])``, so results depend on
  the seed alone, not on the number of workers or the order in which games finish.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.base import Policy
from fivethousand_rl.agents.threads import one_thread_per_process, usable_cpus
from fivethousand_rl.envs.batch import play_games
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import Game, check_players
from fivethousand_rl.envs.rules import Rules


@dataclass(frozen=True)
class Seating:
    """One game to play: which agent (index into the tournament's agents) sits in
    each seat, seat 0 first."""

    game: int
    agents: tuple[int, ...]


@dataclass(frozen=True)
class GameResult:
    game: int
    agents: tuple[int, ...]  # agent of each seat
    winner_seat: int | None  # None: cut off by the turn limit
    turns: int


def schedule(n_agents: int, players: int, games_per_matchup: int) -> list[Seating]:
    """Every `players`-subset of the agents plays `games_per_matchup` games, the seats
    rotating one place each game so that each agent sits in each seat equally often
    (the count must be a multiple of `players`)."""
    check_players(players, "players")
    if n_agents < players:
        raise ValueError(
            f"{players} players need at least {players} agents, got {n_agents} "
            "(name an agent twice to seat it twice)"
        )
    if games_per_matchup < 1 or games_per_matchup % players:
        raise ValueError(f"games per matchup must be a positive multiple of {players}")
    out = []
    for matchup in itertools.combinations(range(n_agents), players):
        for j in range(games_per_matchup):
            seats = tuple(matchup[(s + j) % players] for s in range(players))
            out.append(Seating(len(out), seats))
    return out


def standard_table(players: int) -> list[str]:
    """The scripted bots beside an agent at this project's evaluation table of `players`
    (3 or more): smart and turn-ev, then threshold:350 in the last seat from 4 players
    on: (smart, turn-ev), (smart, turn-ev, threshold:350), (smart, turn-ev, smart,
    turn-ev, threshold:350) for 3, 4 and 6 players."""
    if players == 3:
        return ["smart", "turn-ev"]
    return (["smart", "turn-ev"] * 4)[: players - 2] + ["threshold:350"]


def play_game(
    policies: Sequence[Policy], rules: Rules, seed: Sequence[int], max_turns: int = 1000
) -> tuple[int | None, int]:
    """Play one game, seat i played by policies[i]; returns (winner seat or None, turns)."""
    dice_seed, policy_seed = np.random.SeedSequence(seed).spawn(2)
    game = Game(len(policies), rules, seed=np.random.default_rng(dice_seed))
    play(game, policies, np.random.default_rng(policy_seed), max_turns=max_turns)
    return game.state.winner, game.state.turns


# Worker processes build their own policies once (checkpoints load once per worker).
_WORKER: dict = {}


def _init_worker(specs: Sequence[str | Policy], rules: Rules, seed: int, max_turns: int) -> None:
    _WORKER.update(
        policies=[make_policy(spec) for spec in specs], rules=rules, seed=seed, max_turns=max_turns
    )


def _init_process(*initargs) -> None:
    """A worker process's initializer: one thread (the pool is its parallelism), then policies."""
    one_thread_per_process()
    _init_worker(*initargs)


def _play_chunk(chunk: Sequence[Seating]) -> list[GameResult]:
    w = _WORKER
    results = []
    for seating in chunk:
        policies = [w["policies"][a] for a in seating.agents]
        winner, turns = play_game(policies, w["rules"], [w["seed"], seating.game], w["max_turns"])
        results.append(GameResult(seating.game, seating.agents, winner, turns))
    return results


# The batched path: BLOCK games per seeded block (a unit of work for a worker), played
# WIDTH at a time; both are part of what a batched result depends on, so they are fixed.
# Two widths per block: a 20,000-game evaluation splits into blocks for 2 workers.
BLOCK = 8192
WIDTH = 4096
BATCHED = 0x5EA7ED  # in the batched path's SeedSequence: apart from game numbers'


def is_batched(policies: Sequence[Policy]) -> bool:
    """Whether every policy decides for many games at once (``BatchPolicy``)."""
    return all(callable(getattr(p, "act_batch", None)) for p in policies)


def _play_block(task: tuple[int, Sequence[Seating]], on_progress=None) -> list[GameResult]:
    """The games of one block (its number, seatings), batched, by the worker's policies."""
    block, seatings = task
    w = _WORKER
    seat_policy = np.array([s.agents for s in seatings], dtype=np.int64)
    rng = np.random.default_rng(np.random.SeedSequence([w["seed"], BATCHED, block]))
    out = play_games(
        len(seatings),
        w["policies"],
        w["rules"],
        rng,
        seat_policy=seat_policy,
        max_turns=w["max_turns"],
        width=WIDTH,
        on_progress=on_progress,
    )
    return [
        GameResult(s.game, s.agents, None if winner < 0 else winner, turns)
        for s, winner, turns in zip(seatings, out.winner.tolist(), out.turns.tolist(), strict=True)
    ]


def run(
    specs: Sequence[str | Policy],
    seatings: Sequence[Seating],
    rules: Rules,
    seed: int,
    workers: int | None = 1,
    max_turns: int = 1000,
    on_progress: Callable[[int], None] | None = None,
    chunk_size: int = 250,
    batched: bool | None = None,
    ray: str | None = None,
) -> list[GameResult]:
    """Play every seating; `on_progress(n)` is told of each batch of n finished games.
    `batched`: None plays batched when every agent can (``is_batched``), False always
    per game (game for game as before batching existed), True insists on batched
    (ValueError, one line, naming an agent that cannot). `ray`: play the same tasks as
    Ray actors instead of local processes (an address for ``agents.ray_tools.connect``:
    "local", "auto", HOST:PORT; joined, or started, for this process's later runs too),
    the same results game for game. `workers`: processes, or actors on Ray; None: one
    per CPU (of this machine, or of the Ray cluster); never more than the CPUs
    (``worker_count``). Each worker runs one thread of numeric work."""
    policies = [make_policy(spec) for spec in specs]
    if batched is None:
        batched = is_batched(policies)
    elif batched and not is_batched(policies):
        slow = next(p.name for p in policies if not is_batched([p]))
        raise ValueError(f"{slow} has no batched side (act_batch): play it per game")
    size = BLOCK if batched else chunk_size
    chunks = [seatings[i : i + size] for i in range(0, len(seatings), size)]
    tasks = list(enumerate(chunks)) if batched else chunks  # a block's number: its seed
    play_task = _play_block if batched else _play_chunk
    initargs = (list(specs), rules, seed, max_turns)
    if ray is None and (worker_count(workers)[0] <= 1 or len(tasks) == 1):
        _init_worker(policies, rules, seed, max_turns)
        if batched:  # progress as the games end, not per block
            done = [_play_block(task, on_progress) for task in tasks]
            on_progress = None  # told already, game by game
        else:
            done = map(_play_chunk, tasks)
    elif ray is None:
        done = _in_processes(initargs, play_task, tasks, workers)
    else:
        from fivethousand_rl.agents import ray_tools  # imports Ray, when called

        ray_tools.connect(ray)
        done = ray_tools.map_on_actors(_init_worker, initargs, play_task, tasks, workers)
    results: list[GameResult] = []
    for task_results in done:
        results.extend(task_results)
        if on_progress:
            on_progress(len(task_results))
    return sorted(results, key=lambda r: r.game)


def worker_count(workers: int | None) -> tuple[int, str | None]:
    """The local worker processes to start for `workers` asked (None: one per CPU): at
    most one per CPU this process may use (``fivethousand_rl.agents.threads.usable_cpus``), as more
    would only take turns on them; and a one-line note to show when that cut the
    count, else None."""
    cpus = usable_cpus()
    if workers is None or workers <= cpus:
        return workers or cpus, None
    plural = "s" * (cpus > 1)
    return cpus, f"{workers} workers asked, {cpus} CPU{plural} usable here: {cpus} worker{plural}"


def _in_processes(initargs: tuple, play_task: Callable, tasks: list, workers: int | None):
    """Each task's results, played by a pool of local worker processes."""
    workers = min(worker_count(workers)[0], len(tasks))
    # "spawn": forking a process that has loaded torch (a checkpoint agent) can hang
    # the children on torch's thread pool.
    with ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init_process,
        initargs=initargs,
    ) as pool:
        yield from pool.map(play_task, tasks)


def seat_record(
    learner: Policy | str,
    others: Sequence[Policy | str],
    rules: Rules,
    seed: int,
    games: int,
    max_turns: int = 1000,
    on_progress: Callable[[int], None] | None = None,
    batched: bool = False,
) -> dict:
    """How `learner` does at a table with `others` in the other seats, its seat rotating
    game by game (whole rotations, cut to `games`): its win rate with a Wilson interval
    and the mean game length. Played one game at a time by default, so a seed always
    plays the same dice whoever the learner is (common random numbers for comparing
    learners); `batched` plays batched where every agent can (``run``), much faster for
    planners, the dice then depending on the play."""
    players = len(others) + 1
    seatings = schedule(players, players, -(-games // players) * players)[:games]
    options = {
        "max_turns": max_turns,
        "on_progress": on_progress,
        "batched": None if batched else False,
    }
    results = run([learner, *others], seatings, rules, seed, **options)
    wins = sum(r.winner_seat is not None and r.agents[r.winner_seat] == 0 for r in results)
    return {
        "win_rate": wins / games,
        "ci95": list(wilson_interval(wins, games)),
        "games": games,
        "mean_turns": sum(r.turns for r in results) / games,
    }


# ------------------------------------------------------------------ statistics
def wilson_interval(wins: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default)."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # In exact arithmetic low <= p <= high; rounding can cross p at 0% and 100%.
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def summarize(names: Sequence[str], results: Sequence[GameResult], players: int) -> dict:
    """Per-agent win rates with Wilson intervals, game lengths, the pairwise matrix (2
    players) and ratings fitted to all the games (``ratings``)."""
    n = len(names)
    turns = [0] * n
    seat_wins = [[0] * players for _ in range(n)]
    seat_games = [[0] * players for _ in range(n)]
    pair_games = np.zeros((n, n), dtype=int)
    pair_wins = np.zeros((n, n), dtype=int)
    truncated = 0
    for r in results:
        winner = r.agents[r.winner_seat] if r.winner_seat is not None else None
        truncated += winner is None
        for seat, a in enumerate(r.agents):
            turns[a] += r.turns
            seat_games[a][seat] += 1
            seat_wins[a][seat] += seat == r.winner_seat
        if players == 2:
            a, b = r.agents
            pair_games[[a, b], [b, a]] += 1  # two agents: schedule seats no agent twice
            if winner is not None:
                pair_wins[winner, b if winner == a else a] += 1
    games, wins = [sum(s) for s in seat_games], [sum(s) for s in seat_wins]
    fitted = ratings(n, results)
    agents = []
    for a, name in enumerate(names):
        low, high = wilson_interval(wins[a], games[a])
        agents.append(
            {
                "agent": name,
                "games": games[a],
                "wins": wins[a],
                "win_rate": wins[a] / games[a] if games[a] else 0.0,
                "ci95_low": low,
                "ci95_high": high,
                "mean_game_turns": turns[a] / games[a] if games[a] else 0.0,
                "win_rate_by_seat": [
                    seat_wins[a][s] / seat_games[a][s] if seat_games[a][s] else None
                    for s in range(players)
                ],
                **fitted[a],
            }
        )
    summary = {"players": players, "games": len(results), "truncated": truncated, "agents": agents}
    if players == 2:
        summary["pairwise"] = {
            names[a]: {
                names[b]: {
                    "games": int(pair_games[a, b]),
                    "wins": int(pair_wins[a, b]),
                    "win_rate": pair_wins[a, b] / pair_games[a, b],
                    "ci95": wilson_interval(int(pair_wins[a, b]), int(pair_games[a, b])),
                }
                for b in range(n)
                if b != a and pair_games[a, b]
            }
            for a in range(n)
        }
    return summary


# Ratings on the Elo scale: RATING_MEAN on average, ELO_PER_UNIT points per unit of
# log-strength, so that 400 points are 10:1 odds (a 2-player win rate of 91%).
RATING_MEAN = 1500.0
ELO_PER_UNIT = 400 / math.log(10)
# Normal prior on the log-strengths, sd 1000 Elo points: weak (a few games outweigh
# it) but it keeps an agent that wins or loses every game at a finite rating.
PRIOR_SD = 1000 / ELO_PER_UNIT


def _game_groups(n: int, results: Sequence[GameResult]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The decided games summed by line-up: (agents' seat counts, their win counts) for
    each distinct line-up, in a fixed order, so that the order of the games is lost."""
    wins: dict[tuple[int, ...], np.ndarray] = {}
    for r in results:
        if r.winner_seat is None:  # cut off: nothing said about who wins
            continue
        key = tuple(sorted(r.agents))
        wins.setdefault(key, np.zeros(n))[r.agents[r.winner_seat]] += 1
    return [
        (np.bincount(np.asarray(key, dtype=int), minlength=n).astype(float), wins[key])
        for key in sorted(wins)
    ]


def luce_fit(
    n: int, results: Sequence[GameResult], prior_sd: float = PRIOR_SD
) -> tuple[np.ndarray, np.ndarray]:
    """Log-strengths theta of `n` agents and their standard errors, fitted to all the
    games at once (Luce's choice model, the top-1 case of Plackett-Luce): in a game
    the agent i wins with probability exp(theta_i) / sum of exp(theta_j) over the
    seats. Maximum a posteriori under a normal prior N(0, prior_sd^2), found by
    Newton's method (the log-posterior is concave: one maximum). Every decided game
    weighs alike and their order does not matter; cut-off games are left out. The
    standard errors are those of theta_i minus the agents' mean (the inverse Hessian,
    centred)."""
    groups = _game_groups(n, results)
    theta = np.zeros(n)

    def gradient_hessian(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        grad = -theta / prior_sd**2
        hess = -np.eye(n) / prior_sd**2
        value = -(theta @ theta) / (2 * prior_sd**2)
        for seats, wins in groups:
            games = wins.sum()
            top = theta[seats > 0].max()  # log-sum-exp without overflow or underflow
            weights = seats * np.exp(theta - top)
            p = weights / weights.sum()  # each agent's chance to win this line-up
            value += wins @ theta - games * (np.log(weights.sum()) + top)
            grad += wins - games * p
            hess -= games * (np.diag(p) - np.outer(p, p))
        return grad, hess, value

    grad, hess, value = gradient_hessian(theta)
    for _ in range(200):
        step = np.linalg.solve(hess, -grad)
        size = 1.0
        while True:  # halve the step until the posterior rises (rarely needed)
            new = gradient_hessian(theta + size * step)
            if new[2] >= value or size < 1e-6:
                break
            size /= 2
        theta = theta + size * step
        grad, hess, value = new
        if np.max(np.abs(size * step)) < 1e-10:
            break
    theta -= theta.mean()  # 0 already at the maximum, up to rounding
    centre = np.eye(n) - 1 / n
    cov = centre @ np.linalg.inv(-hess) @ centre
    return theta, np.sqrt(np.clip(np.diag(cov), 0.0, None))


def ratings(n: int, results: Sequence[GameResult]) -> list[dict]:
    """Each agent's rating and its standard error on the Elo scale (see ``luce_fit``):
    the agents average RATING_MEAN, and in a 2-player game an agent rated d points
    above its opponent wins with probability 1 / (1 + 10^(-d/400))."""
    theta, se = luce_fit(n, results)
    return [
        {"rating": RATING_MEAN + ELO_PER_UNIT * t, "rating_se": ELO_PER_UNIT * e}
        for t, e in zip(theta, se, strict=True)
    ]
