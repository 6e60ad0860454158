"""The one interface every player implements, and how players are found by name.

A ``Policy`` chooses actions; scripted bots, the solver, trained and exported models
all implement it (they live in ``agents``). The environments and the game driver only
know this interface, never the ``agents`` package: a bot named by a string
(``opponents="smart"``) is built by the *policy resolvers*, functions from a name to a
Policy, found through the Python entry point group ``fivethousand_rl.policies``
(declared in ``pyproject.toml``), so ``import fivethousand_rl.envs`` alone is enough to
play against bots by name. They are asked in a fixed order:

1. this package's own resolver, ``agents.make_policy``, for its own names, so no plugin
   ever shadows a built-in name ("smart", "optimal", a shipped agent, a model file);
2. for any other name (``find_policy``), every other installed resolver (a *plugin*:
   another package's bots), each asked whether the name is its own, in the order of
   their distribution and entry point names; a name two of them claim is refused in
   one line naming both;
3. then your own code, ``module:function`` or ``path/to/file.py:function``
   (``code_spec``): the function is imported, called, and returns the Policy.

A plugin's resolver returns None (or raises ``UnknownPolicyError``) for a name that is
not its own. Importing the code of step 3 runs it, as making a model's player reads its
file: take such a spec from the user's own command line or program only, never from a
save or a request. ``set_policy_resolver`` replaces all of this (tests, embedding).
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

import numpy as np

from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.rules import Rules

RESOLVER_GROUP = "fivethousand_rl.policies"


@runtime_checkable
class Policy(Protocol):
    """Chooses an action for the player whose decision is due.

    ``act`` is called only when ``game.state.phase == "decide"``; the deciding seat is
    ``game.state.current``. It returns one of ``game.legal_actions()`` (see
    ``fivethousand_rl.envs.rules`` for the action encoding) and must not change the game. All the
    randomness a policy needs comes from `rng`, so the caller's seed decides it.

    ``check_game`` and ``prepare`` have defaults (any game; nothing to prepare), which a
    class gets by subclassing ``Policy``: ``class MyBot(Policy): name = "mine"; def
    act(...)``. Callers call both on every policy, never probing for them.
    """

    name: str

    def act(self, game: Game, rng: np.random.Generator) -> int: ...

    def check_game(self, n_players: int, rules: Rules) -> None:
        """Raise ValueError (one line) if this policy cannot play such a game: a trained
        model made for another number of players or other rules. Default: any game."""

    def prepare(self, rules: Rules) -> None:
        """Compute, before play starts, what this policy needs under `rules` (a solver
        table), so that work is not repeated or timed in each worker. Default: nothing."""


PolicyResolver = Callable[[str], Any]  # a name -> a Policy, or None: not its name
_resolver: PolicyResolver | None = None
THIS_DISTRIBUTION = "fivethousand-rl"  # as packaging normalizes "fivethousand_rl"


class UnknownPolicyError(ValueError):
    """A name that a resolver does not know: the next one is asked."""


def set_policy_resolver(resolver: PolicyResolver | None) -> None:
    """Use `resolver` to build policies from names (None: back to the installed
    resolvers, read again from the entry points)."""
    global _resolver
    _resolver = resolver
    _own_resolver.cache_clear()
    _installed_plugins.cache_clear()


def resolve_policy(spec: Any) -> Policy:
    """`spec` itself if it is a Policy, else the policy named `spec`: by this package's
    resolver (``agents.make_policy``, which asks ``find_policy`` for the names it does
    not know), or the one ``set_policy_resolver`` set; ValueError (one line) for a name
    nobody knows."""
    if isinstance(spec, Policy):
        return spec
    if _resolver is not None:
        return _resolver(spec)
    own = _own_resolver()
    return own(spec) if own is not None else find_policy(spec)


def find_policy(spec: str, unknown: ValueError | None = None) -> Policy:
    """The policy named `spec`, a name that is not this package's own: an installed
    plugin's (the name is refused in one line naming both if two plugins claim it),
    else ``module:function`` code (``load_code_policy``); raises `unknown` (this
    package's one-line refusal, naming what it accepts) if it is neither."""
    if not isinstance(spec, str):
        raise ValueError(f"expected a bot name or a Policy, got {type(spec).__name__}")
    made = [(who, _claim(who, resolve, spec)) for who, resolve in _installed_plugins()]
    claims = [(who, policy) for who, policy in made if policy is not None]
    if len(claims) > 1:
        raise ValueError(
            f"the bot name {spec[:60]!r} is claimed by two installed plugins, "
            f"{claims[0][0]} and {claims[1][0]}: uninstall one of them"
        )
    if claims:
        return claims[0][1]
    if code_spec(spec) is not None:
        return load_code_policy(spec)
    raise unknown or UnknownPolicyError(
        f"cannot build the bot {spec[:60]!r} by name: no resolver knows it (entry point "
        f"group {RESOLVER_GROUP!r}); pass a Policy object instead"
    )


def _distribution(entry_point: EntryPoint) -> str:
    """The normalized name of the distribution that declares `entry_point`."""
    name = entry_point.dist.name if entry_point.dist is not None else entry_point.module
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.cache
def _own_resolver() -> PolicyResolver | None:
    """This package's resolver (``agents.make_policy``), or None if not installed."""
    found = entry_points(group=RESOLVER_GROUP)
    return next((ep.load() for ep in found if _distribution(ep) == THIS_DISTRIBUTION), None)


@functools.cache
def _installed_plugins() -> tuple[tuple[str, PolicyResolver], ...]:
    """Every other package's resolver, as ("distribution (entry point)", resolver), in
    the order of their distribution and entry point names, loaded the first time a name
    is not this package's; one that fails to load is refused in one line naming it."""
    plugins = []
    found = [
        ep for ep in entry_points(group=RESOLVER_GROUP) if _distribution(ep) != THIS_DISTRIBUTION
    ]
    for entry_point in sorted(found, key=lambda ep: (_distribution(ep), ep.name)):
        who = f"{entry_point.dist.name if entry_point.dist else entry_point.module}"
        who += f" ({entry_point.name})"
        try:
            plugins.append((who, entry_point.load()))
        except Exception as e:  # its import failed: say whose, in one line
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ValueError(f"the bot plugin {who} cannot be loaded: {why}") from None
    return tuple(plugins)


def _claim(who: str, resolve: PolicyResolver, spec: str) -> Policy | None:
    """What plugin `who` makes of `spec`: a Policy, or None if the name is not its own."""
    try:
        policy = resolve(spec)
    except UnknownPolicyError:
        return None
    if policy is not None and not isinstance(policy, Policy):
        raise ValueError(f"the bot plugin {who} made {type(policy).__name__}, not a Policy")
    return policy


def _dotted(text: str) -> bool:
    """Whether `text` is Python names joined by dots ("pkg.module", "make")."""
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def code_spec(spec: str) -> tuple[str, str] | None:
    """(module, function) of a ``module:function`` spec, or (file, function) of a
    ``path/to/file.py:function`` one (uvicorn's ``module:app``, the function named by
    its module's attribute path); None for any other string ("threshold:350",
    "best-response:smart" and the other bot names are not code)."""
    where, colon, function = spec.strip().rpartition(":")
    if colon and _dotted(function) and (where.endswith(".py") or _dotted(where)):
        return where, function
    return None


def load_code_policy(spec: str) -> Policy:
    """The Policy that the function of ``module:function`` (or ``file.py:function``)
    returns, called without arguments. Importing the module runs it: only for a spec
    the user names themselves. A file's folder goes on ``sys.path`` (its own imports of
    the modules beside it work, as for ``python file.py``), and so does the current
    folder for a module (as uvicorn does). ValueError (one line) if it cannot be
    imported, has no such function, or the function returns no Policy; what the user's
    code itself raises otherwise is left to tell its own story."""
    parsed = code_spec(spec)
    if parsed is None:
        raise ValueError(f"{spec[:60]!r} is not module:function or path/to/file.py:function")
    where, function = parsed
    module = _import_code(where)
    found: Any = module
    for name in function.split("."):
        if not hasattr(found, name):
            raise ValueError(f"{where} has no {function!r} (in the bot {spec.strip()!r})")
        found = getattr(found, name)
    if not callable(found):
        raise ValueError(f"{where}:{function} is a {type(found).__name__}, not a function")
    policy = found()
    if not isinstance(policy, Policy):
        raise ValueError(
            f"{where}:{function}() returned {type(policy).__name__}, not a Policy (an object "
            "with a name and act(game, rng); fivethousand_rl.agents.from_function makes one)"
        )
    return policy


def _import_code(where: str) -> ModuleType:
    """The module `where` names (a dotted name, or a .py file), imported once."""
    if where.endswith(".py"):
        path = Path(where).resolve()
        if not path.is_file():
            raise ValueError(f"no Python file {where} (in the bot {where}:...)")
        folder, name = str(path.parent), path.stem
        if not name.isidentifier():
            raise ValueError(f"{where}: a module's file name is a Python name (my_agent.py)")
    else:
        folder, name = os.getcwd(), where
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        module = importlib.import_module(name)
    except ImportError as e:  # the module, or something it imports, is not there
        raise ValueError(f"cannot import {where}: {e}") from None
    if where.endswith(".py") and Path(module.__file__ or "").resolve() != path:
        raise ValueError(
            f"{where}: the module name {name!r} is taken by {module.__file__}; rename the file"
        )
    return module
