"""Measure the network that examples/cleanrl_ppo.py trained as the shipped agents are
measured: games against the bots and `optimal`, seats rotated, its exact
exploitability, and a leaderboard row beside the shipped agents.

    python examples/evaluate_own_agent.py model.pt --games 20000

The network becomes a player by one call, ``agents.from_function`` (the batched-agent
protocol: observations and masks in, actions out), playing greedily: the legal action
of highest logit, which makes it deterministic, as an exact best response needs. The
games are one tournament (``fivethousand_rl.agents.tournament``): every pair of the agent, `smart`,
`turn-ev` and `optimal` plays `--games` games, batched, seed `--seed`. The shipped
agents' rows come from their cards' evaluations (``checkpoints/NAME/evaluation.json``)
and exploitabilities (``docs/exploitability.json``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
import torch
import tyro

from fivethousand_rl.agents import FunctionAgent, from_function
from fivethousand_rl.agents.best_response import exploitability
from fivethousand_rl.agents.shipped import shipped_folder
from fivethousand_rl.agents.tournament import run, schedule, summarize
from fivethousand_rl.envs.rules import Rules

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cleanrl_ppo import load  # noqa: E402  (the network's definition, beside this file)

OPPONENTS = ("optimal", "smart", "turn-ev")
SHIPPED_ROWS = ("planner-2p", "ppo-2p")  # the shipped 2-player agents
EXPLOITABILITIES = Path(__file__).resolve().parent.parent / "docs" / "exploitability.json"


@dataclass
class Options:
    model: Annotated[str, tyro.conf.Positional]
    """the file examples/cleanrl_ppo.py saved"""
    name: str = "my-ppo"
    games: int = 20_000  # per pair of players, seats rotated
    seed: int = 0
    exploitability: bool = True  # compute it (minutes); --no-exploitability to skip
    workers: int = 1  # processes for the exploitability


def make_agent(path: str, name: str = "my-ppo", rules: Rules | None = None) -> FunctionAgent:
    """The network saved at `path` as a player of 2-player games under `rules`."""
    net = load(path)

    @torch.no_grad()
    def greedy(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        logits = net.policy(torch.as_tensor(obs), torch.as_tensor(mask)).logits
        return logits.argmax(-1).numpy()

    return from_function(greedy, name=name, n_players=2, obs_encoding="compact", rules=rules)


def tournament(agent: FunctionAgent, games: int, seed: int) -> dict:
    """Every pair of the agent and the `OPPONENTS` plays `games` games: the pairwise
    win rates with their 95% intervals (``fivethousand_rl.agents.tournament.summarize``)."""
    players = [agent, *OPPONENTS]
    results = run(players, schedule(len(players), 2, games), Rules(), seed)
    return summarize([agent.name, *OPPONENTS], results, 2)["pairwise"]


def percent(pair: dict | None, interval: bool = False) -> str:
    if pair is None:
        return ""
    low, high = pair["ci95"]
    within = f" ({100 * low:.1f}% - {100 * high:.1f}%)" if interval else ""
    return f"{100 * pair['win_rate']:.1f}%{within}"


def leaderboard(name: str, pairwise: dict, exploitable: float | None) -> str:
    """A markdown table: the agent and the bots from this run's games, the shipped
    agents from their cards, each with its exploitability, least exploitable first."""
    table = json.loads(EXPLOITABILITIES.read_text())["rows"]
    known = {row["policy"]: row["exploitability"] for row in table} | {name: exploitable}
    rows = {agent: (pairwise[agent], "this run") for agent in (*OPPONENTS, name)}
    for shipped in SHIPPED_ROWS:
        evaluation = json.loads((shipped_folder(shipped) / "evaluation.json").read_text())
        rows[shipped] = (evaluation["pairwise"][shipped], "its card")
    against = " | ".join(f"against `{bot}`" for bot in OPPONENTS)
    lines = [f"| agent | {against} | exploitability | games |", "|---|" + "---:|" * 4 + "---|"]
    for agent in sorted(rows, key=lambda a: (known[a] is None, known[a] or 0.0)):
        pairs, source = rows[agent]
        rates = " | ".join(percent(pairs.get(bot)) for bot in OPPONENTS)
        x = "" if known[agent] is None else f"{max(known[agent], 0.0):.4f}"  # optimal: -1e-14
        games = next(iter(pairs.values()))["games"]
        lines.append(f"| `{agent}` | {rates} | {x} | {games:,} per pair, {source} |")
    return "\n".join(lines)


def main(options: Options) -> None:
    agent = make_agent(options.model, options.name)
    pairwise = tournament(agent, options.games, options.seed)
    for bot in OPPONENTS:
        pair = pairwise[agent.name][bot]
        print(f"against {bot}: {percent(pair, interval=True)} of {pair['games']:,} games")
    exploitable = None
    if options.exploitability:
        exploitable = exploitability(agent, workers=options.workers, show_progress=True)
        print(f"exploitability: {exploitable:.4f}")
    print()
    print(leaderboard(agent.name, pairwise, exploitable))


if __name__ == "__main__":
    main(tyro.cli(Options))
