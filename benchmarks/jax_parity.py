"""The JAX game against the numpy engine, decision by decision (issue 45).

    python benchmarks/jax_parity.py [--decisions 1000000] [--lanes 1024] [--seed 0]
                                    [--encoding compact|rich]

Both engines play the same games: random legal play, the dice fed from one numpy
generator (one roll code per game at each chance node, mapped by ``CODE_TO_ROLL`` in
both), 2 to 8 players, both hold rules and every house switch (``CONFIGS``). After every
roll and every decision the JAX states must equal ``fivethousand_rl.envs.batch.BatchGames``' arrays
exactly: scores, player to move, turn total, dice left, pending roll, turns, winner,
the legal-action mask, the observation (float32 bits, against
``envs.vector_env.observe_batch``; the compact one, or with ``--encoding rich`` the rich
one with its 64 rows of action consequences), the rewards, terminated and truncated. A few games
are also replayed through ``envs.game.Game`` itself. Any difference stops the run with
the field, the configuration and the round. Ended games are dealt again at once.

The last line is one JSON object: decisions and rolls compared per configuration.
``tests/test_jax_env.py`` runs ``run_parity`` at a small size in ``make test``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from rich.progress import Progress

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fivethousand_rl.envs.batch import CODE_TO_ROLL, NO_ROLL, NUM_CODES, BatchGames  # noqa: E402
from fivethousand_rl.envs.encoding import ENCODINGS, ObsSpec  # noqa: E402
from fivethousand_rl.envs.jax_env import FiveThousandJax, State  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402
from fivethousand_rl.envs.vector_env import observe_batch  # noqa: E402


@dataclass(frozen=True)
class Config:
    """One game to compare: players, rules, turn limit."""

    n_players: int
    rules: Rules = Rules()
    max_turns: int = 1000

    def label(self) -> str:
        rules = " ".join(f"{k}={v}" for k, v in self.rules.to_dict().items())
        return f"{self.n_players}p {rules} max_turns={self.max_turns}"


# Every player count, both hold rules, every house switch (V1-V5) on and off, and short
# turn limits (R11) so that truncation is compared too.
CONFIGS: tuple[Config, ...] = (
    Config(2),
    Config(2, Rules(hold="all")),
    Config(3, Rules(entry=300)),
    Config(3, Rules(entry=1000, hold="all"), max_turns=9),
    Config(4, Rules(bump=False)),
    Config(4, Rules(overshoot="lost", target=1500)),
    Config(5, Rules(fifty_rule=False)),
    Config(5, Rules(hold="all", bump=False, overshoot="lost", fifty_rule=False)),
    Config(6, Rules(target=1500, entry=300), max_turns=18),
    Config(6, Rules(target=2000, fifty_rule=False, entry=50)),
    Config(7, Rules(hold="all", target=1500, bump=False)),
    Config(7, Rules(entry=1000, overshoot="lost")),
    Config(8, Rules(target=1500, entry=300), max_turns=24),
    Config(8, Rules(hold="all", fifty_rule=False, target=3000, entry=150)),
    Config(2, Rules(target=1000, entry=50, fifty_rule=False)),
    Config(3, Rules(target=1500, overshoot="lost", fifty_rule=False, hold="all")),
)


@jax.vmap
def _tree_where(cond: jax.Array, a: State, b: State) -> State:
    """Per game (batched states): `a` where `cond` else `b`."""
    return jax.tree.map(lambda x, y: jnp.where(cond, x, y), a, b)


class Mismatch(AssertionError):
    """The engines disagree."""


def _compare(js: State, games: BatchGames, spec: ObsSpec, max_turns: int, where: str) -> None:
    """Every field of the JAX states against the numpy arrays (all games)."""
    rows = np.arange(games.n_games)
    fields = {
        "scores": (js.scores, games.scores),
        "current_player": (js.current_player, games.current),
        "turn_total": (js.turn_total, games.turn_total),
        "dice_left": (js.dice_left, games.dice_left),
        "roll": (js.roll, games.roll),
        "turns": (js.turns, games.turns),
        "winner": (js.winner, games.winner),
    }
    over = games.winner >= 0
    cut = ~over & (games.turns >= max_turns)
    mask = games.legal_mask(rows)
    obs = observe_batch(games, rows, games.current, mask, spec)
    seat = np.arange(games.n_players)
    rewards = np.where(over[:, None], np.where(seat == games.winner[:, None], 1.0, -1.0), 0.0)
    fields["terminated"] = (js.terminated, over)
    fields["truncated"] = (js.truncated, cut)
    fields["legal_action_mask"] = (js.legal_action_mask, mask | over[:, None] | cut[:, None])
    fields["observation"] = (js.observation.view(jnp.uint32), obs.view(np.uint32))
    fields["rewards"] = (js.rewards, rewards.astype(np.float32))
    for name, (mine, theirs) in fields.items():
        mine = np.asarray(mine)
        if not np.array_equal(mine, theirs):
            g = int(np.flatnonzero((mine != theirs).reshape(len(rows), -1).any(axis=1))[0])
            raise Mismatch(f"{name} differs {where}, game {g}: jax {mine[g]} numpy {theirs[g]}")


def run_parity(
    config: Config,
    *,
    lanes: int,
    decisions: int,
    seed: int,
    replay_games: int = 2,
    encoding: str = "compact",
    on_round=None,
) -> dict[str, int]:
    """Play `lanes` games side by side until `decisions` decisions have been compared;
    Mismatch (naming field, game and round) at the first difference. Returns the counts
    of decisions, rolls and ended games compared."""
    env = FiveThousandJax(config.n_players, config.rules, config.max_turns, encoding)
    spec = env.spec
    games = BatchGames(lanes, config.n_players, config.rules)
    rng = np.random.default_rng(seed)
    fresh = jax.vmap(lambda _: env.new_game())(jnp.arange(lanes))
    rolled = jax.jit(jax.vmap(env.stochastic_step))
    decided = jax.jit(jax.vmap(env.decide))
    restart = jax.jit(lambda ended, s: _tree_where(ended, fresh, s))
    js = fresh
    # Game-by-game replays through envs.game.Game: the first lanes' every roll and action.
    replays = [[] for _ in range(replay_games)]
    counts = {"decisions": 0, "rolls": 0, "games_ended": 0}
    rows = np.arange(lanes)
    rnd = 0
    try:
        while counts["decisions"] < decisions:
            rnd += 1
            codes = rng.integers(0, NUM_CODES, size=lanes)
            chance = (games.roll == NO_ROLL) & (games.winner < 0) & (games.turns < config.max_turns)
            ids = CODE_TO_ROLL[games.dice_left, codes]
            for g in np.flatnonzero(chance[:replay_games]):
                replays[g].append(("roll", int(ids[g])))
            games.set_roll(rows[chance], ids[chance])
            js = rolled(js, jnp.asarray(ids, jnp.int32))
            counts["rolls"] += int(chance.sum())
            _compare(js, games, spec, config.max_turns, f"after the rolls of round {rnd}")
            deciding = games.roll != NO_ROLL
            key = games.decision_key(rows)
            t = games.decisions
            acts = t.legal[key, (rng.random(lanes) * t.n_legal[key]).astype(np.int64)]
            acts = np.where(deciding, acts, 0)
            for g in np.flatnonzero(deciding[:replay_games]):
                replays[g].append(("act", int(acts[g])))
            games.act(rows[deciding], acts[deciding])
            stepped = decided(js, jnp.asarray(acts, jnp.int32))
            js = _tree_where(jnp.asarray(deciding), stepped, js)
            counts["decisions"] += int(deciding.sum())
            _compare(js, games, spec, config.max_turns, f"after the decisions of round {rnd}")
            ended = (games.winner >= 0) | (games.turns >= config.max_turns)
            if ended.any():
                for g in np.flatnonzero(ended[:replay_games]):
                    _replay(config, replays[g], games, int(g))
                    replays[g] = []
                counts["games_ended"] += int(ended.sum())
                games.reset(rows[ended])
                js = restart(jnp.asarray(ended), js)
            if on_round is not None:
                on_round(int(deciding.sum()))
    except Mismatch as e:
        raise Mismatch(f"{config.label()}: {e}") from None
    return counts


def _replay(config: Config, moves: list[tuple[str, int]], games: BatchGames, g: int) -> None:
    """Game `g`'s rolls and actions through ``envs.game.Game``: it must end where the
    batched engine (already compared with JAX) ended."""
    from fivethousand_rl.envs.batch import ROLLS
    from fivethousand_rl.envs.game import Game

    game = Game(config.n_players, config.rules, seed=0)
    for kind, value in moves:
        if kind == "roll":
            game.roll(ROLLS[value])
        else:
            game.act(value)
    s = game.state
    engine = ([int(x) for x in s.scores], -1 if s.winner is None else s.winner, s.turns)
    batched = ([int(x) for x in games.scores[g]], int(games.winner[g]), int(games.turns[g]))
    if engine != batched:
        raise Mismatch(f"game {g} replayed through Game ends elsewhere: {engine} vs {batched}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=1_000_000, help="over all configurations")
    parser.add_argument("--lanes", type=int, default=1024, help="games side by side")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--encoding", choices=ENCODINGS, default="compact", help="the observation compared"
    )
    args = parser.parse_args(argv)
    if args.decisions < 1 or args.lanes < 1:
        parser.error("--decisions and --lanes must be positive")
    per_config = -(-args.decisions // len(CONFIGS))
    report = {
        "configurations": len(CONFIGS),
        "lanes": args.lanes,
        "encoding": args.encoding,
        "jax": jax.__version__,
    }
    total = {"decisions": 0, "rolls": 0, "games_ended": 0}
    start = time.perf_counter()
    with Progress() as progress:
        task = progress.add_task("decisions compared", total=per_config * len(CONFIGS))
        for i, config in enumerate(CONFIGS):
            try:
                counts = run_parity(
                    config,
                    lanes=args.lanes,
                    decisions=per_config,
                    seed=args.seed + i,
                    encoding=args.encoding,
                    on_round=lambda n: progress.advance(task, n),
                )
            except Mismatch as e:  # the first difference ends the run, in one line
                progress.stop()
                print(f"error: {e}", file=sys.stderr)
                return 1
            progress.console.print(f"{config.label()}: {counts['decisions']:,} decisions equal")
            for k in total:
                total[k] += counts[k]
    report.update(total, seconds=round(time.perf_counter() - start, 1), mismatches=0)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
