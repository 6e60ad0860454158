"""Players of 5000 behind one interface (``envs.policy.Policy``), made by name: this
package's ``make_policy`` is the policy resolver that the environments find through the
``fivethousand_rl.policies`` entry point (see ``envs.policy``)."""

from __future__ import annotations

from agents.scripted import RandomBot, SmartBot, ThresholdBot, TurnEVBot
from envs.policy import Policy

BOT_NAMES = (
    "random",
    "threshold:T",
    "smart",
    "turn-ev",
    "optimal",
    "PATH.zip (SB3 checkpoint)",
    "PATH.npz (training snapshot)",
    "PATH.onnx (exported bot)",
)


def _optimal() -> Policy:
    from agents.optimal import OptimalBot  # imports the solver only when asked for

    return OptimalBot()


_SIMPLE = {"random": RandomBot, "smart": SmartBot, "turn-ev": TurnEVBot, "optimal": _optimal}


def make_policy(spec: str | Policy) -> Policy:
    """A policy from its short name ("random", "threshold:350", "smart", "turn-ev",
    "optimal"), a MaskablePPO checkpoint path ending in .zip, or `spec` itself if it
    already implements the Policy interface. Raises ValueError naming what is accepted
    (a CheckpointError, also a ValueError, for a missing or corrupt checkpoint)."""
    if isinstance(spec, Policy):
        return spec
    accepted = f"accepted: {', '.join(BOT_NAMES)} (e.g. threshold:350)"
    if not isinstance(spec, str):
        raise ValueError(f"expected a bot name or a Policy, got {type(spec).__name__}; {accepted}")
    if spec.strip().endswith(".zip"):
        from agents.neural import SB3Policy  # torch is imported only when needed

        return SB3Policy(spec.strip())
    if spec.strip().endswith(".onnx"):
        from agents.exported import ExportedBot  # onnxruntime and numpy only

        return ExportedBot(spec.strip())
    if spec.strip().endswith(".npz"):
        from agents.neural import load_snapshot

        return load_snapshot(spec.strip())
    name, _, arg = spec.strip().partition(":")
    if arg == "" and name in _SIMPLE:
        return _SIMPLE[name]()
    if name == "threshold":
        if arg.isascii() and arg.isdigit():  # not '²', which int() refuses
            return ThresholdBot(int(arg))
        raise ValueError(f"bad bot {spec!r}: threshold needs a whole number; {accepted}")
    raise ValueError(f"unknown bot {spec!r}; {accepted}")


__all__ = [
    "BOT_NAMES",
    "Policy",
    "RandomBot",
    "SmartBot",
    "ThresholdBot",
    "TurnEVBot",
    "make_policy",
]
