"""evaluate.py and the tournament machinery."""

import csv
import io
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from fivethousand_rl import evaluate
from fivethousand_rl.agents import tournament as tour
from fivethousand_rl.agents import tournament_report
from fivethousand_rl.envs.rules import Rules
from tests.helpers import tiny_mlp_model

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args):
    return subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_tournament_outputs(tmp_path, capsys):
    out = tmp_path / "t"
    code = evaluate.main(
        [
            "smart",
            "threshold:350",
            "random",
            "--games",
            "60",
            "--seed",
            "3",
            "--json",
            f"{out}.json",
            "--csv",
            f"{out}.csv",
            "--plot",
            f"{out}.png",
            "--markdown",
            f"{out}.md",
        ]
    )
    assert code == 0
    summary = json.loads(Path(f"{out}.json").read_text())
    assert summary["games"] == 3 * 60  # three pairings
    by_name = {a["agent"]: a for a in summary["agents"]}
    assert set(by_name) == {"smart", "threshold:350", "random"}
    assert sum(a["wins"] for a in summary["agents"]) + summary["truncated"] == summary["games"]
    for a in summary["agents"]:
        assert a["games"] == 120
        assert a["ci95_low"] <= a["win_rate"] <= a["ci95_high"]
    assert summary["pairwise"]["smart"]["random"]["games"] == 60
    pair = (
        summary["pairwise"]["smart"]["random"]["wins"]
        + summary["pairwise"]["random"]["smart"]["wins"]
    )
    assert pair <= 60
    rows = list(csv.DictReader(Path(f"{out}.csv").read_text().splitlines()))
    assert [r["agent"] for r in rows] == ["smart", "threshold:350", "random"]
    assert Path(f"{out}.png").stat().st_size > 5000
    md = Path(f"{out}.md").read_text()
    assert md.count("\n| **") == 3 and f"{by_name['smart']['win_rate']:.1%}" in md
    printed = capsys.readouterr().out
    assert "win rate" in printed and "smart" in printed


def test_same_seed_same_results_whatever_the_workers(tmp_path):
    summaries = []
    for workers in ("1", "2"):
        path = tmp_path / f"w{workers}.json"
        assert (
            evaluate.main(
                [
                    "turn-ev",
                    "random",
                    "--games",
                    "300",
                    "--seed",
                    "5",
                    "--workers",
                    workers,
                    "--json",
                    str(path),
                ]
            )
            == 0
        )
        summaries.append(json.loads(path.read_text()))
    assert summaries[0]["agents"] == summaries[1]["agents"]


def test_seats_rotate_evenly():
    seatings = tour.schedule(3, 3, 9)
    seats = Counter((a, seat) for s in seatings for seat, a in enumerate(s.agents))
    assert set(seats.values()) == {3}  # each agent 3 times in each seat
    results = tour.run(["random", "threshold:300", "smart"], seatings, Rules(), seed=0)
    assert [r.game for r in results] == list(range(9))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["grandmaster", "random"], "unknown bot 'grandmaster'; accepted: random, threshold:T"),
        (["missing.zip", "random"], "checkpoint not found: missing.zip"),
        (["random", "--players", "3"], "3 players need at least 3 agents"),
        (["random", "smart", "--games", "0"], "--games must be positive"),
    ],
)
def test_bad_input_is_one_clear_line(args, message):
    result = run_cli(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert message in result.stderr


def test_corrupt_checkpoint_is_one_clear_line(tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    result = run_cli(str(bad), "random")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"not an SB3 checkpoint (not a zip file): {bad}" in result.stderr


def test_sb3_checkpoint_plays_in_a_tournament(tmp_path):
    model = tiny_mlp_model(hidden=16, n_steps=128)
    model.learn(256)
    path = tmp_path / "agent.zip"
    model.save(path)
    summary_path = tmp_path / "s.json"
    # Two worker processes: a parent that loaded torch must not hang its workers.
    args = [str(path), "random", "--games", "20", "--workers", "2", "--json", str(summary_path)]
    assert evaluate.main(args) == 0
    summary = json.loads(summary_path.read_text())
    assert summary["agents"][0]["games"] == 20
    # The wrong number of players for the checkpoint: one clear line before any game.
    result = run_cli(str(path), "random", "smart", "--players", "3", "--games", "3")
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "cannot play this game: it was trained for 2 players, this game has 3" in result.stderr


@pytest.mark.parametrize(
    ("wins", "n", "low", "high"),
    [
        (50, 100, 0.4038, 0.5962),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 20, 0.0089, 0.2361),
    ],
)
def test_wilson_interval(wins, n, low, high):
    lo, hi = tour.wilson_interval(wins, n)
    assert (round(lo, 4), round(hi, 4)) == (low, high)


def test_ratings_order_strong_above_weak():
    seatings = tour.schedule(2, 2, 200)
    results = tour.run(["optimal", "random"], seatings, Rules(), seed=1)
    summary = tour.summarize(["optimal", "random"], results, 2)
    strong, weak = summary["agents"]
    assert strong["rating"] > weak["rating"]
    assert strong["win_rate"] > 0.9


# ------------------------------------------------------------------ issue 9
SHIPPED_2P = ROOT / "checkpoints" / "ppo-2p" / "model.zip"


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["smart", "random", "--seed", "-1"], "--seed must be 0 or more, got -1"),
        (["smart", "random", "--players", "1"], "--players must be 2..8, got 1"),
        (["smart", "random", "--players", "9"], "--players must be 2..8, got 9"),
        (["smart", "random", "--players", "3"], "3 players need at least 3 agents, got 2"),
        (["smart", "random", "--workers", "0"], "--workers must be positive, got 0"),
        (["smart", "random", "--games", "-5"], "--games must be positive, got -5"),
        (["smart", "random", "--max-turns", "1"], "--max-turns must be at least --players"),
        (["smart", "random", "--json", "/missing/dir/x.json"], "folder /missing/dir does not"),
        (["smart", "random", "--csv", "/missing/dir/x.csv"], "--csv /missing/dir/x.csv: folder"),
        (["smart", "random", "--markdown", "/missing/x.md"], "--markdown /missing/x.md: folder"),
        (["smart", "random", "--plot", "/missing/x.png"], "--plot /missing/x.png: folder"),
        (["smart", "random", "--plot", "x.txt"], "unknown picture format 'txt'"),
        (["smart", "random", "--json", "."], "--json . is a folder, not a file"),
    ],
)
def test_bad_input_is_refused_in_one_line_before_any_game(args, message, capsys, monkeypatch):
    """Issue 9 items 5 and 6: numbers and output paths are checked before the work."""

    def no_games(*args, **kwargs):
        raise AssertionError("games were played")

    monkeypatch.setattr(tour, "run", no_games)
    assert evaluate.main(args) == 2
    assert message in one_line_error(capsys)


def test_ray_without_the_extra_is_one_clear_line(tmp_path, capsys, monkeypatch):
    """Issue 14: Ray is optional; --ray without it says how to install it."""
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as when not installed
    out = tmp_path / "s.json"
    assert evaluate.main(["smart", "random", "--ray", "--json", str(out)]) == 2
    assert "Ray is not installed: pip install -e '.[ray]'" in one_line_error(capsys)
    assert not out.exists()


def test_plot_of_0_and_100_percent_win_rates_and_outputs_after_it(tmp_path):
    """Issue 9 item 4: smart beats random 10-0 here; the Wilson bound of 100% rounded
    to 0.9999999999999999 gave matplotlib a negative error bar, and the Markdown
    written after the plot was lost."""
    args = ["smart", "random", "--games", "10", "--seed", "0"]
    paths = {option: tmp_path / f"out.{option}" for option in ("plot", "markdown", "json")}
    paths["plot"] = tmp_path / "out.png"
    for option, path in paths.items():
        args += [f"--{option}", str(path)]
    assert evaluate.main(args) == 0
    summary = json.loads(paths["json"].read_text())
    assert [a["win_rate"] for a in summary["agents"]] == [1.0, 0.0]
    for a in summary["agents"]:
        assert a["ci95_low"] <= a["win_rate"] <= a["ci95_high"]
    assert (
        paths["plot"].stat().st_size > 5000
        and "| smart | 10 | 100.0%" in paths["markdown"].read_text()
    )
    # A summary from elsewhere whose bounds cross the rate still draws (clipped bars).
    summary["agents"][0]["ci95_high"] = 0.9999999999999999
    summary["agents"][1]["ci95_low"] = 1e-17
    tournament_report.plot(summary, str(tmp_path / "again.png"))
    assert (tmp_path / "again.png").stat().st_size > 5000


def test_an_output_that_fails_does_not_lose_the_others(tmp_path, monkeypatch, capsys):
    def broken_csv(path, summary):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(evaluate, "write_csv", broken_csv)
    paths = {o: tmp_path / f"out.{o}" for o in ("json", "csv", "markdown", "png")}
    args = ["smart", "random", "--games", "4", "--json", str(paths["json"])]
    args += ["--csv", str(paths["csv"]), "--markdown", str(paths["markdown"])]
    args += ["--plot", str(paths["png"])]
    assert evaluate.main(args) == 1
    assert f"could not write {paths['csv']}: [Errno 28] No space left" in one_line_error(capsys)
    assert paths["json"].is_file() and paths["markdown"].is_file() and paths["png"].is_file()


class Named:
    """A stand-in policy: only its name matters to the labels."""

    def __init__(self, name):
        self.name = name


@pytest.mark.parametrize(
    ("specs", "short", "labels"),
    [
        (["smart", "smart"], ["smart", "smart"], ["smart", "smart#2"]),
        (
            ["checkpoints/ppo-2p/model.zip", "smart"],
            ["ppo-2p", "smart"],
            ["ppo-2p", "smart"],
        ),
        (  # one run's best and latest models: both "demo", shown by their paths
            ["runs/demo/best/model.zip", "runs/demo/latest/model.zip"],
            ["demo", "demo"],
            ["runs/demo/best/model.zip", "runs/demo/latest/model.zip"],
        ),
        (  # an exported bot named like a scripted bot
            ["bots/smart.onnx", "smart"],
            ["smart", "smart"],
            ["bots/smart.onnx", "smart"],
        ),
        (  # the same file, typed two ways: the same agent seated twice
            ["checkpoints/ppo-2p/model.zip", "./checkpoints/ppo-2p/model.zip"],
            ["ppo-2p", "ppo-2p"],
            ["ppo-2p", "ppo-2p#2"],
        ),
    ],
)
def test_agents_get_short_names_that_still_tell_them_apart(specs, short, labels):
    """Issue 9 item 11."""
    assert tournament_report.label_agents(specs, [Named(n) for n in short]) == labels


def test_a_shipped_agent_is_shown_by_its_name_and_no_table_cuts_names(tmp_path, capsys):
    out = tmp_path / "s.json"
    args = [str(SHIPPED_2P), "threshold:350", "--games", "4", "--json", str(out)]
    assert evaluate.main(args) == 0
    summary = json.loads(out.read_text())
    assert [a["agent"] for a in summary["agents"]] == ["ppo-2p", "threshold:350"]
    assert summary["agents"][0]["spec"] == str(SHIPPED_2P)
    printed = capsys.readouterr().out
    assert "ppo-2p" in printed and "threshold:350" in printed and "…" not in printed
    # A long name in a narrow terminal: printed whole, not cut or folded.
    long_name = "a-run-with-a-long-descriptive-name-seed12345"
    summary["agents"][0]["agent"] = long_name
    summary["pairwise"] = {long_name: {}, "threshold:350": {}}
    console = Console(width=40, file=io.StringIO())
    tournament_report.print_summary(console, summary)
    text = console.file.getvalue()
    assert text.count(long_name) == 3 and "…" not in text  # table, matrix row and column
    assert "threshold:350" in text


# ------------------------------------------------------------------ batched tournaments
LADDER = ["random", "threshold:350", "smart"]


def _rates(results, names):
    summary = tour.summarize(names, results, 2)
    return {a["agent"]: a for a in summary["agents"]}, summary["pairwise"]


def test_batched_and_per_game_tournaments_agree_within_their_intervals():
    # Issue 12 item 4: other dice, the same game: every win rate, overall and pairwise,
    # inside overlapping 95% intervals.
    seatings = tour.schedule(len(LADDER), 2, 1000)
    batched = tour.run(LADDER, seatings, Rules(), seed=4, batched=True)
    per_game = tour.run(LADDER, seatings, Rules(), seed=4, batched=False)
    assert [r.agents for r in batched] == [r.agents for r in per_game]  # the same schedule
    (b, b_pairs), (g, g_pairs) = _rates(batched, LADDER), _rates(per_game, LADDER)
    assert [r.winner_seat for r in batched] != [r.winner_seat for r in per_game]
    for name in LADDER:
        assert b[name]["ci95_low"] <= g[name]["ci95_high"], name
        assert g[name]["ci95_low"] <= b[name]["ci95_high"], name
        for other, cell in b_pairs[name].items():
            low, high = g_pairs[name][other]["ci95"]
            assert cell["ci95"][0] <= high and low <= cell["ci95"][1], (name, other)


def test_batched_tournament_is_reproducible_per_seed_whatever_the_workers(monkeypatch):
    monkeypatch.setattr(tour, "BLOCK", 500)  # several blocks: the workers share them
    seatings = tour.schedule(len(LADDER), 2, 600)
    one = tour.run(LADDER, seatings, Rules(), seed=9)
    assert tour.run(LADDER, seatings, Rules(), seed=9) == one
    assert tour.run(LADDER, seatings, Rules(), seed=9, workers=2) == one
    assert tour.run(LADDER, seatings, Rules(), seed=10) != one
    assert [r.game for r in one] == list(range(len(seatings)))


@pytest.mark.parametrize(("batched", "workers"), [(True, 1), (False, 1), (True, 2), (False, 2)])
def test_progress_is_told_of_every_game(monkeypatch, batched, workers):
    # Progress bars (evaluate.py) and ship.py's timing read on_progress: every path of
    # tour.run must report each finished game exactly once.
    monkeypatch.setattr(tour, "BLOCK", 50)
    seatings = tour.schedule(2, 2, 120)
    told: list[int] = []
    results = tour.run(
        ["smart", "turn-ev"],
        seatings,
        Rules(),
        seed=4,
        workers=workers,
        on_progress=told.append,
        chunk_size=50,
        batched=batched,
    )
    assert len(results) == 120 and sum(told) == 120 and all(n > 0 for n in told)


def test_batched_bots_by_name_play_per_game_exactly_as_the_plain_bots():
    # make_policy's names are the batched classes; one game at a time they are the bots
    # they extend, to the last die (the per-game path's results are unchanged).
    from fivethousand_rl.agents.scripted import RandomBot, SmartBot, ThresholdBot, TurnEVBot

    plain = [RandomBot(), ThresholdBot(350), SmartBot(), TurnEVBot()]
    names = ["random", "threshold:350", "smart", "turn-ev"]
    seatings = tour.schedule(4, 2, 40)
    expected = tour.run(plain, seatings, Rules(), seed=3, batched=False)
    assert not tour.is_batched(plain) and tour.is_batched([tour.make_policy(n) for n in names])
    assert tour.run(names, seatings, Rules(), seed=3, batched=False) == expected


def test_batched_path_refuses_an_agent_without_a_batched_side():
    from fivethousand_rl.agents.scripted import RandomBot

    seatings = tour.schedule(2, 2, 2)
    with pytest.raises(ValueError, match=r"^random has no batched side \(act_batch\)"):
        tour.run([RandomBot(), "smart"], seatings, Rules(), seed=0, batched=True)
    # Automatic: a per-game agent makes the whole tournament per game.
    assert len(tour.run([RandomBot(), "smart"], seatings, Rules(), seed=0)) == 2


@pytest.mark.parametrize(("flag", "batched"), [([], True), (["--per-game"], False)])
def test_evaluate_plays_batched_unless_asked_per_game(tmp_path, capsys, flag, batched):
    path = tmp_path / "t.json"
    args = ["smart", "turn-ev", "--games", "100", "--seed", "2", "--json", str(path)]
    assert evaluate.main(args + flag) == 0
    summary = json.loads(path.read_text())
    assert summary["batched"] is batched and summary["games"] == 100
    assert ("batched)" if batched else "per game)") in capsys.readouterr().out


def test_workers_beyond_the_cpus_are_capped_with_a_note(monkeypatch, capsys):
    """issue 28 item 11: --workers 10000 plays with the CPUs there are, and says so in
    one line (a note: the tournament still plays)."""
    monkeypatch.setattr(tour, "usable_cpus", lambda: 2)
    assert evaluate.main(["smart", "turn-ev", "--games", "4", "--workers", "10000"]) == 0
    captured = capsys.readouterr()
    assert captured.err.strip() == "note: 10000 workers asked, 2 CPUs usable here: 2 workers"
    assert "2 worker(s)" in captured.out and "10000" not in captured.out
