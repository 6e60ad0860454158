"""Small helpers for building positions in tests."""

from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.rules import Rules, action_for


def game_at(scores, current=0, hold="free", target=5000, entry=500, seed=0):
    """A fresh game with the given banked scores, `current` to roll five dice."""
    game = Game(len(scores), Rules(hold=hold, target=target, entry=entry), seed=seed)
    game.state.scores = list(scores)
    game.state.current = current
    return game


def play(game, roll, held, bank):
    """Roll the given dice, hold `held` from them, then bank or not."""
    game.roll(roll)
    game.act(action_for(held, roll, bank))


def bank_total(game, rolls_and_holds):
    """Play a turn from a list of (roll, held) and bank after the last hold."""
    for i, (roll, held) in enumerate(rolls_and_holds):
        play(game, roll, held, bank=i == len(rolls_and_holds) - 1)


def tiny_mlp_model(hidden: int, n_steps: int):
    """A small MaskablePPO MlpPolicy on FiveThousand-v0 (2 players, compact observation,
    its spec attached, untrained): a model file for tests to save, load and corrupt."""
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    import fivethousand_rl.envs  # noqa: F401 - registers FiveThousand-v0
    from fivethousand_rl.agents.neural import attach_obs_spec
    from fivethousand_rl.envs.encoding import ObsSpec

    model = MaskablePPO(
        "MlpPolicy",
        gym.make("FiveThousand-v0"),
        n_steps=n_steps,
        batch_size=64,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [hidden]},
    )
    attach_obs_spec(model, ObsSpec("compact", 2, Rules()))
    return model


def raw_error_answer(answer: bytes, status: int) -> dict:
    """The JSON error of a raw HTTP/1.1 `answer` (bytes as read off the socket), checked
    to have `status` and every security header of the web app."""
    import json

    from fivethousand_rl.webplay.app import SECURITY_HEADERS

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), answer
    lines = {line.lower() for line in head.split(b"\r\n")}
    for name, value in SECURITY_HEADERS:
        assert name + b": " + value.lower() in lines, answer
    return json.loads(body)


def load_python_port():
    """The reference Python port (ports/python/fivethousand_port.py), loaded from its file
    as a porter would, not as a module of the package."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "ports" / "python" / "fivethousand_port.py"
    spec = importlib.util.spec_from_file_location("fivethousand_port", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
