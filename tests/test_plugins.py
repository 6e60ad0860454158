"""Bots from other packages (issue 53 item 4): every resolver installed in the entry
point group ``fivethousand_rl.policies`` is asked for the names this package does not
know, in a fixed order; a built-in name is never shadowed, and a name two plugins
claim is refused in one line naming both.

The in-process tests set the plugins the entry points would give; the last test
installs two plugin packages with pip into a fresh virtual environment (which sees this
one's packages through a path file, as tests/test_package.py builds it) and plays them
by name in ``make_policy``, an environment's opponents and ``fivethousand evaluate``."""

from __future__ import annotations

import json
import sys
import sysconfig
from pathlib import Path

import pytest

import fivethousand_rl
from fivethousand_rl.agents import ThresholdBot, make_policy
from fivethousand_rl.agents.batched import BatchedSmartBot
from fivethousand_rl.envs import policy as policy_module
from fivethousand_rl.envs.policy import UnknownPolicyError, resolve_policy
from tests.test_package import PIP, clean_env, run


def named_threshold(name: str, threshold: int = 300) -> ThresholdBot:
    bot = ThresholdBot(threshold)
    bot.name = name
    return bot


def claims(*names: str):
    """A plugin's resolver: a bot for each of `names`, None for any other name."""
    return lambda spec: named_threshold(f"plugin {spec}") if spec in names else None


@pytest.fixture
def plugins(monkeypatch):
    """Sets the installed plugins, as ("distribution (entry point)", resolver) in the
    order the entry points give them (the real ones are read again afterwards)."""

    def install(*found):
        monkeypatch.setattr(policy_module, "_installed_plugins", lambda: found)

    return install


def test_built_in_names_are_never_shadowed_and_every_plugin_is_asked(plugins):
    """A plugin that claims 'smart' and sorts first (the old resolver took only the
    alphabetically first entry point: every built-in bot was gone) changes nothing
    built in; a later plugin's own name still plays."""

    def refuses(spec):
        raise UnknownPolicyError(f"not mine: {spec}")

    plugins(
        ("aaa (aaa)", claims("smart", "optimal", "aaa-bot")),
        ("mid (mid)", refuses),
        ("myplug (myplug)", claims("myplug-bot")),
    )
    assert isinstance(make_policy("smart"), BatchedSmartBot)
    assert make_policy("optimal").name == "optimal"
    assert make_policy("aaa-bot").name == "plugin aaa-bot"
    assert make_policy("myplug-bot").name == "plugin myplug-bot"
    assert resolve_policy("myplug-bot").name == "plugin myplug-bot"  # the environments' way


def test_a_name_two_plugins_claim_is_refused_in_one_line_naming_both(plugins):
    plugins(("aaa-bots (aaa)", claims("shared")), ("myplug (mine)", claims("shared")))
    with pytest.raises(ValueError) as err:
        make_policy("shared")
    message = str(err.value)
    assert "\n" not in message and "claimed by two installed plugins" in message
    assert "aaa-bots (aaa)" in message and "myplug (mine)" in message


def test_a_name_nobody_knows_gets_the_built_in_refusal(plugins):
    plugins(("aaa (aaa)", claims("aaa-bot")))
    with pytest.raises(UnknownPolicyError, match="unknown bot 'nobody'; accepted: random"):
        make_policy("nobody")


def test_a_plugin_that_makes_no_policy_is_named(plugins):
    plugins(("broken-bots (broken)", lambda spec: "a string"))
    with pytest.raises(ValueError, match=r"^the bot plugin broken-bots \(broken\) made str"):
        make_policy("anything")


# ------------------------------------------------------------------ installed with pip
PLUGIN = """
from fivethousand_rl.agents import ThresholdBot
from fivethousand_rl.envs.policy import UnknownPolicyError

NAMES = {names!r}


def resolve(spec):
    if spec not in NAMES:
        {unknown}
    bot = ThresholdBot({threshold})
    bot.name = "{module} " + spec
    return bot
"""
PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "{distribution}"
version = "0.1"

[project.entry-points."fivethousand_rl.policies"]
{entry_point} = "{module}:resolve"

[tool.setuptools]
py-modules = ["{module}"]
"""
# (distribution, entry point, module, its names, how it says a name is not its own)
PLUGINS = [
    ("aaa-bots", "aaa", "aaa_bots", ["aaa-bot", "smart", "shared"], "return None"),
    ("myplug", "myplug", "myplug", ["myplug-bot", "shared"], "raise UnknownPolicyError(spec)"),
]
CHECK = """
import json
import gymnasium as gym
import fivethousand_rl.envs
from fivethousand_rl.agents import make_policy

out = {"smart": type(make_policy("smart")).__name__}
out["names"] = [make_policy(name).name for name in ("aaa-bot", "myplug-bot")]
env = gym.make("FiveThousand-v0", opponents="myplug-bot")
out["opponent"] = env.unwrapped.opponents[0].name
for name in ("shared", "nobody"):
    try:
        make_policy(name)
    except ValueError as e:
        out[name] = str(e)
print(json.dumps(out))
"""


def write_plugin(folder: Path, distribution, entry_point, module, names, unknown) -> Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text(PYPROJECT.format(**locals()))
    threshold = 300 + 50 * len(names)
    (folder / f"{module}.py").write_text(PLUGIN.format(**locals()))
    return folder


def test_two_plugin_packages_installed_with_pip_compose(tmp_path):
    """Two packages, one sorting before this one's entry point ('aaa') and claiming
    'smart', are installed into a fresh environment: both offer their bots by name,
    together and beside the built-in ones, and the name they share is refused."""
    env = tmp_path / "env"
    run(sys.executable, "-m", "venv", "--without-pip", env, cwd=tmp_path)
    python = env / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(run(python, "-c", where, cwd=tmp_path).strip())
    # This environment's packages, and this package where they import it from.
    seen = [sysconfig.get_paths()["purelib"], str(Path(fivethousand_rl.__file__).parents[1])]
    (site / "test_dependencies.pth").write_text("\n".join(seen) + "\n")
    folders = [write_plugin(tmp_path / p[0], *p) for p in PLUGINS]
    install = ["--python", python, "install", "--no-deps", "--no-build-isolation"]
    run(*PIP, *install, *folders, cwd=tmp_path)
    user = tmp_path / "somewhere"
    user.mkdir()

    out = json.loads(run(python, "-c", CHECK, cwd=user, env=clean_env()))
    assert out["smart"] == "BatchedSmartBot"  # not aaa's
    assert out["names"] == ["aaa_bots aaa-bot", "myplug myplug-bot"]
    assert out["opponent"] == "myplug myplug-bot"
    assert "aaa-bots (aaa)" in out["shared"] and "myplug (myplug)" in out["shared"]
    assert "\n" not in out["shared"] and out["nobody"].startswith("unknown bot 'nobody'")

    command = "import sys; from fivethousand_rl.cli import main; sys.exit(main())"  # fivethousand
    summary = user / "s.json"
    evaluate = ["evaluate", "aaa-bot", "myplug-bot", "smart", "--games", "4", "--json", summary]
    run(python, "-c", command, *evaluate, cwd=user, env=clean_env())
    agents = {a["agent"]: a["games"] for a in json.loads(summary.read_text())["agents"]}
    assert agents == {"aaa_bots aaa-bot": 8, "myplug myplug-bot": 8, "smart": 8}
