"""Players of 5000 behind one interface (``fivethousand_rl.envs.policy.Policy``), made by
name: ``make_policy``, the policy resolver that the environments find through the
``fivethousand_rl.policies`` entry point. It knows this package's names first; other
packages' bots (plugins) and ``module:function`` code come after them (see
``fivethousand_rl.envs.policy``)."""

from __future__ import annotations

if __name__ == "agents":  # imported from a clone's root as a top-level package
    raise ImportError("import fivethousand_rl.agents, not agents: the package has one namespace")

from fivethousand_rl.agents.base import MODEL_SUFFIXES, check_model_file
from fivethousand_rl.agents.batched import (
    BatchedOptimalBot,
    BatchedRandomBot,
    BatchedSmartBot,
    BatchedThresholdBot,
    BatchedTurnEVBot,
)
from fivethousand_rl.agents.function_agent import FunctionAgent, from_function
from fivethousand_rl.agents.scripted import RandomBot, SmartBot, ThresholdBot, TurnEVBot
from fivethousand_rl.agents.shipped import SHIPPED, needs_extra, shipped_model, training_installed
from fivethousand_rl.envs.policy import Policy, UnknownPolicyError, code_spec, find_policy

BOT_NAMES = (
    "random",
    "threshold:T",
    "smart",
    "turn-ev",
    "optimal",
    "expectimax",
    "expectimax:ROLLS",
    "best-response:BOTS",
    *SHIPPED,  # the trained agents that come with the package, by name
    "PATH.zip (SB3 checkpoint)",
    "PATH.npz (value net's planner, or PPO self-play snapshot)",
    "PATH.onnx (exported bot or planner)",
    "MODULE:FUNCTION or FILE.py:FUNCTION (your function that returns a Policy)",
)


# The table-driven bots come with their batched side (``agents.batched``): they play one
# game exactly as the per-game classes they extend, and many at once by table lookups.
_SIMPLE = {
    "random": BatchedRandomBot,
    "smart": BatchedSmartBot,
    "turn-ev": BatchedTurnEVBot,
    "optimal": BatchedOptimalBot,  # its solution loads when first asked for
}


def make_policy(spec: str | Policy) -> Policy:
    """The policy named `spec` (`spec` itself if it already is one): one of this
    package's names (``builtin_policy``), else a name an installed plugin offers, else
    your own ``module:function`` or ``path/to/file.py:function``, a function called
    without arguments that returns a Policy (``fivethousand_rl.envs.policy.find_policy``).
    Raises ValueError in one line (for an unknown name, naming what is accepted).

    Trust: importing a ``module:function`` runs its code, as opening a model file reads
    it (``builtin_policy`` says how safely). Never pass a spec read from someone else's
    file (a save, a request) without the user naming it themselves (``opens_file_or_code``
    tells such specs; see play.py ``--load``)."""
    try:
        return builtin_policy(spec)
    except UnknownPolicyError as unknown:  # not ours: a plugin's name, or code
        return find_policy(spec, unknown)


def opens_file_or_code(spec: str) -> bool:
    """Whether making `spec` opens a model file (it ends in one of ``MODEL_SUFFIXES``)
    or imports code (``module:function``): a spec only the user may name, never a save
    or a request by itself."""
    return spec.strip().endswith(MODEL_SUFFIXES) or code_spec(spec) is not None


def builtin_policy(spec: str | Policy) -> Policy:
    """A policy from its short name ("random", "threshold:350", "smart", "turn-ev",
    "optimal"; "expectimax" or "expectimax:3", a search over the turn: ``agents.search``),
    the best response to a table of bots ("best-response:smart",
    "best-response:smart,turn-ev": ``fivethousand_rl.agents.best_response``), the name of a shipped
    agent ("planner-2p", "ppo-2p": ``fivethousand_rl.agents.shipped``, loaded from the package's own
    files wherever it runs), a model file (a MaskablePPO checkpoint .zip; an .npz: a
    value net, played by its planner, or a PPO self-play snapshot, told apart by what
    the file says it is; an exported .onnx bot or planner),
    or `spec` itself if it already implements the Policy interface: the names of this
    package, which ``make_policy`` knows first. Raises UnknownPolicyError for any other
    name (``make_policy`` then asks the plugins), a ValueError naming what is accepted
    for a bad argument (a CheckpointError or ExportError, also ValueErrors, for a missing or
    corrupt model file).

    Only a spec ending in one of ``MODEL_SUFFIXES`` (after stripping spaces) opens a
    file; any other string is a bot name or refused, so a caller can tell beforehand.

    Trust: loading a ``.zip`` checkpoint runs none of the pickles SB3 saves in it (the
    classes, schedules and spaces get known values, the weights are read with torch's
    ``weights_only``: ``agents.neural.load_sb3``), and one holding a pickle that has no
    safe replacement is refused (CheckpointError, one line). ``.onnx`` exported bots and
    value-net ``.npz`` files are read as data, without pickle (``allow_pickle=False``).
    Never pass a spec read from someone else's file (a save, a
    request) without the user naming that model themselves (see play.py ``--load``); an
    exported bot is named as ``fivethousand_rl.agents.neural.short_name`` names its file
    (a bundle's ``checkpoints/NAME/model.onnx``: NAME)."""
    if isinstance(spec, Policy):
        return spec
    accepted = f"accepted: {', '.join(BOT_NAMES)} (e.g. threshold:350)"
    if not isinstance(spec, str):
        raise ValueError(f"expected a bot name or a Policy, got {type(spec).__name__}; {accepted}")
    if spec.strip().startswith("best-response:"):  # the best response to a table, of files too
        from fivethousand_rl.agents.best_response import PREFIX, BestResponseBot, table_of

        return BestResponseBot(table_of(spec.strip().removeprefix(PREFIX)), make_policy)
    if spec.strip().endswith(MODEL_SUFFIXES):  # a device, a FIFO, a bomb: refused unread
        check_model_file(spec.strip())
    if spec.strip().endswith(".zip"):
        if not training_installed():  # the light install: one line naming the extra
            from fivethousand_rl.agents.neural import CheckpointError

            raise CheckpointError(needs_extra(f"the MaskablePPO checkpoint {spec.strip()}"))
        from fivethousand_rl.agents.neural import SB3Policy  # torch is imported only when needed

        return SB3Policy(spec.strip())
    if spec.strip().endswith(".onnx"):
        from fivethousand_rl.agents.exported import load_exported  # onnxruntime and numpy only
        from fivethousand_rl.agents.neural import short_name

        policy = load_exported(spec.strip())
        policy.name = short_name(spec.strip())  # a bundle's model.onnx: its folder's name
        return policy
    if spec.strip().endswith(".npz"):
        return _load_npz(spec.strip())
    name, _, arg = spec.strip().partition(":")
    if arg == "" and name in _SIMPLE:
        return _SIMPLE[name]()
    if arg == "" and name in SHIPPED:  # its ONNX export where the training extra is missing
        return builtin_policy(str(shipped_model(name)))  # named as its folder
    if name == "threshold":
        if arg.isascii() and arg.isdigit():  # not '²', which int() refuses
            return BatchedThresholdBot(int(arg))
        raise ValueError(f"bad bot {_quote(spec)}: threshold needs a whole number; {accepted}")
    if name == "expectimax":  # search over the turn (agents.search), to its end or ROLLS deep
        from fivethousand_rl.agents.search import ExpectimaxBot

        if arg == "" or (arg.isascii() and arg.isdigit() and int(arg) > 0):
            return ExpectimaxBot(max_rolls=int(arg) if arg else None)
        raise ValueError(
            f"bad bot {_quote(spec)}: expectimax:ROLLS needs a number from 1; {accepted}"
        )
    raise UnknownPolicyError(f"unknown bot {_quote(spec)}; {accepted}")


def _quote(spec: str, limit: int = 60) -> str:
    """`spec` as an error quotes it: cut to `limit` characters (a name typed or sent by
    someone can be any length, and the error must stay one short line)."""
    return repr(spec if len(spec) <= limit else spec[:limit] + "...")


def _load_npz(path: str) -> Policy:
    """A value net's planner or a self-play snapshot, by the kind the file records."""
    import zipfile
    from pathlib import Path

    from fivethousand_rl.agents.value_net import KIND, load_planner, npz_kind

    if Path(path).is_file() and not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is neither a value net nor a self-play snapshot (no .npz file)")
    kind = npz_kind(path)
    if kind == KIND:
        return load_planner(path)
    if kind is not None:
        raise ValueError(f"{path} is an .npz of kind {kind!r}, neither a value net nor a snapshot")
    from fivethousand_rl.agents.neural import load_snapshot

    return load_snapshot(path)  # a snapshot, or it says what the file lacks


__all__ = [
    "BOT_NAMES",
    "FunctionAgent",
    "MODEL_SUFFIXES",
    "Policy",
    "RandomBot",
    "UnknownPolicyError",
    "SmartBot",
    "ThresholdBot",
    "TurnEVBot",
    "from_function",
    "make_policy",
    "opens_file_or_code",
]
