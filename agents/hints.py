"""Hints, one place for the terminal (agents/terminal.py) and the web page (webplay/):
which policy advises a person at a table, and its advice at a decision."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.best_response import PREFIX, BestResponseBot, cached_best_response
from fivethousand_rl.agents.optimal import OptimalBot
from fivethousand_rl.agents.value_net import CHECKPOINTS, shipped_planner
from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import Rules


def hint_policy(
    n_players: int,
    rules: Rules,
    table: Sequence[str] = (),
    planners: str | Path = CHECKPOINTS,
    show_progress: bool = False,
) -> Policy | None:
    """The policy whose advice is the hint: with 2 players the optimal player (exact;
    solved or loaded here, a ValueError for rules the solver does not take); with 3+ the
    best response to the bots `table` (by spec, after the person in turn order; empty
    in pass and play: people are no table of bots) if it was computed before (cached,
    ``fivethousand best-response``: exact), else a shipped planner of `planners` (an
    estimate), or None if none values such a table."""
    if n_players == 2:
        bot = OptimalBot(show_progress)
        bot.prepare(rules)
        return bot
    if table and cached_best_response(table, rules) is not None:
        return BestResponseBot(table, make_policy, show_progress=False)
    return shipped_planner(n_players, rules, planners)


def is_exact(policy: Policy) -> bool:
    """Whether `policy`'s hints are exact: the optimal player's or a best response's,
    not a trained planner's estimate."""
    return policy.name == OptimalBot.name or policy.name.startswith(PREFIX)


def hint(policy: Policy, game: Game) -> tuple[int, list[float]]:
    """`policy`'s advice (from ``hint_policy``) to the player to move in `game`: the
    move, and every seat's win probability if it is played."""
    best = policy.act(game, np.random.default_rng(0))  # a hint's policy draws nothing
    if game.n_players == 2:
        mine = float(policy.action_values(game)[best])
        return best, [mine if seat == game.state.current else 1 - mine for seat in range(2)]
    return best, [float(p) for p in policy.win_probabilities(game)]
