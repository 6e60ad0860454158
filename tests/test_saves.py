"""Saved games (play.py `save FILE` / `--load FILE`, ``Game.from_json``): every field is
checked on load; a corrupt save is refused in one line naming the file, and anything
that loads can be played on to the end (RULES.md R4-R11)."""

import contextlib
import copy
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fivethousand_rl import play
from fivethousand_rl.agents import make_policy, terminal
from fivethousand_rl.envs.game import OVER, ROLL, Game, state_problem

# Bank when allowed, else roll on with the best hold.
MOVES = ["b", "r"] * 400


@pytest.fixture(scope="module")
def valid_save(tmp_path_factory) -> dict:
    """A save made mid-game by play.py itself (seed 4: a few turns in, a decision due)."""
    path = tmp_path_factory.mktemp("saves") / "game.json"
    feed = iter(MOVES[:9] + [f"save {path}", "quit", ""])  # "": leave without saving
    play.main(["--opponents", "smart", "--seed", "4"], ask=lambda _: next(feed), say=lambda _: None)
    data = json.loads(path.read_text())
    assert data["game"]["state"]["phase"] == "decide" and data["log"]
    return data


def _load(tmp_path, data) -> terminal.Session:
    path = tmp_path / "edited.json"
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return terminal.load(str(path), False, 0.0, input, lambda _: None)


def _play_on(session: terminal.Session) -> None:
    """Play the loaded game on: bank when allowed, else roll; quit after MOVES."""
    feed = iter(MOVES)
    session.ask = lambda _: next(feed, "quit")
    with contextlib.suppress(terminal.Quit):  # out of moves: the player left
        session.play()
    assert state_problem(session.game.state, session.game.rules) == ""


def test_a_valid_save_loads_and_plays_to_the_end(tmp_path, valid_save):
    session = _load(tmp_path, valid_save)
    _play_on(session)
    assert session.game.state.phase == OVER


def _set(data, path, value):
    out = copy.deepcopy(data)
    where = out
    for key in path[:-1]:
        where = where[key]
    if value is DELETE:
        del where[path[-1]]
    else:
        where[path[-1]] = value
    return out


DELETE = object()


# The corrupt saves of issue 9, and their like: (where, new value, part of the message).
CORRUPT = [
    (("dice", "codes"), ["1"] * 1024, "codes must be integers in 0..7775, not '1'"),
    (("dice", "codes"), [2.0] * 1024, "codes must be integers in 0..7775, not 2.0"),
    (("dice", "codes"), [-3] * 1024, "codes must be integers in 0..7775, not -3"),
    (("dice", "next"), -1, "next must be an integer in 0..1024, not -1"),
    (("dice", "rng", "state", "state"), -1, "PCG64 state must be an integer"),
    (("version",), 99, "version 99: this play.py reads version 1"),
    (("version",), "1", "version '1'"),
    (("version",), True, "version True"),
    (("game", "state", "held"), [[2]], "held dice [2] do not all score (R2)"),
    (("game", "state", "scores"), [700.5, 0], "scores must be a list of ints"),
    (("game", "state", "dice_left"), 1, "dice_left 1"),
    (("game", "rules", "hold"), "most", "hold must be one of"),
    (("game",), [], "a saved game is an object with 'rules' and 'state'"),
    (("players",), ["you"], "players must be a list of 2 names"),
    (("players",), ["you", 7], "players must be a list of 2 names"),
    (("players",), ["you", "grandmaster"], "unknown bot 'grandmaster'"),
    (("players",), ["you", "you"], "exactly one seat is 'you'"),
    (("human",), 1, "human must be the seat (0..1) whose player is 'you'"),
    (("human",), -1, "human must be the seat"),
    (("human",), 0.0, "human must be the seat"),
    (("seed",), -4, "seed must be a non-negative integer, not -4"),
    (("seed",), "4", "seed must be a non-negative integer"),
    (("bot_rng",), {"bit_generator": "PCG64"}, "bot_rng: a PCG64 state has exactly"),
    (("bot_rng", "uinteger"), 2**32, "bot_rng: PCG64 uinteger must be"),
    (("log",), {}, "log must be a list of events"),
    (("log", 0, "roll"), [6, 6, 6, 6, 6], "its log does not lead to its game"),
    (("log", 0, "player"), 1, "log event 1: it is seat 0's move, not 1's"),
    (("log", 0), {"roll": [1, 2, 3, 4, 5]}, "log event 1: an event is"),
    (("log", 0, "roll"), [1.0, 2, 3, 4, 5], "log event 1: a roll is a list of dice"),
    (("log", 1, "act"), True, "log event 2: an action is an integer"),
    (("log",), [], "its log does not lead to its game"),
    (("format",), "something else", "not a saved 5000 game"),
    (("seed",), DELETE, "missing field 'seed'"),
    (("colour",), "red", "unknown field 'colour'"),
]


@pytest.mark.parametrize(("where", "value", "message"), CORRUPT)
def test_a_corrupt_save_is_refused_in_one_line_naming_the_file(
    tmp_path, valid_save, where, value, message
):
    edited = _set(valid_save, where, value)
    with pytest.raises(ValueError) as err:
        _load(tmp_path, edited)
    text = str(err.value)
    assert text.startswith(f"{tmp_path / 'edited.json'} is not a saved game we can resume (")
    assert message in text and "\n" not in text, text


def test_bad_files_are_refused_in_one_line(tmp_path):
    for content in [b"{", b"[]", b"null", b'"text"', b"\xff\xfe"]:
        with pytest.raises(ValueError, match="edited.json is not a saved game") as err:
            _load(tmp_path, content)
        assert "\n" not in str(err.value)


def test_the_command_line_refuses_a_corrupt_save_and_changes_nothing(tmp_path, valid_save):
    path = tmp_path / "bad.json"
    text = json.dumps(_set(valid_save, ("game", "state", "held"), [[2]]))
    path.write_text(text)
    out = []
    assert play.main(["--load", str(path)], ask=lambda _: "quit", say=out.append) == 2
    assert out == [] and path.read_text() == text


# ---------------------------------------------------------------- properties
def _corruption(data: dict) -> st.SearchStrategy:
    """A copy of `data` with one node replaced, nudged or deleted, somewhere in it."""
    values = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 8000),
        st.integers(-(2**130), 2**130),
        st.floats(allow_nan=False),
        st.text(max_size=5),
        st.lists(st.integers(-1, 7), max_size=6),
        st.dictionaries(st.text(max_size=3), st.integers(0, 3), max_size=2),
    )

    @st.composite
    def corrupt(draw):
        out = copy.deepcopy(data)
        parent, key = None, None
        node = out
        # Walk down a random path, stopping at each level with chance 1/4 (so shallow and
        # deep nodes both get hit).
        while isinstance(node, dict | list) and node and (not parent or draw(st.integers(0, 3))):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            parent, key = node, draw(st.sampled_from(keys))
            node = node[key]
        if parent is None:
            return draw(values)
        how = draw(st.sampled_from(["replace", "nudge", "delete"]))
        if how == "nudge" and isinstance(node, int) and not isinstance(node, bool):
            parent[key] = node + draw(st.sampled_from([-100, -50, -1, 1, 50, 100]))
        elif how == "delete":
            del parent[key]
        else:
            parent[key] = draw(values)
        return out

    return corrupt()


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_randomly_corrupted_save_is_refused_or_plays_on(tmp_path, valid_save, data):
    edited = data.draw(_corruption(valid_save))
    try:
        session = _load(tmp_path, edited)
    except ValueError as e:
        assert "\n" not in str(e) and str(tmp_path / "edited.json") in str(e)
        return
    _play_on(session)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(data=st.data())
def test_a_randomly_corrupted_game_state_is_refused_or_plays_on(data):
    game = Game(3, seed=11)
    rng = np.random.default_rng(0)
    for _ in range(int(data.draw(st.integers(0, 40)))):
        if game.state.phase == ROLL:
            game.roll()
        elif game.state.phase != OVER:
            legal = game.legal_actions()
            game.act(legal[int(rng.integers(len(legal)))])
    edited = data.draw(_corruption(json.loads(game.to_json())))
    try:
        loaded = Game.from_json(json.dumps(edited), seed=1)
    except ValueError as e:
        assert "\n" not in str(e)
        return
    for _ in range(3000):
        if loaded.over:
            break
        assert state_problem(loaded.state, loaded.rules) == ""
        if loaded.state.phase == ROLL:
            loaded.roll()
        else:
            legal = loaded.legal_actions()
            loaded.act(legal[int(rng.integers(len(legal)))])


# ------------------------------------------- issue 28 item 1: a save can't open a model
class _Spy:
    """make_policy for play.py that records every spec it is asked for; a model file is
    played by the smart bot instead of being opened."""

    def __init__(self) -> None:
        self.specs: list[str] = []

    def __call__(self, spec: str):
        self.specs.append(spec)
        return make_policy("smart" if terminal.is_model(spec) else spec)


@pytest.fixture
def spy(monkeypatch) -> _Spy:
    spy = _Spy()
    monkeypatch.setattr(terminal, "make_policy", spy)
    return spy


def _resume(tmp_path, data: dict, *flags: str) -> tuple[int, list[str], str]:
    """play.main --load of `data` saved in tmp_path, then quit: exit status, what was
    said, and the save's text afterwards (it must never change)."""
    path = tmp_path / "game.json"
    path.write_text(json.dumps(data))
    out: list[str] = []
    code = play.main(["--load", str(path), *flags], ask=lambda _: "quit", say=out.append)
    return code, out, path.read_text()


@pytest.mark.parametrize(
    "model",
    ["evil.zip", "evil.npz", "evil.onnx", " evil.zip ", "/elsewhere/evil.zip", "m.onnx\n"],
)
def test_a_save_naming_a_model_file_is_refused_without_opening_it(
    tmp_path, valid_save, spy, capsys, model
):
    """issue 28 item 1: a save recording a model seat never opens it by itself (a model
    file is opened only when the user names it); every kind of model file alike, one line,
    nothing made."""
    data = _set(valid_save, ("players", 1), model)
    code, out, after = _resume(tmp_path, data)
    err = capsys.readouterr().err
    assert (code, out, spy.specs) == (2, [], []) and after == json.dumps(data)
    assert err.count("\n") == 1 and "pass --opponents with the model file(s) you trust" in err


def test_a_crafted_checkpoint_named_by_a_save_runs_nothing(tmp_path, valid_save, capsys):
    """issue 28 item 1, with the real loaders: a .zip whose settings hold a pickle that
    makes a file when unpickled (as SB3 loads them) is named by a save; --load refuses
    in one line and the file is never made."""
    import base64
    import pickle
    import zipfile

    from fivethousand_rl.envs.encoding import ObsSpec
    from fivethousand_rl.envs.rules import Rules

    marker = tmp_path / "code-ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))  # runs on unpickling

    spec = ObsSpec("compact", 2, Rules())
    settings = {
        "obs_spec": spec.to_dict(),
        "observation_space": {"_shape": [spec.size]},
        "payload": {":serialized:": base64.b64encode(pickle.dumps(Payload())).decode()},
    }
    crafted = tmp_path / "gift.zip"
    with zipfile.ZipFile(crafted, "w") as archive:
        archive.writestr("data", json.dumps(settings))
    code, out, _ = _resume(tmp_path, _set(valid_save, ("players", 1), str(crafted)))
    assert not marker.exists(), "loading the save ran the checkpoint's code"
    assert (code, out) == (2, []) and "pass --opponents" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("bot", "opponents", "made"),
    [
        ("smart", [], ["smart"]),  # an old save of bots only loads as before
        ("smart", ["smart"], ["smart"]),  # the same bots named again: used
        ("evil.zip", ["evil.zip"], ["evil.zip"]),  # the model the user names: used
        ("evil.zip", ["moved/evil.onnx"], ["moved/evil.onnx"]),  # any model file they trust
    ],
)
def test_a_save_resumes_with_the_players_the_user_names(
    tmp_path, valid_save, spy, bot, opponents, made
):
    """issue 28 items 1 and 11: with --load, --opponents names the save's bot seats
    again, in seat order; it is used, never silently ignored."""
    flags = ["--opponents", *opponents] if opponents else []
    code, out, _ = _resume(tmp_path, _set(valid_save, ("players", 1), bot), *flags)
    assert code == 0 and out[-1] == "Left the game." and spy.specs == made
    assert f"{made[0]} (seat 1)" in "\n".join(out)


@pytest.mark.parametrize(
    ("bot", "opponents", "message"),
    [
        (
            "evil.zip",
            ["a.zip", "b"],
            "--opponents names 2 players, the save has 1 bot seat (evil.zip)",
        ),
        ("smart", ["smart"] * 3, "--opponents names 3 players, the save has 1 bot seat (smart)"),
        ("evil.zip", ["smart"], "seat 1 was a model file in the save, not 'smart'"),
        ("smart", ["turn-ev"], "seat 1 was 'smart' in the save, not 'turn-ev'"),
        ("smart", ["evil.zip"], "seat 1 was 'smart' in the save, not 'evil.zip'"),
    ],
)
def test_opponents_that_do_not_fit_the_save_are_refused_in_one_line(
    tmp_path, valid_save, spy, capsys, bot, opponents, message
):
    """issue 28 items 1 and 11: a mismatch is one line naming the save; nothing is made."""
    data = _set(valid_save, ("players", 1), bot)
    code, out, after = _resume(tmp_path, data, "--opponents", *opponents)
    err = capsys.readouterr().err
    assert (code, out, spy.specs) == (2, [], []) and after == json.dumps(data)
    assert err == f"error: {tmp_path / 'game.json'}: {message}\n"


@pytest.mark.parametrize(
    ("players", "command"),
    [
        (["you", "smart"], "python play.py --load g.json"),
        (["evil.zip", "you", "smart"], "python play.py --load g.json --opponents evil.zip smart"),
    ],
)
def test_saving_says_how_to_resume_naming_the_models_again(spy, players, command):
    """issue 28 item 1: a game with a model seat resumes only with --opponents."""
    game = Game(len(players), seed=0)
    session = terminal.Session(game, players, players.index("you"), 0)
    assert session.resume_command("g.json") == command
