"""What the project ships beside its code, found wherever the code runs from: the trained
agents, by name, and the training presets.

In a clone they are the folders ``checkpoints/`` and ``hyperparams/`` at its root. The
wheel carries the same files inside this package (``agents/checkpoints/``,
``agents/hyperparams/``; ``pyproject.toml`` maps them there), so an installed package
finds them in any working directory. Only the agents of ``SHIPPED`` are reachable by
name: a name never resolves to a file of the user's (a model file is opened only when
the user names it), and training runs under ``checkpoints/`` stay out of the wheel.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent

# Each shipped agent's name (its folder) and the model file in it; the wheel carries
# these folders whole (pyproject.toml lists them too, and a test checks both agree).
SHIPPED: dict[str, str] = {
    "planner-2p": "value_net.npz",
    "planner-multi": "value_net.npz",
    "planner-3p": "value_net.npz",
    "planner-4p": "value_net.npz",
    "planner-6p": "value_net.npz",
    "ppo-2p": "model.zip",
    "ppo-4p": "model.zip",
}


def data_folder(name: str) -> Path:
    """The project's data folder `name` ("checkpoints" or "hyperparams"): the copy an
    installed package carries inside ``agents/``, else the clone's own at its root."""
    installed = PACKAGE / name
    return installed if installed.is_dir() else PACKAGE.parent / name


def shipped_folder(name: str) -> Path:
    """The folder of the shipped agent `name` (its model, card and evaluations)."""
    if name not in SHIPPED:
        raise ValueError(f"unknown shipped agent {name!r}; shipped: {', '.join(SHIPPED)}")
    return data_folder("checkpoints") / name


def shipped_model(name: str) -> Path:
    """The model file of the shipped agent `name` (a value net's .npz or a PPO .zip);
    a one-line ValueError if the name is not shipped or its file is missing."""
    path = shipped_folder(name) / SHIPPED[name]
    if not path.is_file():
        raise ValueError(
            f"the shipped agent {name!r} is missing its model ({path}): reinstall the "
            "package, or in a clone restore it with git checkout -- checkpoints"
        )
    return path


def shipped_models() -> list[Path]:
    """The model files of every shipped agent that is present, in ``SHIPPED`` order."""
    folder = data_folder("checkpoints")
    return [
        folder / name / file for name, file in SHIPPED.items() if (folder / name / file).is_file()
    ]
