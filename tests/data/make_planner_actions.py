"""Writes planner_actions.npz: the actions the shipped planner agents chose on 3,000
positions each from real games, recorded with the planner as it was before batched
planning (commit dab596c: one plan per turn start, planned alone), for
tests/test_planner_batch.py to replay with today's planner.

    .venv/bin/python tests/data/make_planner_actions.py

Positions come from seeded games between the agent and scripted bots (seats drawn in
turn from smart, turn-ev, random, threshold:350 and the agent); each is stored as its
GameState JSON, so the test needs no bot to rebuild it.
"""

import json
from pathlib import Path

import numpy as np

from agents import make_policy
from envs import driver
from envs.game import Game
from envs.policy import Policy
from envs.rules import Rules

OUT = Path(__file__).with_name("planner_actions.npz")
AGENTS = {"planner-2p": 2, "planner-3p": 3, "planner-4p": 4, "planner-6p": 6, "planner-multi": 4}
POSITIONS = 3_000


class Recorder(Policy):
    """Plays as `seat_policy`, and records each position with the agent's choice."""

    def __init__(self, seat_policy: Policy, agent: Policy, states: list, actions: list):
        self.seat_policy, self.agent = seat_policy, agent
        self.states, self.actions = states, actions
        self.name = seat_policy.name

    def act(self, game: Game, rng: np.random.Generator) -> int:
        if len(self.states) < POSITIONS:
            self.states.append(json.dumps(game.state.to_dict(), separators=(",", ":")))
            self.actions.append(self.agent.act(game, rng))
        return self.seat_policy.act(game, rng)


def record(name: str, players: int) -> tuple[np.ndarray, np.ndarray]:
    agent = make_policy(name)
    pool = [make_policy(b) for b in ("smart", "turn-ev", "random", "threshold:350")] + [agent]
    states: list[str] = []
    actions: list[int] = []
    rng = np.random.default_rng(0)
    game_number = 0
    while len(states) < POSITIONS:
        seats = [
            Recorder(pool[(game_number + 2 * seat) % len(pool)], agent, states, actions)
            for seat in range(players)
        ]
        game = Game(players, Rules(), seed=np.random.default_rng([players, game_number]))
        driver.play(game, seats, rng, max_turns=500)
        game_number += 1
    return np.array(states, dtype=np.bytes_), np.array(actions, dtype=np.uint8)


def main() -> None:
    arrays = {}
    for name, players in AGENTS.items():
        states, actions = record(name, players)
        arrays[f"{name}/states"], arrays[f"{name}/actions"] = states, actions
        print(f"{name}: {len(actions)} positions")
    np.savez_compressed(OUT, **arrays)


if __name__ == "__main__":
    main()
