"""Players of 5000 behind one interface (``agents.base.Policy``), made by name."""

from __future__ import annotations

from agents.base import Policy
from agents.scripted import RandomBot, ThresholdBot

BOT_NAMES = ("random", "threshold:T")


def make_policy(spec: str | Policy) -> Policy:
    """A policy from its short name ("random", "threshold:350"), or `spec` itself if it
    already implements the Policy interface. Raises ValueError naming what is accepted."""
    if isinstance(spec, Policy):
        return spec
    accepted = f"accepted: {', '.join(BOT_NAMES)} (e.g. threshold:350)"
    if not isinstance(spec, str):
        raise ValueError(f"expected a bot name or a Policy, got {type(spec).__name__}; {accepted}")
    name, _, arg = spec.strip().partition(":")
    if name == "random" and not arg:
        return RandomBot()
    if name == "threshold":
        if arg.isdigit():
            return ThresholdBot(int(arg))
        raise ValueError(f"bad bot {spec!r}: threshold needs a whole number; {accepted}")
    raise ValueError(f"unknown bot {spec!r}; {accepted}")


__all__ = ["BOT_NAMES", "Policy", "RandomBot", "ThresholdBot", "make_policy"]
