"""Writes ppo_actions.npz: the actions the shipped agents chose on 10,000 positions
each from real games, recorded before their checkpoints were migrated to carry an
observation spec (issue 10), for tests/test_agents.py to replay.

    .venv/bin/python tests/data/make_ppo_actions.py

Positions come from seeded games between the agent and scripted bots (seats drawn in
turn from smart, turn-ev, random, threshold:350 and the agent); each is stored as its
GameState JSON, so the test needs no bot to rebuild it.
"""

import json
from pathlib import Path

import numpy as np

from fivethousand_rl.agents import make_policy
from fivethousand_rl.envs import driver
from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import Rules

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).with_name("ppo_actions.npz")
MODELS = {"ppo-2p": 2, "ppo-4p": 4}  # shipped agent -> players
POSITIONS = 10_000


class Recorder(Policy):
    """Plays as `seat_policy`, and records each position with the agent's choice (the
    first `limit` positions)."""

    def __init__(
        self, seat_policy: Policy, agent: Policy, states: list, actions: list, limit: int
    ) -> None:
        self.seat_policy, self.agent, self.limit = seat_policy, agent, limit
        self.states, self.actions = states, actions
        self.name = seat_policy.name

    def act(self, game: Game, rng: np.random.Generator) -> int:
        if len(self.states) < self.limit:
            self.states.append(json.dumps(game.state.to_dict(), separators=(",", ":")))
            self.actions.append(self.agent.act(game, rng))
        return self.seat_policy.act(game, rng)


def record_positions(agent: Policy, players: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` positions of seeded games between `agent` and scripted bots, each with
    the agent's choice there: (GameState JSON strings, actions)."""
    pool = [make_policy(b) for b in ("smart", "turn-ev", "random", "threshold:350")] + [agent]
    states: list[str] = []
    actions: list[int] = []
    rng = np.random.default_rng(0)
    game_number = 0
    while len(states) < count:
        seats = [
            Recorder(pool[(game_number + 2 * seat) % len(pool)], agent, states, actions, count)
            for seat in range(players)
        ]
        game = Game(players, Rules(hold="free"), seed=np.random.default_rng([players, game_number]))
        driver.play(game, seats, rng, max_turns=500)
        game_number += 1
    return np.array(states, dtype=np.bytes_), np.array(actions, dtype=np.uint8)


def record(name: str, players: int) -> tuple[np.ndarray, np.ndarray]:
    agent = make_policy(str(ROOT / "checkpoints" / name / "model.zip"))
    return record_positions(agent, players, POSITIONS)


def main() -> None:
    arrays = {}
    for name, players in MODELS.items():
        states, actions = record(name, players)
        arrays[f"{name}/states"], arrays[f"{name}/actions"] = states, actions
        print(f"{name}: {len(actions)} positions")
    np.savez_compressed(OUT, **arrays)


if __name__ == "__main__":
    main()
