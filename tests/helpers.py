"""Small helpers for building positions in tests."""

from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.rules import Rules, action_for


def game_at(scores, current=0, hold="free", target=5000, entry=500, seed=0):
    """A fresh game with the given banked scores, `current` to roll five dice."""
    game = Game(len(scores), Rules(hold=hold, target=target, entry=entry), seed=seed)
    game.state.scores = list(scores)
    game.state.current = current
    return game


def play(game, roll, held, bank):
    """Roll the given dice, hold `held` from them, then bank or not."""
    game.roll(roll)
    game.act(action_for(held, roll, bank))


def bank_total(game, rolls_and_holds):
    """Play a turn from a list of (roll, held) and bank after the last hold."""
    for i, (roll, held) in enumerate(rolls_and_holds):
        play(game, roll, held, bank=i == len(rolls_and_holds) - 1)
