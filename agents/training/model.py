"""The environments and the model of a training run, built from its TrainConfig."""

from __future__ import annotations

import io
from functools import partial

from fivethousand_rl.agents.base import MAX_MODEL_BYTES, read_capped
from fivethousand_rl.agents.threads import one_thread_per_process
from fivethousand_rl.agents.training.config import (
    NETWORK_KEYS,
    LinearLearningRate,
    TrainConfig,
    init_path,
    parse_opponents,
)


def make_env(config: TrainConfig):
    """One environment, in SB3's Monitor (episode statistics); a module-level function
    with its config bound (functools.partial) pickles into subprocess workers."""
    from stable_baselines3.common.monitor import Monitor

    from fivethousand_rl.envs.gym_env import FiveThousandEnv

    return Monitor(FiveThousandEnv(**env_options(config)))


def make_worker_env(config: TrainConfig):
    """``make_env`` in a SubprocVecEnv worker process: one thread of numeric work (the
    workers are the parallelism), set before SB3 loads torch there."""
    one_thread_per_process()
    return make_env(config)


def env_options(config: TrainConfig) -> dict:
    """The game and opponents of a run's environments, per-game or batched alike."""
    return {
        "n_players": config.players,
        "rules": config.rules,
        "max_turns": config.max_turns,
        "learner_seat": "random",
        "obs_encoding": config.obs_spec.encoding,
        "opponent_pool": parse_opponents(config.opponents),
    }


def make_vec_env(config: TrainConfig):
    """The run's environments: n_envs games in SB3's VecEnv, as config.vec_env says."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    kind = config.vec_env_kind
    if kind == "batched":  # one vector env: make_env's game and options, every game at once
        from fivethousand_rl.agents.sb3 import make_sb3_vec_env

        vec = make_sb3_vec_env(config.n_envs, **env_options(config))
    else:
        make = make_worker_env if kind == "subproc" else make_env
        fns = [partial(make, config) for _ in range(config.n_envs)]
        vec = SubprocVecEnv(fns) if kind == "subproc" else DummyVecEnv(fns)
    vec.seed(config.seed)
    return vec


# TrainConfig fields passed to MaskablePPO as they are.
PPO_KEYS = ("n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "ent_coef")
PPO_KEYS += ("vf_coef", "max_grad_norm")


def make_model(config: TrainConfig, vec_env):
    """A new MaskablePPO model (with init_from's weights if given), its observation spec
    attached so that every checkpoint of the run carries it."""
    from sb3_contrib import MaskablePPO

    from fivethousand_rl.agents.networks import ActionScoringPolicy, policy_kwargs_for
    from fivethousand_rl.agents.neural import (
        attach_obs_spec,
        check_weights,
        first_line,
        open_model_archive,
    )

    networks = {name: tuple(getattr(config, name)) for name in NETWORK_KEYS}
    model = MaskablePPO(
        ActionScoringPolicy,
        vec_env,
        learning_rate=LinearLearningRate(config.learning_rate, config.final_learning_rate),
        **{name: getattr(config, name) for name in PPO_KEYS},
        policy_kwargs=policy_kwargs_for(
            config.players, config.rules, **networks, activation=config.activation
        ),
        seed=config.seed,
        device="cpu",
        verbose=0,
    )
    attach_obs_spec(model, config.obs_spec)
    if config.init_from:
        try:  # weights (and the optimizer's moments) of the trained model
            raw = read_capped(init_path(config), MAX_MODEL_BYTES)
            with open_model_archive(raw) as archive:  # bounded, nested archives too
                check_weights(archive)  # plain tensors only, whatever SB3's version reads
            model.set_parameters(io.BytesIO(raw), exact_match=True, device="cpu")  # the same bytes
        except Exception as e:
            raise ValueError(
                f"cannot start from {config.init_from}: {first_line(e)} "
                "(the network settings must match the checkpoint's)"
            ) from None
    return model
