"""How fast the web app answers a bot's move (target: median <= 50 ms).

    python benchmarks/webplay_speed.py [--moves 200] [--bots smart optimal planner-2p ppo-2p]

Each bot plays 2-player games against a scripted human (bank when allowed, else roll on
with the most points) through the API (FastAPI's TestClient, in process): every bot
decision is one ``POST /api/games/{id}/step`` request, timed from request to answer,
including the engine, the bot's decision and the atomic save. Rolls are steps too, but
only the requests whose step was a bot's decision are counted. A bot's first decision
(loading a model, the solver's table) is left out: the server does it once.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastapi.testclient import TestClient  # noqa: E402

from fivethousand_rl.webplay.app import create_app  # noqa: E402
from fivethousand_rl.webplay.games import Limits  # noqa: E402

TARGET_MS = 50.0


def greedy(view: dict) -> int:
    banks = [m for m in view["moves"] if m["banks"]]
    return max(banks or view["moves"], key=lambda m: m["turn_total"])["action"]


def time_bot(client: TestClient, bot: str, moves: int, seed: int) -> list[float]:
    """Milliseconds per bot decision, over games until `moves` are timed."""
    times: list[float] = []
    warm = False
    while len(times) < moves:
        view = client.post("/api/games", json={"bots": [bot], "seed": seed}).json()
        seed += 1
        while view["status"] != "over" and len(times) < moves:
            if view["status"] == "you":
                move = {"action": greedy(view), "at": view["at"]}
                view = client.post(f"/api/games/{view['id']}/move", json=move).json()
                continue
            start = time.perf_counter()
            step = {"steps": 1, "at": view["at"]}
            view = client.post(f"/api/games/{view['id']}/step", json=step).json()
            ms = (time.perf_counter() - start) * 1000
            if view["events"][0]["kind"] in ("hold", "bank"):  # a decision, not a roll
                if warm:
                    times.append(ms)
                warm = True
    return times


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--moves", type=int, default=200, help="bot decisions timed per bot")
    p.add_argument("--bots", nargs="+", default=["smart", "optimal", "planner-2p", "ppo-2p"])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as data:
        # One client plays many games in a row: no bound per address for it.
        app = create_app(data, limits=Limits(per_address=10**6))
        client = TestClient(app, base_url="http://localhost")
        print(f"| bot | decisions | median ms | 90th pct ms | target <= {TARGET_MS:.0f} ms |")
        print("|---|---:|---:|---:|---|")
        worst = 0.0
        for bot in args.bots:
            times = time_bot(client, bot, args.moves, args.seed)
            median = statistics.median(times)
            p90 = statistics.quantiles(times, n=10)[-1]
            worst = max(worst, median)
            ok = "met" if median <= TARGET_MS else "NOT met"
            print(f"| {bot} | {len(times)} | {median:.1f} | {p90:.1f} | {ok} |")
    return 0 if worst <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
