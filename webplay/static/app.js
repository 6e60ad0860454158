// 5000 in the browser. The server plays the game (the engine decides every rule); this
// page draws what it sends, and sends only bot keys and action numbers (bits 0-4 hold
// those positions of the sorted roll, bit 5 banks), each with the position it answers
// (view.at), so that a repeated request is refused rather than played later. No inline
// script or style: the server's Content-Security-Policy forbids them.
//
// Every text a player reads is in their language: this file's own through _(),
// ngettext() and pgettext() (English msgids, plain string literals with {name}
// placeholders, so that `make messages` extracts them), the server's in the language
// each API call names (the X-Language header).
"use strict";

// ------------------------------------------------------------------ languages
const LANGUAGE_KEY = "fivethousand.lang";  // the player's choice, remembered
let languages = { en: "English" };  // /api/languages: code -> the language's own name
let LANG = "en";
let MESSAGES = {};  // /api/i18n/LANG: msgid (or "context\u0004msgid") -> text, or forms
let PLURALS = new Intl.PluralRules("en");
let NUMBERS = numberFormat("en");

// Integers as the language writes them, grouped only from 10,000 (as fivethousand_rl.envs.i18n.number:
// a score of 5000 stays "5000").
function numberFormat(lang) {
  try {
    return new Intl.NumberFormat(lang, { useGrouping: "min2", maximumFractionDigits: 0 });
  } catch (e) {
    return new Intl.NumberFormat(lang, { maximumFractionDigits: 0 });
  }
}

// A probability (0-1) as a percentage with one decimal, as the language writes it.
function percent(p) {
  return new Intl.NumberFormat(LANG, {
    style: "percent", minimumFractionDigits: 1, maximumFractionDigits: 1,
  }).format(p);
}

function number(n) { return NUMBERS.format(n); }

// `text` with its {placeholders} filled from `values` (integers as numbers are written).
function fill(text, values) {
  if (!values) return text;
  return text.replace(/\{(\w+)\}/g, (whole, key) => {
    if (!(key in values)) return whole;
    const v = values[key];
    return Number.isInteger(v) ? number(v) : String(v);
  });
}

function _(msgid, values) {
  const text = MESSAGES[msgid];
  return fill(typeof text === "string" && text ? text : msgid, values);
}

function pgettext(context, msgid, values) {
  const text = MESSAGES[context + "\u0004" + msgid];
  return fill(typeof text === "string" && text ? text : msgid, values);
}

// The form of one/many for the count n (Intl.PluralRules picks the language's form).
function ngettext(one, many, n, values) {
  const forms = MESSAGES[one];
  let text = n === 1 ? one : many;
  if (forms && typeof forms === "object") {
    text = forms[PLURALS.select(n)] || Object.values(forms).at(-1) || text;
  }
  return fill(text, { n, ...values });
}

// The language to show: ?lang=, else the remembered choice, else the browser's first
// language this page speaks, else English.
function chooseLanguage() {
  const wanted = [params.get("lang"), localStorage.getItem(LANGUAGE_KEY),
    ...(navigator.languages || [navigator.language])];
  for (const tag of wanted) {
    const base = String(tag || "").toLowerCase().split(/[-_]/)[0];
    if (base && base in languages) return base;
  }
  return "en";
}

// Load `lang`'s catalogue (English needs none) and put the page's own texts in it.
async function useLanguage(lang) {
  let messages = {};
  if (lang !== "en") {
    try {
      const res = await fetch(`/api/i18n/${encodeURIComponent(lang)}`);
      if (!res.ok) throw new Error(String(res.status));
      messages = (await res.json()).messages || {};
    } catch (e) {
      lang = "en";  // no catalogue: the page stays readable, in English
    }
  }
  LANG = lang;
  MESSAGES = messages;
  PLURALS = new Intl.PluralRules(lang);
  NUMBERS = numberFormat(lang);
  document.documentElement.lang = lang;
  translatePage();
}

// The page's fixed texts (index.html holds them in English), by their data-i18n key.
function pageTexts() {
  return {
    title: _("5000 - dice against the bots"),
    language: _("Language"),
    newGame: _("New game"),
    newGameKey: _("New game (n)"),
    keys: _("Keys"),
    rules: _("Rules"),
    rulesKey: _("The rules (?)"),
    rulesTitle: _("The rules"),
    close: _("Close"),
    keyRules: pgettext("keyboard shortcut", "the rules"),
    keysTitle: _("Keyboard shortcuts"),
    keyHold: pgettext("keyboard shortcut", "hold or release a die"),
    keyRoll: pgettext("keyboard shortcut", "roll"),
    keyBank: pgettext("keyboard shortcut", "bank"),
    keyHint: pgettext("keyboard shortcut", "hint"),
    keyNew: pgettext("keyboard shortcut", "new game"),
    keyReplay: pgettext("keyboard shortcut", "replay:"),
    addBot: _("+ add a bot"),
    addPerson: _("+ add a person"),
    passNote: _("Pass and play: the people take turns on this device, each asked in turn."),
    yourSeat: _("Your seat"),
    yourName: _("Your name"),
    ready: _("I'm ready"),
    houseRules: _("House rules"),
    target: _("Target"),
    entry: _("Entry"),
    bumps: _("Bumps: banking onto another player's score sends it to 0"),
    fifty: _("The 50 rule: no banking a total that ends in 50"),
    overshoot: _("Going past the target"),
    gift: _("gives the total to the lowest entered player"),
    lost: _("loses it"),
    hold: _("Hold"),
    holdFree: _("any scoring dice"),
    holdAll: _("every scoring die"),
    standardRules: _("Standard rules"),
    abandonNote: _("Starting abandons the game in progress (reload the page to go back to it)."),
    start: _("Start"),
    // Translators: "face × 100": a triple of 4s is 400; "enter": the first bank of a game.
    rulesSummary: _("1s are 100, 5s are 50, three of a kind is face × 100 (three 1s: 1100). " +
      "The standard rules: first to bank exactly 5000 wins, you need 500 in one turn to " +
      "enter, you can't bank a total ending in 50, landing on another player's score sends " +
      "it to 0, and going past 5000 gives the turn total to the lowest entered player. The " +
      "house rules change them; a changed rule is highlighted, here and during the game."),
    rulesOfGame: _("the rules of this game"),
    dice: _("dice"),
    roll: _("Roll"),
    bank: _("Bank"),
    hint: _("Hint"),
    rematch: _("Rematch"),
    replay: _("Replay"),
    first: pgettext("replay control", "first"),
    back: pgettext("replay control", "back (←)"),
    forward: pgettext("replay control", "forward (→)"),
    last: pgettext("replay control", "last"),
    step: pgettext("replay control", "step"),
    backToGame: _("Back to the game"),
    goOn: _("Tap, click or press a key to go on."),
    licence: _("Free software under the MIT licence"),
  };
}

function translatePage() {
  const texts = pageTexts();
  for (const el of document.querySelectorAll("[data-i18n]")) {
    el.textContent = texts[el.dataset.i18n];
  }
  for (const el of document.querySelectorAll("[data-i18n-title]")) {
    el.title = texts[el.dataset.i18nTitle];
  }
  for (const el of document.querySelectorAll("[data-i18n-label]")) {
    el.setAttribute("aria-label", texts[el.dataset.i18nLabel]);
  }
  const select = $("lang-select");
  select.innerHTML = "";
  for (const [code, name] of Object.entries(languages)) {
    const o = document.createElement("option");
    o.value = code;
    o.lang = code;  // each named in itself
    o.textContent = name;
    select.appendChild(o);
  }
  select.value = LANG;
}

// The player picks a language: remembered, and the page redrawn in it at once (the
// server's texts asked for again).
async function switchLanguage(lang) {
  localStorage.setItem(LANGUAGE_KEY, lang);
  await useLanguage(lang);
  try {
    if (!$("replay").hidden && replayFrames) await openReplay(replayFrames.id, replayAt);
    else if (!$("game").hidden && view && !busy) render(await api("GET", `/api/games/${view.id}`));
    else if (!$("setup").hidden) await redrawSetup();
  } catch (e) {
    showError(e.message);
  }
}

const BANK = 32;
const params = new URLSearchParams(location.search);
// Pause between the bots' steps (ms); ?delay=0 for tests.
const DELAY = Math.max(0, Number(params.get("delay") ?? 650) || 0);
// The player's own bust or bank stays on screen until they tap, click or press a key, or
// this long (ms), before the bots play on; with ?delay=0 nothing waits.
const OWN_PAUSE = DELAY ? Math.max(2500, DELAY) : 0;
const $ = (id) => document.getElementById(id);

let bots = [];        // /api/bots
let ruleChoices = null;  // /api/rules: the seeds' rules, the switches' choices, the largest target
let view = null;      // the current game, as the server last sent it
let selected = new Set();
let busy = false;     // a request or the bots' turn is under way
let replayFrames = null;
let replayAt = 0;
let problems = [];    // /api/problems: saved games the server could not read
let shownAt = "";     // "game:at" of the view drawn last: a new roll tumbles in once
let hintWhy = { key: "", text: "" };  // the server's reason for no hint, by "game:lang"
// Pass and play: the person the device was last handed to, as "game:seat" (the page asks
// for the device to be passed when another person's decision comes).
let handedTo = "";
const PERSON = "@person";  // a seat's choice in the new-game form: a person, not a bot

// ------------------------------------------------------------------ server
async function api(method, path, body) {
  const opts = { method, headers: { "X-Language": LANG } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (!res.ok) {
    const err = new Error((data && data.error) ||
      _("the server answered {status}", { status: String(res.status) }));
    err.status = res.status;
    throw err;
  }
  return data;
}

function showError(message) {
  const el = $("error");
  el.textContent = message || "";
  el.hidden = !message;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Until the player taps, clicks or presses a key, or `ms` pass (a note says so).
function waitForPlayer(ms) {
  return new Promise((resolve) => {
    const events = ["keydown", "pointerdown"];
    const done = () => {
      clearTimeout(timer);
      events.forEach((type) => document.removeEventListener(type, done, true));
      $("go-on").hidden = true;
      resolve();
    };
    const timer = setTimeout(done, ms);
    events.forEach((type) => document.addEventListener(type, done, true));
    $("go-on").hidden = false;
  });
}

// Whether the player's own turn just ended (their bust or bank is on screen).
function ownTurnEnded(v) {
  return Boolean(v.last && v.humans.includes(v.last.seat) && ["bust", "bank"].includes(v.last.kind));
}

// Pass and play: whether the game has several people at this device.
function passAndPlay(v) { return v.humans.length > 1; }

// Pass and play: when another person's decision comes, a screen asks for the device to
// be handed to them (it closes on their tap, a key or Escape).
function askToPass(v) {
  const panel = $("pass-panel");
  if (v.status !== "you" || !passAndPlay(v)) {
    if (panel.open) panel.close();
    return;
  }
  const who = `${v.id}:${v.to_play}`;
  if (handedTo === who && !panel.open) return;
  const name = v.names[v.to_play];
  $("pass-title").textContent = _("Pass the device to {name}.", { name });
  $("pass-text").textContent = _("Turn {turn}: {name}, your move.", { turn: v.turn, name });
  handedTo = who;
  if (!panel.open) panel.showModal();
}

// Whether a roll shown now tumbles in: not with ?delay=0 (the tests' pace, nothing to
// watch) nor when the player's system asks for less motion.
function rollMotion() {
  return DELAY > 0 && !matchMedia("(prefers-reduced-motion: reduce)").matches;
}

function isRoll(kind) { return kind === "roll" || kind === "bust"; }

// ------------------------------------------------------------------ dice
const PIPS = {
  1: [[1, 1]], 2: [[0, 0], [2, 2]], 3: [[0, 0], [1, 1], [2, 2]],
  4: [[0, 0], [0, 2], [2, 0], [2, 2]], 5: [[0, 0], [0, 2], [1, 1], [2, 0], [2, 2]],
  6: [[0, 0], [0, 2], [1, 0], [1, 2], [2, 0], [2, 2]],
};

function dieSvg(face) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 100 100");
  const rect = document.createElementNS(ns, "rect");
  Object.entries({ x: 4, y: 4, width: 92, height: 92, rx: 16 })
    .forEach(([k, v]) => rect.setAttribute(k, v));
  svg.appendChild(rect);
  for (const [row, col] of PIPS[face]) {
    const c = document.createElementNS(ns, "circle");
    c.setAttribute("cx", 25 + col * 25);
    c.setAttribute("cy", 25 + row * 25);
    c.setAttribute("r", 9);
    svg.appendChild(c);
  }
  return svg;
}

// A die: a button when it can be clicked, else a plain box.
function die(face, { clickable = false, classes = [], label = "" } = {}) {
  const el = document.createElement(clickable ? "button" : "span");
  el.className = ["die", ...classes].join(" ");
  el.dataset.face = face;
  el.setAttribute("aria-label", label || _("die showing {face}", { face }));
  if (clickable) el.type = "button";
  else el.setAttribute("role", "img"); // a label needs a role on a plain box (axe)
  el.appendChild(dieSvg(face));
  return el;
}

function miniDice(faces) {
  const span = document.createElement("span");
  span.className = "mini";
  faces.forEach((f) => span.appendChild(die(f)));
  return span;
}

// ------------------------------------------------------------------ sections
function show(section) {
  for (const id of ["setup", "game", "replay"]) $(id).hidden = id !== section;
}

function setHash(hash) {
  if (location.hash !== hash) history.replaceState(null, "", hash || location.pathname + location.search);
}

// ------------------------------------------------------------------ house rules
// The panel's controls, by field of the server's Rules: each is read and written as the
// value the API takes. The server checks every value (Rules's own checks).
const RULE_CONTROLS = {
  target: { get: () => Number($("rule-target").value), set: (v) => { $("rule-target").value = v; } },
  entry: { get: () => Number($("rule-entry").value), set: (v) => { $("rule-entry").value = v; } },
  bump: { get: () => $("rule-bump").checked, set: (v) => { $("rule-bump").checked = v; } },
  fifty_rule: { get: () => $("rule-fifty").checked, set: (v) => { $("rule-fifty").checked = v; } },
  overshoot: radioControl("overshoot"),
  hold: radioControl("hold"),
};
const SAVED_RULES = "fivethousand.rules";  // the house rules of the last game started

function radioControl(name) {
  return {
    get: () => document.querySelector(`input[name=${name}]:checked`).value,
    set: (v) => {
      const input = document.querySelector(`input[name=${name}][value="${CSS.escape(String(v))}"]`);
      if (input) input.checked = true;
    },
  };
}

function chosenRules() {
  return Object.fromEntries(Object.entries(RULE_CONTROLS).map(([k, c]) => [k, c.get()]));
}

// Set the panel to the seeds' rules, overridden by the fields of `rules` that have the
// right type (a saved choice from an older page may not).
function showRules(rules) {
  const all = { ...ruleChoices.defaults };
  for (const k of Object.keys(all)) {
    const v = rules[k];
    const choices = ruleChoices.choices[k];
    if (typeof v === typeof all[k] && (!choices || choices.includes(v))) all[k] = v;
  }
  for (const [k, c] of Object.entries(RULE_CONTROLS)) c.set(all[k]);
  markHouseRules();
}

// Highlight the rules chosen away from the seeds' (as the game's rules line does).
function markHouseRules() {
  const rules = chosenRules();
  for (const k of Object.keys(RULE_CONTROLS)) {
    $(`${k}-choice`).classList.toggle("house", rules[k] !== ruleChoices.defaults[k]);
  }
  $("rule-entry").max = Math.max(50, rules.target || 0);
}

function savedRules() {
  try { return JSON.parse(localStorage.getItem(SAVED_RULES)) || {}; } catch (e) { return {}; }
}

// "target 1000 · entry 500 · no bumps · ...": the server's words, the house rules marked.
function drawRulesLine(el, items) {
  el.innerHTML = "";
  el.append(_("Rules:") + " ");
  items.forEach((item, i) => {
    if (i) el.append(" · ");
    const span = document.createElement("span");
    span.className = item.house ? "rule house" : "rule";
    span.textContent = item.text;
    span.title = item.house ? _("{about} (a house rule)", { about: item.about }) : item.about;
    el.appendChild(span);
  });
}

// ------------------------------------------------------------------ new game
// A seat of the new-game form: a bot, or (pass and play) a person with a name.
function botSelect(value) {
  const row = document.createElement("div");
  row.className = "opponent";
  const sel = document.createElement("select");
  sel.setAttribute("aria-label", _("bot"));
  fillBots(sel);
  sel.value = value || (bots[0] && bots[0].key);
  const name = document.createElement("input");
  name.type = "text";
  name.className = "person-name";
  name.maxLength = 24;
  name.autocomplete = "off";
  name.setAttribute("aria-label", _("name"));
  const rm = document.createElement("button");
  rm.type = "button";
  rm.textContent = _("remove");
  rm.className = "remove-bot";
  rm.onclick = () => { row.remove(); refreshSetup(); formChanged(); };
  sel.addEventListener("change", refreshSetup);
  row.append(sel, name, rm);
  return row;
}

// The choices of a seat: the bots as /api/bots describes them (in the page's language),
// then a person.
function fillBots(sel) {
  const value = sel.value;
  sel.innerHTML = "";
  for (const b of bots) {
    const o = document.createElement("option");
    o.value = b.key;
    o.textContent = `${b.key} - ${b.about}`;
    sel.appendChild(o);
  }
  const person = document.createElement("option");
  person.value = PERSON;
  person.textContent = _("a person (pass and play)");
  sel.appendChild(person);
  if (value) sel.value = value;
}

// Who sits where, as the form says: a bot key or PERSON per seat, with the people's
// names ("" for none), "you" at the seat chosen.
function formTable() {
  const rows = [...$("opponents").children].map((row) => ({
    choice: row.querySelector("select").value,
    name: row.querySelector(".person-name").value.trim(),
  }));
  rows.splice(Number($("seat").value || 0), 0, { choice: PERSON, name: $("my-name").value.trim() });
  return rows;
}

// The setup's texts from the server again (after a change of language).
async function redrawSetup() {
  bots = (await api("GET", "/api/bots")).bots;
  for (const row of $("opponents").children) {
    fillBots(row.querySelector("select"));
    row.querySelector("select").setAttribute("aria-label", _("bot"));
    row.querySelector(".person-name").setAttribute("aria-label", _("name"));
    row.querySelector(".remove-bot").textContent = _("remove");
  }
  refreshSetup();
  drawProblems();
}

function refreshSetup() {
  const rows = $("opponents").children;
  $("add-bot").disabled = rows.length >= 7;
  $("add-person").disabled = rows.length >= 7;
  for (const b of $("opponents").querySelectorAll(".remove-bot")) b.disabled = rows.length <= 1;
  const seat = $("seat");
  const keep = Number(seat.value || 0);
  seat.innerHTML = "";
  for (let i = 0; i <= rows.length; i++) {
    const o = document.createElement("option");
    o.value = i;
    o.textContent = i === 0 ? _("seat {seat} (you start)", { seat: 1 })
      : _("seat {seat}", { seat: i + 1 });
    seat.appendChild(o);
  }
  seat.value = Math.min(keep, rows.length);
  // Pass and play: each person's name box, "player N" in it until a name is typed
  // (N: their order at the table, as the server names them).
  const table = formTable();
  const people = table.filter((t) => t.choice === PERSON).length;
  $("pass-note").hidden = $("my-name-choice").hidden = people < 2;
  const mine = Number(seat.value);
  let k = 0;
  table.forEach((t, i) => {
    const box = i === mine ? $("my-name")
      : rows[i < mine ? i : i - 1].querySelector(".person-name");
    box.hidden = t.choice !== PERSON;
    if (t.choice === PERSON) box.placeholder = _("player {seat}", { seat: ++k });
  });
  $("my-name").hidden = false;  // shown with its label (my-name-choice)
}

// The new-game form changed: an error about the last start is stale.
function formChanged() { showError(""); }

async function openSetup() {
  stopReplay();
  show("setup");
  setHash("");
  if (!bots.length) bots = (await api("GET", "/api/bots")).bots;
  if (!ruleChoices) {
    ruleChoices = await api("GET", "/api/rules");
    $("rule-target").max = ruleChoices.max_target;
    showRules(savedRules());
  }
  // Starting abandons the game in progress (see startGame); until then it is kept.
  $("abandon-note").hidden = !(view && view.status !== "over");
  if (!$("opponents").children.length) {
    const preferred = bots.find((b) => b.key === "planner-2p") || bots[0];
    $("opponents").appendChild(botSelect(preferred && preferred.key));
  }
  refreshSetup();
  problems = (await api("GET", "/api/problems")).problems;
  drawProblems();
}

function drawProblems() {
  const box = $("problems");
  box.hidden = !problems.length;
  box.textContent = problems.length
    ? ngettext("{n} saved game could not be read and was skipped: {list}",
      "{n} saved games could not be read and were skipped: {list}", problems.length,
      { list: problems.map((p) => `${p.file}: ${p.error}`).join("; ") })
    : "";
}

async function startGame(event) {
  event.preventDefault();
  const table = formTable();
  const bots = table.filter((t) => t.choice !== PERSON).map((t) => t.choice);
  const people = table.filter((t) => t.choice === PERSON);
  const body = people.length > 1  // pass and play: the people's seats and names
    ? { bots, humans: table.flatMap((t, i) => (t.choice === PERSON ? [i] : [])),
      people: people.map((t) => t.name || null) }
    : { bots, seat: Number($("seat").value) };
  const rules = chosenRules();
  const left = view && view.status !== "over" ? view.id : null;  // the game given up
  let v;
  try {
    v = await api("POST", "/api/games", { ...body, ...rules });
  } catch (e) {
    showError(e.message);  // the game in progress is kept
    return;
  }
  showError("");
  localStorage.setItem(SAVED_RULES, JSON.stringify(rules));
  const entered = enterGame(v);  // the new game is the view from here on
  if (left) api("DELETE", `/api/games/${left}`).catch(() => {});  // gone already: fine
  await entered;
}

// ------------------------------------------------------------------ the game
async function enterGame(v) {
  localStorage.setItem("fivethousand.game", v.id);
  setHash(`#game=${v.id}`);
  show("game");
  $("log").innerHTML = "";
  selected = new Set();
  render(v);
  await runBots();
}

async function loadGame(id) {
  try {
    const v = await api("GET", `/api/games/${encodeURIComponent(id)}`);
    await enterGame(v);
    return true;
  } catch (e) {
    if (e.status !== 404) showError(e.message);
    localStorage.removeItem("fivethousand.game");
    return false;
  }
}

// Rolls and bot decisions, one request per step, played out with a pause; it stops
// when another game is entered meanwhile (and then runs that one's).
async function runBots() {
  if (!view || busy) return;
  busy = true;
  const id = view.id;
  try {
    while (view.id === id && view.status === "wait") {
      // The human's own rolls need no pause; the bots' steps are watched, and the end of
      // the human's turn is read first.
      const botStep = !view.humans.includes(view.current) || view.phase !== "roll";
      if (OWN_PAUSE && ownTurnEnded(view)) await waitForPlayer(OWN_PAUSE);
      else if (botStep && DELAY) await sleep(DELAY);
      if (view.id !== id) break;
      const v = await api("POST", `/api/games/${id}/step`, { steps: 1, at: view.at });
      if (view.id === id) render(v);
    }
  } catch (e) {
    if (view.id === id) showError(e.message);
  } finally {
    busy = false;
    updateButtons();
  }
  if (view.id !== id) await runBots();
}

function render(v) {
  view = v;
  if (v.status !== "you") selected = new Set();
  const names = v.names;
  // Headline.
  let head;
  const turns = v.turn - 1;
  const alone = !passAndPlay(v);  // one person: "you"; in pass and play each by name
  if (v.status === "over" && v.end) {  // no winner: the over box says why
    head = ngettext("Game over after {n} turn: no winner.", "Game over after {n} turns: no winner.",
      turns);
  } else if (v.status === "over" && v.winner === v.human && alone) {
    head = ngettext("Game over after {n} turn: you win.", "Game over after {n} turns: you win.",
      turns);
  } else if (v.status === "over") {
    head = ngettext("Game over after {n} turn: {name} won.",
      "Game over after {n} turns: {name} won.", turns, { name: names[v.winner] });
  } else if (v.status === "you" && alone) {
    head = _("Turn {turn}: your move. Click dice to hold them, then roll or bank.",
      { turn: v.turn });
  } else if (v.status === "you") {
    head = _("Turn {turn}: {name}, your move. Click dice to hold them, then roll or bank.",
      { turn: v.turn, name: names[v.to_play] });
  } else if (v.current === v.human && alone) {
    head = _("Turn {turn}: you roll...", { turn: v.turn });
  } else {
    head = _("Turn {turn}: {name} is playing...", { turn: v.turn, name: names[v.current] });
  }
  $("headline").textContent = head;
  drawRulesLine($("rules-line"), v.rules_line);
  board($("scoreboard"), v.scores, names, v.status === "over" ? null : v.current, v.winner,
        v.humans, v.turn_total, v.rules.target);
  // This turn.
  const info = $("turn-info");
  info.innerHTML = "";
  if (v.status !== "over") {
    info.append(ngettext("turn total {total} · {n} die in play · held this turn:",
      "turn total {total} · {n} dice in play · held this turn:", v.dice_left,
      { total: v.turn_total }) + " ");
    if (v.held.length) v.held.forEach((h) => info.append(miniDice(h)));
    else info.append(_("nothing yet"));
  }
  const fresh = `${v.id}:${v.at}` !== shownAt;
  shownAt = `${v.id}:${v.at}`;
  drawDice(v, fresh && Boolean(v.last) && isRoll(v.last.kind) && rollMotion());
  // The log, its numbers given room for all their digits.
  const log = $("log");
  log.innerHTML = "";
  log.start = v.log_start;
  const digits = String(v.log_start + Math.max(0, v.log.length - 1)).length;
  log.style.setProperty("--digits", String(Math.max(2, digits)));  // CSSOM: allowed by the CSP
  for (const line of v.log) {
    const li = document.createElement("li");
    li.textContent = line.text;
    li.className = [line.kind, v.humans.includes(line.seat) ? "you" : ""].join(" ").trim();
    log.appendChild(li);
  }
  log.scrollTop = log.scrollHeight;
  // Game over.
  $("over").hidden = v.status !== "over";
  if (v.status === "over") {
    $("over-text").textContent = v.end ? v.end : v.winner === v.human && alone ? _("You won!")
      : _("{name} won.", { name: names[v.winner] });
  }
  $("hint").hidden = true;
  updateButtons();
  askToPass(v);
}

// The scoreboard; `humans`: the people's seats, marked.
function board(table, scores, names, current, winner, humans, turnTotal, target) {
  table.innerHTML = "";
  scores.forEach((score, i) => {
    const tr = document.createElement("tr");
    if (i === current) tr.className = "current";
    if (i === winner) tr.className = "winner";
    const cells = [
      ["marker", i === current ? "▶" : i === winner ? "★" : ""],
      ["name", names[i]],
      ["score", number(score)],
      ["note", score ? _("entered") : _("not entered")],
    ];
    for (const [cls, text] of cells) {
      const td = document.createElement("td");
      td.className = cls;
      td.textContent = text;
      tr.appendChild(td);
    }
    if (i === current && turnTotal) {
      tr.cells[3].textContent = _("+{points} this turn", { points: turnTotal });
    }
    const bar = document.createElement("td");
    bar.className = "meter-cell";
    const meter = document.createElement("div");
    const fill = document.createElement("div");
    meter.className = "meter";
    fill.style.width = `${Math.min(100, (100 * score) / target)}%`;  // CSSOM: allowed by the CSP
    meter.appendChild(fill);
    bar.appendChild(meter);
    tr.appendChild(bar);
    tr.dataset.seat = i;
    if (humans.includes(i)) tr.classList.add("human");
    table.appendChild(tr);
  });
}

// Positions that appear in some legal action (the others cannot be held).
function holdable(v) {
  let bits = 0;
  v.mask.forEach((ok, a) => { if (ok) bits |= a & ~BANK; });
  return bits;
}

function bitsOf(set) {
  let bits = 0;
  set.forEach((i) => { bits |= 1 << i; });
  return bits;
}

// The dice of `v`: the player's to hold, or the last step's; `tumble`: a new roll,
// animated.
function drawDice(v, tumble = false) {
  const box = $("dice");
  box.innerHTML = "";
  const rolling = tumble ? ["rolling"] : [];
  if (v.status === "you") {
    const holds = new Set();
    v.mask.forEach((ok, a) => { if (ok) holds.add(a & ~BANK); });
    if (holds.size === 1 && !selected.size) {
      // One way to hold (the rule 'all', or a single scoring die): chosen for you.
      const only = [...holds][0];
      v.roll.forEach((face, i) => { if (only >> i & 1) selected.add(i); });
    }
    const can = holdable(v);
    v.roll.forEach((face, i) => {
      const ok = (can >> i & 1) === 1;
      const el = die(face, {
        clickable: true,
        classes: selected.has(i) ? ["selected", ...rolling] : rolling,
        label: ok ? _("die {position} showing {face}", { position: i + 1, face })
          : _("die {position} showing {face} (does not score)", { position: i + 1, face }),
      });
      el.disabled = !ok;
      el.dataset.pos = i;
      el.onclick = () => toggle(i);
      box.appendChild(el);
    });
    return;
  }
  const last = v.last;
  if (last && last.dice.length) {
    last.dice.forEach((face, i) => {
      const classes = [...rolling];
      if (last.marked.includes(i)) classes.push("marked");
      if (last.kind === "bust") classes.push("bust");
      box.appendChild(die(face, { classes }));
    });
  }
  $("move-note").textContent = last ? last.text : "";
}

function toggle(i) {
  if (!view || view.status !== "you" || busy) return;
  if (!(holdable(view) >> i & 1)) {
    $("move-note").textContent = _("A {face} does not score here: it cannot be held.",
      { face: view.roll[i] });
    return;
  }
  if (selected.has(i)) selected.delete(i); else selected.add(i);
  drawDice(view);
  updateButtons();
}

// Why the Hint button is disabled for this game (no hint for its table or rules),
// written under the buttons on every screen: the server's reason once asked (it answers
// at the player's decision only), the page's own words until then.
function drawHintWhy(v) {
  const el = $("hint-why");
  const none = Boolean(v) && v.status !== "over" && !v.hint;
  el.hidden = !none;
  if (!none) return;
  const key = `${v.id}:${LANG}`;
  el.textContent = hintWhy.key === key && hintWhy.text ? hintWhy.text
    : _("no hint for this table under these rules");
  if (hintWhy.key === key || v.status !== "you") return;
  hintWhy = { key, text: "" };
  api("GET", `/api/games/${v.id}/hint`).then((h) => {
    if (h.available || hintWhy.key !== key) return;
    hintWhy.text = h.note;
    if (view && `${view.id}:${LANG}` === key) drawHintWhy(view);
  }).catch(() => {});  // the page's own words stay
}

function moveFor(action) {
  return view.moves.find((m) => m.action === action);
}

function updateButtons() {
  const v = view;
  const mine = v && v.status === "you" && !busy;
  const bits = bitsOf(selected);
  const roll = mine && v.mask[bits] === 1 && bits !== 0;
  const bank = mine && v.mask[bits | BANK] === 1 && bits !== 0;
  $("roll-btn").disabled = !roll;
  $("bank-btn").disabled = !bank;
  $("hint-btn").disabled = !mine || !v.hint;
  let hintTitle = "";
  if (v && v.hint === "estimate") hintTitle = _("a trained planner's estimate (h)");
  else if (v && v.hint === "exact") hintTitle = _("exact advice (h)");
  else if (v) hintTitle = _("no hint for this table under these rules");
  $("hint-btn").title = hintTitle;
  drawHintWhy(v);
  $("roll-btn").querySelector("small").textContent = roll
    ? _("{total}, {what}", { total: moveFor(bits).turn_total, what: moveFor(bits).text }) : "";
  $("bank-btn").querySelector("small").textContent = bank ? moveFor(bits | BANK).text : "";
  if (!mine) return;
  const note = $("move-note");
  if (!selected.size) note.textContent = _("Click the dice to hold (keys 1-5), then Roll or Bank.");
  else if (!roll && !bank) {
    note.textContent = v.rules.hold === "all"
      ? _("Under the hold rule 'all' every scoring die is held.")
      : _("That hold is not allowed: every die held must score.");
  } else {
    const m = moveFor(roll ? bits : bits | BANK);
    note.textContent = roll && !bank
      ? _("Holding these makes {total}; {why}.", { total: m.turn_total, why: moveFor(bits).why_no_bank })
      : _("Holding these makes {total}.", { total: m.turn_total });
  }
}

async function play(bankIt) {
  if (!view || view.status !== "you" || busy) return;
  const action = bitsOf(selected) | (bankIt ? BANK : 0);
  if (!selected.size || view.mask[action] !== 1) return;  // the buttons say so already
  busy = true;
  try {
    const v = await api("POST", `/api/games/${view.id}/move`, { action, at: view.at });
    selected = new Set();
    render(v);
  } catch (e) {
    showError(e.message);
  } finally {
    busy = false;
  }
  await runBots();
}

async function hint() {
  if (!view || view.status !== "you" || busy || !view.hint) return;
  $("hint").hidden = false;
  $("hint-text").textContent = _("Thinking...");
  $("hint-bar").style.width = "0";
  $("hint-note").textContent = "";
  try {
    const h = await api("GET", `/api/games/${view.id}/hint`);
    if (!h.available) {
      $("hint-text").textContent = _("No hint here.");
      $("hint-bar").style.width = "0";
      $("hint-note").textContent = h.note;
      hintWhy = { key: `${view.id}:${LANG}`, text: h.note };
      view.hint = null;  // as the next view will say: the button says so from now on
      updateButtons();
      return;
    }
    const mine = h.chances[view.to_play];  // the seat whose decision it is
    const values = { action: h.text, chance: percent(mine) };
    $("hint-text").textContent = h.exact ? _("Hint: {action}. Your win probability: {chance}", values)
      : _("Hint: {action}. Your win probability: {chance} (estimate)", values);
    $("hint-bar").style.width = `${(100 * mine).toFixed(1)}%`;
    const list = view.names.map((n, i) => `${n} ${percent(h.chances[i])}`).join(", ");
    $("hint-note").textContent = h.exact ? _("{note}.", { note: h.note })
      : _("{note}. Chances then: {list}.", { note: h.note, list });
    selected = new Set(h.marked);
    drawDice(view);
    updateButtons();
    $("hint").hidden = false;
  } catch (e) {
    showError(e.message);
  }
}

async function rematch() {
  if (!view || busy) return;
  try {
    const v = await api("POST", `/api/games/${view.id}/rematch`);
    await enterGame(v);
  } catch (e) {
    showError(e.message);
  }
}

// ------------------------------------------------------------------ replay
async function openReplay(id, at = 0) {
  try {
    const r = await api("GET", `/api/games/${encodeURIComponent(id)}/replay`);
    replayFrames = r;
    replayAt = Math.min(at, r.frames.length - 1);
    show("replay");
    setHash(`#replay=${id}`);
    $("rp-range").max = r.frames.length - 1;
    drawReplay(false);
  } catch (e) {
    showError(e.message);
  }
}

function stopReplay() { replayFrames = null; }

// The replay's frame replayAt; `tumble`: its roll animated (a step forward onto a roll).
function drawReplay(tumble) {
  const r = replayFrames;
  const f = r.frames[replayAt];
  $("replay-step").textContent = _("Step {step} of {steps} · turn {turn}",
    { step: replayAt, steps: r.frames.length - 1, turn: f.turn });
  drawRulesLine($("replay-rules"), r.rules_line);
  const current = f.winner === null ? f.current : null;
  board($("replay-board"), f.scores, r.names, current, f.winner, r.humans, f.turn_total,
        r.rules.target);
  const box = $("replay-dice");
  box.innerHTML = "";
  f.dice.forEach((face, i) => {
    const classes = tumble ? ["rolling"] : [];
    if (f.marked.includes(i)) classes.push("marked");
    if (f.kind === "bust") classes.push("bust");
    box.appendChild(die(face, { classes }));
  });
  $("replay-text").textContent = f.text;
  $("rp-range").value = replayAt;
}

function replayGo(at) {
  if (!replayFrames) return;
  const before = replayAt;
  replayAt = Math.max(0, Math.min(replayFrames.frames.length - 1, at));
  drawReplay(replayAt === before + 1 && isRoll(replayFrames.frames[replayAt].kind) &&
    rollMotion());
}

// ------------------------------------------------------------------ wiring
// The rules panel: the rules of the game on screen (the standard ones before a game), in
// the page's language, from the server's one text of them (fivethousand_rl.envs.rules_text).
async function openRulesPanel() {
  const inReplay = !$("replay").hidden && replayFrames;
  const shown = inReplay ? replayFrames.rules : view && !$("game").hidden ? view.rules : null;
  let data;
  try {
    data = await api("POST", "/api/rules/text", shown || {});
  } catch (err) {
    showError(err.message);
    return;
  }
  const body = $("rules-body");
  body.replaceChildren();
  for (const section of data.sections) {
    const title = document.createElement("h3");
    title.textContent = section.title;
    const list = document.createElement("ul");
    for (const line of section.lines) {
      const item = document.createElement("li");
      item.textContent = line;
      list.appendChild(item);
    }
    body.append(title, list);
  }
  if (!$("rules-panel").open) $("rules-panel").showModal();
}

function onKey(e) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  // A dialog has its own keys (Escape closes it; Enter its button).
  if ($("rules-panel").open || $("pass-panel").open) return;
  const tag = (e.target && e.target.tagName) || "";
  if (["INPUT", "SELECT", "TEXTAREA"].includes(tag)) return;
  if (e.key === "?") {
    openRulesPanel();
    e.preventDefault();
    return;
  }
  if (!$("replay").hidden) {
    if (e.key === "ArrowLeft") replayGo(replayAt - 1);
    else if (e.key === "ArrowRight") replayGo(replayAt + 1);
    else if (e.key === "Escape") $("rp-back").click();
    else if (e.key === "n") openSetup();
    return;
  }
  if (e.key >= "1" && e.key <= "5") {
    if (view && view.status === "you" && Number(e.key) <= view.roll.length) toggle(Number(e.key) - 1);
  } else if (e.key === "r") play(false);
  else if (e.key === "b") play(true);
  else if (e.key === "h") hint();
  else if (e.key === "n") openSetup();
  else return;
  e.preventDefault();
}

async function boot() {
  $("setup-form").addEventListener("submit", startGame);
  $("add-bot").onclick = () => {
    if ($("opponents").children.length < 7) $("opponents").appendChild(botSelect());
    refreshSetup();
    formChanged();
  };
  $("add-person").onclick = () => {
    if ($("opponents").children.length < 7) $("opponents").appendChild(botSelect(PERSON));
    refreshSetup();
    formChanged();
    const rows = $("opponents").children;
    rows[rows.length - 1].querySelector(".person-name").focus();
  };
  $("seat").addEventListener("change", refreshSetup);
  $("setup-form").addEventListener("input", formChanged);
  $("setup-form").addEventListener("change", formChanged);
  $("house-rules").addEventListener("input", markHouseRules);
  $("house-rules").addEventListener("change", markHouseRules);
  $("rules-reset").onclick = () => { showRules({}); formChanged(); };
  $("new-btn").onclick = openSetup;
  $("again-btn").onclick = openSetup;
  $("keys-btn").onclick = () => { $("keys").hidden = !$("keys").hidden; };
  $("rules-btn").onclick = openRulesPanel;
  $("roll-btn").onclick = () => play(false);
  $("bank-btn").onclick = () => play(true);
  $("hint-btn").onclick = hint;
  $("rematch-btn").onclick = rematch;
  $("replay-btn").onclick = () => view && openReplay(view.id);
  $("rp-first").onclick = () => replayGo(0);
  $("rp-prev").onclick = () => replayGo(replayAt - 1);
  $("rp-next").onclick = () => replayGo(replayAt + 1);
  $("rp-last").onclick = () => replayGo(Infinity);
  $("rp-range").oninput = (e) => replayGo(Number(e.target.value));
  $("rp-back").onclick = () => { const id = replayFrames && replayFrames.id; stopReplay(); if (id) loadGame(id); else openSetup(); };
  document.addEventListener("keydown", onKey);
  $("lang-select").onchange = (e) => switchLanguage(e.target.value);
  try {  // the languages, then the player's catalogue: before anything is drawn
    const res = await fetch("/api/languages");
    if (res.ok) languages = (await res.json()).languages;
  } catch (e) { /* English only */ }
  await useLanguage(chooseLanguage());
  try {
    bots = (await api("GET", "/api/bots")).bots;
    const hash = new URLSearchParams(location.hash.slice(1));
    if (hash.get("replay")) return openReplay(hash.get("replay"));
    const id = hash.get("game") || localStorage.getItem("fivethousand.game");
    if (id && await loadGame(id)) return;
    await openSetup();
  } catch (e) {
    showError(e.message);
  }
}

boot();
