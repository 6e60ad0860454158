"""PPO for 5000 in one file, read from top to bottom like CleanRL's ``ppo.py``: plain
torch on the batched vector environment, illegal actions masked out (logit -inf).

    python examples/cleanrl_ppo.py --total-steps 16000000 --seed 0 --out model.pt

Flags: ``Config``'s fields (``--help``). The file saved holds weights and config as
plain data, which ``load`` reads with ``torch.load(weights_only=True)``: no code runs.
"""

import dataclasses
import itertools
import time
from dataclasses import dataclass

import gymnasium as gym
import torch
import tyro
from torch import nn
from torch.distributions import Categorical

import fivethousand_rl.envs  # registers FiveThousand-v0
from fivethousand_rl.agents.training.config import PPOSettings  # the settings PPOs share
from fivethousand_rl.envs.rules import NUM_ACTIONS  # 64: 5 bits of dice to hold, 1 bit to bank


@dataclass
class Config(PPOSettings):  # and gamma, gae_lambda, ent_coef, vf_coef, max_grad_norm
    total_steps: int = 16_000_000  # decisions of the learner, all games together
    seed: int = 0
    out: str = "model.pt"  # where to save the network and this configuration
    opponent: str = "optimal"  # who plays the other seat (any bot or shipped agent)
    num_envs: int = 256  # games played at once
    num_steps: int = 64  # steps of each game per rollout
    learning_rate: float = 1e-3
    anneal_lr: bool = True
    gamma: float = 1.0
    """No discount: the only reward is +1 or -1 when a game ends."""
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    hidden: int = 128
    threads: int = 1  # torch threads


class Agent(nn.Module):
    """Actor (a score per action), critic (the chance to win as -1..1): two MLPs."""

    def __init__(self, obs_size: int, hidden: int) -> None:
        super().__init__()
        self.obs_size, self.hidden = obs_size, hidden
        self.critic, self.actor = self.mlp(1, 1.0), self.mlp(NUM_ACTIONS, 0.01)

    def mlp(self, n_out: int, last_std: float) -> nn.Sequential:
        sizes = [self.obs_size, self.hidden, self.hidden, n_out]
        linears = [nn.Linear(n_in, n) for n_in, n in itertools.pairwise(sizes)]
        for linear, std in zip(linears, [2**0.5, 2**0.5, last_std], strict=True):
            nn.init.orthogonal_(linear.weight, std)
            nn.init.zeros_(linear.bias)
        return nn.Sequential(linears[0], nn.ReLU(), linears[1], nn.ReLU(), linears[2])

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)

    def policy(self, obs: torch.Tensor, mask: torch.Tensor) -> Categorical:
        return Categorical(logits=self.actor(obs).masked_fill(~mask, -torch.inf))


def save(agent: Agent, config: Config, path: str) -> None:
    shape = {"obs_size": agent.obs_size, "hidden": agent.hidden, "weights": agent.state_dict()}
    torch.save({"config": dataclasses.asdict(config), **shape}, path)


def load(path: str) -> Agent:
    """The network saved at `path`, ready to play (no code in the file runs)."""
    saved = torch.load(path, weights_only=True)
    agent = Agent(saved["obs_size"], saved["hidden"])
    agent.load_state_dict(saved["weights"])
    return agent.eval()


def train(cfg: Config) -> Agent:
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    env = gym.make_vec(
        fivethousand_rl.envs.ENV_ID, num_envs=cfg.num_envs, vectorization_mode="vector_entry_point",
        opponents=cfg.opponent, learner_seat="random",
    )  # fmt: skip
    obs_size = env.single_observation_space.shape[0]
    agent = Agent(obs_size, cfg.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=cfg.learning_rate, eps=1e-5)
    T, N = cfg.num_steps, cfg.num_envs
    batch_size, iterations = T * N, max(1, cfg.total_steps // (T * N))
    obs_buf = torch.zeros(T, N, obs_size)
    mask_buf = torch.zeros(T, N, NUM_ACTIONS, dtype=torch.bool)
    action_buf = torch.zeros(T, N, dtype=torch.long)
    logp_buf, reward_buf, done_buf, value_buf = (torch.zeros(T, N) for _ in range(4))
    obs, _ = env.reset(seed=cfg.seed)
    next_obs, next_done = torch.as_tensor(obs), torch.zeros(N)
    next_mask = torch.as_tensor(env.unwrapped.action_masks())
    start = time.time()
    for iteration in range(1, iterations + 1):
        if cfg.anneal_lr:
            optimizer.param_groups[0]["lr"] = cfg.learning_rate * (1 - (iteration - 1) / iterations)
        wins = games = 0
        for t in range(T):  # play: the vector env restarts a finished game in the same step
            obs_buf[t], mask_buf[t], done_buf[t] = next_obs, next_mask, next_done
            with torch.no_grad():
                dist = agent.policy(next_obs, next_mask)
                action_buf[t] = action = dist.sample()
                logp_buf[t], value_buf[t] = dist.log_prob(action), agent.value(next_obs)
            obs, reward, terminated, truncated, _ = env.step(action.numpy())
            done = terminated | truncated
            wins, games = wins + int((reward[done] > 0).sum()), games + int(done.sum())
            reward_buf[t] = torch.as_tensor(reward, dtype=torch.float32)
            next_obs, next_done = torch.as_tensor(obs), torch.as_tensor(done, dtype=torch.float32)
            next_mask = torch.as_tensor(env.unwrapped.action_masks())
        with torch.no_grad():  # advantages by GAE; a game's end stops the bootstrap
            advantages, last = torch.zeros(T, N), torch.zeros(N)
            values = torch.cat([value_buf, agent.value(next_obs)[None]])
            dones = torch.cat([done_buf, next_done[None]])
            for t in reversed(range(T)):
                go_on = 1.0 - dones[t + 1]
                delta = reward_buf[t] + cfg.gamma * values[t + 1] * go_on - values[t]
                last = advantages[t] = delta + cfg.gamma * cfg.gae_lambda * go_on * last
            returns = advantages + value_buf
        b_obs, b_mask = obs_buf.reshape(batch_size, -1), mask_buf.reshape(batch_size, -1)
        b_action, b_logp = action_buf.reshape(-1), logp_buf.reshape(-1)
        b_adv, b_ret = advantages.reshape(-1), returns.reshape(-1)
        for _ in range(cfg.update_epochs):  # learn: clipped surrogate, value loss, entropy
            for mb in torch.randperm(batch_size).split(batch_size // cfg.num_minibatches):
                dist = agent.policy(b_obs[mb], b_mask[mb])
                ratio = (dist.log_prob(b_action[mb]) - b_logp[mb]).exp()
                adv = (b_adv[mb] - b_adv[mb].mean()) / (b_adv[mb].std() + 1e-8)
                clipped = ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)
                pg_loss = torch.max(-adv * ratio, -adv * clipped).mean()
                v_loss = 0.5 * ((agent.value(b_obs[mb]) - b_ret[mb]) ** 2).mean()
                loss = pg_loss - cfg.ent_coef * dist.entropy().mean() + cfg.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), cfg.max_grad_norm)
                optimizer.step()
        steps = iteration * batch_size
        speed = f"{steps / (time.time() - start):,.0f} steps/s"
        print(f"step {steps:,}: won {wins} of {games} games, {speed}", flush=True)
    env.close()
    return agent


if __name__ == "__main__":
    config = tyro.cli(Config)
    save(train(config), config, config.out)
    print(f"saved {config.out}")
