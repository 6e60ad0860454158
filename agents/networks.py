"""The neural network of the trained agents (its numpy copy for fast play,
``NumpyScorer``, is in ``fivethousand_rl.agents.neural``).

``ActionScoringPolicy`` is a MaskablePPO policy for the "rich" observation encoding
(``fivethousand_rl.envs.encoding``): the observation is a state part and one feature row per action
describing that action's consequences. The actor scores every action with the *same*
small network, fed with the action's row and an embedding of the state, so what it
learns about one roll carries over to every roll that leads to the same place. The
critic reads the state part alone.
"""

from __future__ import annotations

from functools import partial
from itertools import pairwise

import torch as th
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

from fivethousand_rl.envs.encoding import ACTION_FEATURES, Col, ObsSpec
from fivethousand_rl.envs.rules import NUM_ACTIONS

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh}
# The network's layer sizes by default (TrainConfig's defaults too).
LAYERS = {"state_layers": (128, 64), "scorer_layers": (64, 64), "critic_layers": (256, 256)}


def _mlp(sizes: list[int], activation: type[nn.Module], last_activation: bool) -> nn.Sequential:
    layers = [m for a, b in pairwise(sizes) for m in (nn.Linear(a, b), activation())]
    return nn.Sequential(*(layers if last_activation else layers[:-1]))


class ActionScoringNet(nn.Module):
    """SB3's "mlp_extractor" slot: latent_pi is already the 64 action logits.

    score(a) = scorer(act(action_in(features_a) + state_in(embedding))): the first
    layer of the shared scorer is split so that the state's share of it is computed
    once per observation rather than once per action (same function as a layer on the
    concatenation, a fraction of the cost).
    """

    def __init__(
        self,
        n_state: int,
        state_layers: tuple[int, ...] = LAYERS["state_layers"],
        scorer_layers: tuple[int, ...] = LAYERS["scorer_layers"],
        critic_layers: tuple[int, ...] = LAYERS["critic_layers"],
        activation: str = "relu",
    ) -> None:
        super().__init__()
        act = ACTIVATIONS[activation]
        self.n_state = n_state
        self.state_net = _mlp([n_state, *state_layers], act, last_activation=True)
        self.action_in = nn.Linear(ACTION_FEATURES, scorer_layers[0])
        self.state_in = nn.Linear(state_layers[-1], scorer_layers[0], bias=False)
        self.scorer = nn.Sequential(act(), *_mlp([*scorer_layers, 1], act, last_activation=False))
        self.critic = _mlp([n_state, *critic_layers], act, last_activation=True)
        self.latent_dim_pi = NUM_ACTIONS
        self.latent_dim_vf = critic_layers[-1]

    def forward_actor(self, obs: th.Tensor) -> th.Tensor:
        """The logits of the legal actions (rows whose LEGAL column is set); the other
        logits are 0, for MaskablePPO masks them out. Only the legal rows are scored:
        about 5 of the 64, which made training several times faster (the exported
        graph does the same: ``fivethousand_rl.agents.exporting.actor_graph``)."""
        rows = obs[:, self.n_state :].reshape(-1, ACTION_FEATURES)
        legal = (rows[:, Col.LEGAL] > 0.5).nonzero().squeeze(1)
        bias = self.state_in(self.state_net(obs[:, : self.n_state]))
        scores = self.scorer(self.action_in(rows[legal]) + bias[legal // NUM_ACTIONS])
        logits = obs.new_zeros(len(obs) * NUM_ACTIONS).index_put((legal,), scores.squeeze(-1))
        return logits.reshape(-1, NUM_ACTIONS)

    def score_every_action(self, obs: th.Tensor) -> th.Tensor:
        """Every action's logit, legal or not (the same function on every row)."""
        state = obs[:, : self.n_state]
        actions = obs[:, self.n_state :].reshape(-1, NUM_ACTIONS, ACTION_FEATURES)
        bias = self.state_in(self.state_net(state)).unsqueeze(1)
        return self.scorer(self.action_in(actions) + bias).squeeze(-1)

    def forward_critic(self, obs: th.Tensor) -> th.Tensor:
        return self.critic(obs[:, : self.n_state])

    def forward(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.forward_actor(obs), self.forward_critic(obs)


class ActionScoringPolicy(MaskableActorCriticPolicy):
    """MaskableActorCriticPolicy whose actor scores each action with a shared network.

    Extra policy_kwargs: ``n_state`` (size of the state part of the observation: where
    its "actions" slice starts), ``state_layers``, ``scorer_layers``,
    ``critic_layers``, ``activation`` ("relu" or "tanh").
    """

    def __init__(self, *args, n_state: int, activation: str = "relu", **kwargs) -> None:
        layers = {name: tuple(kwargs.pop(name, size)) for name, size in LAYERS.items()}
        self.net_config = {"n_state": n_state, **layers, "activation": activation}
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = ActionScoringNet(**self.net_config)

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        # The extractor already produces one logit per action.
        self.action_net = nn.Identity()
        if self.ortho_init:  # start near uniform among the legal actions
            self.mlp_extractor.scorer[-1].apply(partial(self.init_weights, gain=0.01))
        self.optimizer = self.optimizer_class(
            self.parameters(),
            lr=lr_schedule(1),  # type: ignore[call-arg]
            **self.optimizer_kwargs,
        )

    def _get_constructor_parameters(self) -> dict:
        data = super()._get_constructor_parameters()
        data.update(self.net_config)
        return data


def policy_kwargs_for(n_players: int, rules, **net) -> dict:
    """policy_kwargs for ActionScoringPolicy on the rich encoding of this game."""
    return {"n_state": ObsSpec("rich", n_players, rules).slices["actions"].start, **net}
