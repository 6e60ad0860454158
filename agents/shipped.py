"""What the project ships beside its code, found wherever the code runs from: the trained
agents, by name, and the training presets.

In a clone they are the folders ``checkpoints/`` and ``hyperparams/`` at its root. The
wheel carries the same files inside this package (``agents/checkpoints/``,
``agents/hyperparams/``; ``pyproject.toml`` maps them there), so an installed package
finds them in any working directory. Only the agents of ``SHIPPED`` are reachable by
name: a name never resolves to a file of the user's (a model file is opened only when
the user names it), and training runs under ``checkpoints/`` stay out of the wheel.

A PPO agent's model (``model.zip``) needs torch and sb3-contrib (the ``train`` extra);
without them ``shipped_model`` names its ONNX export beside it (``EXPORTED``, written by
``export.py``), which onnxruntime and numpy play: every shipped agent plays in the light
install (``pip install fivethousand-rl``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
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
    "policy-2p": "model.zip",
    "policy-3p": "model.zip",
    "policy-4p": "model.zip",
    "policy-6p": "model.zip",
    "ppo-2p": "model.zip",
    "ppo-4p": "model.zip",
}
# A shipped agent's ONNX export, played where its model needs the training extra that is
# not installed; its metadata is the .json of the same name (fivethousand_rl.agents.exported).
EXPORTED = "model.onnx"
# The training extra (pyproject.toml's `train`): what training, exporting and plotting
# import, none of which playing, serving or evaluating needs; and how to install it.
TRAIN_EXTRA = "pip install 'fivethousand-rl[train]'"
EXTRA_MODULES = ("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "matplotlib")
EXTRA_MODULES += ("onnx", "onnxscript")
CHECKPOINT_MODULES = ("torch", "sb3_contrib", "stable_baselines3")  # what plays a .zip


def importable(module: str) -> bool:
    """Whether the top-level `module` can be imported here (without importing it)."""
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # an import hook refusing it, a broken install
        return False


def training_installed() -> bool:
    """Whether torch, Stable-Baselines3 and sb3-contrib (the training extra) are here."""
    return all(map(importable, CHECKPOINT_MODULES))


def needs_extra(what: str, module: str = "torch") -> str:
    """The one line saying that `what` needs `module`, from the training extra, and the
    command that installs it."""
    return f"{what} needs {module}, from the training extra: {TRAIN_EXTRA}"


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
    """The model file of the shipped agent `name` (a value net's .npz or a PPO .zip;
    without the training extra, or without the .zip (the wheel leaves out the imitation
    policies' checkpoints), the agent's ONNX export if it has one: ``EXPORTED``);
    a one-line ValueError if the name is not shipped or its file is missing."""
    path = shipped_folder(name) / SHIPPED[name]
    exported = path.parent / EXPORTED
    playable = exported.is_file() and exported.with_suffix(".json").is_file()
    if path.suffix == ".zip" and playable and not (training_installed() and path.is_file()):
        return exported  # no torch here, or a checkpoint the wheel leaves out (pyproject)
    if not path.is_file():
        raise ValueError(
            f"the shipped agent {name!r} is missing its model ({path}): reinstall the "
            "package, or in a clone restore it with git checkout -- checkpoints"
        )
    return path


def shipped_models() -> list[Path]:
    """The model files of every shipped agent that is present (as ``shipped_model``
    picks them), in ``SHIPPED`` order."""
    models = []
    for name in SHIPPED:
        with contextlib.suppress(ValueError):  # missing: not listed
            models.append(shipped_model(name))
    return models
