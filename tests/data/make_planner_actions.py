"""Writes planner_actions.npz: the actions the shipped planner agents chose on 3,000
positions each from real games, recorded with the planner as it was before batched
planning (commit dab596c: one plan per turn start, planned alone), for
tests/test_planner_batch.py to replay with today's planner.

    .venv/bin/python tests/data/make_planner_actions.py

planner-3p and planner-6p were recorded again when their networks changed (issue 33),
the same way: in a worktree of dab596c holding the new value_net.npz files, with AGENTS
cut to those two, their arrays then replacing theirs in the file.

Positions come from seeded games between the agent and scripted bots, drawn as
make_ppo_actions.py draws them (``record_positions``); each is stored as its GameState
JSON, so the test needs no bot to rebuild it.
"""

from pathlib import Path

import numpy as np
from make_ppo_actions import record_positions  # this folder: the script's own

from fivethousand_rl.agents import make_policy

OUT = Path(__file__).with_name("planner_actions.npz")
AGENTS = {"planner-2p": 2, "planner-3p": 3, "planner-4p": 4, "planner-6p": 6, "planner-multi": 4}
POSITIONS = 3_000


def main() -> None:
    arrays = {}
    for name, players in AGENTS.items():
        states, actions = record_positions(make_policy(name), players, POSITIONS)
        arrays[f"{name}/states"], arrays[f"{name}/actions"] = states, actions
        print(f"{name}: {len(actions)} positions")
    np.savez_compressed(OUT, **arrays)


if __name__ == "__main__":
    main()
