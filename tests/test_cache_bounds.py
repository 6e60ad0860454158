"""Bounded memory and disk (issue 42, items 2 and 3): what is kept in memory (solutions,
best responses, planners, the web server's per-table hint planners) is bounded by count
and bytes, least recently used dropped first (agents.cache.LRU); the solver's disk cache
is bounded in size, least recently used files deleted first, and never a file that is
not ours."""

import json
import os
import pickle
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from fivethousand_rl.agents import cache
from fivethousand_rl.agents.cache import LRU, bound_disk, cache_max_bytes, is_ours, nbytes, remember
from fivethousand_rl.envs.rules import Rules

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20


# ------------------------------------------------------------------ in memory
def test_lru_keeps_at_most_its_count_least_recently_used_dropped_first():
    lru = LRU(3)
    for key in "abc":
        lru.put(key, key.upper())
    assert lru["a"] == "A"  # used again: now the newest
    lru.put("d", "D")
    assert list(lru) == ["c", "a", "d"] and "b" not in lru and len(lru) == 3
    assert lru.get("b") is None and lru.get("b", 0) == 0
    with pytest.raises(ValueError, match="at least 1"):
        LRU(0)


def test_lru_keeps_about_its_bytes_and_the_newest_even_alone():
    lru = LRU(100, max_bytes=int(2.5 * MB))
    for i in range(10):
        lru.put(i, {"values": np.zeros(MB // 8)})  # 1 MB each
    assert list(lru) == [8, 9] and lru.bytes_kept() <= 2.5 * MB
    lru.put("big", np.zeros(MB))  # 8 MB, over the bound alone: kept, the rest dropped
    assert list(lru) == ["big"]


def test_lru_measures_again_entries_that_grow_while_used():
    """A planner's caches grow as it plans: reads measure the entries again now and
    then, so the bound holds without waiting for a new entry."""

    class Growing:
        def __init__(self) -> None:
            self.parts: list[np.ndarray] = []

    lru = LRU(10, max_bytes=3 * MB, measure_every=4)
    a, b = Growing(), Growing()
    lru.put("a", a)
    lru.put("b", b)
    a.parts.append(np.zeros(MB // 4))  # 2 MB
    b.parts.append(np.zeros(MB // 4))
    for _ in range(4):
        assert lru.get("b") is b
    assert list(lru) == ["b"]


def test_nbytes_finds_arrays_through_objects_methods_and_closures():
    arr = np.zeros(1000)  # 8,000 bytes

    class Holder:
        def __init__(self) -> None:
            self.table = {"x": arr, "view": arr[:10]}  # a view owns no data

        def value(self) -> float:
            return float(arr[0])

    def closure():
        return arr

    for thing in (Holder(), Holder().value, closure, [arr, arr]):
        assert 8000 <= nbytes(thing) < 8000 + 5000, thing
    assert nbytes(np.zeros(0)) < 1000


def test_an_lru_pickles_empty_with_its_bounds():
    lru = LRU(2, max_bytes=MB, measure_every=7)
    lru.put("a", np.zeros(3))
    copy = pickle.loads(pickle.dumps(lru))
    assert len(copy) == 0 and (copy.max_count, copy.max_bytes, copy.measure_every) == (2, MB, 7)


def test_remember_bounds_a_plain_dict_by_count():
    memory: dict = {}
    for i in range(cache.MAX_IN_MEMORY + 3):
        remember(memory, i, i)
    assert list(memory) == list(range(3, cache.MAX_IN_MEMORY + 3))


def test_the_solver_and_best_response_memories_are_bounded():
    from fivethousand_rl.agents import best_response as br
    from fivethousand_rl.agents import optimal

    for memory in (optimal._MEMORY, br._MEMORY):
        assert isinstance(memory, LRU) and memory.max_count == cache.MAX_IN_MEMORY
        assert memory.max_bytes is not None
    bot = br.BestResponseBot(("smart",), lambda spec: None)
    assert isinstance(bot._planners, LRU) and bot._planners.max_bytes is not None


def test_the_catalogue_keeps_per_table_work_bounded_and_the_bots_for_good():
    from fivethousand_rl.webplay.bots import Catalogue

    catalogue = Catalogue(max_kept=3, max_bytes=int(2.5 * MB))
    made = []

    def make(i):
        def build():
            made.append(i)
            return {"planner": np.zeros(MB // 16)}  # 0.5 MB

        return build

    for i in range(12):
        catalogue.once(("hint", i), make(i))
    assert len(catalogue.kept()) == 3 and list(catalogue.kept()) == [
        ("hint", i) for i in (9, 10, 11)
    ]
    assert catalogue.made(("hint", 0)) is None and catalogue.made(("hint", 11)) is not None
    catalogue.once(("hint", 0), make(0))  # dropped: made again
    assert made == [*range(12), 0]
    catalogue.once(("hint", 0), make(0))  # kept: not made again
    assert made == [*range(12), 0]
    smart = catalogue.policy("smart")
    for i in range(12, 20):
        catalogue.once(("hint", i), make(i))
    assert catalogue.policy("smart") is smart  # the bot list is fixed: kept for good
    big = Catalogue(max_kept=100, max_bytes=int(2.5 * MB))
    for i in range(12):
        big.once(("hint", i), make(i))
    assert len(big.kept()) <= 5 and big.kept().bytes_kept() <= 2.5 * MB


def test_hints_at_many_tables_keep_at_most_the_bound_of_planners(tmp_path):
    """Item 2's scenario, small: hints at 16 distinct tables of 3 scripted bots (each
    builds a planner) keep at most the catalogue's bound of them."""
    pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")
    from fastapi.testclient import TestClient

    from fivethousand_rl.webplay.app import create_app
    from fivethousand_rl.webplay.bots import Catalogue

    nets = tmp_path / "nets" / "multi"
    nets.mkdir(parents=True)
    shutil.copy(ROOT / "checkpoints" / "planner-2p" / "value_net.npz", nets)
    (nets / "config.json").write_text(json.dumps({"players": [3, 4]}))
    catalogue = Catalogue(max_kept=4)
    app = create_app(tmp_path / "data", catalogue=catalogue, planners=nets.parent)
    c = TestClient(app, base_url="http://localhost")
    bots = ["smart", "turn-ev", "threshold:350", "random"]
    tables = [[a, b] for a in bots for b in bots]
    for seed, table in enumerate(tables):
        r = c.post("/api/games", json={"bots": table, "seat": 0, "seed": seed})
        assert r.status_code == 201, r.text
        view = r.json()
        while view["status"] == "wait":  # the bots play up to the human's decision
            view = c.post(f"/api/games/{view['id']}/step", json={"steps": 1000}).json()
        h = c.get(f"/api/games/{view['id']}/hint").json()
        assert h.get("available") and not h["exact"], h
        assert len(catalogue.kept()) <= 4
        assert c.delete(f"/api/games/{view['id']}").status_code == 204  # 10 per address
    hints = [k for k in catalogue.kept() if k[0] == "hint"]
    assert 1 <= len(hints) <= 4
    app.state.store.close()


# ------------------------------------------------------------------ on disk
def ours(folder: Path, name: str, size: int, age: float) -> Path:
    path = folder / name
    path.write_bytes(b"\0" * size)
    t = time.time() - age
    os.utime(path, (t, t))
    return path


def opt(i: int) -> str:
    return f"optimal-2p-free-1000-{100 * i}-{i:016x}.npz"


def test_bound_disk_deletes_our_least_recently_used_files_first(tmp_path):
    files = [ours(tmp_path, opt(i), MB, age=100 - i) for i in range(5)]  # 0 is the oldest
    br = ours(tmp_path, "best-response-3p-00000000000000aa.npz", MB, age=200)
    removed = bound_disk(tmp_path, keep=files[4], max_bytes=int(3.5 * MB))
    assert removed == [br, files[0], files[1]]
    assert sorted(p.name for p in tmp_path.glob("*.npz")) == [opt(i) for i in (2, 3, 4)]


def test_bound_disk_never_deletes_the_new_file_nor_files_not_ours(tmp_path):
    new = ours(tmp_path, opt(1), 3 * MB, age=1000)  # the oldest, and the one just written
    foreign = [
        ours(tmp_path, "notes.txt", MB, age=5000),
        ours(tmp_path, "optimal-2p-free-1000-100-xyz.npz", MB, age=5000),  # not our pattern
        ours(tmp_path, "my-optimal-2p-free-1000-100-0000000000000001.npz", MB, age=5000),
        ours(tmp_path, "optimal-2p-free-1000-100-0000000000000001.npz.bak", MB, age=5000),
    ]
    (tmp_path / "sub").mkdir()
    corrupt_ours = ours(tmp_path, opt(2), 10, age=10)  # ours by name, corrupt: may go
    removed = bound_disk(tmp_path, keep=new, max_bytes=MB)
    assert removed == [corrupt_ours]
    assert new.exists() and all(p.exists() for p in foreign) and (tmp_path / "sub").is_dir()
    assert not any(is_ours(p) for p in foreign) and is_ours(new)


def test_the_size_bound_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(cache.CACHE_MAX_ENV, raising=False)
    assert cache_max_bytes() == cache.DEFAULT_CACHE_MAX_MB * MB
    monkeypatch.setenv(cache.CACHE_MAX_ENV, "1.5")
    assert cache_max_bytes() == int(1.5 * MB)
    for bad in ("lots", "-1", "nan", "inf"):
        monkeypatch.setenv(cache.CACHE_MAX_ENV, bad)
        with pytest.raises(ValueError, match=cache.CACHE_MAX_ENV) as e:
            cache_max_bytes()
        assert "\n" not in str(e.value)


def test_solves_keep_the_disk_cache_within_its_bound(tmp_path, monkeypatch):
    """Each new variant's solution is written, then the least recently used of the
    others go past the bound; reading a solution from the disk counts as a use."""
    from fivethousand_rl.agents import optimal

    monkeypatch.setenv(optimal.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(optimal, "_MEMORY", {})
    foreign = ours(tmp_path, "keep-me.npz", 10, age=10_000)
    variants = [Rules(target=600, entry=entry) for entry in (100, 200, 300)]
    for rules in variants[:2]:
        optimal.two_player_solution(rules, show_progress=False)
    # Room for these two (a higher entry: fewer scores, a smaller file), not a third.
    sizes = [optimal._cache_path(rules).stat().st_size for rules in variants[:2]]
    monkeypatch.setenv(cache.CACHE_MAX_ENV, str(sum(sizes) / MB))
    old = time.time() - 100
    for rules in variants[:2]:
        os.utime(optimal._cache_path(rules), (old, old))
    monkeypatch.setattr(optimal, "_MEMORY", {})
    optimal.two_player_solution(variants[0], show_progress=False)  # read: now recent
    optimal.two_player_solution(variants[2], show_progress=False)  # over: 1 goes
    present = [optimal._cache_path(r).exists() for r in variants]
    assert present == [True, False, True] and foreign.exists()


# ------------------------------------------------- what the server solves on demand
def test_the_operator_restricts_which_rules_the_server_solves(tmp_path, monkeypatch):
    """Issue 42 (deliver 2): ``--solve standard`` solves the standard rules but no
    house rules unless already solved; ``--solve cached`` solves nothing. A refused
    solve is a one-line 422 for a game with the optimal bot and "no hint" for a
    2-player hint, and nothing is solved; ``any`` (the default) solves."""
    pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")
    from fastapi.testclient import TestClient

    from fivethousand_rl.agents import optimal
    from fivethousand_rl.webplay.app import Work, create_app

    monkeypatch.setenv(optimal.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(optimal, "_MEMORY", {})
    solved: list[Rules] = []
    monkeypatch.setattr(optimal, "solve_two_player", lambda rules, **_: solved.append(rules))
    monkeypatch.setattr(optimal, "_save", lambda path, sol: None)
    house = {"target": 600, "entry": 100}

    def client(solve: str) -> TestClient:
        app = create_app(tmp_path / f"data-{solve}", work=Work(solve=solve))
        return TestClient(app, base_url="http://localhost")

    cached = client("cached")
    r = cached.post("/api/games", json={"bots": ["optimal"], "seat": 0, **house})
    assert r.status_code == 422 and "--solve cached" in r.json()["error"], r.text
    assert "\n" not in r.json()["error"]
    r = cached.post("/api/games", json={"bots": ["smart"], "seat": 0, "seed": 1, **house})
    assert r.status_code == 201 and r.json()["hint"] is None, r.text
    view = r.json()
    while view["status"] == "wait":  # the bot plays up to the human's decision
        view = cached.post(f"/api/games/{view['id']}/step", json={"steps": 1000}).json()
    hint = cached.get(f"/api/games/{view['id']}/hint").json()
    assert not hint["available"] and "--solve cached" in hint["note"], hint
    standard = client("standard")
    assert standard.post("/api/games", json={"bots": ["optimal"], **house}).status_code == 422
    assert solved == []
    r = standard.post("/api/games", json={"bots": ["optimal"], "seat": 0})
    assert r.status_code == 201, r.text
    assert solved == [Rules()]
    r = client("any").post("/api/games", json={"bots": ["optimal"], "seat": 0, **house})
    assert r.status_code == 201, r.text
    assert solved == [Rules(), Rules(**house)]


def test_the_server_checks_its_solve_and_cache_flags_before_serving(capsys):
    from fivethousand_rl.webplay.__main__ import main

    with pytest.raises(SystemExit):  # argparse: not one of the choices
        main(["--solve", "everything"])
    assert "--solve" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # argparse, in one line (issue 54 item 7)
        main(["--cache-max-mb", "-1", "--port", "1"])
    err = capsys.readouterr().err
    assert refused.value.code == 2
    assert err.count("\n") == 1 and "argument --cache-max-mb: must be a finite number" in err
