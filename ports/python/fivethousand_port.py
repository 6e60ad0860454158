"""A 5000 bot from an exported bundle, in Python with numpy and onnxruntime only.

The reference port of docs/export.md: everything it knows about the game comes from the
bundle folder (``fivethousand export AGENT --out DIR``): the rules and the scoring, the
observation and action layouts, the turn-EV table and the ONNX graph. It imports nothing
from the toolkit, so it can be copied into another program as it is.

    python fivethousand_port.py BUNDLE      # replay the bundle's test vectors

A runtime bundle (``export AGENT --out DIR --runtime``) has no ONNX graph: its network
runs from the plain layout in bundle.json and weights.bin with numpy (``forward``), so
it needs no onnxruntime.

In a program::

    bundle = Bundle("bots/ppo-2p")
    action = bundle.act(state)   # state: scores, current, turn_total, roll (a decision)

A state is a dict: ``scores`` (banked score of each seat), ``current`` (the seat to
move), ``turn_total`` (points held this turn before this roll) and ``roll`` (the dice
awaiting the decision, any order).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

FORMAT = "fivethousand-rl bot bundle"
FORMAT_VERSION = 1
NUM_DICE = 5
NUM_ACTIONS = 64
MASKED_LOGIT = np.float32(-1e8)
FLOAT_TYPES = {"float32": "<f4", "float16": "<f2"}  # the weights file's, little-endian


class BundleError(ValueError):
    """A bundle folder that is missing, incomplete, corrupt or of another format."""


# ------------------------------------------------------------------ scoring (R2)
def hold_points(held: tuple[int, ...], scoring: dict) -> int:
    """Points of dice held together from one roll; 0 if any die does not score."""
    if not held:
        return 0
    counts = [held.count(face) for face in range(7)]
    if len(held) == NUM_DICE and max(counts) == 1 and list(held) in scoring["straights"]:
        return scoring["straight"]
    points = 0
    for face in range(1, 7):
        c = counts[face]
        if c >= 3:
            points += scoring["triple"][str(face)] * 2 ** (c - 3)
        elif c:
            single = scoring["single"].get(str(face))
            if single is None:
                return 0
            points += single * c
    return points


def holds(roll: tuple[int, ...], rules: dict) -> list[tuple[int, tuple[int, ...], int]]:
    """The legal holds of a sorted roll (R5) as (bits, held dice, points), by ascending
    bits: among equal faces only the leftmost copies are held."""
    runs = [[i for i, d in enumerate(roll) if d == face] for face in sorted(set(roll))]
    out = []
    for ks in itertools.product(*(range(len(run) + 1) for run in runs)):
        bits = sum(1 << p for run, k in zip(runs, ks, strict=True) for p in run[:k])
        held = tuple(roll[p] for p in range(len(roll)) if bits >> p & 1)
        points = hold_points(held, rules["scoring"])
        if points > 0:
            out.append((bits, held, points))
    out.sort()
    if rules["hold"] == "all" and out:
        best = max(points for _, _, points in out)
        return [next(h for h in out if h[2] == best)]  # the first of equals by bits
    return out


def can_bank(banked: int, total: int, rules: dict) -> bool:
    """R8: a positive total, not ending in 50 under the 50 rule, the entry unless entered."""
    if total <= 0 or (rules["fifty_rule"] and total % 100 == 50):
        return False
    return banked > 0 or total >= rules["entry"]


def bank(scores: list[int], banker: int, total: int, rules: dict) -> dict:
    """What banking `total` does (R9): the scores after it, the winner, the seats bumped,
    and for an overshoot who receives the total (None: it is lost)."""
    n, target = len(scores), rules["target"]
    new = scores[banker] + total
    if new <= target:
        bumped = []
        if new < target and rules["bump"]:
            bumped = [p for p in range(n) if p != banker and scores[p] == new]
        after = [new if p == banker else 0 if p in bumped else s for p, s in enumerate(scores)]
        winner = banker if new == target else None
        return {"scores": after, "winner": winner, "bumped": bumped, "overshoot": False}
    receiver = None
    if rules["overshoot"] == "gift":
        for k in range(1, n):  # the lowest entered other seat, first in turn order
            p = (banker + k) % n
            if scores[p] >= rules["entry"] and (receiver is None or scores[p] < scores[receiver]):
                receiver = p
        if receiver is not None and scores[receiver] + total > target:
            receiver = None
    after = list(scores)
    winner = None
    if receiver is not None:
        after[receiver] += total
        winner = receiver if after[receiver] == target else None
    return {"scores": after, "winner": winner, "overshoot": True, "gift_to": receiver}


def moves(state: dict, rules: dict) -> list[dict]:
    """Every legal action of the pending decision, by ascending action, with where it
    leads: the turn total, the dice left, and for a bank what banking does."""
    roll = tuple(sorted(state["roll"]))
    scores, mover = list(state["scores"]), state["current"]
    entered = 1 if scores[mover] > 0 else 0
    out = []
    for bits, held, points in holds(roll, rules):
        total = state["turn_total"] + points
        left = (len(roll) - len(held)) or NUM_DICE  # hot dice (R6)
        may_bank = can_bank(entered, total, rules)
        move = {"points": points, "total": total, "dice_left": left, "may_bank": may_bank}
        out.append({**move, "action": bits, "bank": None})
        if may_bank:
            out.append({**move, "action": bits | 32, "bank": bank(scores, mover, total, rules)})
    return sorted(out, key=lambda m: m["action"])


def legal_mask(state: dict, rules: dict) -> np.ndarray:
    mask = np.zeros(NUM_ACTIONS, dtype=bool)
    mask[[m["action"] for m in moves(state, rules)]] = True
    return mask


# ------------------------------------------------------------------ the plain network
def _ints(t: np.ndarray | None) -> list[int] | None:
    return None if t is None else [int(v) for v in np.asarray(t).ravel()]


def _slice(x, starts, ends, axes=None, steps=None, **_):
    axes = _ints(axes) or list(range(len(_ints(starts))))
    steps = _ints(steps) or [1] * len(axes)
    index = [slice(None)] * x.ndim
    for a, b, e, st in zip(axes, _ints(starts), _ints(ends), steps, strict=True):
        index[a] = slice(b, e, st)  # numpy clamps out-of-range ends as ONNX does
    return x[tuple(index)]


def _gather_nd(x, indices, batch_dims=0, **_):
    if batch_dims:
        raise BundleError("GatherND: only batch_dims 0")
    q = indices.shape[-1]
    return x[tuple(np.moveaxis(indices, -1, 0))] if q else x


def _scatter_nd(x, indices, updates, reduction="none", **_):
    if reduction not in ("none", b"none"):
        raise BundleError("ScatterND: only reduction none")
    out = x.copy()
    out[tuple(np.moveaxis(indices, -1, 0))] = updates
    return out


def _squeeze(x, axes=None, **at):
    axes = _ints(axes) if axes is not None else at.get("axes")
    return np.squeeze(x, axis=tuple(axes)) if axes else np.squeeze(x)


def _unsqueeze(x, axes=None, **at):
    axes = _ints(axes) if axes is not None else at["axes"]
    for a in sorted(a % (x.ndim + len(axes)) for a in axes):
        x = np.expand_dims(x, a)
    return x


def _gemm(a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0, **_):  # noqa: N803 (ONNX's names)
    y = np.float32(alpha) * ((a.T if transA else a) @ (b.T if transB else b))
    return y if c is None else y + np.float32(beta) * c


def _reshape(x, shape, allowzero=0, **_):
    dims = [x.shape[i] if d == 0 and not allowzero else d for i, d in enumerate(_ints(shape))]
    return x.reshape(dims)


# The operators of the plain layout (bundle.json network.plain.nodes), with ONNX's
# semantics: inputs in order (None for an omitted one), then the node's attributes.
OPS = {
    "Add": lambda a, b, **_: a + b,
    "Mul": lambda a, b, **_: a * b,
    "MatMul": lambda a, b, **_: a @ b,
    "Gemm": _gemm,
    "Relu": lambda x, **_: np.maximum(x, np.float32(0)),
    "Tanh": lambda x, **_: np.tanh(x),
    "Sigmoid": lambda x, **_: (1 / (1 + np.exp(-x))).astype(x.dtype),
    "Identity": lambda x, **_: x,
    "Flatten": lambda x, axis=1, **_: x.reshape(int(np.prod(x.shape[:axis])), -1),
    "Reshape": _reshape,
    "Slice": _slice,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Transpose": lambda x, perm=None, **_: np.transpose(x, perm),
    "NonZero": lambda x, **_: np.array(np.nonzero(x), dtype=np.int64),
    "GatherND": _gather_nd,
    "ScatterND": _scatter_nd,
}


def read_tensors(plain: dict, weights: bytes) -> dict[str, np.ndarray]:
    """The plain layout's tensors: float ones from `weights` (float16 ones widened, once,
    to the float32 they equal exactly), integer ones inline."""
    tensors = {}
    for name, t in plain["tensors"].items():
        if t["dtype"] in FLOAT_TYPES:
            data = np.frombuffer(weights, FLOAT_TYPES[t["dtype"]], t["count"], t["offset"])
            tensors[name] = data.astype(np.float32).reshape(t["shape"])
        elif t["dtype"] == "int64":
            tensors[name] = np.array(t["values"], dtype=np.int64).reshape(t["shape"])
        else:
            raise BundleError(f"the tensor {name} is of {t['dtype']}, which this port lacks")
    return tensors


def forward(
    plain: dict, weights: bytes | dict, input_name: str, output: str, obs: np.ndarray
) -> np.ndarray:
    """The network's output for a batch of observations (float32, numpy): each node of
    the plain layout in turn, on its tensors (``read_tensors``; or `weights` the file's
    bytes, read here)."""
    tensors = weights if isinstance(weights, dict) else read_tensors(plain, weights)
    values: dict[str, np.ndarray | None] = {"": None, **tensors}
    values[input_name] = obs
    for node in plain["nodes"]:
        op = OPS.get(node["op"])
        if op is None:
            raise BundleError(f"the network uses the operator {node['op']}, which this port lacks")
        args = [values[name] for name in node["inputs"]]
        values[node["outputs"][0]] = op(*args, **node.get("attributes", {}))
    return values[output]


# ------------------------------------------------------------------ the bundle
def _read_json(path: Path, what: str) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"{path}: {what} is missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise BundleError(f"{path}: {what} is unreadable: {str(e).splitlines()[0]}") from None


class Bundle:
    """A bundle folder, checked (format, every file's SHA-256), with the bot it holds."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise BundleError(f"{self.folder}: no such bundle folder")
        meta = _read_json(self.folder / "bundle.json", "bundle.json")
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise BundleError(f"{self.folder}: bundle.json is not a 5000 bot bundle")
        if meta.get("format_version") != FORMAT_VERSION:
            raise BundleError(
                f"{self.folder}: bundle format_version {meta.get('format_version')!r}, this "
                f"port reads {FORMAT_VERSION}"
            )
        try:
            self._check_files(meta["files"])
            self.meta = meta
            self.rules = meta["rules"]
            layout = meta["observation"]
            self.encoding, self.size = layout["encoding"], layout["size"]
            self.slices = {s["name"]: (s["offset"], s["size"]) for s in layout["slices"]}
            self.col = {c["name"]: c["index"] for c in layout["action_row"]["columns"]}
            self.row_size = layout["action_row"]["size"]
            table = meta["tables"]["turn_ev"]
            self.turn_ev = np.frombuffer(
                (self.folder / table["file"]).read_bytes(), dtype="<f8"
            ).reshape(table["shape"])
            self.turn_ev_cap, self.turn_ev_step = table["cap"], table["step"]
            self.network = meta["network"]
            if self.network.get("file") is None:  # a runtime bundle: the plain layout
                plain = self.network["plain"]
                self.weights = read_tensors(plain, (self.folder / plain["weights"]).read_bytes())
        except (KeyError, TypeError, ValueError) as e:
            raise BundleError(f"{self.folder}: bundle.json lacks or garbles {e}") from None
        self.session = None if self.network.get("file") is None else self._session()

    def _check_files(self, files: dict) -> None:
        for name, info in files.items():
            path = self.folder / name
            if not path.is_file():
                raise BundleError(f"{self.folder}: the bundle's {name} is missing")
            if hashlib.sha256(path.read_bytes()).hexdigest() != info["sha256"]:
                raise BundleError(
                    f"{self.folder}: {name} does not match its SHA-256 in bundle.json "
                    "(corrupt or changed)"
                )

    def _session(self):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        path = self.folder / self.network["file"]
        try:
            return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as e:
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise BundleError(f"{path}: onnxruntime cannot load it: {why}") from None

    # ---------------------------------------------------------- the observation
    def observe(self, state: dict, seat: int | None = None) -> np.ndarray:
        """The float32 observation of `state` seen from `seat` (default: the mover)."""
        rules, col = self.rules, self.col
        target, step = rules["target"], rules["score_step"]
        scores, mover = list(state["scores"]), state["current"]
        seat = mover if seat is None else seat
        n = len(scores)
        seen = scores[seat:] + scores[:seat]
        total = state["turn_total"]
        roll = tuple(sorted(state["roll"])) if state.get("roll") else None
        obs = np.zeros(self.size, dtype=np.float32)

        def put(name: str, values: list[float]) -> None:
            offset, size = self.slices[name]
            obs[offset : offset + size] = values

        put("scores", [s / target for s in seen])
        put("entered", [float(s > 0) for s in seen])
        put("to_move", [float(k == (mover - seat) % n) for k in range(n)])
        put("turn_total", [min(total / target, 2.0)])
        put("need_after_bank", [max((target - scores[mover] - total) / target, -1.0)])
        put("ends_in_50", [float(total % step != 0)])
        legal = moves(state, rules) if roll else []
        if roll:
            put("dice_in_roll", [len(roll) / NUM_DICE])
            put("some_action_banks", [float(legal[-1]["action"] >= 32)])
            one_hot, counts = self.slices["roll_one_hot"][0], self.slices["face_counts"][0]
            for i, face in enumerate(roll):
                obs[one_hot + 6 * i + face - 1] = 1.0
                obs[counts + face - 1] += 1.0 / NUM_DICE  # float32 sums, as the toolkit's
        if self.encoding == "compact":
            return obs
        bins = target // step + 1
        offset = self.slices["score_one_hot"][0]
        for j, s in enumerate(seen):
            obs[offset + j * bins + s // step] = 1.0
        if not roll or seat != mover:
            return obs
        rows = obs[self.slices["actions"][0] :].reshape(NUM_ACTIONS, self.row_size)
        own = scores[mover]
        for m in legal:
            row = rows[m["action"]]
            t = m["total"]
            need = target - own - t
            row[col["LEGAL"]] = 1.0
            row[col["TURN_TOTAL"]] = t / target
            row[col["DICE_LEFT_AT"] + m["dice_left"] - 1] = 1.0
            row[col["POINTS"]] = m["points"] / 1000
            row[col["NEED"]] = min(max(need / target, -1.0), 1.0)
            if 0 <= need <= 1000:
                row[col["NEED_AT"] + need // 50] = 1.0
            elif need > 1000:
                row[col["NEED_OVER_1000"]] = 1.0
            else:
                row[col["OVERSHOOT"]] = 1.0
            row[col["MAY_BANK"]] = m["may_bank"]
            row[col["ENDS_IN_50"]] = t % step != 0
            row[col["OWN_SCORE_AFTER"]] = own / target
            outcome = m["bank"]
            if outcome is None:
                ev = self.turn_ev_value(own > 0, t, m["dice_left"])
                row[col["TURN_EV"]] = min(ev / 1000, 5.0)
                continue
            row[col["TURN_EV"]] = min(t / 1000, 5.0)
            row[col["BANKS"]] = 1.0
            if outcome["winner"] == mover:
                row[col["WINS"]] = 1.0
                row[col["OWN_SCORE_AFTER"]] = 1.0
            elif not outcome["overshoot"]:
                row[col["BUMPS"]] = bool(outcome["bumped"])
                row[col["OWN_SCORE_AFTER"]] = outcome["scores"][mover] / target
            elif outcome["gift_to"] is None:
                row[col["POINTS_LOST"]] = 1.0
            else:
                row[col["GIFTS"]] = 1.0
                row[col["GIFT_WINS"]] = outcome["winner"] == outcome["gift_to"]
        return obs

    def turn_ev_value(self, entered: bool, total: int, dice: int) -> float:
        """The turn-EV table's value (its index formula is in bundle.json)."""
        return float(
            self.turn_ev[int(entered), min(total, self.turn_ev_cap) // self.turn_ev_step, dice]
        )

    # ---------------------------------------------------------- the decision
    def logits(self, obs: np.ndarray) -> np.ndarray:
        net = self.network
        if self.session is None:
            return forward(net["plain"], self.weights, net["input"], net["output"], obs[None])[0]
        return self.session.run(None, {net["input"]: obs[None, :]})[0][0]

    def choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        """The most probable legal action: illegal logits become -1e8, then a float32
        softmax's argmax (the first of equals), as the toolkit chooses."""
        masked = np.where(mask, self.logits(obs), MASKED_LOGIT).astype(np.float32)
        probs = np.exp(masked - masked.max())
        return int(np.argmax(probs / probs.sum()))

    def act(self, state: dict) -> int:
        """The bot's action in the pending decision of `state` (the mover's)."""
        return self.choose(self.observe(state), legal_mask(state, self.rules))


# ------------------------------------------------------------------ test vectors
def replay(bundle: Bundle) -> dict:
    """Every test vector of the bundle recomputed: how many differ in the observation's
    bytes, the mask and the action, and the time a decision took."""
    if not bundle.meta.get("test_vectors"):
        raise BundleError(f"{bundle.folder}: a runtime bundle, without test vectors to replay")
    cases = _read_json(bundle.folder / bundle.meta["test_vectors"]["file"], "the test vectors")
    diffs = {"observation": [], "mask": [], "action": []}
    start = time.perf_counter()
    for i, case in enumerate(cases["vectors"]):
        state = case["state"]
        obs = bundle.observe(state, case["seat"])
        mask = legal_mask(state, bundle.rules)
        want = np.zeros(bundle.size, dtype=np.float32)
        want[case["obs"]["index"]] = case["obs"]["value"]
        digest = hashlib.sha256(obs.astype("<f4").tobytes()).hexdigest()
        if digest != case["obs_sha256"] or obs.tobytes() != want.tobytes():
            diffs["observation"].append(i)
        if np.flatnonzero(mask).tolist() != case["legal"]:
            diffs["mask"].append(i)
        if bundle.choose(obs, mask) != case["action"]:
            diffs["action"].append(i)
    seconds = time.perf_counter() - start
    n = len(cases["vectors"])
    return {"vectors": n, "ms_per_decision": 1000 * seconds / max(n, 1), "differences": diffs}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: fivethousand_port.py BUNDLE (replays its test vectors)", file=sys.stderr)
        return 2
    try:
        bundle = Bundle(argv[0])
        result = replay(bundle)
    except BundleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    diffs = result["differences"]
    print(
        json.dumps(
            {
                "vectors": result["vectors"],
                "differences": {k: len(v) for k, v in diffs.items()},
                "first": {k: v[:5] for k, v in diffs.items()},
                "ms_per_decision": round(result["ms_per_decision"], 3),
            }
        )
    )
    return 0 if not any(diffs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
