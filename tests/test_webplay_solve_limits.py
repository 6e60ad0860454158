"""Every solve goes through the work limits (issue 54 item 1): a hint whose remembered
policy lost its solution, and a game against ``optimal`` whose solution is gone, solve
only within a slot of the address that keeps the game; 10 games of one address asking
hints at once (the solver's caches emptied: the server's ``--cache-max-mb 0`` case) run
at most ``max_work_per_address`` solves and the rest are refused at once, while the
other games' views stay fast and memory stays bounded. Real solves, at a small target."""

import contextlib
import re
import threading
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")

from fastapi.testclient import TestClient  # noqa: E402

from fivethousand_rl.agents import optimal  # noqa: E402
from fivethousand_rl.agents.cache import CACHE_MAX_ENV, LRU, MAX_IN_MEMORY  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402
from fivethousand_rl.webplay.app import Work, create_app  # noqa: E402

TARGET = 4000  # a real solve of about 1 s here: long enough for requests to meet it
GAMES = 10  # the case: games of one address asking hints at once
QUICK_VIEW = 0.1  # s: the issue's bound on other games' views (p99) during the attack
NOISY_VIEW = 1.0  # s: what this test asserts of it, on a shared 2-core machine
NEIGHBOUR = "198.51.100.7"  # another address than the attacker's ("testclient")
REFUSED_AT_ONCE = 0.5  # s: a refusal answers without waiting for any solve


@pytest.fixture
def no_cache(tmp_path, monkeypatch):
    """The solver's caches off, as ``--cache-max-mb 0`` leaves them between two rule
    sets: an empty disk cache bounded to 0 and a memory of its own; ``evict()`` drops
    every solution from both."""
    folder = tmp_path / "cache"
    folder.mkdir()
    monkeypatch.setenv(optimal.CACHE_ENV, str(folder))
    monkeypatch.setenv(CACHE_MAX_ENV, "0")
    monkeypatch.setattr(optimal, "_MEMORY", LRU(MAX_IN_MEMORY, optimal.MAX_SOLUTION_BYTES))

    def evict() -> None:
        optimal._MEMORY.clear()
        for path in folder.glob("*.npz"):
            path.unlink()

    return evict


@pytest.fixture
def solves(monkeypatch):
    """Each real solve as it runs: whether its thread held a work slot of the app's
    ``Work`` (set by the test as ``solves.work``), and how many solves ran at once."""
    real = optimal._solve_with_progress
    record = {"held": [], "running": 0, "most": 0, "work": None}
    lock = threading.Lock()

    def watched(rules, show):
        with lock:
            record["held"].append(record["work"]._held.get())
            record["running"] += 1
            record["most"] = max(record["most"], record["running"])
        try:
            return real(rules, show)
        finally:
            with lock:
                record["running"] -= 1

    monkeypatch.setattr(optimal, "_solve_with_progress", watched)
    return record


def client_of(tmp_path, work: Work, solves: dict) -> TestClient:
    solves["work"] = work
    return TestClient(create_app(tmp_path / "games", work=work), base_url="http://localhost")


@contextlib.contextmanager
def slot_taken(work: Work, client: str = "testclient") -> Iterator[None]:
    """`client`'s slot held by other work (a thread of its own) while the block runs."""
    entered, done = threading.Event(), threading.Event()

    def hold() -> None:
        with work.slot(client):
            entered.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert entered.wait(10)
        yield
    finally:
        done.set()
        thread.join(10)


def your_move(client: TestClient, view: dict) -> dict:
    while view["status"] == "wait":
        view = client.post(f"/api/games/{view['id']}/step", json={"steps": 1000}).json()
    assert view["status"] == "you"
    return view


def test_a_remembered_hint_whose_solution_left_solves_only_in_a_slot(tmp_path, no_cache, solves):
    """The hint policy is remembered after the first hint; once its solution has left
    both caches, the next hint solves again, but only within the address's slot: with
    the slot taken it is refused (429) and solves nothing."""
    work = Work(total=2, per_address=1)
    with client_of(tmp_path, work, solves) as client:
        view = your_move(
            client, client.post("/api/games", json={"bots": ["smart"], "target": TARGET}).json()
        )
        hint = f"/api/games/{view['id']}/hint"
        assert client.get(hint).status_code == 200
        assert solves["held"] == [True]
        no_cache()
        with slot_taken(work):  # the address's one slot, busy elsewhere
            refused = client.get(hint)
        assert refused.status_code == 429 and "try again" in refused.json()["error"]
        assert solves["held"] == [True]  # nothing solved without the slot
        again = client.get(hint)
        assert again.status_code == 200 and again.json()["available"]
        assert solves["held"] == [True, True]


def test_a_game_against_optimal_solves_its_steps_only_in_a_slot(tmp_path, no_cache, solves):
    """The optimal bot's solution is gone (both caches) after the game started: its next
    step solves only within the slot of the address that keeps the game (429 while it
    is taken), and the game goes on once the slot is free."""
    work = Work(total=2, per_address=1)
    with client_of(tmp_path, work, solves) as client:
        new = {"bots": ["optimal"], "seat": 1, "target": TARGET, "seed": 0}
        view = client.post("/api/games", json=new).json()
        assert view["status"] == "wait" and solves["held"] == [True]
        no_cache()
        step = f"/api/games/{view['id']}/step"
        with slot_taken(work):
            refused = client.post(step, json={"steps": 1000})
        assert refused.status_code == 429 and "try again" in refused.json()["error"]
        assert solves["held"] == [True]
        # refused: the game as saved, not part-way through the steps (a roll) made before
        assert client.get(f"/api/games/{view['id']}").json()["at"] == view["at"]
        assert your_move(client, client.get(f"/api/games/{view['id']}").json())["status"] == "you"
        assert solves["held"] == [True, True]


def peak_rss_mb() -> float:
    return int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024


def reset_peak_rss() -> float:
    """Start measuring this process's peak RSS afresh (Linux: clear_refs 5); its RSS now."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return peak_rss_mb()


def test_ten_games_of_one_address_asking_hints_at_once_solve_within_the_bound(
    tmp_path, no_cache, solves
):
    """The issue's case: 10 games of one address, each hint policy remembered, the
    caches emptied, then a hint asked in all 10 at once. At most max_work_per_address
    solves run (one rule set: one solve, the others of its slot wait for it), every one
    within a slot; the rest are refused at once (429). Meanwhile another address's game
    answers its views fast, and the peak memory grows by at most max_work solves'."""
    work = Work(total=2, per_address=2)
    with client_of(tmp_path, work, solves) as client:
        new = {"bots": ["smart"], "target": TARGET}
        games = [
            your_move(client, client.post("/api/games", json=new).json()) for _ in range(GAMES)
        ]
        # Another address's game (one address keeps at most 10).
        neighbour = TestClient(client.app, base_url="http://localhost", client=(NEIGHBOUR, 5000))
        other = neighbour.post("/api/games", json={"bots": ["smart"]}).json()
        assert client.get(f"/api/games/{games[0]['id']}/hint").status_code == 200
        for web in games[1:]:  # remembered, and found in memory: no new solve
            assert client.get(f"/api/games/{web['id']}/hint").status_code == 200
        assert solves["held"] == [True]
        # One solve's memory, measured alone.
        no_cache()
        before = reset_peak_rss()
        optimal.two_player_solution(Rules(target=TARGET), show_progress=False)
        one_solve_mb = peak_rss_mb() - before
        no_cache()
        solves["held"].clear()

        answers: list[tuple[int, float]] = []
        go = threading.Event()

        def ask(gid: str) -> None:
            go.wait()
            began = time.monotonic()
            status = client.get(f"/api/games/{gid}/hint").status_code
            answers.append((status, time.monotonic() - began))

        threads = [threading.Thread(target=ask, args=(web["id"],)) for web in games]
        for t in threads:
            t.start()
        before = reset_peak_rss()
        go.set()
        views = []
        while any(t.is_alive() for t in threads) or len(views) < 20:
            began = time.monotonic()
            assert neighbour.get(f"/api/games/{other['id']}").status_code == 200
            views.append(time.monotonic() - began)
        for t in threads:
            t.join(30)
        grown_mb = peak_rss_mb() - before

    statuses = sorted(status for status, _ in answers)
    assert len(statuses) == GAMES and set(statuses) <= {200, 429}
    assert solves["held"] == [True] and solves["most"] == 1  # one rule set: one solve
    assert statuses.count(200) <= work.per_address  # the solver and one waiting for it
    refused = [took for status, took in answers if status == 429]
    assert len(refused) >= GAMES - work.per_address
    assert max(refused) < REFUSED_AT_ONCE, f"a refusal took {max(refused):.2f} s"
    views.sort()
    p99 = views[min(len(views) - 1, int(0.99 * len(views)))]
    print(
        f"solve alone {one_solve_mb:.1f} MB; attack: {statuses.count(429)} refused, "
        f"peak RSS +{grown_mb:.1f} MB, other game's views p99 {1000 * p99:.1f} ms "
        f"({len(views)} views), refusals up to {1000 * max(refused):.1f} ms"
    )
    assert p99 < NOISY_VIEW, f"other games' views p99 {p99:.3f} s (issue bound {QUICK_VIEW} s)"
    assert grown_mb < work.total * max(one_solve_mb, 10) + 50


def test_one_rule_set_is_solved_once_at_a_time_outside_a_server_too(no_cache, solves):
    """Three threads of a program asking the same new rules at once: one solves, the
    others wait for it and read its solution (no admission: nothing is refused)."""
    solves["work"] = Work()  # holds no slot here: the solves are recorded as unheld
    rules = Rules(target=TARGET, entry=750)
    found = []
    threads = [
        threading.Thread(
            target=lambda: found.append(optimal.two_player_solution(rules, show_progress=False))
        )
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(found) == 3 and solves["held"] == [False] and solves["most"] == 1
    assert found[0].first_player_win_probability == found[2].first_player_win_probability
