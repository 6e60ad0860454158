"""play.py, driven through its standard input like a person at a terminal."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import play
from envs.game import Game
from envs.rules import Rules

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
    assert "Your roll: [" in out and "smart (seat 1) rolls [" in out
    assert "Game over:" in out and "Traceback" not in out + result.stderr
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
        ("r 66", "has no 6 6"),
        ("r x1", "dice are written as digits"),
        ("r ²", "dice are written as digits"),
        ("save", "usage: save FILE"),
        ("help", "hold 1, 1 and 5, then roll the dice left"),
    ],
)
def test_bad_input_gets_a_message_and_a_new_prompt(typed, message):
    lines = []
    answers = iter([typed, "quit"])
    code = play.main(
        ["--opponents", "smart", "--seed", "1"], ask=lambda _: next(answers), say=lines.append
    )
    assert code == 0
    text = "\n".join(lines)
    assert message in text and "Left the game." in text


def test_rules_are_enforced_with_reasons():
    # Seed 10: the first roll is [1 2 2 3 4]; only the ace scores.
    lines = []
    answers = iter(["b 23", "b", "r 1", "quit"])
    play.main(
        ["--opponents", "smart", "--seed", "10"], ask=lambda _: next(answers), say=lines.append
    )
    assert any(line.startswith("Your roll: [1 2 2 3 4]") for line in lines)
    text = "\n".join(lines)
    assert "2 3 cannot be held: every held die must score" in text
    assert "you can't bank 100: you need 500 in one turn to enter" in text
    assert "You hold [1] and roll on." in text


def test_hint_gives_the_optimal_choice_and_win_probability():
    lines = []
    answers = iter(["hint", "quit"])
    play.main(
        ["--opponents", "optimal", "--seed", "1", "--hint"],
        ask=lambda _: next(answers),
        say=lines.append,
    )
    hints = [line for line in lines if "hint:" in line]
    assert len(hints) == 2 and "win probability" in hints[0]


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
    feed = iter(moves[:6] + [f"save {saved}", "quit"])
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
    assert result.returncode == 0 and "Game over:" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--opponents", "grandmaster"], "unknown bot 'grandmaster'"),
        (["--opponents", *["smart"] * 8], "give 1 to 7 opponents"),
        (["--seat", "5"], "--seat must be 0..1"),
        (["--load", "no-such-file.json"], "no saved game at no-such-file.json"),
        (["--replay", "no-such-log.json"], "no game log at no-such-log.json"),
        (["--delay", "-1"], "--delay must be >= 0"),
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
    menu = play.choices(game)
    assert sorted(a for a, _ in menu) == game.legal_actions()


def test_corrupt_saves_and_logs_are_refused(tmp_path):
    save = tmp_path / "save.json"
    save.write_text(json.dumps({"format": "fivethousand-rl saved game", "game": {}}))
    with pytest.raises(ValueError, match="is not a saved game we can resume"):
        play.load(str(save), False, 0.0, input, print)
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
        play.replay(str(log), say=lambda _: None)
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
        play.replay(str(log), say=lambda _: None)


def test_saving_to_a_bad_path_is_a_message(tmp_path):
    lines = []
    answers = iter(["save /no/such/dir/x.json", "save a\x00b", "quit"])
    play.main(
        ["--opponents", "smart", "--seed", "1"], ask=lambda _: next(answers), say=lines.append
    )
    assert sum("could not save" in line for line in lines) == 2
