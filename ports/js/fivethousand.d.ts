// Type declarations of fivethousand.mjs (written by hand; tests/test_npm_package.py
// checks that every export is declared here and type-checks a program against them).

/** bundle.json's `format`. */
export const FORMAT: "fivethousand-rl bot bundle";
/** The bundle.json `format_version` this module reads. */
export const FORMAT_VERSION: 1;
/** Added to a hold's dice bits, an action banks after the hold (actions 32..63). */
export const BANK_BIT: 32;

/** A bundle that cannot be played: a missing, corrupt or unreadable file. */
export class BundleError extends Error {
  constructor(message: string, details?: { file?: string | null; reason?: "missing" | "corrupt" | null });
  /** The file at fault, where one file is the cause. */
  readonly file?: string | null;
  /** Why that file cannot be used. */
  readonly reason?: "missing" | "corrupt" | null;
}

/** An action the rules do not allow now, or a step out of turn. */
export class GameError extends Error {}

// ------------------------------------------------------------------ rules
/** What scores (R2): bundle.json's rules.scoring. */
export interface Scoring {
  /** Three of a face; each die beyond three doubles it. */
  triple: Record<string, number>;
  /** The faces that score alone (1 and 5), per die. */
  single: Record<string, number>;
  straight: number;
  straights: number[][];
}

/** bundle.json's `rules`: the house rules of the bundle's game. */
export interface Rules {
  hold: "free" | "all";
  target: number;
  entry: number;
  bump: boolean;
  overshoot: "gift" | "lost";
  fifty_rule: boolean;
  score_step: number;
  scoring: Scoring;
  [more: string]: unknown;
}

// ------------------------------------------------------------------ states
export type Phase = "roll" | "decide" | "over";
export const ROLL: "roll";
export const DECIDE: "decide";
export const OVER: "over";

/** What a decision needs: the banked `scores` by seat, the seat to move (`current`),
 * the points held this turn before this roll (`turn_total`) and the dice to decide on. */
export interface Position {
  scores: number[];
  current: number;
  turn_total: number;
  roll: number[] | null;
}

/** A whole game's state, as fivethousand_rl.envs.game.GameState.to_dict writes it. */
export interface GameState extends Position {
  dice_left: number;
  held: number[][];
  phase: Phase;
  winner: number | null;
  turns: number;
}

/** A legal hold of a sorted roll: its dice bits, the dice and their points. */
export interface Hold {
  bits: number;
  held: number[];
  points: number;
}

/** What banking a total does (R9). */
export interface BankOutcome {
  scores: number[];
  winner: number | null;
  bumped: number[];
  overshoot: boolean;
  giftTo: number | null;
  lostCandidate: number | null;
}

/** A legal action and where it leads. */
export interface Move {
  action: number;
  held: number[];
  points: number;
  total: number;
  diceLeft: number;
  mayBank: boolean;
  /** A banking action's outcome; null for rolling on. */
  bank: BankOutcome | null;
}

export interface RolledEvent {
  kind: "rolled";
  seat: number;
  dice: number[];
  bust: boolean;
  turn_total: number;
}

export interface MovedEvent {
  kind: "moved";
  seat: number;
  roll: number[];
  move: Move;
}

export function holdPoints(held: readonly number[], scoring: Scoring): number;
export function holds(roll: readonly number[], rules: Rules): Hold[];
export function canBank(banked: number, total: number, rules: Rules): boolean;
export function bank(scores: readonly number[], banker: number, total: number, rules: Rules): BankOutcome;
export function moves(state: Position, rules: Rules): Move[];
/** The 64 legal-action flags of the pending decision. */
export function legalMask(state: Position, rules: Rules): boolean[];

export function newGame(players: number, first?: number): GameState;
export function rollDice(state: GameState, dice: readonly number[], rules: Rules): { state: GameState; event: RolledEvent };
export function applyAction(state: GameState, action: number, rules: Rules): { state: GameState; event: MovedEvent };
/** `n` dice from `random` (floats in [0, 1)), or from the platform's cryptographic generator. */
export function randomDice(n: number, random?: () => number): number[];

// ------------------------------------------------------------------ the network
/** bundle.json's network.plain: ONNX operators over weights.bin's float tensors
 * (`dtype`: "float32", or "float16" when every weight is a float16 exactly). */
export interface PlainNetwork {
  weights: string;
  dtype?: string;
  tensors: Record<string, { dtype: string; shape: number[]; offset?: number; count?: number; values?: number[] }>;
  nodes: { op: string; inputs: string[]; outputs: string[]; attributes?: Record<string, unknown> }[];
}

/** The number a float16's bits (an integer 0..65535) stand for, exactly. */
export function fromHalf(bits: number): number;

/** The network prepared once; `run` gives its output for one observation in a buffer
 * that the next call reuses. */
export class Network {
  constructor(plain: PlainNetwork, weights: ArrayBuffer, input: string, output: string);
  run(obs: Float32Array): Float64Array;
}

/** The network's output for one observation (prepares the network on each call). */
export function forward(
  plain: PlainNetwork,
  weights: ArrayBuffer,
  input: string,
  output: string,
  obs: Float32Array,
): Float64Array;

// ------------------------------------------------------------------ the bot
/** bundle.json, parsed (the fields this module reads are typed; docs/export.md has all). */
export interface BundleMeta {
  format: string;
  format_version: number;
  name: string;
  players: number;
  rules: Rules;
  network: { input: string; output: string; plain: PlainNetwork; [more: string]: unknown };
  files: Record<string, { sha256: string; bytes: number }>;
  [more: string]: unknown;
}

export class Bot {
  constructor(meta: BundleMeta, weights: ArrayBuffer, turnEv: ArrayBuffer);
  readonly meta: BundleMeta;
  readonly rules: Rules;
  /** The observation's length. */
  readonly size: number;
  /** The bundle's files by name, as loaded. */
  files?: Record<string, ArrayBuffer>;
  /** The observation of `state` seen from `seat` (default: the mover). */
  observe(state: Position, seat?: number): Float32Array;
  /** `observe` written into `obs` (zeroed first), to reuse one buffer. */
  observeInto(obs: Float32Array, state: Position, seat?: number): Float32Array;
  /** The network's 64 logits for an observation. */
  logits(obs: Float32Array): Float64Array;
  /** The legal action (mask: 64 flags) with the highest logit, the first of equals. */
  choose(obs: Float32Array, mask: readonly boolean[]): number;
  /** The bot's action in the pending decision of `state` (the mover's). */
  act(state: Position): number;
}

// ------------------------------------------------------------------ loading
export interface LoadOptions {
  /** Only the files playing needs (bundle.json's runtime_files), not the graph or the vectors. */
  playOnly?: boolean;
}

/** SHA-256 in plain JavaScript, as lowercase hex (where crypto.subtle is absent). */
export function sha256Plain(buffer: ArrayBuffer | Uint8Array): string;
/** A Bot from a bundle's files, `read(name)` giving each (null if missing); each file is
 * checked against its SHA-256 in bundle.json. */
export function bundleFrom(
  read: (name: string) => Promise<ArrayBuffer | null>,
  where: string,
  options?: LoadOptions,
): Promise<Bot>;
/** A Bot from a bundle folder on disk (Node). */
export function loadBundle(folder: string): Promise<Bot>;
/** A Bot from a bundle served at `base` (a browser, static files). */
export function loadBundleFromUrl(base: string, options?: LoadOptions): Promise<Bot>;

// ------------------------------------------------------------------ test vectors
export interface ReplayResult {
  vectors: number;
  ms_per_decision: number;
  /** The indexes of the vectors that differ, by what differs. */
  differences: { observation: number[]; observation_bits: number[]; mask: number[]; action: number[] };
}

/** Every test vector of the bundle recomputed (a bundle loaded with its test vectors). */
export function replay(bot: Bot): ReplayResult;
