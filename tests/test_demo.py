"""`make demo`'s measurement and closing report (the training part is train.py's own,
tested in test_train.py)."""

import io

from rich.console import Console

from fivethousand_rl import demo


def test_measure_plays_each_agent_against_each_bot_only():
    console = Console(file=io.StringIO(), width=100)
    rates = demo.measure({"smart (as agent)": "smart"}, 4, seed=0, workers=1, console=console)
    assert set(rates) == {("smart (as agent)", bot) for bot in demo.BOTS}
    assert all(rate.endswith("%") and "±" in rate for rate in rates.values())


def test_report_shows_whole_names_says_what_it_means_and_what_next():
    out = io.StringIO()
    console = Console(file=out, width=80)  # a narrow terminal
    rates = {
        (label, bot): "49% ±5%"
        for label in ("demo_quick (new)", "ppo-2p (shipped)")
        for bot in demo.BOTS
    }
    model = "checkpoints/demo_quick/best/model.zip"
    demo.report(console, rates, model, "checkpoints/demo_quick")
    text = out.getvalue()
    assert "…" not in text  # nothing cut
    assert all(len(line) <= 80 for line in text.splitlines())  # nothing wrapped
    for name in ("demo_quick (new)", "ppo-2p (shipped)", *demo.BOTS):
        assert name in text
    assert "confidence interval" in text
    assert f"python play.py --opponents {model}" in text


def test_watch_plays_a_whole_game_through_the_driver(capsys):
    assert demo.main(["--watch", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "won." in out and "rolled [" in out and "banked" in out
