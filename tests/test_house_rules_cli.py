"""Issue 31 item 2, the programs: every command line takes the same rule flags
(fivethousand_rl.agents.rule_flags: RULES.md R5 and the house-rule switches V1-V5), a trained agent
plays only the rules it was trained under, terminal play under house rules to the end
with exact hints, saves and logs that carry the rules, and recorded commands that name
them again."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from fivethousand_rl import demo, evaluate, play, train, train_planner
from fivethousand_rl.agents import make_policy, regret, terminal, tournament
from fivethousand_rl.agents.optimal import OptimalBot
from fivethousand_rl.agents.rule_flags import describe_rules, rule_flags, rules_from_args
from fivethousand_rl.agents.training import progress
from fivethousand_rl.agents.training.config import (
    PlannerConfig,
    TrainConfig,
    default_run_name,
    parse_run_args,
    read_run_config,
    saved_rules,
    with_params,
)
from fivethousand_rl.envs.game import Game, describe_action
from fivethousand_rl.envs.game_log import apply_event
from fivethousand_rl.envs.rules import Rules
from tests.test_play import run_play

ROOT = Path(__file__).resolve().parent.parent
# The house rules most tests play: no bumps (V2), overshoots lost (V3), a shrunken game (V5).
HOUSE = ["--target", "1000", "--no-bump", "--overshoot", "lost"]  # in rule_flags's order
HOUSE_RULES = Rules(bump=False, overshoot="lost", target=1000)


# ------------------------------------------------------------------ the same flags everywhere
def play_rules(argv: list[str]) -> Rules:
    return play.parse_args(argv)[1]


def evaluate_rules(argv: list[str]) -> Rules:
    return rules_from_args(evaluate.parse_args(["smart", "random", *argv]))


def regret_rules(argv: list[str]) -> Rules:
    return rules_from_args(regret.make_parser().parse_args(["smart", *argv]))


def watch_rules(argv: list[str]) -> Rules:
    return rules_from_args(demo.watch_parser().parse_args(argv))


def train_rules(argv: list[str]) -> Rules:
    args, _ = parse_run_args(train.Args, argv)
    return with_params(args.config, []).rules  # its values typed, as a run's are


def planner_rules(argv: list[str]) -> Rules:
    args, _ = parse_run_args(train_planner.Args, argv)
    return with_params(args.config, []).rules


PARSERS = {
    "play": play_rules,
    "evaluate": evaluate_rules,
    "regret": regret_rules,
    "demo --watch": watch_rules,
    "train": train_rules,
    "train-planner": planner_rules,
}
FLAG_ROWS = [  # (flags, the rules they name, the rule they exercise)
    ([], Rules(), "the seeds' rules"),
    (["--hold", "all"], Rules(hold="all"), "R5"),
    (["--entry", "350"], Rules(entry=350), "V1: any multiple of 50"),
    (["--entry", "1000"], Rules(entry=1000), "V1"),
    (["--no-bump"], Rules(bump=False), "V2"),
    (["--overshoot", "lost"], Rules(overshoot="lost"), "V3"),
    (["--no-fifty-rule"], Rules(fifty_rule=False), "V4"),
    (["--target", "1000", "--entry", "300"], Rules(target=1000, entry=300), "V5, V1"),
    (["--bump", "--fifty-rule", "--overshoot", "gift"], Rules(), "the defaults said aloud"),
    (
        ["--hold", "all", "--target", "2000", "--entry", "250", "--no-bump"]
        + ["--overshoot", "lost", "--no-fifty-rule"],
        Rules(hold="all", target=2000, entry=250, bump=False, overshoot="lost", fifty_rule=False),
        "every switch at once",
    ),
]


@pytest.mark.parametrize("program", PARSERS)
@pytest.mark.parametrize("flags, rules, rule", FLAG_ROWS, ids=[r[2] for r in FLAG_ROWS])
def test_every_program_parses_the_rule_flags_to_the_same_rules(program, flags, rules, rule):
    assert PARSERS[program](flags) == rules
    assert PARSERS[program](rule_flags(rules)) == rules  # the flags a program prints, read back


BAD_ROWS = [  # (flags, what the one line says)
    (["--entry", "333"], "entry must be a multiple of 50, got 333"),  # V1
    (["--entry", "0"], "entry must be between 50 and target, got 0"),  # V1
    (["--entry", "1500", "--target", "1000"], "entry must be between 50 and target"),  # V1, V5
    (["--target", "1050"], "target must be a positive multiple of 100"),  # V5
    (["--overshoot", "kept"], "'kept'"),  # V3
    (["--hold", "some"], "'some'"),  # R5
]


def exit_code(main, argv: list[str]) -> int:
    """A program's exit status, whether it returns it or exits (argparse, tyro)."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def no_input(prompt: str) -> str:
    raise AssertionError("a refused command line asked for a move")


MAINS = {
    "play": lambda argv: play.main(argv, ask=no_input),
    "evaluate": lambda argv: evaluate.main(["smart", "random", "--games", "2", *argv]),
    "regret": lambda argv: regret.main(["smart", *argv]),
    "demo --watch": lambda argv: demo.main(["--watch", *argv]),
    "train": lambda argv: train.main(argv),
    "train-planner": lambda argv: train_planner.main(argv),
}


@pytest.mark.parametrize("program", MAINS)
@pytest.mark.parametrize("flags, message", BAD_ROWS, ids=[" ".join(r[0]) for r in BAD_ROWS])
def test_a_bad_rule_value_is_refused_in_one_line(program, flags, message, capsys, tmp_path):
    argv = [*flags, "--checkpoints", str(tmp_path)] if program.startswith("train") else flags
    assert exit_code(MAINS[program], argv) == 2
    out, err = capsys.readouterr()
    err = err.strip()
    assert err.startswith("error: ") and "\n" not in err and message in err, err
    assert not list(tmp_path.iterdir())  # nothing written


# ------------------------------------------------------------------ terminal play
@pytest.mark.parametrize(
    "flags, rules, house",
    [
        (HOUSE, HOUSE_RULES, "exactly 1000 wins, no bumps, overshoot lost"),  # V2, V3, V5
        (
            ["--target", "1000", "--entry", "350", "--no-fifty-rule"],  # V1, V4, V5
            Rules(target=1000, entry=350, fifty_rule=False),
            "exactly 1000 wins, 350 to enter, no 50 rule",
        ),
    ],
    ids=["no bumps, overshoot lost", "entry 350, no 50 rule"],
)
def test_a_house_rules_game_is_played_to_the_end_with_exact_hints_and_replayed(
    flags, rules, house, tmp_path
):
    """A game through standard input, banking when it may (else rolling on), with a hint
    at each decision that is the solver's best action under these rules."""
    log = tmp_path / "log.json"
    args = ["--opponents", "optimal", "--hint", "--seed", "4", "--log", str(log), *flags]
    result = run_play(*args, stdin="rules\n" + "b\nr\n" * 500)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Game over after" in out and "Traceback" not in out + result.stderr
    assert f"\nRules: {describe_rules(rules)}.\nHouse rules: {house}.\n" in out  # the header
    assert f"House rules in force: {house}." in out  # 'rules'
    data = json.loads(log.read_text())
    assert Rules(**data["rules"]) == rules
    # Every hint shown is the exact best action at that decision (replayed from the log).
    hints = [line for line in out.splitlines() if line.startswith("  hint: ")]
    game, oracle, expected = Game(2, rules), OptimalBot(show_progress=False), []
    for event in data["events"]:
        if "act" in event and event["player"] == 0:
            values = oracle.action_values(game)
            best = max(values, key=values.__getitem__)
            expected.append(describe_action(best, game.state.roll, rolling="roll on"))
        apply_event(game, event)
    assert game.over and len(hints) == len(expected) > 0
    for hint, advice in zip(hints, expected, strict=True):
        assert hint.startswith(f"  hint: {advice} (win probability ")
    replayed = run_play("--replay", str(log))
    assert replayed.returncode == 0, replayed.stderr
    assert f"\nHouse rules: {house}.\n" in replayed.stdout
    assert replayed.stdout.strip().splitlines()[-1] == out.strip().splitlines()[-2]


STANDARD = "exactly 5000 wins, 500 to enter, bumps, overshoot gift, the 50 rule, hold free"


@pytest.mark.parametrize(
    "flags, rules, house",
    [
        ([], STANDARD, None),
        (["--hold", "all"], STANDARD.replace("free", "all"), "hold all"),  # R5
        (["--entry", "350"], STANDARD.replace("500 to", "350 to"), "350 to enter"),  # V1
        (["--no-bump"], STANDARD.replace("bumps", "no bumps"), "no bumps"),  # V2
        (["--overshoot", "lost"], STANDARD.replace("gift", "lost"), "overshoot lost"),  # V3
        (
            ["--no-fifty-rule", "--target", "2000"],  # V4, V5
            STANDARD.replace("5000", "2000").replace("the 50", "no 50"),
            "exactly 2000 wins, no 50 rule",
        ),
    ],
)
def test_the_game_header_says_the_rules(flags, rules, house):
    lines: list[str] = []
    answers = iter(["quit", ""])  # "": leave without saving
    argv = ["--opponents", "smart", "--seed", "1", *flags]
    assert play.main(argv, ask=lambda _: next(answers), say=lines.append) == 0
    assert lines[1] == f"Rules: {rules}."  # under "5000: you against smart (seed 1). ..."
    if house:
        assert lines[2] == f"House rules: {house}."
    else:  # the seeds' rules: no house rules line, the board comes next
        assert lines[2].startswith("Turn 1: ")


def test_a_saved_house_rules_game_resumes_under_its_rules_and_refuses_others(tmp_path, capsys):
    save = tmp_path / "game.json"
    answers = iter([f"save {save}", "quit", ""])  # "": leave without saving
    argv = ["--opponents", "smart", "--seed", "2", *HOUSE]
    lines: list[str] = []
    assert play.main(argv, ask=lambda _: next(answers), say=lines.append) == 0
    assert any(f"resume with: python play.py --load {save}" in line for line in lines)
    saved = json.loads(save.read_text())
    assert Rules(**saved["game"]["rules"]) == HOUSE_RULES  # Rules.to_dict: V2, V3, V5
    session = terminal.load(str(save), False, 0.0, no_input, lines.append)
    assert session.game.rules == HOUSE_RULES
    # A saved game has its own rules: a rule flag given with --load is refused.
    assert play.main(["--load", str(save), "--no-fifty-rule"], ask=no_input) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --no-fifty-rule is for a new game: a saved game has its own"


@pytest.mark.parametrize(
    "flags",
    [["--hold", "all"], ["--entry", "300"], ["--no-bump"], ["--overshoot", "lost"]],
    ids=["R5", "V1", "V2", "V3"],
)
def test_a_trained_agent_is_refused_under_other_rules_in_one_line(flags, capsys):
    """The shipped planner-2p was trained under the seeds' rules (an SB3 model: below)."""
    for main in (
        lambda: play.main(["--opponents", "planner-2p", *flags], ask=no_input),
        lambda: evaluate.main(["planner-2p", "smart", "--games", "2", *flags]),
    ):
        assert main() == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: planner-2p values games under these rules only: ")
        assert "\n" not in err


def test_with_3_players_under_house_rules_the_hint_says_none_fits(capsys):
    """No shipped planner values house-rules tables: the hint says so in one line."""
    lines: list[str] = []
    answers = iter(["quit", ""])  # "": leave without saving
    argv = ["--opponents", "smart", "turn-ev", "--hint", "--seed", "1", "--no-bump"]
    assert play.main(argv, ask=lambda _: next(answers), say=lines.append) == 0
    hints = [line for line in lines if "hint:" in line]
    assert hints == [
        "  hint: unavailable for 3 players (no shipped planner values such a table under "
        "these rules)"
    ]


@pytest.mark.parametrize(
    "program, argv, said",
    [
        ("demo --watch", ["--bots", "smart", "turn-ev", *HOUSE], "(seed 0, exactly 1000 wins"),
        ("regret", ["--against", "turn-ev", "--games", "4", *HOUSE], "smart vs turn-ev, 4 games"),
    ],
)
def test_a_program_plays_under_house_rules(program, argv, said, capsys):
    assert exit_code(MAINS[program], argv) == 0
    assert said in " ".join(capsys.readouterr().out.split())


# ------------------------------------------------------------------ evaluate
def test_evaluate_plays_and_records_the_house_rules(tmp_path, monkeypatch):
    """The games are played under the flags' rules, which the JSON and Markdown record."""
    played = []
    run = tournament.run

    def recording(specs, seatings, rules, *args, **kwargs):
        played.append(rules)
        return run(specs, seatings, rules, *args, **kwargs)

    monkeypatch.setattr(tournament, "run", recording)
    out, md = tmp_path / "s.json", tmp_path / "s.md"
    argv = ["smart", "turn-ev", "optimal", "--games", "20", *HOUSE]
    assert evaluate.main([*argv, "--json", str(out), "--markdown", str(md)]) == 0
    assert played == [HOUSE_RULES]
    summary = json.loads(out.read_text())
    assert Rules(**summary["rules"]) == HOUSE_RULES and summary["hold"] == "free"
    assert " ".join(HOUSE) in summary["command"]
    first = md.read_text().splitlines()[0]
    assert first.startswith(f"Rules: {describe_rules(HOUSE_RULES)} (house rules: ")
    assert "`--target 1000 --no-bump --overshoot lost`" in first


# ------------------------------------------------------------------ the trainers
PLANNER_TINY = [
    "--target", "1000", "--entry", "300", "--hidden", "8", "--iterations", "2",
    "--games-per-iteration", "2", "--fit-steps", "5", "--eval-freq", "0",
    "--eval-games", "10", "--checkpoint-freq", "1", "--eval-tables", "threshold:300",
    "--no-progress",
]  # fmt: skip
PPO_TINY = [
    "--preset", "quick", "--no-progress", "--n-timesteps", "256", "--params",
    "n_envs=2", "n_steps=128", "batch_size=128", "eval_freq=0", "checkpoint_freq=256",
    "opponents=[smart]", "state_layers=[8]", "scorer_layers=[8]", "critic_layers=[8]",
]  # fmt: skip


def test_a_planner_trained_under_house_rules_records_them_and_plays_only_them(tmp_path, capsys):
    """V2, V3 on a shrunken game (V1, V5): config.json and command.txt carry the
    switches, the printed command names them, the network refuses other rules."""
    argv = [*PLANNER_TINY, "--no-bump", "--overshoot", "lost", "--checkpoints", str(tmp_path)]
    assert train_planner.main(argv) == 0
    run = tmp_path / "custom_planner_2p_free_target-1000_entry-300_no-bump_overshoot-lost_seed0"
    config = json.loads((run / "config.json").read_text())
    rules = Rules(target=1000, entry=300, bump=False, overshoot="lost")
    assert (config["bump"], config["overshoot"], config["fifty_rule"]) == (False, "lost", True)
    assert saved_rules(config) == rules
    assert "--no-bump --overshoot lost" in (run / "command.txt").read_text()
    net = run / "latest" / "value_net.npz"
    printed = capsys.readouterr().out
    assert "(hold free, exactly 1000 wins, 300 to enter, no bumps, overshoot lost)" in printed
    assert " ".join(rule_flags(rules)) in printed.splitlines()[-1]  # play against it: ...
    make_policy(str(net)).check_game(2, rules)
    for other in (dataclasses.replace(rules, bump=True), dataclasses.replace(rules, entry=350)):
        with pytest.raises(ValueError, match="values games under these rules only") as refused:
            make_policy(str(net)).check_game(2, other)
        assert "\n" not in str(refused.value)


def test_a_ppo_model_trained_under_house_rules_plays_only_them(tmp_path, capsys):
    """V2, V3, V5: a few hundred steps of train.py; its config records the switches and
    its model refuses the seeds' rules in evaluate.py, in one line."""
    argv = [*PPO_TINY, *HOUSE, "--checkpoints", str(tmp_path)]
    assert train.main(argv) == 0
    run = tmp_path / "quick_free_target-1000_no-bump_overshoot-lost_seed0"
    config = json.loads((run / "config.json").read_text())
    assert saved_rules(config) == HOUSE_RULES == read_run_config(run).rules
    out = capsys.readouterr().out
    assert "(hold free, exactly 1000 wins, no bumps, overshoot lost)" in out
    assert out.strip().splitlines()[-1].endswith(" ".join(HOUSE))  # play against it: ...
    model = str(run / "latest" / "model.zip")
    assert evaluate.main([model, "smart", "--games", "2", *HOUSE]) == 0
    capsys.readouterr()
    for main in (
        lambda: evaluate.main([model, "smart", "--games", "2"]),
        lambda: play.main(["--opponents", model, "--target", "1000", "--no-bump"], ask=no_input),
    ):
        assert main() == 2
        err = capsys.readouterr().err.strip()
        assert "cannot play this game: it was trained under" in err and "\n" not in err, err


def test_a_run_with_house_rules_cannot_change_them_on_resume(tmp_path, capsys):
    argv = [*PLANNER_TINY, "--checkpoints", str(tmp_path), "--run-name", "r"]
    assert train_planner.main([*argv, "--stop-after", "1"]) == 0
    resume = ["--resume", "r", "--checkpoints", str(tmp_path), "--no-bump"]
    assert train_planner.main(resume) == 2
    assert "--resume continues a run as configured" in capsys.readouterr().err


@pytest.mark.parametrize(
    "cls, missing",
    [  # config.json of runs made before the switches (the planner's had target and entry)
        (TrainConfig, ("target", "entry", "bump", "overshoot", "fifty_rule")),
        (PlannerConfig, ("bump", "overshoot", "fifty_rule")),
    ],
)
def test_an_old_config_json_reads_as_the_seeds_rules(tmp_path, cls, missing):
    values = dataclasses.asdict(cls(hold="all"))
    old = {key: value for key, value in values.items() if key not in missing}
    (tmp_path / "config.json").write_text(json.dumps(old))
    assert read_run_config(tmp_path, cls).rules == Rules(hold="all")
    assert saved_rules(old) == Rules(hold="all")


def test_an_old_planner_run_resumes(tmp_path):
    """A run whose config.json predates the switches resumes, as the seeds' rules."""
    argv = [*PLANNER_TINY, "--checkpoints", str(tmp_path), "--run-name", "old"]
    assert train_planner.main([*argv, "--stop-after", "1"]) == 0
    path = tmp_path / "old" / "config.json"
    config = json.loads(path.read_text())
    for key in ("bump", "overshoot", "fifty_rule"):
        del config[key]
    path.write_text(json.dumps(config))
    assert train_planner.main(["--resume", "old", "--checkpoints", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "old" / "summary.json").read_text())["iterations"] == 2


@pytest.mark.parametrize(
    "flags, name",
    [
        ([], "quick_free_seed0"),
        (["--hold", "all"], "quick_all_seed0"),
        (["--no-fifty-rule", "--entry", "350"], "quick_free_entry-350_no-fifty-rule_seed0"),
        (HOUSE, "quick_free_target-1000_no-bump_overshoot-lost_seed0"),
    ],
)
def test_a_runs_default_name_says_its_house_rules(flags, name):
    args, _ = parse_run_args(train.Args, ["--preset", "quick", *flags])
    assert default_run_name(with_params(args.config, [])) == name


@pytest.mark.parametrize(
    "config, flags",
    [
        (TrainConfig(), ""),
        (TrainConfig(hold="all", bump=False), " --hold all --no-bump"),
        (TrainConfig(players=3, overshoot="lost", entry=350), " --entry 350 --overshoot lost"),
    ],
)
def test_the_play_against_it_command_names_the_rules(config, flags, tmp_path):
    line = progress.finished(config, tmp_path / "run", 256, [], 1.0)[-1]
    seats = " ".join([str(tmp_path / "run" / "latest" / "model.zip")] * (config.players - 1))
    assert line == f"play against it: python play.py --opponents {seats}{flags}"
