// 5000 in the browser. The server plays the game (the engine decides every rule); this
// page draws what it sends, and sends only bot keys and action numbers (bits 0-4 hold
// those positions of the sorted roll, bit 5 banks), each with the position it answers
// (view.at), so that a repeated request is refused rather than played later. No inline
// script or style: the server's Content-Security-Policy forbids them.
"use strict";

const BANK = 32;
const params = new URLSearchParams(location.search);
// Pause between the bots' steps (ms); ?delay=0 for tests.
const DELAY = Math.max(0, Number(params.get("delay") ?? 650) || 0);
const $ = (id) => document.getElementById(id);

let bots = [];        // /api/bots
let ruleChoices = null;  // /api/rules: the seeds' rules, the switches' choices, the largest target
let view = null;      // the current game, as the server last sent it
let selected = new Set();
let busy = false;     // a request or the bots' turn is under way
let replayFrames = null;
let replayAt = 0;

// ------------------------------------------------------------------ server
async function api(method, path, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (!res.ok) {
    const err = new Error((data && data.error) || `${res.status} ${res.statusText}`);
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
  el.setAttribute("aria-label", label || `die showing ${face}`);
  if (clickable) el.type = "button";
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
  el.append("Rules: ");
  items.forEach((item, i) => {
    if (i) el.append(" · ");
    const span = document.createElement("span");
    span.className = item.house ? "rule house" : "rule";
    span.textContent = item.text;
    span.title = item.about + (item.house ? " (a house rule)" : "");
    el.appendChild(span);
  });
}

// ------------------------------------------------------------------ new game
function botSelect(value) {
  const row = document.createElement("div");
  row.className = "opponent";
  const sel = document.createElement("select");
  sel.setAttribute("aria-label", "bot");
  for (const b of bots) {
    const o = document.createElement("option");
    o.value = b.key;
    o.textContent = `${b.key} - ${b.about}`;
    sel.appendChild(o);
  }
  sel.value = value || (bots[0] && bots[0].key);
  const rm = document.createElement("button");
  rm.type = "button";
  rm.textContent = "remove";
  rm.className = "remove-bot";
  rm.onclick = () => { row.remove(); refreshSetup(); };
  row.append(sel, rm);
  return row;
}

function refreshSetup() {
  const rows = $("opponents").children;
  $("add-bot").disabled = rows.length >= 7;
  for (const b of $("opponents").querySelectorAll(".remove-bot")) b.disabled = rows.length <= 1;
  const seat = $("seat");
  const keep = Number(seat.value || 0);
  seat.innerHTML = "";
  for (let i = 0; i <= rows.length; i++) {
    const o = document.createElement("option");
    o.value = i;
    o.textContent = i === 0 ? "seat 1 (you start)" : `seat ${i + 1}`;
    seat.appendChild(o);
  }
  seat.value = Math.min(keep, rows.length);
}

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
  const { problems } = await api("GET", "/api/problems");
  const box = $("problems");
  box.hidden = !problems.length;
  box.textContent = problems.length
    ? `${problems.length} saved game(s) could not be read and were skipped: ` +
      problems.map((p) => `${p.file}: ${p.error}`).join("; ")
    : "";
}

async function startGame(event) {
  event.preventDefault();
  const keys = [...$("opponents").querySelectorAll("select")].map((s) => s.value);
  const rules = chosenRules();
  const left = view && view.status !== "over" ? view.id : null;  // the game given up
  let v;
  try {
    v = await api("POST", "/api/games", { bots: keys, seat: Number($("seat").value), ...rules });
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
      // The human's own rolls need no pause; the bots' steps are watched.
      const botStep = view.current !== view.human || view.phase !== "roll";
      if (botStep && DELAY) await sleep(DELAY);
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
  if (v.status === "over") head = `Game over after ${v.turn - 1} turns: ${names[v.winner]} ${v.winner === v.human ? "win" : "won"}.`;
  else if (v.status === "you") head = `Turn ${v.turn}: your move. Click dice to hold them, then roll or bank.`;
  else head = `Turn ${v.turn}: ${names[v.current]} ${v.current === v.human ? "roll" : "is playing"}...`;
  $("headline").textContent = head;
  drawRulesLine($("rules-line"), v.rules_line);
  board($("scoreboard"), v.scores, names, v.status === "over" ? null : v.current, v.winner, v.human,
        v.turn_total, v.rules.target);
  // This turn.
  const info = $("turn-info");
  info.innerHTML = "";
  if (v.status !== "over") {
    info.append(`turn total ${v.turn_total} · ${v.dice_left} ${v.dice_left === 1 ? "die" : "dice"} in play · held this turn: `);
    if (v.held.length) v.held.forEach((h) => info.append(miniDice(h)));
    else info.append("nothing yet");
  }
  drawDice(v);
  // The log.
  const log = $("log");
  log.innerHTML = "";
  log.start = v.log_start;
  for (const line of v.log) {
    const li = document.createElement("li");
    li.textContent = line.text;
    li.className = [line.kind, line.seat === v.human ? "you" : ""].join(" ").trim();
    log.appendChild(li);
  }
  log.scrollTop = log.scrollHeight;
  // Game over.
  $("over").hidden = v.status !== "over";
  if (v.status === "over") {
    $("over-text").textContent = v.winner === v.human ? "You won!" : `${names[v.winner]} won.`;
  }
  $("hint").hidden = true;
  updateButtons();
}

function board(table, scores, names, current, winner, human, turnTotal, target) {
  table.innerHTML = "";
  scores.forEach((score, i) => {
    const tr = document.createElement("tr");
    if (i === current) tr.className = "current";
    if (i === winner) tr.className = "winner";
    const cells = [
      ["marker", i === current ? "▶" : i === winner ? "★" : ""],
      ["name", names[i]],
      ["score", String(score)],
      ["note", score ? "entered" : "not entered"],
    ];
    for (const [cls, text] of cells) {
      const td = document.createElement("td");
      td.className = cls;
      td.textContent = text;
      tr.appendChild(td);
    }
    if (i === current && turnTotal) tr.cells[3].textContent = `+${turnTotal} this turn`;
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
    if (i === human) tr.classList.add("human");
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

function drawDice(v) {
  const box = $("dice");
  box.innerHTML = "";
  if (v.status === "you") {
    const holds = new Set();
    v.mask.forEach((ok, a) => { if (ok) holds.add(a & ~BANK); });
    if (holds.size === 1 && !selected.size) {
      // One way to hold (the rule 'all', or a single scoring die): chosen for you.
      const only = [...holds][0];
      v.roll.forEach((_, i) => { if (only >> i & 1) selected.add(i); });
    }
    const can = holdable(v);
    v.roll.forEach((face, i) => {
      const ok = (can >> i & 1) === 1;
      const el = die(face, {
        clickable: true,
        classes: selected.has(i) ? ["selected"] : [],
        label: `die ${i + 1} showing ${face}${ok ? "" : " (does not score)"}`,
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
      const classes = [];
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
    $("move-note").textContent = `A ${view.roll[i]} does not score here: it cannot be held.`;
    return;
  }
  if (selected.has(i)) selected.delete(i); else selected.add(i);
  drawDice(view);
  updateButtons();
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
  $("hint-btn").title = !v ? "" : v.hint === "estimate" ? "a trained planner's estimate (h)"
    : v.hint === "exact" ? "exact advice (h)" : "no hint for this table under these rules";
  $("roll-btn").querySelector("small").textContent = roll ? `${moveFor(bits).turn_total}, ${moveFor(bits).text}` : "";
  $("bank-btn").querySelector("small").textContent = bank ? moveFor(bits | BANK).text : "";
  if (!mine) return;
  const note = $("move-note");
  if (!selected.size) note.textContent = "Click the dice to hold (keys 1-5), then Roll or Bank.";
  else if (!roll && !bank) {
    note.textContent = v.rules.hold === "all"
      ? "Under the hold rule 'all' every scoring die is held."
      : "That hold is not allowed: every die held must score.";
  } else {
    const m = moveFor(roll ? bits : bits | BANK);
    const why = roll && !bank ? `; ${moveFor(bits).why_no_bank}` : "";
    note.textContent = `Holding these makes ${m.turn_total}${why}.`;
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
  $("hint-text").textContent = "Thinking...";
  $("hint-bar").style.width = "0";
  $("hint-note").textContent = "";
  try {
    const h = await api("GET", `/api/games/${view.id}/hint`);
    if (!h.available) {
      $("hint-text").textContent = "No hint here.";
      $("hint-bar").style.width = "0";
      $("hint-note").textContent = h.note;
      view.hint = null;  // as the next view will say: the button says so from now on
      updateButtons();
      return;
    }
    const mine = h.chances[view.human];
    $("hint-text").textContent = `Hint: ${h.text}. Your win probability: ${(100 * mine).toFixed(1)}%` +
      (h.exact ? "" : " (estimate)");
    $("hint-bar").style.width = `${(100 * mine).toFixed(1)}%`;
    const others = h.exact ? "" : " Chances then: " + view.names.map((n, i) => `${n} ${(100 * h.chances[i]).toFixed(1)}%`).join(", ") + ".";
    $("hint-note").textContent = h.note + "." + others;
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
async function openReplay(id) {
  try {
    const r = await api("GET", `/api/games/${encodeURIComponent(id)}/replay`);
    replayFrames = r;
    replayAt = 0;
    show("replay");
    setHash(`#replay=${id}`);
    $("rp-range").max = r.frames.length - 1;
    drawReplay();
  } catch (e) {
    showError(e.message);
  }
}

function stopReplay() { replayFrames = null; }

function drawReplay() {
  const r = replayFrames;
  const f = r.frames[replayAt];
  $("replay-step").textContent = `Step ${replayAt} of ${r.frames.length - 1} · turn ${f.turn}`;
  drawRulesLine($("replay-rules"), r.rules_line);
  const current = f.winner === null ? f.current : null;
  board($("replay-board"), f.scores, r.names, current, f.winner, r.human, f.turn_total,
        r.rules.target);
  const box = $("replay-dice");
  box.innerHTML = "";
  f.dice.forEach((face, i) => {
    const classes = [];
    if (f.marked.includes(i)) classes.push("marked");
    if (f.kind === "bust") classes.push("bust");
    box.appendChild(die(face, { classes }));
  });
  $("replay-text").textContent = f.text;
  $("rp-range").value = replayAt;
}

function replayGo(at) {
  if (!replayFrames) return;
  replayAt = Math.max(0, Math.min(replayFrames.frames.length - 1, at));
  drawReplay();
}

// ------------------------------------------------------------------ wiring
function onKey(e) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const tag = (e.target && e.target.tagName) || "";
  if (["INPUT", "SELECT", "TEXTAREA"].includes(tag)) return;
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
  };
  $("house-rules").addEventListener("input", markHouseRules);
  $("house-rules").addEventListener("change", markHouseRules);
  $("rules-reset").onclick = () => showRules({});
  $("new-btn").onclick = openSetup;
  $("again-btn").onclick = openSetup;
  $("keys-btn").onclick = () => { $("keys").hidden = !$("keys").hidden; };
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
