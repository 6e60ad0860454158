"""The web server's memory through hints at many tables (issue 42 item 2).

    python benchmarks/webplay_memory.py [--tables 336] [--save rss.json]
                                        [--plot rss.png [--before old.json]]

The server (``python -m fivethousand_rl.webplay``, a process of its own on a free loopback port, a
temporary data folder) is sent, for each table of 2 to 4 scripted bots (smart, turn-ev,
threshold:350, random, in every order: 16 + 64 + 256 = 336 tables, the issue's count), a
new game, then `--decisions` (10) of the human's decisions, each with its hint (at 3+
players a planner is built for the table, and its caches grow as it is used) and the
hinted move, the bots playing between them, and a DELETE. The server's resident memory
(VmRSS) is read before, after every table and after 10 s idle; the figures printed are
the start, the peak, the end and the idle RSS in MB (target: the peak under 600 MB;
the issue measured 103 MB rising to 908 MB, 930 MB idle, before the catalogue's work
was LRU-bounded). `--save` writes the readings as JSON; `--plot` draws them, beside
those of another run (`--before`, the same script's `--save` on other code).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from webplay_load import Client, running  # noqa: E402

BOTS = ("smart", "turn-ev", "threshold:350", "random")
TARGET_MB = 600


def rss_mb(pid: int) -> float:
    """The resident memory of process `pid` in MB (Linux's /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def tables(count: int) -> list[list[str]]:
    """The first `count` tables of 2, then 3, then 4 scripted bots, in every order."""
    every = [list(t) for n in (2, 3, 4) for t in itertools.product(BOTS, repeat=n)]
    return every[:count]


def hints_at(client: Client, table: list[str], seed: int, decisions: int) -> int:
    """A game at `table`: up to `decisions` of the human's decisions, each with its hint
    asked and its hinted move played (the bots playing between them), then deleted; the
    number of hints that were available."""
    view = client.ask("POST", "/api/games", {"bots": table, "seed": seed})
    available = 0
    for _ in range(decisions):
        while view["status"] == "wait":
            view = client.ask("POST", f"/api/games/{view['id']}/step", {"steps": 1000})
        if view["status"] != "you":
            break
        hint = client.ask("GET", f"/api/games/{view['id']}/hint")
        available += bool(hint["available"])
        action = hint["action"] if hint["available"] else view["moves"][0]["action"]
        move = {"action": action, "at": view["at"]}
        view = client.ask("POST", f"/api/games/{view['id']}/move", move)
    client.ask("DELETE", f"/api/games/{view['id']}")
    return available


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", type=int, default=336, help="tables hinted at (1..336)")
    p.add_argument("--decisions", type=int, default=10, help="hinted decisions per table")
    p.add_argument("--idle", type=float, default=10.0, help="seconds idle before the last read")
    p.add_argument("--save", type=Path, help="write the readings to this .json")
    p.add_argument("--plot", type=Path, help="also draw the RSS per table to this .png")
    p.add_argument("--before", type=Path, help="a --save of another run, drawn beside")
    args = p.parse_args(argv)
    if not 1 <= args.tables <= 336:
        p.error(f"--tables must be 1..336, got {args.tables}")
    for option, path in (("--plot", args.plot), ("--save", args.save)):
        if path is not None and not path.parent.is_dir():
            p.error(f"{option}: no folder {path.parent}")
    before = None
    if args.before is not None:
        try:
            before = json.loads(args.before.read_text())
        except (OSError, ValueError) as e:
            p.error(f"--before {args.before}: {e}")
    with running("ours") as (proc, port):
        client = Client(port)
        client.ask("GET", "/api/bots")
        readings = [rss_mb(proc.pid)]
        hints = 0
        began = time.monotonic()
        for i, table in enumerate(tables(args.tables)):
            hints += hints_at(client, table, i, args.decisions)
            readings.append(rss_mb(proc.pid))
            if (i + 1) % 16 == 0 or i + 1 == args.tables:
                print(
                    f"{i + 1}/{args.tables} tables, {time.monotonic() - began:.0f} s: "
                    f"RSS {readings[-1]:.0f} MB (peak {max(readings):.0f})",
                    file=sys.stderr,
                )
        time.sleep(args.idle)
        idle = rss_mb(proc.pid)
    start_mb, peak, end = readings[0], max(readings), readings[-1]
    print(f"| tables | hints | start MB | peak MB | end MB | idle MB ({args.idle:g} s) |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.tables} | {hints} | {start_mb:.0f} | {peak:.0f} | {end:.0f} | {idle:.0f} |")
    ok = "met" if peak < TARGET_MB else "NOT met"
    print(f"\npeak {peak:.0f} MB (target < {TARGET_MB} MB: {ok})")
    if args.save is not None:
        args.save.write_text(json.dumps({"readings": readings, "idle": idle}))
    if args.plot is not None:
        from fivethousand_rl.agents.base import figure

        with figure(args.plot, figsize=(7, 3.5)) as (_, ax):
            if before is not None:
                old = before["readings"]
                ax.plot(range(len(old)), old, label=f"{args.before.stem} (--before)")
            ax.plot(range(len(readings)), readings, label="this code")
            ax.axhline(TARGET_MB, color="grey", linestyle="--", label=f"target {TARGET_MB} MB")
            ax.set_xlabel("tables hinted at (2, then 3, then 4 scripted bots)")
            ax.set_ylabel("MB")
            ax.legend()
        print(f"plot: {args.plot}")
    return 0 if peak < TARGET_MB else 1


if __name__ == "__main__":
    sys.exit(main())
