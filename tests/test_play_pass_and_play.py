"""Pass and play at the terminal (issue 43 item 4): two or more people at one keyboard
(``--humans``), each at their own seat (``--seat``), with bots in the other seats or
none. Seats play in seat order (RULES.md R11), so each decision is one person's: the
header and the prompt name them, and their hint is for their own seat."""

import json
import shlex

import pytest

from fivethousand_rl import play
from fivethousand_rl.agents import make_policy, terminal
from fivethousand_rl.agents.optimal import OptimalBot
from fivethousand_rl.envs.i18n import percent
from fivethousand_rl.envs.render import action_text
from tests.test_play import planner_folder

MOVES = ["b", "r"] * 1500  # bank when allowed, else roll on with the best hold
HEADER = ": your turn (pass the keyboard)."


@pytest.fixture
def sessions(monkeypatch) -> list[terminal.Session]:
    """Every Session that play.main makes (a new game, a rematch, a resumed save)."""
    made: list[terminal.Session] = []
    init = terminal.Session.__init__

    def record(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(terminal.Session, "__init__", record)
    return made


class Table:
    """Scripted people at one keyboard: answers each prompt from `moves`, and checks
    that the prompt names the person whose seat the engine says is to move."""

    def __init__(self, sessions: list[terminal.Session], seats: dict[str, int], moves=MOVES):
        self.sessions, self.seats, self.moves = sessions, seats, iter(moves)
        self.transcript: list[str] = []  # said lines and prompts, in order
        self.rematches: list[str] = []  # the rematch questions asked
        self.again = iter([])  # the answers to them (then "n")

    def say(self, line: str) -> None:
        self.transcript.append(line)

    def ask(self, prompt: str) -> str:
        self.transcript.append(prompt)
        if "again" in prompt:
            self.rematches.append(prompt)
            return next(self.again, "n")
        if prompt.startswith("Save the game before leaving?"):  # after 'quit'
            return next(self.moves)
        name = prompt.removesuffix("> ")
        game = self.sessions[-1].game
        assert prompt.endswith("> ") and name in self.seats, prompt
        assert game.state.current == self.seats[name], (name, game.state.current)
        return next(self.moves)

    def check_headers(self) -> None:
        """A header names the person before each run of their prompts, and only when
        the keyboard changes hands."""
        holder, headers = None, 0
        for line in self.transcript:
            if line.endswith(HEADER):
                name = line.removesuffix(HEADER)
                assert name != holder and name in self.seats, line
                holder, headers = name, headers + 1
            elif line.endswith("> ") and "again" not in line:
                assert line == f"{holder}> ", (line, holder)
            elif "A new game" in line:
                holder = None  # a new game: its first decision is announced
        assert headers >= 2


def test_two_people_and_a_bot_play_to_the_end_and_again(sessions, tmp_path):
    """Ann at seat 2, Bob at seat 0 and a bot at seat 1 (the seat left): the turns go
    Bob, bot, Ann (R11); every decision is asked of its seat's person, told with the
    same line as a bot's; the log names the people and replays; a rematch keeps the
    same people at the same seats."""
    log = tmp_path / "log.json"
    table = Table(sessions, {"Ann": 2, "Bob": 0})
    table.again = iter(["y"])
    argv = ["--humans", "Ann", "Bob", "--seat", "2", "0", "--opponents", "smart"]
    argv += ["--seed", "3", "--log", str(log)]
    assert play.main(argv, ask=table.ask, say=table.say) == 0
    text = "\n".join(table.transcript)
    assert table.transcript[0] == (
        "5000: Bob and Ann (pass and play) against smart (seed 3). Type 'help' for commands."
    )
    assert table.rematches == ["Play again at the same table? (y/n) "] * 2
    assert "A new game at the same table (seed 4)." in text
    assert text.count("Game over after") == 2
    assert "Ann rolled [" in text and "Bob rolled [" in text and "smart (seat 1) rolled [" in text
    assert "You held" not in text and "\nyou " not in text
    table.check_headers()
    assert [s.players for s in sessions] == [["Bob", "smart", "Ann"]] * 2
    assert [s.humans for s in sessions] == [[2, 0]] * 2
    data = json.loads(log.read_text())
    assert data["players"] == ["Bob", "smart (seat 1)", "Ann"]
    replayed: list[str] = []
    assert terminal.replay(str(log), say=replayed.append) == sessions[-1].game.state.winner
    assert replayed[-1] == [line for line in table.transcript if "Game over" in line][-1]


def test_people_only_play_to_the_end_with_their_own_hints(sessions, monkeypatch, tmp_path):
    """Three people and no bot: a table of 3 (R11), its hints the planner's estimate
    for the seat to move; the exact best response to a table of bots is never asked
    for (the others are people, not bots)."""
    from fivethousand_rl.agents import hints
    from fivethousand_rl.agents.value_net import shipped_planner
    from fivethousand_rl.envs.rules import Rules

    root = planner_folder(tmp_path, {"planner-multi": (Rules(), 8, [3])})
    monkeypatch.setattr(hints, "shipped_planner", lambda n, r, _: shipped_planner(n, r, root))
    monkeypatch.setattr(hints, "cached_best_response", lambda *_: pytest.fail("best response"))
    table = Table(sessions, {"Ann": 0, "Bob": 1, "Cy": 2})
    argv = ["--humans", "Ann", "Bob", "Cy", "--seed", "2", "--hint"]
    assert play.main(argv, ask=table.ask, say=table.say) == 0
    assert table.transcript[0] == (
        "5000: Ann, Bob and Cy (pass and play, seed 2). Type 'help' for commands."
    )
    assert sessions[0].policies == {} and sessions[0].game.n_players == 3
    hints = [line for line in table.transcript if "hint:" in line]
    assert hints and all("win chances then: Ann " in h and ", Cy " in h for h in hints)
    assert table.transcript[-2].startswith("Game over after")  # then: play again?
    table.check_headers()


def test_each_persons_hint_is_the_optimal_advice_for_their_own_seat(sessions):
    """Two people, no bot: at each decision the hint is OptimalBot's best action and its
    win probability for the seat to move (its values are from the mover's view), Ann's
    at seat 0 and Bob's at seat 1 alike."""
    bot = OptimalBot()
    expected: list[str] = []
    seen: set[int] = set()
    decisions: set[tuple[int, int]] = set()
    table = Table(sessions, {"Ann": 0, "Bob": 1})
    answer = table.ask

    def ask(prompt: str) -> str:
        decision = (len(sessions), len(sessions[-1].log))
        if prompt.endswith("> ") and decision not in decisions:  # not a prompt again
            decisions.add(decision)
            game = sessions[-1].game
            values = bot.action_values(game)
            best = max(values, key=values.__getitem__)
            advice = action_text(best, game.state.roll, advice=True)
            expected.append(f"hint: {advice} (win probability {percent(values[best])} with")
            seen.add(game.state.current)
        return answer(prompt)

    argv = ["--humans", "Ann", "Bob", "--seed", "1", "--hint"]
    assert play.main(argv, ask=ask, say=table.say) == 0
    hints = [line.strip() for line in table.transcript if "hint:" in line]
    assert len(hints) == len(expected) > 4 and seen == {0, 1}
    for hint, want in zip(hints, expected, strict=True):
        assert hint.startswith(want), (hint, want)


# ------------------------------------------------------------------ one-line refusals
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--humans", "Ann"], "--humans names the people at this keyboard, 2 or more"),
        (["--humans", "Ann", "ann"], "--humans: 'ann' is given twice"),
        (["--humans", "Ann", "  "], "--humans: a name cannot be empty"),
        (["--humans", "Ann", "x" * 25], "is longer than 24 characters"),
        (["--humans", "Ann", "B\tob"], "--humans: 'B\\tob' has a character that cannot be shown"),
        (["--humans", "Ann", "You"], "'you' is the single player's name"),
        (["--humans", *"ABCDEFGHI"], "give at most 8 players in all, not 9 (9 people, 0 bots)"),
        (["--humans", "A", "B", "--opponents", *["smart"] * 7], "not 9 (2 people, 7 bots)"),
        (["--humans", "A", "B", "--seat", "0"], "--seat gives 1 seat for 2 people"),
        (["--humans", "A", "B", "--seat", "1", "1"], "--seat gives a seat twice"),
        (["--humans", "A", "B", "--seat", "0", "2"], "--seat must be 0..1"),
        (["--humans", "A", "B", "--opponents", "x", "--seat", "0", "3"], "--seat must be 0..2"),
        (["--seat", "0", "1"], "--seat gives 2 seats for one person at the keyboard"),
        (["--humans", "A", "B", "--opponents", "grandmaster"], "unknown bot 'grandmaster'"),
        (["--load", "g.json", "--humans", "A", "B"], "error: --humans is for a new game"),
    ],
)
def test_a_bad_table_is_refused_in_one_line(args, message, capsys):
    try:
        code = play.main(args, ask=lambda _: pytest.fail("asked"), say=pytest.fail)
    except SystemExit as e:  # argparse's own refusals exit
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert message in err, err


# ------------------------------------------------------------------ saves
def _saved(sessions, tmp_path, argv, seats, answers: int) -> tuple[dict, str, Table]:
    """Play `answers` moves of a new game, save it; the save and its resume command."""
    path = tmp_path / "game.json"
    table = Table(sessions, seats, MOVES[:answers] + [f"save {path}", "quit", ""])
    assert play.main(argv, ask=table.ask, say=table.say) == 0
    said = [line for line in table.transcript if "saved to" in line]
    assert len(said) == 1 and "Left the game." in table.transcript
    return json.loads(path.read_text()), said[0].split("resume with: ")[1], table


PEOPLE = ["--humans", "Ann", "Bob", "--seat", "2", "0", "--opponents", "turn-ev"]
SEATS = {"Ann": 2, "Bob": 0}


def test_a_pass_and_play_game_saves_as_version_2_and_resumes_with_its_command(sessions, tmp_path):
    """The save names the people at their seats (version 2); the command it prints
    resumes the same game with the same people at the same seats, to the same end as
    the game played without a break."""
    argv = [*PEOPLE, "--seed", "5"]
    straight = Table(sessions, SEATS)
    assert play.main(argv, ask=straight.ask, say=straight.say) == 0
    data, command, _ = _saved(sessions, tmp_path, argv, SEATS, 7)
    assert data["version"] == 2 and data["humans"] == [2, 0] and "human" not in data
    assert data["players"] == ["Bob", "turn-ev", "Ann"]
    words = shlex.split(command)
    assert words == ["python", "play.py", "--load", str(tmp_path / "game.json")]
    resumed = Table(sessions, SEATS, MOVES[7:])
    assert play.main(words[2:], ask=resumed.ask, say=resumed.say) == 0
    assert sessions[-1].players == ["Bob", "turn-ev", "Ann"] and sessions[-1].humans == [2, 0]
    assert resumed.transcript[-2].startswith("Game over")  # then the rematch question
    assert resumed.transcript[-2] == straight.transcript[-2]
    resumed.check_headers()


def test_a_single_players_save_is_version_1_and_still_loads(sessions, tmp_path):
    """One person: the save is version 1 as before ("human", "you" at that seat), which
    this play.py (and an older one) reads; the game plays on to the end."""
    argv = ["--opponents", "smart", "--seat", "1", "--seed", "4"]
    path = tmp_path / "game.json"
    feed = iter(MOVES[:5] + [f"save {path}", "quit", ""])
    assert play.main(argv, ask=lambda _: next(feed), say=lambda _: None) == 0
    data = json.loads(path.read_text())
    assert (data["version"], data["human"], data["players"]) == (1, 1, ["smart", "you"])
    assert "humans" not in data
    lines: list[str] = []
    feed = iter(MOVES)
    assert play.main(["--load", str(path)], ask=lambda _: next(feed, "n"), say=lines.append) == 0
    assert sessions[-1].humans == [1] and not sessions[-1].several
    assert any(line.startswith("Game over") for line in lines)
    assert any(line.startswith("You held") for line in lines)


@pytest.fixture
def v2_save(sessions, tmp_path) -> dict:
    return _saved(sessions, tmp_path, [*PEOPLE, "--seed", "6"], SEATS, 5)[0]


class _Spy:
    """make_policy that records every spec; a model file is played by smart unopened."""

    def __init__(self) -> None:
        self.specs: list[str] = []

    def __call__(self, spec: str):
        self.specs.append(spec)
        return make_policy("smart" if terminal.is_model(spec) else spec)


def _resume(tmp_path, monkeypatch, data: dict, *flags: str):
    spy = _Spy()
    monkeypatch.setattr(terminal, "make_policy", spy)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    out: list[str] = []
    code = play.main(["--load", str(path), *flags], ask=lambda _: "quit", say=out.append)
    return code, out, spy.specs


def test_a_pass_and_play_save_never_opens_a_model_by_itself(v2_save, tmp_path, monkeypatch, capsys):
    """issue 28 item 1 with several people: a model seat is refused until the user names
    it again with --opponents (the bot seats only, in seat order)."""
    data = {**v2_save, "players": ["Bob", "evil.zip", "Ann"]}
    code, out, specs = _resume(tmp_path, monkeypatch, data)
    err = capsys.readouterr().err
    assert (code, out, specs) == (2, [], []) and "pass --opponents" in err
    assert err.count("\n") == 1
    code, out, specs = _resume(tmp_path, monkeypatch, data, "--opponents", "evil.zip")
    assert (code, specs, out[-1]) == (0, ["evil.zip"], "Left the game.")
    holder = data["players"][data["game"]["state"]["current"]]  # a decision of a person's
    assert f"{holder}: your turn (pass the keyboard)." in out
    code, out, specs = _resume(tmp_path, monkeypatch, data, "--opponents", "a", "b")
    err = capsys.readouterr().err
    assert (code, out, specs) == (2, [], [])
    assert "--opponents names 2 players, the save has 1 bot seat (evil.zip)" in err


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"humans": [0]}, "humans must be a list of 2 or more distinct seats (0..2)"),
        ({"humans": [0, 0]}, "humans must be a list of 2 or more distinct seats"),
        ({"humans": [0, 3]}, "humans must be a list of 2 or more distinct seats"),
        ({"humans": [0, True]}, "humans must be a list of 2 or more distinct seats"),
        ({"humans": "0 2"}, "humans must be a list of 2 or more distinct seats"),
        ({"players": ["", "turn-ev", "Ann"]}, "the people's names: a name cannot be empty"),
        ({"players": ["ann", "turn-ev", "Ann"]}, "the people's names: 'ann' is given twice"),
        ({"players": [" Bob", "turn-ev", "Ann"]}, "a name has spaces around it"),
        ({"players": ["Bob", "grandmaster", "Ann"]}, "unknown bot 'grandmaster'"),
        ({"human": 0}, "unknown field 'human'"),
        ({"version": 1}, "missing field 'human'"),
        ({"version": 3}, "version 3: this play.py reads version 1 or 2"),
        ({"log": []}, "its log does not lead to its game"),
    ],
)
def test_a_corrupt_pass_and_play_save_is_refused_in_one_line(v2_save, tmp_path, edit, message):
    path = tmp_path / "edited.json"
    path.write_text(json.dumps({**v2_save, **edit}))
    with pytest.raises(ValueError) as err:
        terminal.load(str(path), False, 0.0, input, lambda _: None)
    text = str(err.value)
    assert text.startswith(f"{path} is not a saved game we can resume (")
    assert message in text and "\n" not in text, text
