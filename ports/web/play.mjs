// 5000 in the browser against a bundle's bot, with no server beyond static files: the
// game's steps, the legal moves and the bot's forward pass are ports/js/fivethousand.mjs
// (checked against the engine and the bundle's test vectors), the dice come from the
// browser's cryptographic generator (or, with ?seed=N, a seeded one, for tests and
// demos), and every text is the project's own, translated, from the bundle's
// messages.json (the browser's language, else English; ?lang= to choose).
//
// The table is the bundle's (bot.meta.players, 2 to 8 seats): the person at seat 0, the
// bundle's bot at every other seat, each decision seen from the seat to move (the
// network's observation is the mover's, as in the toolkit's tables of one agent).
//
// Query: ?bundle=URL (the bundle folder, relative to this page; default bundle/),
// ?seed=N, ?delay=MS (the pause between the bot's steps; default 700), ?lang=fr.
import {
  BANK_BIT,
  DECIDE,
  OVER,
  ROLL,
  applyAction,
  loadBundleFromUrl,
  moves,
  newGame,
  randomDice,
  rollDice,
} from "../js/fivethousand.mjs";

const params = new URLSearchParams(location.search);
const BUNDLE = new URL(params.get("bundle") || "bundle/", location.href).href;
const DELAY = Math.max(0, Number(params.get("delay") ?? 700) || 0);
const SEED = params.get("seed");
const PERSON = 0; // the person's seat; the bot sits at every other
const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------------ languages
let LANG = "en";
let MESSAGES = {};
let PLURALS = new Intl.PluralRules("en");
let NUMBERS = numberFormat("en");

// Integers grouped only from 10,000 (a score of 5000 stays "5000"), as fivethousand_rl.envs.i18n.number.
function numberFormat(lang) {
  try {
    return new Intl.NumberFormat(lang, { useGrouping: "min2", maximumFractionDigits: 0 });
  } catch {
    return new Intl.NumberFormat(lang, { maximumFractionDigits: 0 });
  }
}

function fill(text, values) {
  if (!values) return text;
  return text.replace(/\{(\w+)\}/g, (whole, key) => {
    if (!(key in values)) return whole;
    const v = values[key];
    return Number.isInteger(v) ? NUMBERS.format(v) : String(v);
  });
}

function _(msgid, values) {
  const text = MESSAGES[msgid];
  return fill(typeof text === "string" && text ? text : msgid, values);
}

function ngettext(one, many, n, values) {
  const forms = MESSAGES[one];
  let text = n === 1 ? one : many;
  if (forms && typeof forms === "object") text = forms[PLURALS.select(n)] || forms.other || text;
  return fill(text, { n, ...values });
}

/** The first of ?lang= and the browser's languages that messages.json has; else English. */
function chooseLanguage(catalogue) {
  const known = catalogue.languages || {};
  for (const tag of [params.get("lang"), ...(navigator.languages || [navigator.language])]) {
    const base = String(tag || "").toLowerCase().split(/[-_]/)[0];
    if (base && base in known) return base;
  }
  return "en";
}

function useLanguage(catalogue) {
  LANG = chooseLanguage(catalogue);
  MESSAGES = (catalogue.languages?.[LANG] || {}).messages || {};
  PLURALS = new Intl.PluralRules(LANG);
  NUMBERS = numberFormat(LANG);
  document.documentElement.lang = LANG;
  document.title = _("5000 - dice against the bots");
  $("title").textContent = _("5000 - dice against the bots");
  $("new-game").textContent = _("New game");
  $("roll").textContent = _("Roll");
  $("bank").textContent = _("Bank");
  $("dice").setAttribute("aria-label", _("dice"));
  $("licence").textContent = _("Free software under the MIT licence");
}

// ------------------------------------------------------------------ texts of the game
const diceText = (dice) => `[${dice.join(" ")}]`;

function joinWords(parts) {
  if (parts.length < 2) return parts.join("");
  return _("{first} and {last}", { first: parts.slice(0, -1).join(_(", ")), last: parts.at(-1) });
}

function rulesText(rules) {
  const words = [
    _("exactly {target} wins", { target: rules.target }),
    _("{entry} to enter", { entry: rules.entry }),
    rules.bump ? _("bumps") : _("no bumps"),
    rules.overshoot === "gift" ? _("overshoot gift") : _("overshoot lost"),
    rules.fifty_rule ? _("the 50 rule") : _("no 50 rule"),
    rules.hold === "free" ? _("hold free") : _("hold all"),
  ];
  return _("Rules: {rules}.", { rules: words.join(_(", ")) });
}

/** Why a total cannot be banked (R8), as a player reads it after "it". */
function refusal(banked, total, rules) {
  if (total <= 0) return _("nothing to bank");
  const parts = [];
  if (rules.fifty_rule && total % 100 === 50) parts.push(_("ends in 50"));
  if (banked === 0 && total < rules.entry) {
    parts.push(_("is under the {entry} needed to enter", { entry: rules.entry }));
  }
  return joinWords(parts);
}

/** What banking did (fivethousand_rl.envs.render.bank_text), `names` by seat. */
function bankText(o, seat, total, names, rules) {
  const who = names[seat];
  if (o.overshoot && o.giftTo === null) {
    let why = _("overshoots are lost under these rules");
    if (o.lostCandidate !== null) {
      why = _("it would take {who} past {target}", { who: names[o.lostCandidate], target: rules.target });
    } else if (rules.overshoot === "gift") {
      why = _("nobody else has {entry} or more", { entry: rules.entry });
    }
    return _("{who} banked {total}: overshoot, the points are lost ({why})", { who, total, why });
  }
  if (o.overshoot) {
    const values = { who, total, to: names[o.giftTo], now: o.scores[o.giftTo] };
    return o.winner === o.giftTo
      ? _("{who} banked {total}: overshoot, gift of {total} to {to}, who won with exactly {now}", values)
      : _("{who} banked {total}: overshoot, gift of {total} to {to}, now {now}", values);
  }
  const score = o.scores[seat];
  if (o.winner === seat) return _("{who} banked {total} and won with exactly {score}", { who, total, score });
  if (o.bumped.length) {
    const bumped = joinWords(o.bumped.map((p) => names[p]));
    return _("{who} banked {total}, now {score}, which bumped {bumped} to 0", { who, total, score, bumped });
  }
  return _("{who} banked {total}, now {score}", { who, total, score });
}

/** One event of the game in words (fivethousand_rl.envs.render.event_text). */
function eventText(event, names, rules) {
  const who = names[event.seat];
  if (event.kind === "rolled") {
    const dice = diceText(event.dice);
    if (!event.bust) return _("{who} rolled {dice}", { who, dice });
    if (event.turn_total) return _("{who} rolled {dice}: bust, lost {points}", { who, dice, points: event.turn_total });
    return _("{who} rolled {dice}: bust", { who, dice });
  }
  const move = event.move;
  if (move.bank === null) {
    return _("{who} held {dice}, turn total {total}", { who, dice: diceText(move.held), total: move.total });
  }
  const bank = bankText(move.bank, event.seat, move.total, names, rules);
  return _("{bank} (held {dice})", { bank, dice: diceText(move.held) });
}

// ------------------------------------------------------------------ the game
let bot = null;
let rules = null;
let state = null;
let shown = { dice: [], held: [], bust: false }; // the dice on the table when nobody chooses
let selected = new Set(); // positions of the sorted roll the person holds
let events = [];
let decisions = []; // the bot's: {state, legal, action}, for tests and the curious
let gameNo = 0;
let random = null;
let marks = new Map(); // seat -> what another's bank did to it (a bump, a gift), until its turn ends

// A seeded generator (mulberry32) for ?seed=, else the browser's cryptographic one.
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Who sits where: "you", then the bot, by seat where it sits more than once (as the
 * toolkit's terminal and web app name them). */
function names() {
  const players = bot.meta.players;
  const seats = Array.from({ length: players - 1 }, (_seat, i) => i + 1);
  const named = (seat) => _("{bot} (seat {seat})", { bot: bot.meta.name, seat });
  return [_("you"), ...seats.map((seat) => (players > 2 ? named(seat) : bot.meta.name))];
}
const pause = () => new Promise((resolve) => setTimeout(resolve, DELAY));
const yourMove = () => state && state.phase === DECIDE && state.current === PERSON;

function record(event) {
  events.push(event);
  markBank(event);
  if (event.kind === "rolled") shown = { dice: event.dice, held: [], bust: event.bust };
  else shown = { dice: event.roll, held: event.move.held, bust: false };
}

/** Remember what a bank did to the other seats (R9: bumps, a gift), for the scoreboard;
 * a seat's own marks go when its turn ends (a bust or a bank). */
function markBank(event) {
  const ended = event.kind === "rolled" ? event.bust : event.move.bank !== null;
  if (ended) marks.delete(event.seat);
  if (event.kind !== "moved" || event.move.bank === null) return;
  const outcome = event.move.bank;
  const who = names()[event.seat];
  for (const seat of outcome.bumped) marks.set(seat, _("bumped to 0 by {who}", { who }));
  if (outcome.giftTo !== null) {
    marks.set(outcome.giftTo, _("gift of {points} from {who}", { points: event.move.total, who }));
  }
}

/** Roll for whoever rolls and let the bot decide, step by step, until the person has a
 * decision to make or the game is over; stops if a new game started meanwhile. */
async function advance(game) {
  while (game === gameNo && state.phase !== OVER && !yourMove()) {
    render();
    await pause();
    if (game !== gameNo) return;
    let done;
    if (state.phase === ROLL) {
      done = rollDice(state, randomDice(state.dice_left, random), rules);
    } else {
      const action = bot.act(state);
      const legal = moves(state, rules).map((m) => m.action);
      decisions.push({ state: structuredClone(state), legal, action });
      done = applyAction(state, action, rules);
    }
    state = done.state;
    record(done.event);
    selected = new Set();
  }
  if (game === gameNo) render();
}

function startGame() {
  gameNo += 1;
  random = SEED === null ? undefined : seeded(Number(SEED) + gameNo - 1);
  // the person starts the first game, then each seat in turn
  state = newGame(bot.meta.players, (gameNo - 1) % bot.meta.players);
  events = [];
  marks = new Map();
  decisions = [];
  shown = { dice: [], held: [], bust: false };
  selected = new Set();
  advance(gameNo);
}

// The person's hold: the selected dice as an action (the leftmost copies of each face).
function heldBits() {
  const roll = state.roll;
  const want = {};
  for (const i of selected) want[roll[i]] = (want[roll[i]] || 0) + 1;
  let bits = 0;
  roll.forEach((face, i) => {
    if (want[face]) {
      want[face] -= 1;
      bits |= 1 << i;
    }
  });
  return bits;
}

function legalMoves() {
  return yourMove() ? moves(state, rules) : [];
}

function play(bank) {
  if (!yourMove() || !selected.size) return;
  const action = heldBits() | (bank ? BANK_BIT : 0);
  if (!legalMoves().some((m) => m.action === action)) return; // the buttons say so already
  const done = applyAction(state, action, rules);
  state = done.state;
  record(done.event);
  selected = new Set();
  advance(gameNo);
}

function toggle(i) {
  if (!yourMove() || i >= state.roll.length) return;
  const faces = new Set(legalMoves().flatMap((m) => m.held));
  if (!faces.has(state.roll[i])) {
    $("note").textContent = _("A {face} does not score here: it cannot be held.", { face: state.roll[i] });
    return;
  }
  if (selected.has(i)) selected.delete(i);
  else selected.add(i);
  render();
}

// ------------------------------------------------------------------ drawing
function die(face, label, { button = false, classes = [] } = {}) {
  const el = document.createElement(button ? "button" : "span");
  el.className = ["die", ...classes].join(" ");
  el.textContent = String(face);
  el.setAttribute("aria-label", label);
  if (button) el.type = "button";
  else el.setAttribute("role", "img");
  return el;
}

function drawScores(who) {
  const list = $("scores");
  list.replaceChildren();
  state.scores.forEach((score, seat) => {
    const li = document.createElement("li");
    const current = seat === state.current && state.phase !== OVER;
    li.className = [current ? "current" : "", seat === state.winner ? "winner" : ""].join(" ").trim();
    li.dataset.seat = String(seat);
    if (current) li.setAttribute("aria-current", "true");
    const notes = [current && state.turn_total ? _("+{points} this turn", { points: state.turn_total })
      : score ? _("entered") : _("not entered")];
    if (marks.has(seat)) notes.push(marks.get(seat));
    const marker = current ? "▶" : seat === state.winner ? "★" : "";
    for (const [cls, text] of [["marker", marker], ["name", who[seat]], ["score", NUMBERS.format(score)],
      ["note", notes.join(_(", "))]]) {
      const span = document.createElement("span");
      span.className = cls;
      span.textContent = text;
      if (cls === "marker") span.setAttribute("aria-hidden", "true"); // aria-current says it
      li.append(span);
    }
    list.append(li);
  });
}

function drawDice() {
  const box = $("dice");
  box.replaceChildren();
  if (yourMove()) {
    const faces = new Set(legalMoves().flatMap((m) => m.held));
    const holds = new Set(legalMoves().map((m) => m.action & ~BANK_BIT));
    if (holds.size === 1 && !selected.size) {
      // one way to hold (the rule 'all', or a single scoring die): chosen for the person
      const only = [...holds][0];
      state.roll.forEach((_face, i) => { if ((only >> i) & 1) selected.add(i); });
    }
    state.roll.forEach((face, i) => {
      const ok = faces.has(face);
      const position = i + 1;
      const label = ok ? _("die {position} showing {face}", { position, face })
        : _("die {position} showing {face} (does not score)", { position, face });
      const el = die(face, label, { button: true, classes: selected.has(i) ? ["selected"] : [] });
      el.setAttribute("aria-pressed", String(selected.has(i)));
      el.disabled = !ok;
      el.dataset.pos = String(i);
      el.addEventListener("click", () => toggle(i));
      box.append(el);
    });
    return;
  }
  const held = [...shown.held];
  for (const face of shown.dice) {
    const k = held.indexOf(face);
    if (k >= 0) held.splice(k, 1);
    const classes = k >= 0 ? ["held"] : shown.bust ? ["bust"] : [];
    box.append(die(face, _("die showing {face}", { face }), { classes }));
  }
}

function drawButtons() {
  const mine = yourMove() && selected.size > 0;
  const bits = mine ? heldBits() : 0;
  const legal = legalMoves();
  const rollMove = mine && legal.find((m) => m.action === bits);
  const bankMove = mine && legal.find((m) => m.action === (bits | BANK_BIT));
  $("roll").disabled = !rollMove;
  $("bank").disabled = !bankMove;
  const note = $("note");
  if (!yourMove()) note.textContent = "";
  else if (!selected.size) note.textContent = _("Click the dice to hold (keys 1-5), then Roll or Bank.");
  else if (!rollMove && !bankMove) {
    note.textContent = rules.hold === "all"
      ? _("Under the hold rule 'all' every scoring die is held.")
      : _("That hold is not allowed: every die held must score.");
  } else if (!bankMove) {
    const total = rollMove.total;
    const why = _("can't bank {total}: it {why}",
      { total, why: refusal(state.scores[PERSON], total, rules) });
    note.textContent = _("Holding these makes {total}; {why}.", { total, why });
  } else {
    note.textContent = _("Holding these makes {total}.", { total: bankMove.total });
  }
}

function render() {
  const who = names();
  const turn = state.turns + 1;
  let head;
  if (state.phase === OVER) {
    head = state.winner === PERSON
      ? ngettext("Game over after {n} turn: you win.", "Game over after {n} turns: you win.", state.turns)
      : ngettext("Game over after {n} turn: {name} won.", "Game over after {n} turns: {name} won.",
        state.turns, { name: who[state.winner] });
  } else if (yourMove()) {
    head = _("Turn {turn}: your move. Click dice to hold them, then roll or bank.", { turn });
  } else if (state.current === PERSON) {
    head = _("Turn {turn}: you roll...", { turn });
  } else {
    head = _("Turn {turn}: {name} is playing...", { turn, name: who[state.current] });
  }
  $("headline").textContent = head;
  $("rules-line").textContent = rulesText(rules);
  drawScores(who);
  const info = $("turn-info");
  info.replaceChildren();
  if (state.phase !== OVER) {
    info.append(ngettext("turn total {total} · {n} die in play · held this turn:",
      "turn total {total} · {n} dice in play · held this turn:", state.dice_left,
      { total: state.turn_total }) + " ");
    if (!state.held.length) info.append(_("nothing yet"));
    for (const hold of state.held) {
      const span = document.createElement("span");
      span.className = "mini";
      hold.forEach((face) => span.append(die(face, _("die showing {face}", { face }))));
      info.append(span);
    }
  }
  drawDice();
  drawButtons();
  const log = $("log");
  log.replaceChildren(...events.map((event) => {
    const li = document.createElement("li");
    li.textContent = eventText(event, who, rules);
    if (event.seat === PERSON) li.className = "you";
    return li;
  }));
  log.scrollTop = log.scrollHeight;
  const over = $("over");
  over.hidden = state.phase !== OVER;
  over.textContent = state.phase !== OVER ? ""
    : state.winner === PERSON ? _("You won!") : _("{name} won.", { name: who[state.winner] });
  document.body.dataset.status = state.phase === OVER ? "over" : yourMove() ? "you" : "bot";
}

// ------------------------------------------------------------------ start
function keys(e) {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  if (e.key >= "1" && e.key <= "5") toggle(Number(e.key) - 1);
  else if (e.key === "r") play(false);
  else if (e.key === "b") play(true);
  else if (e.key === "n" && bot) startGame();
  else return;
  e.preventDefault();
}

// For tests and whoever looks: the state, the bot's decisions, the rules.
globalThis.fivethousandPage = {
  get state() { return state; },
  get decisions() { return decisions; },
  get events() { return events; },
  get rules() { return rules; },
  get names() { return names(); },
  get language() { return LANG; },
};

// The bundle's files that are missing or damaged, in the page's words (boot.js's).
const FILE_ERRORS = {
  missing: "The bot's file {file} is missing: export the bundle again.",
  corrupt: "The bot's file {file} is damaged (it does not match bundle.json): export the bundle again.",
};

async function main() {
  const boot = globalThis.fivethousandBoot;
  if (boot?.stopped) return; // boot.js said why the page cannot play
  try {
    bot = await loadBundleFromUrl(BUNDLE);
  } catch (e) {
    if (boot && FILE_ERRORS[e.reason]) {
      boot.say(FILE_ERRORS[e.reason], { file: e.file }, e.message);
      return;
    }
    $("headline").textContent = `error: ${e.message}`;
    $("headline").setAttribute("role", "alert");
    document.body.dataset.status = "error";
    return;
  }
  const raw = bot.files[bot.meta.messages?.file || "messages.json"];
  useLanguage(raw ? JSON.parse(new TextDecoder().decode(raw)) : {});
  rules = bot.rules;
  $("roll").addEventListener("click", () => play(false));
  $("bank").addEventListener("click", () => play(true));
  $("new-game").addEventListener("click", startGame);
  $("new-game").disabled = false;
  document.addEventListener("keydown", keys);
  startGame();
}

main();
