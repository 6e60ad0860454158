"""play.py, driven through its standard input like a person at a terminal."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fivethousand_rl import play
from fivethousand_rl.agents import terminal
from fivethousand_rl.envs.driver import DEFAULT_MAX_TURNS
from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.render import render_text
from fivethousand_rl.envs.rules import Rules, action_for

ROOT = Path(__file__).resolve().parent.parent
BANK_ELSE_ROLL = "b\nr\n" * 1500  # bank when allowed, else roll on with the best hold


def run_play(*args, stdin=""):
    return subprocess.run(
        [sys.executable, str(ROOT / "play.py"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_a_whole_game_through_stdin_and_its_replay(tmp_path):
    log = tmp_path / "log.json"
    result = run_play(
        "--opponents", "smart", "--seed", "3", "--log", str(log), stdin=BANK_ELSE_ROLL
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Your roll: [" in out and "smart (seat 1) rolled [" in out
    assert "Game over after" in out and "Traceback" not in out + result.stderr
    data = json.loads(log.read_text())
    assert data["players"] == ["you", "smart (seat 1)"]
    # The replay goes through the engine again and reaches the same end.
    replayed = run_play("--replay", str(log))
    assert replayed.returncode == 0
    assert replayed.stdout.strip().splitlines()[-1] == out.strip().splitlines()[-2]


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("hello", "unknown command 'hello'; type 'help'"),
        ("99", "there are choices 1 to"),
        ("", "type a choice number, or 'help'"),
        ("r 7", "dice are written as digits 1 to 6"),
        ("r 66", "the roll [1 2 2 3 4] has no [6 6]"),
        ("r66", "the roll [1 2 2 3 4] has no [6 6]"),
        ("r x1", "dice are written as digits"),
        ("r ²", "dice are written as digits"),
        ("r²", "dice are written as digits"),
        ("²", "unknown command '²'; type 'help'"),
        ("١", "unknown command '١'; type 'help'"),
        ("rx", "unknown command 'rx'; type 'help'"),
        ("save", "usage: save FILE"),
        ("help", "hold 1, 1 and 5, then roll the dice left"),
    ],
)
def test_bad_input_gets_a_message_and_a_new_prompt(typed, message):
    lines = []
    answers = iter([typed, "quit", ""])  # "": leave without saving
    code = play.main(
        ["--opponents", "smart", "--seed", "10"], ask=lambda _: next(answers), say=lines.append
    )
    assert code == 0
    text = "\n".join(lines)
    assert message in text and "Left the game." in text


def test_rules_are_enforced_with_reasons():
    # Seed 10: the first roll is [1 2 2 3 4]; only the ace scores.
    lines = []
    answers = iter(["b 23", "b", "r 1", "quit", ""])  # "": leave without saving
    play.main(
        ["--opponents", "smart", "--seed", "10"], ask=lambda _: next(answers), say=lines.append
    )
    assert any(line.startswith("Your roll: [1 2 2 3 4]") for line in lines)
    text = "\n".join(lines)
    assert "[2 3] cannot be held: every held die must score" in text
    assert "you can't bank 100: it is under the 500 needed to enter (R8)" in text
    assert "You held [1] and rolled on." in text


def test_hint_gives_the_optimal_choice_and_win_probability():
    lines = []
    answers = iter(["hint", "quit", ""])  # "": leave without saving
    play.main(
        ["--opponents", "optimal", "--seed", "1", "--hint"],
        ask=lambda _: next(answers),
        say=lines.append,
    )
    hints = [line for line in lines if "hint:" in line]
    assert len(hints) == 2 and "win probability" in hints[0]


def planner_folder(tmp_path: Path, nets: dict[str, tuple[Rules, int, list[int] | None]]) -> Path:
    """A checkpoints folder of untrained value nets: name -> (rules, most players,
    the table sizes its config.json says it was trained at, or None: no config)."""
    import numpy as np

    from fivethousand_rl.agents.value_net import FeatureSpec, ValueNet

    root = tmp_path / "checkpoints"
    for i, (name, (rules, most, trained)) in enumerate(nets.items()):
        spec = FeatureSpec(rules, max_players=most)
        rng = np.random.default_rng(i)
        weights = [rng.normal(0, 0.05, (spec.size, 8)), rng.normal(0, 0.5, (8, most))]
        (root / name).mkdir(parents=True)
        ValueNet(spec, weights, [np.zeros(8), np.zeros(most)]).save(root / name / "value_net.npz")
        if trained is not None:
            (root / name / "config.json").write_text(json.dumps({"players": trained}))
    return root


@pytest.mark.parametrize(
    "players, hold, found",
    [
        (2, "free", "planner-2p"),  # the first by name that serves the table
        (3, "free", "planner-3p"),  # trained at 3: preferred to planner-2p
        (4, "free", "planner-3p"),  # nobody trained at 4: the first that serves it...
        (5, "free", "planner-3p"),  # ... never one trained at 2 players only
        (6, "free", None),  # planner-2p serves up to 4 players, planner-3p up to 5
        (3, "all", "planner-all"),  # another hold rule (R5)
        (7, "all", None),
    ],
)
def test_the_shipped_planner_that_fits_the_table_is_found(tmp_path, players, hold, found):
    from fivethousand_rl.agents.value_net import shipped_planner

    root = planner_folder(
        tmp_path,
        {
            "planner-2p": (Rules(), 4, [2]),
            "planner-3p": (Rules(), 5, [3]),
            "planner-all": (Rules(hold="all"), 6, None),
            "planner-small": (Rules(target=1000, entry=300), 8, [3]),
        },
    )
    (root / "broken").mkdir()
    (root / "broken" / "value_net.npz").write_bytes(b"junk")  # skipped, never a crash
    planner = shipped_planner(players, Rules(hold=hold), root)
    assert (planner and planner.name) == found


def hint_lines(monkeypatch, root: Path | None, opponents: list[str], hint: bool = True):
    from fivethousand_rl.agents import hints
    from fivethousand_rl.agents.value_net import shipped_planner

    if root is not None:
        monkeypatch.setattr(hints, "shipped_planner", lambda n, r, _: shipped_planner(n, r, root))
    lines = []
    answers = iter(["hint", *BANK_ELSE_ROLL.split("\n")])
    flags = ["--hint"] if hint else []
    code = play.main(
        ["--opponents", *opponents, "--seed", "5", *flags],
        ask=lambda _: next(answers),
        say=lines.append,
    )
    assert code == 0 and lines[-1].startswith("Game over")
    return lines


def test_hint_for_3_players_is_a_trained_planners_estimate(tmp_path, monkeypatch):
    root = planner_folder(tmp_path, {"planner-multi": (Rules(), 8, [3, 4])})
    lines = hint_lines(monkeypatch, root, ["smart", "turn-ev"])
    hints = [line for line in lines if "hint:" in line]
    assert len(hints) > 3
    for hint in hints:
        assert "(an estimate by the trained planner planner-multi, not exact)" in hint
        odds = re.findall(r"(you|smart \(seat 1\)|turn-ev \(seat 2\)) (\d+\.\d)%", hint)
        assert [name for name, _ in odds] == ["you", "smart (seat 1)", "turn-ev (seat 2)"]
        assert sum(float(p) for _, p in odds) == pytest.approx(100, abs=0.2)
    # Advice only: the same dice and the same bots' moves as a game without hints.
    plain = hint_lines(monkeypatch, root, ["smart", "turn-ev"], hint=False)
    assert [line for line in lines if "hint:" not in line] == [
        line for line in plain if "hint:" not in line
    ]


def test_hint_without_a_fitting_planner_says_so_in_one_line(tmp_path, monkeypatch):
    root = planner_folder(tmp_path, {"planner-2p": (Rules(), 2, [2])})
    lines = hint_lines(monkeypatch, root, ["smart", "turn-ev", "smart"])
    hints = [line for line in lines if "hint:" in line]
    assert hints and set(hints) == {
        "  hint: unavailable for 4 players (no shipped planner values such a table)"
    }


def test_save_and_resume_continue_the_same_game(tmp_path):
    saved = tmp_path / "game.json"
    moves = BANK_ELSE_ROLL.split("\n")
    # Uninterrupted game.
    straight = []
    feed = iter(moves)
    play.main(
        ["--opponents", "turn-ev", "--seed", "5"], ask=lambda _: next(feed), say=straight.append
    )
    # Same inputs, saved after 6 answers and resumed.
    first = []
    feed = iter(moves[:6] + [f"save {saved}", "quit", ""])  # "": leave without saving
    play.main(["--opponents", "turn-ev", "--seed", "5"], ask=lambda _: next(feed), say=first.append)
    assert saved.is_file()
    resumed = []
    feed = iter(moves[6:])
    play.main(["--load", str(saved)], ask=lambda _: next(feed), say=resumed.append)
    assert straight[-1] == resumed[-1] and straight[-1].startswith("Game over")


def test_bots_of_every_kind_can_sit_at_the_table(tmp_path):
    result = run_play(
        "--opponents",
        "random",
        "threshold:300",
        "turn-ev",
        "--seed",
        "2",
        "--seat",
        "2",
        stdin=BANK_ELSE_ROLL,
    )
    assert result.returncode == 0 and "Game over after" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--opponents", "grandmaster"], "unknown bot 'grandmaster'"),
        (["--opponents", *["smart"] * 8], "give 1 to 7 opponents"),
        (["--seat", "5"], "--seat must be 0..1"),
        (["--load", "no-such-file.json"], "no saved game at no-such-file.json"),
        (["--replay", "no-such-log.json"], "no game log at no-such-log.json"),
        (["--delay", "-1"], "argument --delay: must be a non-negative number of seconds"),
        (["--log", "/no/such/folder/log.json"], "cannot write the game log to"),
        (["--load", "/tmp"], "is not a saved game we can resume"),
        (["--replay", "/tmp"], "is not a game log"),
    ],
)
def test_bad_arguments_are_one_clear_line(args, message):
    result = run_play(*args)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert message in result.stderr and result.stderr.strip().count("\n") == 0


def test_choices_list_every_legal_action_once():
    game = Game(2, Rules(), seed=0)
    game.state.scores = [1000, 0]
    game.roll([1, 1, 5, 2, 3])
    menu = terminal.choices(game)
    assert sorted(a for a, _ in menu) == game.legal_actions()


def test_corrupt_saves_and_logs_are_refused(tmp_path):
    save = tmp_path / "save.json"
    save.write_text(json.dumps({"format": "fivethousand-rl saved game", "game": {}}))
    with pytest.raises(ValueError, match="is not a saved game we can resume"):
        terminal.load(str(save), False, 0.0, input, print)
    log = tmp_path / "log.json"
    log.write_text(
        json.dumps(
            {
                "format": "fivethousand-rl game log",
                "rules": {},
                "players": ["a", "b"],
                "events": [{"roll": [1, 9]}],
            }
        )
    )
    with pytest.raises(ValueError, match="event 1 cannot be replayed"):
        terminal.replay(str(log), say=lambda _: None)
    log.write_text(
        json.dumps(
            {
                "format": "fivethousand-rl game log",
                "rules": {},
                "players": ["a", "b"],
                "events": [5],
            }
        )
    )
    with pytest.raises(ValueError, match="event 1 cannot be replayed"):
        terminal.replay(str(log), say=lambda _: None)


def test_saving_to_a_bad_path_is_a_message(tmp_path):
    lines = []
    answers = iter(
        ["save /no/such/dir/x.json", "save a\x00b", "quit", ""]
    )  # "": leave without saving
    play.main(
        ["--opponents", "smart", "--seed", "1"], ask=lambda _: next(answers), say=lines.append
    )
    assert sum("could not save" in line for line in lines) == 2


# ------------------------------------------------- what banking would do, said beforehand
NAMES = ["you", "smart (seat 1)"]


def _decision(scores, roll, hold="free", held=()):
    """A game where seat 0 (you) has `scores[0]` and must decide on `roll`, after
    holding `held` (pairs of roll and dice held) this turn."""
    game = Game(len(scores), Rules(hold=hold), seed=0)
    game.state.scores = list(scores)
    for earlier, dice in held:
        game.roll(earlier)
        game.act(action_for(dice, earlier, bank=False))
    game.roll(roll)
    return game


@pytest.mark.parametrize(
    ("scores", "roll", "line", "why"),
    [
        (
            [4800, 500],
            [1, 1, 1, 2, 3],
            "hold [1 1 1]     -> 1100, bank: overshoot, gift of 1100 to smart (seat 1), up to 1600",
            "R9 issue 9's trap: three 1s at 4800",
        ),
        ([4800, 4900], [1, 1, 2, 3, 4], "200, bank: you win with exactly 5000", "R9 exact"),
        ([1200, 1400], [1, 1, 2, 3, 4], "200, bank: score 1400, bumps smart (seat 1) to 0", "R9"),
        ([1200, 600], [1, 1, 2, 3, 4], "200, bank: score 1400", "R9 plain bank"),
        (
            [4800, 0],
            [3, 3, 3, 2, 4],
            "300, bank: overshoot past 5000, the 300 points are lost (nobody else has 500 or more)",
            "R9 lost: nobody qualifies",
        ),
        (
            [4800, 4800],
            [3, 3, 3, 2, 4],
            "the 300 points are lost (it would take smart (seat 1) past 5000)",
            "R9 lost: the gift would overshoot",
        ),
        (
            [4800, 4700],
            [3, 3, 3, 2, 4],
            "300, bank: overshoot, gift of 300 to smart (seat 1), who wins with 5000",
            "R9 the gift wins",
        ),
        (
            [0, 0],
            [1, 1, 5, 6, 4],
            "250, roll 2 dice  (can't bank: 250 ends in 50 and is under the 500 needed to enter)",
            "R8 R12",
        ),
        ([700, 0], [5, 2, 3, 4, 4], "50, roll 4 dice  (can't bank: 50 ends in 50)", "R8"),
        ([0, 0], [1, 2, 3, 4, 4], "100, roll 4 dice  (can't bank: 100 is under the 500", "R8"),
    ],
)
def test_each_banking_choice_says_what_it_does(scores, roll, line, why):
    menu = terminal.choices(_decision(scores, roll), NAMES)
    assert any(line in text for _, text in menu), (why, menu)
    # Every legal action is listed once, and only banking lines say what banking does.
    game = _decision(scores, roll)
    assert sorted(a for a, _ in menu) == game.legal_actions()
    for action, text in menu:
        assert (", bank: " in text) == bool(action & 32), text


def test_the_4800_trap_is_announced_at_the_terminal():
    game = _decision([4800, 500], [1, 1, 1, 2, 3])
    lines = []
    session = terminal.Session(game, ["you", "smart"], 0, 1, ask=lambda _: "quit", say=lines.append)
    with pytest.raises(terminal.Quit):
        session.human_turn()
    assert any("bank: overshoot, gift of 1100 to smart (seat 1)" in line for line in lines)


# ------------------------------------------------- typed moves
@pytest.mark.parametrize(
    ("typed", "held", "bank"),
    [
        ("r55", [5, 5], False),
        ("r 55", [5, 5], False),
        ("r 5 5", [5, 5], False),
        ("R 1 5 5", [1, 5, 5], False),
        ("b155", [1, 5, 5], True),
        ("bank 551", [1, 5, 5], True),
        ("roll1", [1], False),
        ("b", [1, 5, 5], True),
        ("r", [1, 5, 5], False),
    ],
)
def test_moves_are_typed_with_or_without_spaces(typed, held, bank):
    game = _decision([700, 0], [1, 5, 5, 2, 3])
    roll = list(game.state.roll)
    assert terminal.parse_command(typed, game, terminal.choices(game)) == action_for(
        held, roll, bank
    )


@pytest.mark.parametrize(
    ("hold", "typed", "message"),
    [
        ("all", "r 1", "under the hold rule 'all' every scoring die must be held: here [1 1] (R5)"),
        ("all", "b 1", "every scoring die must be held"),
        ("all", "r 3", "[3] cannot be held: every held die must score"),
        ("all", "r 13", "[1 3] cannot be held: every held die must score"),
        ("free", "r 3", "[3] cannot be held: every held die must score"),
    ],
)
def test_a_refused_hold_gives_the_rule_that_refuses_it_r5(hold, typed, message):
    # Under "all", [5 5 2 3 4] forces holding [5 5]; then the roll [1 1 3].
    game = _decision([700, 0], [1, 1, 3], hold=hold, held=[([5, 5, 2, 3, 4], [5, 5])])
    with pytest.raises(ValueError, match=re.escape(message)):
        terminal.parse_command(typed, game, terminal.choices(game))


# ------------------------------------------------- grammar and one dice format
BAD_PHRASES = ["you wins", "you rolls", "you holds", "you banks", "you loses", " 1 turns", "1 dies"]


@pytest.mark.parametrize("seed", [3, 5, 8])
def test_game_and_replay_texts_are_grammatical_and_say_game_over_once(tmp_path, seed):
    log = tmp_path / "log.json"
    lines = []
    answers = iter(BANK_ELSE_ROLL.split("\n"))
    play.main(
        ["--opponents", "smart", "--seed", str(seed), "--log", str(log)],
        ask=lambda _: next(answers),
        say=lines.append,
    )
    replayed = []
    terminal.replay(str(log), say=replayed.append)
    for text in ("\n".join(lines), "\n".join(replayed)):
        assert not [p for p in BAD_PHRASES if p in text]
        assert re.search(r"\[\d,", text) is None  # dice are [1 5], never [1, 5]
        assert text.count("Game over") == 1


def test_the_first_turn_is_one_turn():
    game = Game(2, seed=0)
    game.state.scores = [4800, 4900]
    game.roll([1, 1, 2, 3, 4])
    game.act(action_for([1, 1], [1, 1, 2, 3, 4], bank=True))
    text = render_text(game, ["you", "smart"])
    assert text.startswith("Game over after 1 turn: you won.")


# ------------------------------------------------- replays of logs cut short
def _log(tmp_path):
    log = tmp_path / "log.json"
    answers = iter(BANK_ELSE_ROLL.split("\n"))
    play.main(
        ["--opponents", "smart", "--seed", "3", "--log", str(log)],
        ask=lambda _: next(answers),
        say=lambda _: None,
    )
    return json.loads(log.read_text())


@pytest.mark.parametrize(
    ("winner", "message"),
    [
        ("keep", "The log was cut short: it stops after"),
        (None, "The log stops after"),
    ],
)
def test_a_replay_of_a_log_cut_short_says_so(tmp_path, winner, message):
    data = _log(tmp_path)
    data["events"] = data["events"][:-7]
    if winner is None:
        data["winner"] = None
    path = tmp_path / "short.json"
    path.write_text(json.dumps(data))
    lines = []
    assert terminal.replay(str(path), say=lines.append) is None
    assert lines[-1].startswith(message) and "before the end of the game" in lines[-1]
    assert not any("Game over" in line for line in lines)


def test_a_replay_whose_winner_is_not_its_moves_winner_is_refused(tmp_path):
    data = _log(tmp_path)
    data["winner"] = 1 - data["winner"]
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="its moves make seat"):
        terminal.replay(str(path), say=lambda _: None)


# ------------------------------------------------- the rules command
def test_rules_command_prints_the_rules_and_this_games_house_rules():
    """Issue 43 item 2: `rules` prints the rules from their one source (envs.rules_text),
    every scoring combination (R2) and this game's switches (R5's hold rule here),
    pointing at no file the user may not have."""
    lines = []
    answers = iter(["rules", "quit", ""])  # "": leave without saving
    play.main(
        ["--opponents", "smart", "--seed", "1", "--hold", "all"],
        ask=lambda _: next(answers),
        say=lines.append,
    )
    text = "\n".join(lines)
    for words in ("three 1s score 1100", "four 5s: 1000", "five 1s: 4400", "scores 1500"):
        assert words in text  # R2
    assert "exactly 5000 wins" in text and "You must set aside every die that scores" in text
    assert "House rules in force: hold all." in text  # R5's variant
    assert "docs/" not in text and "**" not in text


def test_rules_flag_prints_them_and_exits():
    result = run_play("--rules")
    assert result.returncode == 0 and "The standard rules, with no house rules." in result.stdout
    assert "docs/rules.md" not in result.stdout


# ------------------------------------------------- issue 28: what a tester broke
def _refusal(args: list[str], capsys) -> str:
    """main's one-line refusal of `args` (exit 2, nothing played): its stderr."""
    try:
        code = play.main(args, ask=lambda _: "quit", say=pytest.fail)  # nothing may be said
    except SystemExit as e:  # argparse's own refusals exit
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # issue 28 item 11: a pause must be a non-negative finite number (argparse type).
        (["--delay", "-1"], "error: argument --delay: must be a non-negative number of seconds"),
        (["--delay", "nan"], "not 'nan'"),
        (["--delay", "inf"], "not 'inf'"),
        (["--delay", "1e999"], "not '1e999'"),  # a float too big is inf
        (["--delay", "soon"], "not 'soon'"),
        # The same spirit: a negative seed said plainly (numpy's words were "expected
        # non-negative integer"), flags a saved game has its own not silently ignored.
        (["--seed", "-4"], "error: --seed must be >= 0, not -4"),
        (["--load", "game.json", "--seat", "1"], "error: --seat is for a new game"),
        (["--load", "game.json", "--seed", "3"], "error: --seed is for a new game"),
        (["--load", "game.json", "--hold", "all"], "error: --hold is for a new game"),
    ],
)
def test_bad_flags_are_refused_in_one_line_issue_28(args, message, capsys):
    assert message in _refusal(args, capsys)


LONG = 100_000


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        # issue 28 item 11: a huge line is quoted cut to 40 characters and "...".
        ("x" * LONG, f"unknown command '{'x' * 40}...'; type 'help'"),
        (
            "r " + "1" * LONG,
            "the roll [1 2 2 3 4] has no [1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1...",
        ),
        ("save " + "a" * LONG, f"could not save to {'a' * 40}...: "),  # the OS's reason follows
    ],
)
def test_a_huge_input_line_is_not_echoed_whole_issue_28(typed, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a save, if one were written, lands here
    lines = []
    answers = iter([typed, "quit", ""])  # "": leave without saving
    play.main(
        ["--opponents", "smart", "--seed", "10"], ask=lambda _: next(answers), say=lines.append
    )
    assert any(line.startswith(f"  {message}") for line in lines), lines[-3:]
    assert max(map(len, lines)) < 200
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "stdin"),
    [(["--rules"], ""), (["--opponents", "smart", "--seed", "3"], BANK_ELSE_ROLL)],
)
def test_a_reader_that_leaves_early_ends_play_quietly_issue_28(args, stdin):
    """issue 28 item 9: `python play.py ... | head -3` ended with a BrokenPipeError
    traceback. Here the pipe's reading end is closed before play.py starts, so every
    write to it fails, as after head has left."""
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(
            [sys.executable, str(ROOT / "play.py"), *args],
            input=stdin,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (1, "")


@pytest.mark.parametrize("option", ["--replay", "--load"])
def test_a_file_nested_too_deeply_is_refused_in_one_line(tmp_path, option, capsys):
    """Issue 28 item 11: json's RecursionError on a deeply nested file is a one-line
    refusal naming the file, not a traceback."""
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert play.main([option, str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "nested too deeply" in err


# ------------------------------------------------- issue 43 item 5: leaving and again
def test_quit_offers_to_save_and_the_save_resumes(tmp_path):
    """'quit' mid-game asks for a file to save to; the game saved there resumes."""
    saved = tmp_path / "left.json"
    lines: list[str] = []
    answers = iter(["r", "quit", str(saved)])
    assert (
        play.main(
            ["--opponents", "smart", "--seed", "5"], ask=lambda _: next(answers), say=lines.append
        )
        == 0
    )
    assert saved.is_file() and any(f"saved to {saved}" in line for line in lines)
    resumed: list[str] = []
    code = play.main(["--load", str(saved)], ask=lambda _: "quit", say=resumed.append)
    assert code == 0 and "Left the game." in resumed


def test_the_end_of_a_game_offers_a_rematch_at_the_same_table_with_the_next_seed():
    """After the last bank, 'y' starts a new game against the same bots (seed + 1, so
    the same rematch for the same seed); 'n' ends."""
    lines: list[str] = []
    answers = iter(["y", "n"])

    def ask(prompt: str) -> str:
        if "again" in prompt:
            return next(answers)
        return "r"  # never banks: the bot wins each game

    assert play.main(["--opponents", "turn-ev", "--seed", "8"], ask=ask, say=lines.append) == 0
    text = "\n".join(lines)
    assert "A new game against the same bots (seed 9)." in text
    assert text.count("Game over after") == 2


def test_a_terminal_game_is_cut_off_at_the_turn_limit():
    """R11 (issue 54 item 6): a game at the terminal ends at the turn limit with no
    winner, said so, and the table is offered another game, as after a win."""
    game = Game(2, seed=0)
    data = json.loads(game.to_json())
    data["state"]["turns"] = DEFAULT_MAX_TURNS - 2  # two turns left
    game = Game.from_json(json.dumps(data), seed=0)
    lines, prompts = [], []

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return "n" if "again" in prompt else "r"  # roll on, never bank: no one can win

    session = terminal.Session(game, ["you", "smart"], 0, 1, ask=ask, say=lines.append)
    assert terminal.play_table(session) is session
    assert game.state.turns == DEFAULT_MAX_TURNS and game.state.winner is None
    assert lines[-1] == (
        f"the game was cut off after {DEFAULT_MAX_TURNS} turns, the longest a game may last: "
        "no one won"
    )
    assert "again" in prompts[-1]
