"""The JavaScript port's game steps (ports/js/fivethousand.mjs: newGame, rollDice,
applyAction) are the engine's: games of envs.game.Game recorded event by event, under
the standard rules and each house rule and at several table sizes, replayed through
them under Node give the same state after every step, the same busts and the same
banking outcomes (bumps, gifts, overshoots lost, wins), exactly."""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fivethousand_rl.agents.exporting import rules_section
from fivethousand_rl.envs.game import DECIDE, Game, Moved, Rolled
from fivethousand_rl.envs.rules import Rules

ROOT = Path(__file__).resolve().parent.parent
JS_PORT = ROOT / "ports" / "js" / "fivethousand.mjs"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (apt install nodejs)")

TABLES = {
    "standard, 2 players": (Rules(), 2, 40),
    "hold all, 3 players": (Rules(hold="all"), 3, 20),
    "no bump, overshoot lost, 4 players": (Rules(bump=False, overshoot="lost"), 4, 20),
    "no 50 rule, entry 350, target 3000": (Rules(fifty_rule=False, entry=350, target=3000), 2, 30),
    "gifts among 5": (Rules(target=2000, entry=300), 5, 30),
    "6 players (policy-6p's table)": (Rules(), 6, 12),
}

# Replays each game's record: after every step, the state and the event as the engine
# records them (a banking outcome in fivethousand_rl.envs.game.BankOutcome's fields).
REPLAY = """
import { readFileSync } from "node:fs";
const [port, path] = process.argv.slice(1);
const { newGame, rollDice, applyAction, GameError } = await import(port);
const { rules, games } = JSON.parse(readFileSync(path, "utf8"));
const outcome = (b) => b === null ? null : {
  scores: b.scores, winner: b.winner, bumped: b.bumped, overshoot: b.overshoot,
  gift_to: b.giftTo, lost_candidate: b.lostCandidate,
};
const out = games.map((g) => {
  let state = newGame(g.players, g.first);
  return g.steps.map((step) => {
    const done = "dice" in step
      ? rollDice(state, step.dice, rules)
      : applyAction(state, step.action, rules);
    state = done.state;
    const e = done.event;
    const event = e.kind === "rolled"
      ? { seat: e.seat, dice: e.dice, bust: e.bust, turn_total: e.turn_total }
      : { seat: e.seat, roll: e.roll, action: e.move.action, held: e.move.held,
          points: e.move.points, turn_total: e.move.total, dice_left: e.move.diceLeft,
          bank: outcome(e.move.bank) };
    return { state, event };
  });
});
// refusals: a roll out of turn, too many dice, an illegal action
const refused = [];
const start = newGame(2);
for (const f of [() => applyAction(start, 1, rules), () => rollDice(start, [1, 2], rules),
                 () => applyAction(rollDice(start, [1, 2, 3, 4, 6], rules).state, 3, rules)]) {
  try { f(); refused.push(null); }
  catch (e) { refused.push(e instanceof GameError ? e.message : String(e)); }
}
console.log(JSON.stringify({ out, refused }));
"""


def engine_event(event: Rolled | Moved) -> dict:
    if isinstance(event, Rolled):
        return {
            "seat": event.seat,
            "dice": list(event.dice),
            "bust": event.bust,
            "turn_total": event.turn_total,
        }
    move, bank = event.move, event.move.bank
    return {
        "seat": event.seat,
        "roll": list(event.roll),
        "action": move.action,
        "held": list(move.held),
        "points": move.points,
        "turn_total": move.turn_total,
        "dice_left": move.dice_left,
        "bank": None
        if bank is None
        else {
            "scores": list(bank.scores),
            "winner": bank.winner,
            "bumped": list(bank.bumped),
            "overshoot": bank.overshoot,
            "gift_to": bank.gift_to,
            "lost_candidate": bank.lost_candidate,
        },
    }


def recorded_games(rules: Rules, players: int, count: int) -> list[dict]:
    """`count` whole games (seeded dice, random play leaning to bank, so that scores
    climb to the bumps, gifts and overshoots), every step with the state after it."""
    rng = np.random.default_rng(players)
    games = []
    for g in range(count):
        first = g % players
        game = Game(players, rules, seed=g, first_player=first)
        steps = []
        while not game.over:
            if game.state.phase == DECIDE:
                legal = game.legal_actions()
                banks = [a for a in legal if a >= 32]
                action = int(rng.choice(banks if banks and rng.random() < 0.6 else legal))
                game.act(action)
                step = {"action": action}
            else:
                game.roll()
                step = {"dice": list(game.last_event.dice)[::-1]}  # any order is taken
            step["state"] = game.state.to_dict()
            step["event"] = engine_event(game.last_event)
            steps.append(step)
        games.append({"players": players, "first": first, "steps": steps})
    return games


def replayed(rules: Rules, games: list[dict], folder: Path) -> dict:
    path = folder / "games.json"
    record = [{k: g[k] for k in ("players", "first")} | {"steps": g["steps"]} for g in games]
    path.write_text(json.dumps({"rules": rules_section(rules), "games": record}))
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", REPLAY, JS_PORT.as_uri(), str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("table", TABLES)
def test_the_js_steps_replay_engine_games_exactly(table, tmp_path):
    rules, players, count = TABLES[table]
    games = recorded_games(rules, players, count)
    got = replayed(rules, games, tmp_path)
    for g, (game, out) in enumerate(zip(games, got["out"], strict=True)):
        assert len(out) == len(game["steps"])
        for i, (step, js) in enumerate(zip(game["steps"], out, strict=True)):
            assert js["state"] == step["state"], (table, g, i)
            assert js["event"] == step["event"], (table, g, i)
    assert all(got["refused"]), got["refused"]
    # the games reached what the steps decide: busts, hot dice, banks, and the table's
    # bumps, gifts and lost overshoots
    events = [s["event"] for game in games for s in game["steps"]]
    banks = [e["bank"] for e in events if e.get("bank")]
    assert any(e.get("bust") and e["turn_total"] for e in events)
    assert any(e.get("dice_left") == 5 for e in events)  # hot dice
    assert all(game["steps"][-1]["state"]["phase"] == "over" for game in games)
    if rules.bump and players > 2:
        assert any(b["bumped"] for b in banks)
    if rules.overshoot == "gift" and players > 2:
        assert any(b["gift_to"] is not None for b in banks)
    assert any(b["overshoot"] and b["gift_to"] is None for b in banks)
