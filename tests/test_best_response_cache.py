"""The exploitability cache answers only for the decisions it was computed for (issue 53,
item 6): a bot is cached only where it is identified exactly (``bot_key``: a name of the
package's own bots, a model file by its bytes, with the digest of the package's code),
so a bot changed only at decisions outside any sample gets its own exact value; a bot
that keeps state between calls (its answers depend on the order it is asked in) is
refused as one that draws is; ``--no-cache`` (``cache=False``) neither reads nor writes.

Oracles: a computation with the cache off, and the package's own threshold bot."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fivethousand_rl.agents import BOT_NAMES, make_policy
from fivethousand_rl.agents import best_response as br_core
from fivethousand_rl.agents.batched import BatchedThresholdBot
from fivethousand_rl.agents.best_response import (
    NotDeterministicError,
    best_response,
    bot_key,
    check_positions,
    exploitability,
    summary,
)
from fivethousand_rl.agents.best_response import cli as br_cli
from fivethousand_rl.agents.optimal import cache_dir
from fivethousand_rl.envs.batch import decide
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import BANK_BIT, Rules

TINY = Rules(target=800, entry=300)  # 6 turn-start scores a player can have
FLAGS = ["--target", "800", "--entry", "300"]


def _codes(own, other, total, dice) -> np.ndarray:
    """One integer per (own score, other's score, turn total, dice left)."""
    own, other, total, dice = (np.asarray(x, dtype=np.int64) for x in (own, other, total, dice))
    return ((own * 100_000 + other) * 100_000 + total) * 10 + dice


class Changed(BatchedThresholdBot):
    """threshold:T, except at the decisions whose (own score, other's score, turn total,
    dice left) is in `changed` (``_codes``): there it rolls on where it would bank."""

    name = "changed"
    turn_view = None  # its choices read both scores, not its own alone

    def __init__(self, threshold: int, changed: np.ndarray | None = None) -> None:
        super().__init__(threshold)
        self.changed = np.array([], dtype=np.int64) if changed is None else np.sort(changed)

    def act_batch(self, games, idx, rng):
        actions = super().act_batch(games, idx, rng)
        mover = games.current[idx]
        code = _codes(
            games.scores[idx, mover],
            games.scores[idx, 1 - mover],
            games.turn_total[idx],
            games.dice_left[idx],
        )
        roll_on = actions & (BANK_BIT - 1)
        swap = np.isin(code, self.changed) & (actions >= BANK_BIT)
        swap &= games.are_legal(idx, roll_on)
        return np.where(swap, roll_on, actions)


def test_a_bot_changed_outside_any_sample_gets_its_own_exact_value():
    """The issue's case: two bots of one class that decide alike at every sampled
    position (``check_positions``) and differently elsewhere (every other combination
    of scores, turn total 300 to 450 and dice left). The second gets its own exact
    exploitability, the one computed with the cache off, not the first's."""
    sample = check_positions(2, TINY)
    sampled = _codes(sample.scores[:, 0], sample.scores[:, 1], sample.turn_total, sample.dice_left)
    grid = np.array(TINY.banked_scores())
    own, other, total, dice = np.meshgrid(grid, grid, np.arange(300, 451, 50), np.arange(1, 6))
    everywhere = _codes(own.ravel(), other.ravel(), total.ravel(), dice.ravel())
    outside = np.setdiff1d(everywhere, sampled)
    assert 0 < len(outside) < len(everywhere)  # some of them sampled, the rest changed
    first, second = Changed(300), Changed(300, outside)
    idx = np.arange(sample.n_games)
    rng = np.random.default_rng(0)
    assert np.array_equal(decide(first, sample, idx, rng), decide(second, sample, idx, rng))
    assert bot_key(first) is None and bot_key(second) is None  # never cached

    cached_first = exploitability(first, TINY, show_progress=False)
    assert cached_first == pytest.approx(exploitability("threshold:300", TINY, show_progress=False))
    got = exploitability(second, TINY, show_progress=False)
    exact = exploitability(second, TINY, show_progress=False, cache=False)
    assert got == pytest.approx(exact, abs=1e-12)
    assert abs(got - cached_first) > 1e-3


class AlternatingEach(Policy):
    """Keeps state: its first legal action at odd calls of ``act``, its last at even ones
    (asked the same decisions twice in the same order, it answers alike)."""

    name = "alternating"

    def __init__(self) -> None:
        self.calls = 0

    def act(self, game, rng):
        self.calls += 1
        legal = game.legal_actions()
        return legal[0] if self.calls % 2 else legal[-1]


class AlternatingBatches(BatchedThresholdBot):
    """Keeps state: threshold:300 at odd calls of ``act_batch``, threshold:600 at even."""

    def __init__(self) -> None:
        super().__init__(300)
        self.name = "alternating"
        self.calls = 0

    def act_batch(self, games, idx, rng):
        self.calls += 1
        self.threshold = 300 if self.calls % 2 else 600
        return super().act_batch(games, idx, rng)


@pytest.mark.parametrize("bot", [AlternatingEach, AlternatingBatches])
def test_a_bot_whose_answers_depend_on_the_call_order_is_refused(bot):
    """A bot with state that alternates its moves is refused in one line, as one that
    draws is: its turns have no exact ends, and nothing is computed or cached."""
    with pytest.raises(NotDeterministicError) as err:
        exploitability(bot(), TINY, show_progress=False)
    message = str(err.value)
    assert "alternating is not deterministic" in message and "\n" not in message


def test_no_cache_neither_reads_nor_writes_the_cache(monkeypatch, capsys, tmp_path):
    """--no-cache (cache=False): the numbers are computed now, the same as the cached
    ones, and neither the disk cache nor the memory is read or written (by the report
    either)."""
    cached = best_response(("threshold:350",), TINY, make_policy, show_progress=False)

    def best_response_files() -> dict[str, int]:  # the solver's own files aside
        return {p.name: p.stat().st_mtime_ns for p in cache_dir().glob("best-response-*")}

    files = best_response_files()
    memory = list(br_core._MEMORY)

    def refuse(*args, **kwargs):
        raise AssertionError("the cache was used")

    monkeypatch.setattr(br_core, "_load", refuse)
    monkeypatch.setattr(br_core, "_save", refuse)
    monkeypatch.setattr(br_core, "touch", refuse)
    monkeypatch.setattr(br_core, "remember", refuse)
    assert br_cli.main(["threshold:350", *FLAGS, "--json", "--no-cache"]) == 0
    numbers = json.loads(capsys.readouterr().out)
    assert numbers["seat_values"] == pytest.approx(summary(cached)["seat_values"], abs=1e-12)
    report = tmp_path / "report.md"
    argv = ["threshold:350", *FLAGS, "--report", str(report), "--games", "2", "--no-cache"]
    assert br_cli.main(argv) == 0
    [row] = json.loads(report.with_suffix(".json").read_text())["rows"]
    assert row["exploitability"] == pytest.approx(summary(cached)["exploitability"], abs=1e-12)
    fresh = best_response(("threshold:350",), TINY, make_policy, False, cache=False)
    assert fresh.values is not cached.values  # computed, not the one in memory
    assert np.allclose(fresh.values, cached.values, rtol=0, atol=1e-12)
    assert best_response_files() == files
    assert list(br_core._MEMORY) == memory


def test_a_change_in_the_code_is_computed_again(monkeypatch):
    """A named bot is cached by its name with the digest of the package's code and
    libraries (``code_key``): other code (a changed bot, a changed solver) never reads
    what this code computed."""
    best_response(("threshold:400",), TINY, make_policy, show_progress=False)
    br_core._MEMORY.clear()
    monkeypatch.setattr(br_core, "code_key", lambda: "0" * 16)
    monkeypatch.setattr(br_core, "_compute", lambda *a: pytest.fail("computed again"))
    with pytest.raises(pytest.fail.Exception, match="computed again"):
        best_response(("threshold:400",), TINY, make_policy, show_progress=False)


def test_only_what_is_identified_exactly_has_a_key():
    """The package's own bot names are their keys, a model by its file's digest,
    best-response:BOTS by the keys of BOTS; a Policy object, ``module:function`` code
    and a name made by another make_policy have none (never cached)."""
    assert bot_key("threshold:300") == "threshold:300" != bot_key("threshold:250")
    assert bot_key(" smart ") == "smart"
    assert bot_key("planner-2p").startswith("planner-2p@")
    assert bot_key("best-response:smart,turn-ev") == "best-response:smart,turn-ev"
    assert bot_key("best-response:smart,mine:bot") is None
    assert bot_key("mine:bot") is None
    assert bot_key(make_policy("smart")) is None
    assert bot_key("smart", lambda spec: make_policy(spec)) is None
    for name in BOT_NAMES:  # every name of the package's own bots is cached (BUILTIN_NAME)
        if not name.startswith(("PATH", "MODULE")):
            example = name.replace(":T", ":350").replace(":ROLLS", ":3")
            assert bot_key(example.replace(":BOTS", ":smart")) is not None, name
