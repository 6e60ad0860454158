// A 5000 bot from an exported bundle, in JavaScript with no dependencies at all.
//
// The reference port of docs/export.md for JavaScript: everything it knows about the
// game comes from the bundle folder (`fivethousand export AGENT --out DIR`): the rules
// and the scoring, the observation and action layouts, the turn-EV table, and the
// network in its plain form (bundle.json's network.plain: ONNX operators over the
// float32 or float16 weights of weights.bin), whose forward pass is written out below, so no ONNX
// runtime is needed. It runs in Node (18 or later) and in browsers.
//
//   node fivethousand.mjs BUNDLE          # replay the bundle's test vectors
//
// In a program:
//
//   import { loadBundle } from "./fivethousand.mjs";
//   const bot = await loadBundle("bots/ppo-2p");        // Node; loadBundleFromUrl in a page
//   const action = bot.act({ scores: [0, 900], current: 0, turn_total: 0, roll: [1, 1, 4, 5, 6] });
//
// A state: `scores` (banked score of each seat), `current` (the seat to move),
// `turn_total` (points held this turn before this roll), `roll` (the dice awaiting the
// decision, any order).
//
// The game itself, for a page or a program that plays whole games (fivethousand_rl.envs.game.Game's
// steps, pure functions on a state as GameState.to_dict writes it):
//
//   let state = newGame(2);                            // seat 0 rolls first
//   ({ state } = rollDice(state, [1, 5, 2, 3, 3], bot.rules));   // the dice: yours to draw
//   ({ state } = applyAction(state, bot.act(state), bot.rules));

export const FORMAT = "fivethousand-rl bot bundle";
export const FORMAT_VERSION = 1;
const NUM_DICE = 5;
const NUM_ACTIONS = 64;
export const BANK_BIT = 32;

/** A bundle that cannot be played; `file` and `reason` ("missing", "corrupt") say
 * which file and why, where one file is the cause (a page words it in its language). */
export class BundleError extends Error {
  constructor(message, { file = null, reason = null } = {}) {
    super(message);
    this.file = file;
    this.reason = reason;
  }
}

// ------------------------------------------------------------------ scoring (R2)
/** Points of dice held together from one roll; 0 if any die does not score. */
export function holdPoints(held, scoring) {
  if (held.length === 0) return 0;
  const counts = [0, 0, 0, 0, 0, 0, 0];
  for (const d of held) counts[d] += 1;
  if (held.length === NUM_DICE && Math.max(...counts) === 1) {
    const sorted = [...held].sort((a, b) => a - b).join(",");
    if (scoring.straights.some((s) => s.join(",") === sorted)) return scoring.straight;
  }
  let points = 0;
  for (let face = 1; face <= 6; face++) {
    const c = counts[face];
    if (c >= 3) points += scoring.triple[String(face)] * 2 ** (c - 3);
    else if (c) {
      const single = scoring.single[String(face)];
      if (single === undefined) return 0;
      points += single * c;
    }
  }
  return points;
}

/** The legal holds of a sorted roll (R5), by ascending bits: [{bits, held, points}]. */
export function holds(roll, rules) {
  const faces = [...new Set(roll)].sort((a, b) => a - b);
  const runs = faces.map((f) => roll.flatMap((d, i) => (d === f ? [i] : [])));
  const out = [];
  const ks = runs.map(() => 0);
  for (;;) {
    let bits = 0;
    runs.forEach((run, r) => run.slice(0, ks[r]).forEach((p) => (bits |= 1 << p)));
    const held = roll.filter((_, p) => (bits >> p) & 1);
    const points = holdPoints(held, rules.scoring);
    if (points > 0) out.push({ bits, held, points });
    let r = 0; // the next combination of how many of each face's run are held
    while (r < runs.length && ks[r] === runs[r].length) ks[r++] = 0;
    if (r === runs.length) break;
    ks[r] += 1;
  }
  out.sort((a, b) => a.bits - b.bits);
  if (rules.hold === "all" && out.length) {
    const best = Math.max(...out.map((h) => h.points));
    return [out.find((h) => h.points === best)]; // the first of equals by bits
  }
  return out;
}

/** R8: a positive total, not ending in 50 under the 50 rule, the entry unless entered. */
export function canBank(banked, total, rules) {
  if (total <= 0 || (rules.fifty_rule && total % 100 === 50)) return false;
  return banked > 0 || total >= rules.entry;
}

/** What banking `total` does (R9): every seat's `scores` afterwards, the `winner` (or
 * null), the seats `bumped` to 0, whether it `overshoot`s the target, and then who it is
 * a gift to (`giftTo`) or, lost although a player had entered, whom it would have taken
 * past the target (`lostCandidate`), as fivethousand_rl.envs.game.bank_outcome. */
export function bank(scores, banker, total, rules) {
  const n = scores.length;
  const target = rules.target;
  const next = scores[banker] + total;
  if (next <= target) {
    const bumped =
      next < target && rules.bump
        ? scores.flatMap((s, p) => (p !== banker && s === next ? [p] : []))
        : [];
    const after = scores.map((s, p) => (p === banker ? next : bumped.includes(p) ? 0 : s));
    const winner = next === target ? banker : null;
    return { scores: after, winner, bumped, overshoot: false, giftTo: null, lostCandidate: null };
  }
  let receiver = null;
  if (rules.overshoot === "gift") {
    for (let k = 1; k < n; k++) {
      const p = (banker + k) % n;
      if (scores[p] >= rules.entry && (receiver === null || scores[p] < scores[receiver])) {
        receiver = p;
      }
    }
  }
  let lostCandidate = null; // lost although someone had entered: it would take them past
  if (receiver !== null && scores[receiver] + total > target) [lostCandidate, receiver] = [receiver, null];
  const after = [...scores];
  let winner = null;
  if (receiver !== null) {
    after[receiver] += total;
    if (after[receiver] === target) winner = receiver;
  }
  return { scores: after, winner, bumped: [], overshoot: true, giftTo: receiver, lostCandidate };
}

/** Every legal action of the pending decision, by ascending action, with where it leads:
 * the dice `held` (sorted), their `points`, the turn `total` after them, the `diceLeft`
 * to roll (5 after hot dice), whether that total `mayBank`, and a banking action's
 * outcome (`bank`, else null). */
export function moves(state, rules) {
  const roll = [...state.roll].sort((a, b) => a - b);
  const scores = state.scores;
  const mover = state.current;
  const entered = scores[mover] > 0 ? 1 : 0;
  const out = [];
  for (const { bits, held, points } of holds(roll, rules)) {
    const total = state.turn_total + points;
    const diceLeft = roll.length - held.length || NUM_DICE; // hot dice (R6)
    const mayBank = canBank(entered, total, rules);
    const move = { held, points, total, diceLeft, mayBank };
    out.push({ ...move, action: bits, bank: null });
    if (mayBank) out.push({ ...move, action: bits | BANK_BIT, bank: bank(scores, mover, total, rules) });
  }
  return out.sort((a, b) => a.action - b.action);
}

/** The 64 legal-action flags of the pending decision. */
export function legalMask(state, rules) {
  const mask = new Array(NUM_ACTIONS).fill(false);
  for (const m of moves(state, rules)) mask[m.action] = true;
  return mask;
}

// ------------------------------------------------------------------ the game
// fivethousand_rl.envs.game.Game's steps as pure functions: each takes a state as GameState.to_dict
// writes it ({scores, current, turn_total, dice_left, roll, held, phase, winner, turns})
// and returns {state, event}, a new state and what happened, leaving its argument as it
// was. A chance step rolls (the caller draws the dice: a page from crypto, a replay from
// its record), a decision step applies an action; a bust ends the turn at once (R4).
export const ROLL = "roll";
export const DECIDE = "decide";
export const OVER = "over";

export class GameError extends Error {}

/** A new game: `players` seats at 0, seat `first` to roll. */
export function newGame(players, first = 0) {
  if (!Number.isInteger(players) || players < 2 || players > 8) {
    throw new GameError(`a game has 2 to 8 players, not ${players}`);
  }
  if (!Number.isInteger(first) || first < 0 || first >= players) {
    throw new GameError(`first must be a seat 0..${players - 1}, not ${first}`);
  }
  return {
    scores: new Array(players).fill(0),
    current: first,
    turn_total: 0,
    dice_left: NUM_DICE,
    roll: null,
    held: [],
    phase: ROLL,
    winner: null,
    turns: 0,
  };
}

function endTurn(state, scores) {
  return {
    ...state,
    scores,
    current: (state.current + 1) % scores.length,
    turn_total: 0,
    dice_left: NUM_DICE,
    roll: null,
    held: [],
    phase: ROLL,
    turns: state.turns + 1,
  };
}

/** The chance step: the mover rolls `dice` (the dice not held, any order; R4, R6).
 * Event {kind: "rolled", seat, dice (sorted), bust, turn_total (held before it)}. */
export function rollDice(state, dice, rules) {
  if (state.phase !== ROLL) throw new GameError(`cannot roll now: the game is in the ${state.phase} phase`);
  const ok = Array.isArray(dice) && dice.every((d) => Number.isInteger(d) && d >= 1 && d <= 6);
  if (!ok || dice.length !== state.dice_left) {
    throw new GameError(`the roll must be ${state.dice_left} dice 1..6, got ${JSON.stringify(dice)}`);
  }
  const roll = [...dice].sort((a, b) => a - b);
  const bust = holds(roll, { ...rules, hold: "free" }).length === 0; // nothing scores (R3)
  const event = { kind: "rolled", seat: state.current, dice: roll, bust, turn_total: state.turn_total };
  if (bust) return { state: endTurn(state, [...state.scores]), event };
  return { state: { ...state, roll, phase: DECIDE }, event };
}

/** The decision step: hold the dice of `action` and bank or roll on (R5-R9). Event
 * {kind: "moved", seat, roll, move} (`move` as `moves` gives it). A GameError, naming
 * the legal actions, if the rules do not allow it. */
export function applyAction(state, action, rules) {
  if (state.phase !== DECIDE) throw new GameError(`no decision is due: the game is in the ${state.phase} phase`);
  const legal = moves(state, rules);
  const move = legal.find((m) => m.action === action);
  if (!move) {
    const actions = legal.map((m) => m.action).join(", ");
    throw new GameError(`illegal action ${action} for roll ${state.roll.join(" ")}; legal: ${actions}`);
  }
  const event = { kind: "moved", seat: state.current, roll: state.roll, move };
  const next = {
    ...state,
    turn_total: move.total,
    dice_left: move.diceLeft,
    roll: null,
    held: [...state.held, move.held],
    phase: ROLL,
  };
  if (move.bank === null) return { state: next, event };
  const ended = endTurn(next, move.bank.scores);
  if (move.bank.winner === null) return { state: ended, event };
  return { state: { ...ended, phase: OVER, winner: move.bank.winner }, event };
}

/** `n` dice from `random` (a function giving a float in [0, 1), e.g. Math.random or a
 * seeded generator's), or, without it, from the platform's cryptographic generator. */
export function randomDice(n, random) {
  if (random) return Array.from({ length: n }, () => 1 + Math.floor(random() * 6));
  const out = [];
  const word = new Uint32Array(1);
  const fair = 2 ** 32 - (2 ** 32 % 6); // rejection keeps the six faces equally likely
  while (out.length < n) {
    globalThis.crypto.getRandomValues(word);
    if (word[0] < fair) out.push(1 + (word[0] % 6));
  }
  return out;
}

// ------------------------------------------------------------------ the network
// The forward pass of bundle.json's network.plain: ONNX operators, batch axis first.
// Tensors are {shape, data}; arithmetic in float64 on the float32 weights (float16 ones
// decoded once, exactly), each sum taken in the order of its terms and the bias added
// after it (what the test vectors' actions match). For speed the graph is prepared once (`Network`): constants read, a
// MatMul with its bias Add and its Relu fused into one loop, and every node writing into
// a buffer of its own that is kept between calls, so a decision allocates no buffers.

function size(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

function strides(shape) {
  const out = new Array(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) out[i] = out[i + 1] * shape[i + 1];
  return out;
}

function ints(t) {
  return Array.from(t.data, Number);
}

function normalizeAxes(axes, rank) {
  return axes.map((a) => (a < 0 ? a + rank : a));
}

/** A node's output buffer, kept between calls and grown when a call needs more. */
class Slot {
  constructor() {
    this.buffer = new Float64Array(0);
    this.view = this.buffer;
  }

  take(n) {
    if (this.view.length === n) return this.view;
    if (this.buffer.length < n) this.buffer = new Float64Array(Math.max(n, 2 * this.buffer.length));
    this.view = this.buffer.subarray(0, n);
    return this.view;
  }

  zeros(n) {
    return this.take(n).fill(0);
  }
}

const ADD = 0;
const MUL = 1;

/** a + b or a * b with ONNX (numpy) broadcasting. */
function binary(a, b, kind, slot) {
  const rank = Math.max(a.shape.length, b.shape.length);
  const pad = (s) => [...new Array(rank - s.length).fill(1), ...s];
  const as = pad(a.shape);
  const bs = pad(b.shape);
  const shape = as.map((d, i) => {
    if (d !== bs[i] && d !== 1 && bs[i] !== 1) throw new BundleError(`cannot broadcast ${as} and ${bs}`);
    return Math.max(d, bs[i]);
  });
  const data = slot.take(size(shape));
  const [x, y, n] = [a.data, b.data, data.length];
  const [na, nb] = [x.length, y.length];
  const tail = (s) => s.every((d, i) => d === shape[i] || s.slice(0, i + 1).every((e) => e === 1));
  if (tail(as) && tail(bs)) {
    // the common case (a bias, a row of weights): each operand repeats whole over the output
    if (kind === ADD) for (let i = 0; i < n; i++) data[i] = x[i % na] + y[i % nb];
    else for (let i = 0; i < n; i++) data[i] = x[i % na] * y[i % nb];
    return { shape, data };
  }
  const [sa, sb, so] = [strides(as), strides(bs), strides(shape)];
  for (let i = 0; i < n; i++) {
    let ia = 0;
    let ib = 0;
    for (let k = 0; k < rank; k++) {
      const idx = Math.floor(i / so[k]) % shape[k];
      if (as[k] !== 1) ia += idx * sa[k];
      if (bs[k] !== 1) ib += idx * sb[k];
    }
    data[i] = kind === ADD ? x[ia] + y[ib] : x[ia] * y[ib];
  }
  return { shape, data };
}

function elementwise(t, f, slot) {
  const data = slot.take(t.data.length);
  for (let i = 0; i < data.length; i++) data[i] = f(t.data[i]);
  return { shape: t.shape, data };
}

let nonzero = new Int32Array(256); // dense's scratch: where a row of `a` is not 0

/** out (rows x cols, zeroed) = a (rows x k) times w (k x cols, row-major), then + bias
 * (cols, or null) and ReLU where `relu`. Each sum runs over i in order, four terms at a
 * time (the same additions in the same order: JavaScript adds left to right and never
 * fuses a multiply-add); zeros are skipped (observations and ReLU outputs are mostly 0,
 * and adding 0 changes no sum). */
function dense(a, rows, k, w, cols, bias, relu, out) {
  if (nonzero.length < k) nonzero = new Int32Array(k);
  const nz = nonzero;
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    const from = r * k;
    let m = 0;
    for (let i = 0; i < k; i++) if (a[from + i] !== 0) nz[m++] = i;
    let j = 0;
    for (; j + 4 <= m; j += 4) {
      const w0 = nz[j] * cols;
      const w1 = nz[j + 1] * cols;
      const w2 = nz[j + 2] * cols;
      const w3 = nz[j + 3] * cols;
      const v0 = a[from + nz[j]];
      const v1 = a[from + nz[j + 1]];
      const v2 = a[from + nz[j + 2]];
      const v3 = a[from + nz[j + 3]];
      for (let c = 0; c < cols; c++) {
        out[o + c] = out[o + c] + v0 * w[w0 + c] + v1 * w[w1 + c] + v2 * w[w2 + c] + v3 * w[w3 + c];
      }
    }
    for (; j < m; j++) {
      const v = a[from + nz[j]];
      const at = nz[j] * cols;
      for (let c = 0; c < cols; c++) out[o + c] += v * w[at + c];
    }
    if (bias !== null) for (let c = 0; c < cols; c++) out[o + c] += bias[c];
    if (relu) for (let c = 0; c < cols; c++) if (!(out[o + c] > 0)) out[o + c] = 0;
  }
  return out;
}

/** a (rows x k) times b transposed (b: cols x k). */
function denseTransB(a, rows, k, b, cols, out) {
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      let sum = 0;
      for (let i = 0; i < k; i++) sum += a[r * k + i] * b[c * k + i];
      out[r * cols + c] = sum;
    }
  }
  return out;
}

function matMul(a, b, bias, relu, slot) {
  if (b.shape.length !== 2) throw new BundleError("MatMul: only a 2-D right operand is supported");
  const [k, cols] = b.shape;
  const rows = size(a.shape) / k;
  const data = dense(a.data, rows, k, b.data, cols, bias, relu, slot.zeros(rows * cols));
  return { shape: [...a.shape.slice(0, -1), cols], data };
}

const OPS = {
  Identity: ([x]) => x,
  Relu: ([x], _, slot) => elementwise(x, (v) => (v > 0 ? v : 0), slot),
  Tanh: ([x], _, slot) => elementwise(x, Math.tanh, slot),
  Sigmoid: ([x], _, slot) => elementwise(x, (v) => 1 / (1 + Math.exp(-v)), slot),
  Add: ([a, b], _, slot) => binary(a, b, ADD, slot),
  Mul: ([a, b], _, slot) => binary(a, b, MUL, slot),
  MatMul: ([a, b], _, slot) => matMul(a, b, null, false, slot),
  // MatMul, then + bias (a constant of one row), then ReLU (or not): fused when preparing.
  Dense: ([a, b], at, slot) => matMul(a, b, at.bias, at.relu, slot),
  Gemm: ([a, b, c], at, slot) => {
    if (at.transA) throw new BundleError("Gemm: transA is not supported");
    const alpha = at.alpha ?? 1;
    const beta = at.beta ?? 1;
    const [rows, k] = a.shape;
    const cols = at.transB ? b.shape[0] : b.shape[1];
    const out = slot.zeros(rows * cols);
    if (at.transB) denseTransB(a.data, rows, k, b.data, cols, out);
    else dense(a.data, rows, k, b.data, cols, null, false, out);
    if (alpha !== 1) for (let i = 0; i < out.length; i++) out[i] *= alpha;
    const y = { shape: [rows, cols], data: out };
    if (!c) return y;
    const scaled = beta === 1 ? c : { shape: c.shape, data: c.data.map((z) => beta * z) };
    return binary(y, scaled, ADD, slot); // in place: each element read before it is written
  },
  Slice: ([x, starts, ends, axesT, stepsT], _, slot) => {
    const rank = x.shape.length;
    const axes = axesT ? normalizeAxes(ints(axesT), rank) : ints(starts).map((_, i) => i);
    const steps = stepsT ? ints(stepsT) : axes.map(() => 1);
    const lo = x.shape.map(() => 0);
    const hi = [...x.shape];
    const [first, end] = [starts.data, ends.data];
    axes.forEach((axis, i) => {
      if (steps[i] !== 1) throw new BundleError("Slice: only step 1 is supported");
      const dim = x.shape[axis];
      const clamp = (v) => Math.min(Math.max(v < 0 ? v + dim : v, 0), dim);
      lo[axis] = clamp(first[i]);
      hi[axis] = clamp(end[i]);
    });
    const shape = hi.map((h, i) => Math.max(h - lo[i], 0));
    const data = slot.take(size(shape));
    if (data.length === 0) return { shape, data };
    // runs along the last axis, the outer index counted like an odometer
    const sx = strides(x.shape);
    const last = rank - 1;
    const run = shape[last];
    const index = new Array(last).fill(0);
    const src = x.data;
    for (let o = 0; o < data.length; o += run) {
      let from = lo[last];
      for (let k = 0; k < last; k++) from += (index[k] + lo[k]) * sx[k];
      for (let j = 0; j < run; j++) data[o + j] = src[from + j];
      for (let k = last - 1; k >= 0 && ++index[k] === shape[k]; k--) index[k] = 0;
    }
    return { shape, data };
  },
  Reshape: ([x, shapeT], at) => {
    const want = ints(shapeT).map((d, i) => (d === 0 && !at.allowzero ? x.shape[i] : d));
    const known = want.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
    return { shape: want.map((d) => (d === -1 ? size(x.shape) / known : d)), data: x.data };
  },
  Flatten: ([x], at) => {
    const axis = at.axis ?? 1;
    return { shape: [size(x.shape.slice(0, axis)), size(x.shape.slice(axis))], data: x.data };
  },
  Unsqueeze: ([x, axesT], at) => {
    const rank = x.shape.length + (axesT ? axesT.data.length : at.axes.length);
    const axes = normalizeAxes(axesT ? ints(axesT) : at.axes, rank);
    const shape = [];
    let j = 0;
    for (let i = 0; i < rank; i++) shape.push(axes.includes(i) ? 1 : x.shape[j++]);
    return { shape, data: x.data };
  },
  // The action-scoring actor scores the legal rows only: it finds them (NonZero,
  // Transpose), picks them (GatherND) and writes their logits back (ScatterND).
  NonZero: ([x], _, slot) => {
    const rank = x.shape.length;
    const st = strides(x.shape);
    const src = x.data;
    let found = 0;
    for (let i = 0; i < src.length; i++) if (src[i] !== 0) found++;
    const data = slot.take(rank * found);
    let n = 0;
    for (let i = 0; i < src.length; i++) {
      if (src[i] === 0) continue;
      for (let k = 0; k < rank; k++) data[k * found + n] = Math.floor(i / st[k]) % x.shape[k];
      n++;
    }
    return { shape: [rank, found], data };
  },
  Transpose: ([x], at, slot) => {
    const rank = x.shape.length;
    const perm = at.perm ?? x.shape.map((_, i) => rank - 1 - i);
    const shape = perm.map((p) => x.shape[p]);
    const [sx, so] = [strides(x.shape), strides(shape)];
    const data = slot.take(x.data.length);
    for (let i = 0; i < data.length; i++) {
      let j = 0;
      for (let k = 0; k < rank; k++) j += (Math.floor(i / so[k]) % shape[k]) * sx[perm[k]];
      data[i] = x.data[j];
    }
    return { shape, data };
  },
  GatherND: ([x, indices], at, slot) => {
    if (at.batch_dims) throw new BundleError("GatherND: only batch_dims 0 is supported");
    const q = indices.shape[indices.shape.length - 1];
    const shape = [...indices.shape.slice(0, -1), ...x.shape.slice(q)];
    const [st, width] = [strides(x.shape), size(x.shape.slice(q))];
    const data = slot.take(size(shape));
    const [src, idx] = [x.data, indices.data];
    for (let n = 0; n < data.length / width; n++) {
      let from = 0;
      for (let k = 0; k < q; k++) from += idx[n * q + k] * st[k];
      for (let j = 0; j < width; j++) data[n * width + j] = src[from + j];
    }
    return { shape, data };
  },
  ScatterND: ([x, indices, updates], at, slot) => {
    if (at.reduction && at.reduction !== "none") throw new BundleError("ScatterND: only reduction none");
    const q = indices.shape[indices.shape.length - 1];
    const [st, width] = [strides(x.shape), size(x.shape.slice(q))];
    const data = slot.take(x.data.length);
    data.set(x.data);
    const [idx, src] = [indices.data, updates.data];
    for (let n = 0; n < size(indices.shape) / q; n++) {
      let to = 0;
      for (let k = 0; k < q; k++) to += idx[n * q + k] * st[k];
      for (let j = 0; j < width; j++) data[to + j] = src[n * width + j];
    }
    return { shape: x.shape, data };
  },
  Squeeze: ([x, axesT], at) => {
    const given = axesT ? ints(axesT) : at.axes;
    const axes = given ? normalizeAxes(given, x.shape.length) : null;
    const shape = x.shape.filter((d, i) => (axes ? !axes.includes(i) : d !== 1));
    return { shape, data: x.data };
  },
};

/** The number a float16's bits (an integer 0..65535) stand for: Node 20 has no
 * Float16Array. Subnormals, signed zeros, infinities and NaN as IEEE 754 says. */
export function fromHalf(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1024 + fraction) * 2 ** (exponent - 25);
}

/** bundle.json's network.plain prepared to run: `run(obs)` gives the network's output
 * for a batch of one observation (Float32Array), in a buffer that the next call reuses. */
export class Network {
  constructor(plain, weights, input, output) {
    this.input = input;
    this.output = output;
    this.values = new Map();
    for (const [name, t] of Object.entries(plain.tensors)) {
      // float64 copies of the float32 (or float16) weights: the same values, read faster
      let data;
      if (t.dtype === "float32") data = Float64Array.from(new Float32Array(weights, t.offset, t.count));
      else if (t.dtype === "float16") data = Float64Array.from(new Uint16Array(weights, t.offset, t.count), fromHalf);
      else if (t.dtype === "int64") data = Float64Array.from(t.values, Number);
      else throw new BundleError(`the tensor ${name} is of ${t.dtype}, which this port lacks`);
      if (data.length !== size(t.shape)) throw new BundleError(`the tensor ${name} has the wrong size`);
      this.values.set(name, { shape: t.shape, data });
    }
    for (const node of plain.nodes) {
      if (!OPS[node.op]) throw new BundleError(`the network uses the operator ${node.op}, which this port lacks`);
    }
    this.steps = this.fuse(plain.nodes).map((node) => ({
      op: OPS[node.op],
      inputs: node.inputs,
      output: node.outputs[0],
      attributes: node.attributes || {},
      slot: new Slot(),
    }));
  }

  /** The nodes with each MatMul by a 2-D constant, and the Add of a constant bias (one
   * row of its width) and the Relu that alone read its result, as one Dense node. */
  fuse(nodes) {
    const readers = new Map([[this.output, 1]]);
    for (const node of nodes) for (const name of node.inputs) readers.set(name, (readers.get(name) ?? 0) + 1);
    const only = (name, op) => readers.get(name) === 1 && nodes.find((n) => n.inputs.includes(name) && n.op === op);
    const constant = (name) => this.values.get(name);
    const absorbed = new Set();
    const out = [];
    for (const node of nodes) {
      if (absorbed.has(node)) continue;
      const w = node.op === "MatMul" && constant(node.inputs[1]);
      const add = w && w.shape.length === 2 && only(node.outputs[0], "Add");
      const biasName = add && add.inputs.find((name) => name !== node.outputs[0]);
      const bias = biasName && constant(biasName);
      const cols = w && w.shape[1];
      if (!bias || bias.data.length !== cols || bias.shape.some((d, i) => d !== 1 && i !== bias.shape.length - 1)) {
        out.push(node);
        continue;
      }
      const relu = only(add.outputs[0], "Relu");
      absorbed.add(add);
      if (relu) absorbed.add(relu);
      const last = relu || add;
      out.push({ op: "Dense", inputs: node.inputs, outputs: last.outputs, attributes: { bias: bias.data, relu: Boolean(relu) } });
    }
    return out;
  }

  run(obs) {
    const values = this.values;
    values.set(this.input, { shape: [1, obs.length], data: obs });
    for (const step of this.steps) {
      const args = step.inputs.map((name) => (name === "" ? undefined : values.get(name)));
      values.set(step.output, step.op(args, step.attributes, step.slot));
    }
    return values.get(this.output).data;
  }
}

/** The network's output for a batch of one observation (Float32Array). */
export function forward(plain, weights, input, output, obs) {
  return new Network(plain, weights, input, output).run(obs).slice();
}

// ------------------------------------------------------------------ the bot
export class Bot {
  /** From bundle.json (parsed), weights.bin and turn_ev.f64 (ArrayBuffers). */
  constructor(meta, weights, turnEv) {
    if (!meta || meta.format !== FORMAT) throw new BundleError("bundle.json is not a 5000 bot bundle");
    if (meta.format_version !== FORMAT_VERSION) {
      throw new BundleError(`bundle format_version ${meta.format_version}, this port reads ${FORMAT_VERSION}`);
    }
    this.meta = meta;
    this.rules = meta.rules;
    const layout = meta.observation;
    this.encoding = layout.encoding;
    this.size = layout.size;
    this.slices = Object.fromEntries(layout.slices.map((s) => [s.name, s.offset]));
    this.col = Object.fromEntries(layout.action_row.columns.map((c) => [c.name, c.index]));
    this.rowSize = layout.action_row.size;
    const table = meta.tables.turn_ev;
    this.turnEv = new Float64Array(turnEv);
    this.turnEvShape = table.shape;
    this.turnEvCap = table.cap;
    this.turnEvStep = table.step;
    if (this.turnEv.length !== size(table.shape)) throw new BundleError(`${table.file} has the wrong size`);
    this.weights = weights;
    const net = meta.network;
    this.network = new Network(net.plain, weights, net.input, net.output);
    this.obsBuffer = new Float32Array(this.size); // act's observation, reused
  }

  turnEvValue(entered, total, dice) {
    const [, levels, width] = this.turnEvShape;
    const i = Math.floor(Math.min(total, this.turnEvCap) / this.turnEvStep);
    return this.turnEv[((entered ? 1 : 0) * levels + i) * width + dice];
  }

  /** The Float32Array observation of `state` seen from `seat` (default: the mover). */
  observe(state, seat = state.current) {
    return this.observeInto(new Float32Array(this.size), state, seat);
  }

  /** `observe` written into `obs` (a Float32Array of the observation's size, zeroed
   * first), so that a loop of decisions reuses one buffer. */
  observeInto(obs, state, seat = state.current) {
    const { target, score_step: step } = this.rules;
    const col = this.col;
    const scores = state.scores;
    const mover = state.current;
    const n = scores.length;
    const seen = [...scores.slice(seat), ...scores.slice(0, seat)];
    const total = state.turn_total;
    const roll = state.roll ? [...state.roll].sort((a, b) => a - b) : null;
    obs.fill(0);
    const at = this.slices;
    seen.forEach((s, j) => {
      obs[at.scores + j] = s / target;
      obs[at.entered + j] = s > 0 ? 1 : 0;
    });
    obs[at.to_move + ((mover - seat + n) % n)] = 1;
    obs[at.turn_total] = Math.min(total / target, 2);
    obs[at.need_after_bank] = Math.max((target - scores[mover] - total) / target, -1);
    obs[at.ends_in_50] = total % step !== 0 ? 1 : 0;
    const legal = roll ? moves(state, this.rules) : [];
    if (roll) {
      obs[at.dice_in_roll] = roll.length / NUM_DICE;
      obs[at.some_action_banks] = legal[legal.length - 1].action >= BANK_BIT ? 1 : 0;
      const fifth = Math.fround(1 / NUM_DICE); // float32 sums, as the toolkit's numpy
      roll.forEach((face, i) => {
        obs[at.roll_one_hot + 6 * i + face - 1] = 1;
        obs[at.face_counts + face - 1] += fifth;
      });
    }
    if (this.encoding === "compact") return obs;
    const bins = Math.floor(target / step) + 1;
    seen.forEach((s, j) => (obs[at.score_one_hot + j * bins + Math.floor(s / step)] = 1));
    if (!roll || seat !== mover) return obs;
    const own = scores[mover];
    for (const m of legal) {
      const row = at.actions + m.action * this.rowSize;
      const t = m.total;
      const need = target - own - t;
      obs[row + col.LEGAL] = 1;
      obs[row + col.TURN_TOTAL] = t / target;
      obs[row + col.DICE_LEFT_AT + m.diceLeft - 1] = 1;
      obs[row + col.POINTS] = m.points / 1000;
      obs[row + col.NEED] = Math.min(Math.max(need / target, -1), 1);
      if (need >= 0 && need <= 1000) obs[row + col.NEED_AT + Math.floor(need / 50)] = 1;
      else if (need > 1000) obs[row + col.NEED_OVER_1000] = 1;
      else obs[row + col.OVERSHOOT] = 1;
      obs[row + col.MAY_BANK] = m.mayBank ? 1 : 0;
      obs[row + col.ENDS_IN_50] = t % step !== 0 ? 1 : 0;
      obs[row + col.OWN_SCORE_AFTER] = own / target;
      const outcome = m.bank;
      if (outcome === null) {
        obs[row + col.TURN_EV] = Math.min(this.turnEvValue(own > 0, t, m.diceLeft) / 1000, 5);
        continue;
      }
      obs[row + col.TURN_EV] = Math.min(t / 1000, 5);
      obs[row + col.BANKS] = 1;
      if (outcome.winner === mover) {
        obs[row + col.WINS] = 1;
        obs[row + col.OWN_SCORE_AFTER] = 1;
      } else if (!outcome.overshoot) {
        obs[row + col.BUMPS] = outcome.bumped.length ? 1 : 0;
        obs[row + col.OWN_SCORE_AFTER] = outcome.scores[mover] / target;
      } else if (outcome.giftTo === null) {
        obs[row + col.POINTS_LOST] = 1;
      } else {
        obs[row + col.GIFTS] = 1;
        obs[row + col.GIFT_WINS] = outcome.winner === outcome.giftTo ? 1 : 0;
      }
    }
    return obs;
  }

  /** The network's 64 logits (float64) for an observation. */
  logits(obs) {
    return this.network.run(obs).slice();
  }

  /** The legal action with the highest logit (the first of equals). */
  choose(obs, mask) {
    const logits = this.network.run(obs);
    let best = -1;
    for (let a = 0; a < NUM_ACTIONS; a++) if (mask[a] && (best < 0 || logits[a] > logits[best])) best = a;
    return best;
  }

  /** The bot's action in the pending decision of `state` (the mover's). */
  act(state) {
    const obs = this.observeInto(this.obsBuffer, state, state.current);
    return this.choose(obs, legalMask(state, this.rules));
  }
}

// ------------------------------------------------------------------ loading
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

const K256 = new Uint32Array(
  "428a2f98 71374491 b5c0fbcf e9b5dba5 3956c25b 59f111f1 923f82a4 ab1c5ed5 d807aa98 12835b01 243185be 550c7dc3 72be5d74 80deb1fe 9bdc06a7 c19bf174 e49b69c1 efbe4786 0fc19dc6 240ca1cc 2de92c6f 4a7484aa 5cb0a9dc 76f988da 983e5152 a831c66d b00327c8 bf597fc7 c6e00bf3 d5a79147 06ca6351 14292967 27b70a85 2e1b2138 4d2c6dfc 53380d13 650a7354 766a0abb 81c2c92e 92722c85 a2bfe8a1 a81a664b c24b8b70 c76c51a3 d192e819 d6990624 f40e3585 106aa070 19a4c116 1e376c08 2748774c 34b0bcb5 391c0cb3 4ed8aa4a 5b9cca4f 682e6ff3 748f82ee 78a5636f 84c87814 8cc70208 90befffa a4506ceb bef9a3f7 c67178f2"
    .split(" ").map((w) => parseInt(w, 16)),
);

/** SHA-256 of `buffer` (FIPS 180-4) in plain JavaScript, as lowercase hex: for pages
 * outside a secure context (plain http on a LAN address), where crypto.subtle is absent. */
export function sha256Plain(buffer) {
  const data = new Uint8Array(buffer);
  const n = data.length;
  const blocks = Math.ceil((n + 9) / 64);
  const bytes = new Uint8Array(blocks * 64);
  bytes.set(data);
  bytes[n] = 0x80;
  const view = new DataView(bytes.buffer);
  view.setUint32(bytes.length - 8, Math.floor(n / 0x20000000)); // the length in bits, 64-bit
  view.setUint32(bytes.length - 4, (n * 8) >>> 0);
  const h = Uint32Array.of(0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19);
  const w = new Uint32Array(64);
  const rotr = (x, k) => (x >>> k) | (x << (32 - k));
  for (let at = 0; at < bytes.length; at += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(at + 4 * t);
    for (let t = 16; t < 64; t++) {
      const s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >>> 3);
      const s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >>> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    let [a, b, c, d, e, f, g, k] = h;
    for (let t = 0; t < 64; t++) {
      const t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K256[t] + w[t];
      const t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      [k, g, f, e, d, c, b, a] = [g, f, e, (d + t1) >>> 0, c, b, a, (t1 + t2) >>> 0];
    }
    [a, b, c, d, e, f, g, k].forEach((v, i) => (h[i] += v));
  }
  const out = new Uint8Array(32);
  h.forEach((v, i) => new DataView(out.buffer).setUint32(4 * i, v));
  return hex(out);
}

async function sha256Hex(buffer) {
  const subtle = globalThis.crypto?.subtle; // only in secure contexts (https, localhost)
  if (!subtle) return sha256Plain(buffer);
  return hex(new Uint8Array(await subtle.digest("SHA-256", buffer)));
}

/** A Bot from a bundle's files, `read(name)` giving each as an ArrayBuffer (or null if
 * missing); every file is checked against its SHA-256 in bundle.json. `playOnly`: only
 * the files playing needs (bundle.json's runtime_files), not the graph or the vectors. */
export async function bundleFrom(read, where, { playOnly = false } = {}) {
  const raw = await read("bundle.json");
  const file = "bundle.json";
  if (raw === null) throw new BundleError(`${where}: bundle.json is missing`, { file, reason: "missing" });
  let meta;
  try {
    meta = JSON.parse(new TextDecoder().decode(raw));
  } catch (e) {
    throw new BundleError(`${where}: bundle.json is unreadable: ${e.message.split("\n")[0]}`, { file, reason: "corrupt" });
  }
  if (!meta || meta.format !== FORMAT) {
    throw new BundleError(`${where}: bundle.json is not a 5000 bot bundle`, { file, reason: "corrupt" });
  }
  const files = {};
  const needed = playOnly && Array.isArray(meta.runtime_files) ? new Set(meta.runtime_files) : null;
  for (const [name, info] of Object.entries(meta.files || {})) {
    if (needed && !needed.has(name)) continue;
    const data = await read(name);
    if (data === null) throw new BundleError(`${where}: the bundle's ${name} is missing`, { file: name, reason: "missing" });
    if ((await sha256Hex(data)) !== info.sha256) {
      throw new BundleError(`${where}: ${name} does not match its SHA-256 in bundle.json (corrupt or changed)`,
        { file: name, reason: "corrupt" });
    }
    files[name] = data;
  }
  try {
    const bot = new Bot(meta, files[meta.network.plain.weights], files[meta.tables.turn_ev.file]);
    bot.files = files;
    return bot;
  } catch (e) {
    if (e instanceof BundleError) throw new BundleError(`${where}: ${e.message}`);
    throw new BundleError(`${where}: bundle.json lacks or garbles ${e.message.split("\n")[0]}`);
  }
}

function arrayBuffer(bytes) {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
}

/** A Bot from a bundle folder on disk (Node). */
export async function loadBundle(folder) {
  const { readFile } = await import("node:fs/promises");
  const read = async (name) => {
    try {
      return arrayBuffer(await readFile(`${folder}/${name}`));
    } catch (e) {
      if (e.code === "ENOENT" || e.code === "ENOTDIR") return null;
      throw new BundleError(`${folder}: cannot read ${name}: ${e.message}`);
    }
  };
  return bundleFrom(read, folder);
}

/** A Bot from a bundle served at `base` (a browser, static files): only the files
 * playing needs are fetched, unless `playOnly` is false. */
export async function loadBundleFromUrl(base, { playOnly = true } = {}) {
  const read = async (name) => {
    const response = await fetch(new URL(name, base.endsWith("/") ? base : `${base}/`));
    return response.ok ? response.arrayBuffer() : null;
  };
  return bundleFrom(read, base, { playOnly });
}

// ------------------------------------------------------------------ test vectors
/** Every test vector recomputed: the vectors whose observation (to float32, and
 * bit for bit), mask or action differ, and the time a decision took. */
export function replay(bot) {
  if (!bot.meta.test_vectors) throw new BundleError("a runtime bundle, without test vectors to replay");
  const cases = JSON.parse(new TextDecoder().decode(bot.files[bot.meta.test_vectors.file]));
  const diffs = { observation: [], observation_bits: [], mask: [], action: [] };
  const start = performance.now();
  cases.vectors.forEach((c, i) => {
    const obs = bot.observe(c.state, c.seat);
    const want = new Float32Array(bot.size);
    c.obs.index.forEach((j, k) => (want[j] = c.obs.value[k]));
    let close = true;
    let same = true;
    for (let j = 0; j < bot.size; j++) {
      if (obs[j] !== want[j]) same = false;
      if (Math.abs(obs[j] - want[j]) > 1e-6 * Math.max(1, Math.abs(want[j]))) close = false;
    }
    if (!close) diffs.observation.push(i);
    if (!same) diffs.observation_bits.push(i);
    const mask = legalMask(c.state, bot.rules);
    const legal = mask.flatMap((ok, a) => (ok ? [a] : []));
    if (legal.join(",") !== c.legal.join(",")) diffs.mask.push(i);
    if (bot.choose(obs, mask) !== c.action) diffs.action.push(i);
  });
  const n = cases.vectors.length;
  return { vectors: n, ms_per_decision: (performance.now() - start) / Math.max(n, 1), differences: diffs };
}

async function main(argv) {
  if (argv.length !== 1 || argv[0].startsWith("-")) {
    console.error("usage: node fivethousand.mjs BUNDLE (replays its test vectors)");
    return 2;
  }
  let result;
  try {
    result = replay(await loadBundle(argv[0]));
  } catch (e) {
    if (!(e instanceof BundleError)) throw e;
    console.error(`error: ${e.message}`);
    return 2;
  }
  const d = result.differences;
  const count = Object.fromEntries(Object.entries(d).map(([k, v]) => [k, v.length]));
  const first = Object.fromEntries(Object.entries(d).map(([k, v]) => [k, v.slice(0, 5)]));
  const ms = Math.round(result.ms_per_decision * 1000) / 1000;
  console.log(JSON.stringify({ vectors: result.vectors, differences: count, first, ms_per_decision: ms }));
  return d.observation.length || d.mask.length || d.action.length ? 1 : 0;
}

const invoked = typeof process !== "undefined" && process.argv[1];
if (invoked && import.meta.url === (await import("node:url")).pathToFileURL(invoked).href) {
  process.exitCode = await main(process.argv.slice(2));
}
