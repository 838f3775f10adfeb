// Kahuna in the browser: the page of kahuna-serve (docs/WEB.md).  Plain JavaScript and SVG, no build step.
// Everything the page shows comes from the JSON API; it holds no game logic of its own: the server lists
// the legal moves and the page offers only those.  The one piece of the rules it knows is the public
// action encoding (docs/ENV.md), to draw an action's line and the cards it pays on the board.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const params = new URLSearchParams(window.location.search);
const STEP_DELAY = Math.max(0, Number(params.get("delay") ?? 600)); // ms between the opponent's animated actions
const AUTOPLAY_DELAY = Math.max(20, Number(params.get("autoplay") ?? 700));
const THINKING_DELAY = 150; // ms before the thinking indicator shows (an instant answer does not flash it)
const POLL_INTERVAL = 500; // ms between two looks at a reloaded game whose bot is still thinking
const LAST_GAME_KEY = "kahuna.lastGame"; // localStorage: the game this browser played last

let BOARD = null; // /api/board: geometry, colours, options
let game = null; // the play session: {id, seat, opponent, config}
let current = null; // the last state of the game on the page
let turnMarks = null; // the opponent's last turn, drawn on the board until you act
let selectedCard = null; // the hand card whose moves are shown
let analysisShown = null; // the analysis drawn on the board: {probabilities: Map(action -> p)}
let hinted = null; // the action a hint suggested
let thinkingTimer = null;
let pending = null; // what the thinking indicator stands for: {opponent, game: its id (null: not answered yet), opening}
let requestsMade = 0; // bot requests answered so far (the first one may load a network)
const ratings = new Map(); // entrant -> "Elo ..." from the results tables and the ladder
let replayData = null;
let replaySource = null; // what POST /api/analysis needs to find the replayed record
let replayIndex = 0;
let replayAnalysis = null; // the analysis drawn on the replay board: {index, byLine, cards}
let autoplayTimer = null;

// ------------------------------------------------------------------------------------------------ helpers
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  return node;
}

// The message box floats at the bottom of the window (role="alert": read out at once); showing it moves nothing.
function showMessage(text, kind = "error") {
  const box = document.getElementById("message");
  document.getElementById("message-text").textContent = text;
  box.className = kind;
  box.hidden = !text;
}

function clearMessage() {
  showMessage("");
}

// Screen readers hear this (an aria-live region): the bot's moves, whose turn it is, the result.
function announce(text) {
  const region = document.getElementById("announce");
  region.textContent = "";
  window.setTimeout(() => { region.textContent = text; }, 30);
}

// Every control of the game is off while the page waits (keyboard users too), except Stop (once the game that
// thinks is known) and, while the opponent of the game shown thinks, Abandon (not while a new game is asked for:
// it would abandon the old game).
function controlOff(node) {
  if (node.id === "stop") return !(pending && pending.game) || Boolean(pending.stopping);
  if (node.dataset.off === "1") return true;
  return isBusy() && !(node.id === "abandon" && pending && pending.game && game && pending.game === game.id);
}

function refreshControls() {
  for (const node of document.querySelectorAll("#tab-play button, #stop, #new-game input, #new-game select")) {
    node.disabled = controlOff(node);
  }
}

function setBusy(busy) {
  document.body.dataset.busy = busy ? "1" : "0";
  refreshControls();
}

function points(n) {
  return `${n} point${n === 1 ? "" : "s"}`;
}

function percent(p) {
  return `${(100 * p).toFixed(p >= 0.995 || p < 0.001 ? 0 : 1)}%`;
}

// A request to the server; a refusal throws an Error with the server's one line and the status.
async function api(method, url, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, options);
  } catch (error) {
    throw new Error(`the server cannot be reached (${error.message})`);
  }
  let data = null;
  try {
    data = await response.json();
  } catch (error) {
    data = null;
  }
  if (!response.ok) {
    const reason = data && data.error ? data.error : `HTTP ${response.status}`;
    const failure = new Error(reason);
    failure.status = response.status;
    throw failure;
  }
  return data;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function readFile(file) {
  return new Promise((resolve, reject) => {
    if (BOARD && file.size > BOARD.max_upload) {
      reject(new Error(`${file.name} is too large: ${file.size} bytes, at most ${BOARD.max_upload} bytes`));
      return;
    }
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(new Error(`cannot read ${file.name}`));
    reader.readAsText(file);
  });
}

// A yes/no question in the page's own dialog (no blocking window.confirm); resolves true on yes.
function confirmAction(question, yes) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = question;
  const yesButton = document.getElementById("confirm-yes");
  const noButton = document.getElementById("confirm-no");
  yesButton.textContent = yes;
  return new Promise((resolve) => {
    const done = (answer) => {
      yesButton.onclick = null;
      noButton.onclick = null;
      dialog.onclose = null;
      if (dialog.open) dialog.close();
      resolve(answer);
    };
    yesButton.onclick = () => done(true);
    noButton.onclick = () => done(false);
    dialog.onclose = () => done(false); // Escape
    dialog.showModal();
    noButton.focus(); // the safe answer has the focus
  });
}

// ------------------------------------------------------------------------------------------------ actions
// The public action encoding (docs/ENV.md, "Actions"): which line an action acts on and which cards pay.
const ACTIONS = { PLACE_B: 27, REMOVE_AB: 54, REMOVE_AA: 81, REMOVE_BB: 108, DISCARD: 135, DRAW: 147, TAKE: 148, PASS: 151, FREE: 152 };

function actionInfo(action) {
  const lines = BOARD.lines.length;
  const islandName = (id) => BOARD.islands[id].name;
  if (action < ACTIONS.REMOVE_AB) {
    const line = BOARD.lines[action % lines];
    return { kind: "place", line: line.id, pays: [islandName(action < ACTIONS.PLACE_B ? line.a : line.b)] };
  }
  if (action < ACTIONS.DISCARD) {
    const line = BOARD.lines[(action - ACTIONS.REMOVE_AB) % lines];
    const pair = action < ACTIONS.REMOVE_AA ? [line.a, line.b] : action < ACTIONS.REMOVE_BB ? [line.a, line.a] : [line.b, line.b];
    return { kind: "remove", line: line.id, pays: pair.map(islandName) };
  }
  if (action < ACTIONS.DRAW) return { kind: "discard", line: null, pays: [islandName(action - ACTIONS.DISCARD)] };
  if (action === ACTIONS.DRAW) return { kind: "draw", line: null, pays: [] };
  if (action < ACTIONS.PASS) return { kind: "take", line: null, pays: [], slot: action - ACTIONS.TAKE };
  if (action === ACTIONS.PASS) return { kind: "pass", line: null, pays: [] };
  return { kind: "free", line: action - ACTIONS.FREE, pays: [] };
}

// One entry of a turn summary (GET's turn_summary, or a step of a move's answer) in one shape.
function summaryEntry(step) {
  const entry = step.summary || step;
  const action = entry.action ?? step.action;
  return {
    player: step.player,
    action,
    text: entry.text ?? step.text,
    line: step.line ?? (Number.isInteger(action) ? actionInfo(action).line : null),
    removed: entry.removed_bridges || [],
    control: entry.control_changes || [],
    scoring: entry.scoring || null,
  };
}

function seatName(names, seat) {
  return seat === null || seat === undefined ? "nobody" : names[seat];
}

// What an action did beyond itself: bridges thrown off, islands changing hands, a scoring with its points.
function effectsText(entry, names) {
  const parts = [];
  for (const line of entry.removed) {
    if (line !== entry.line) parts.push(`throws off the bridge ${BOARD.lines[line].name}`);
  }
  for (const change of entry.control) {
    const island = BOARD.islands[change.island].name;
    parts.push(`${island}: control ${seatName(names, change.from)} → ${seatName(names, change.to)}`);
  }
  if (entry.scoring) parts.push(scoringText(entry.scoring, names));
  return parts;
}

function scoringText(scoring, names) {
  const kind = scoring.detail && scoring.detail.kind;
  const title = kind === "final" ? "final scoring" : kind === "no_bridges" ? "the game ends (a player has no bridge left)" : `round ${scoring.round} scoring`;
  return `${title}: ${names[0]} +${points(scoring.points[0])}, ${names[1]} +${points(scoring.points[1])}`;
}

// ------------------------------------------------------------------------------------------------ the board
// drawBoard(svgNode, state, options): options.playable Map(line -> [moves]) with options.onLine(line, event);
// options.highlight a line; options.marks the opponent's last turn {steps: [entries]}; options.probabilities
// Map(line -> p) (the analysis); options.selected Set(lines) (what the selected card can pay for);
// options.names the players' names; options.inactive a banner over an inactive board.
function drawBoard(node, state, options = {}) {
  const { width, height, island_radius: r, islands, lines, colours } = BOARD;
  const names = options.names || ["player_0", "player_1"];
  node.setAttribute("viewBox", `0 0 ${width} ${height}`);
  node.setAttribute("preserveAspectRatio", "xMidYMid meet");
  node.replaceChildren();
  const playable = options.playable || new Map();
  const marks = options.marks || { steps: [] };
  const turnLines = new Map(); // line -> the number of the opponent's action on it (1, 2, ...)
  const removed = new Set();
  const changed = new Map(); // island -> change
  marks.steps.forEach((entry, k) => {
    if (entry.line !== null && entry.line !== undefined) turnLines.set(entry.line, k + 1);
    for (const line of entry.removed) removed.add(line);
    for (const change of entry.control) changed.set(change.island, change);
  });
  const probabilities = options.probabilities || new Map();
  const selected = options.selected || new Set();
  const layerMarks = svg("g", { class: "marks" });
  const layerLines = svg("g", { class: "lines" });
  const layerHits = svg("g", { class: "hits" });
  const layerLabels = svg("g", { class: "labels" });
  for (const line of lines) {
    const a = islands[line.a];
    const b = islands[line.b];
    const ends = { x1: a.x, y1: a.y, x2: b.x, y2: b.y };
    const owner = state.lines[line.id];
    const described = owner === null ? "free" : `${names[owner]}'s bridge`;
    const group = svg("g", { class: "line", "data-line": line.id, "data-owner": owner === null ? "" : owner });
    if (turnLines.has(line.id)) layerMarks.append(svg("line", { ...ends, class: "turn-mark" }));
    if (owner === null) {
      group.append(svg("line", { ...ends, class: removed.has(line.id) ? "removed" : "free" }));
    } else {
      group.append(svg("line", { ...ends, class: "bridge-edge" }));
      group.append(svg("line", { ...ends, class: `bridge p${owner}`, stroke: colours[owner], "stroke-width": 9, "stroke-linecap": "round" }));
    }
    if (state.claim_line === line.id) group.append(svg("line", { ...ends, class: "claim" }));
    if (options.highlight === line.id) group.append(svg("line", { ...ends, class: "last" }));
    if (playable.has(line.id)) group.append(svg("line", { ...ends, class: selected.has(line.id) ? "hint selected" : "hint" }));
    const p = probabilities.get(line.id);
    if (p !== undefined && p >= 0.005) { // the lines the agent gives at least half a percent
      group.append(svg("line", { ...ends, class: "prob", "stroke-width": (2 + 16 * p).toFixed(1) }));
      const label = svg("g", { class: "prob-label", "data-line": line.id });
      const [mx, my] = [(a.x + b.x) / 2, (a.y + b.y) / 2];
      label.append(svg("rect", { x: mx - 19, y: my - 9, width: 38, height: 17, rx: 4 }));
      label.append(svg("text", { x: mx, y: my + 4, text: percent(p) }));
      layerLabels.append(label);
    }
    if (turnLines.has(line.id)) {
      const [mx, my] = [(a.x + b.x) / 2, (a.y + b.y) / 2];
      const badge = svg("g", { class: "turn-badge" });
      badge.append(svg("circle", { cx: mx, cy: my, r: 9 }));
      badge.append(svg("text", { x: mx, y: my + 4, text: String(turnLines.get(line.id)) }));
      layerLabels.append(badge);
    }
    const notes = [];
    if (turnLines.has(line.id)) notes.push(`the opponent's action ${turnLines.get(line.id)} of its last turn`);
    if (removed.has(line.id)) notes.push("its bridge was just thrown off");
    if (p !== undefined) notes.push(`analysis ${percent(p)}`);
    group.setAttribute("aria-label", `line ${line.name}: ${described}${notes.length ? `, ${notes.join(", ")}` : ""}`);
    group.setAttribute("role", "img");
    layerLines.append(group);
    if (playable.has(line.id)) {
      const moves = playable.get(line.id);
      const label = `${line.name}: ${moves.map((m) => m.text).join(" or ")}`;
      const hit = svg("g", { class: "playable", id: `line-${line.id}`, "data-line": line.id, tabindex: 0, role: "button", "aria-label": label });
      hit.append(svg("line", { ...ends, class: "hit" }));
      hit.append(svg("line", { ...ends, class: "focus-ring" }));
      hit.append(svg("title", { text: label }));
      hit.addEventListener("click", (event) => options.onLine && options.onLine(nearestPlayable(node, event, playable, line.id), event));
      hit.addEventListener("keydown", (event) => lineKey(event, node, line.id, options));
      layerHits.append(hit);
    }
  }
  node.append(layerMarks, layerLines);
  const layerIslands = svg("g", { class: "islands" });
  for (const island of islands) {
    const info = state.islands[island.id];
    const controller = info.controller;
    const change = changed.get(island.id);
    const control = controller === null ? "not controlled" : `controlled by ${names[controller]}`;
    const changeText = change ? `; control just passed from ${seatName(names, change.from)} to ${seatName(names, change.to)}` : "";
    const group = svg("g", {
      class: "island-group", "data-island": island.name, role: "img",
      "aria-label": `island ${island.name}: ${control}; bridges ${info.bridges[0]} : ${info.bridges[1]}, majority ${island.majority}${changeText}`,
    });
    if (change) group.append(svg("circle", { cx: island.x, cy: island.y, r: r + 7, class: "control-change" }));
    group.append(svg("circle", {
      cx: island.x, cy: island.y, r, class: "island",
      stroke: controller === null ? "#826938" : colours[controller],
      "stroke-width": controller === null ? 2 : 4,
    }));
    group.append(svg("text", { x: island.x, y: island.y, class: "name", text: island.name }));
    group.append(svg("text", {
      x: island.x, y: island.y + 13, class: "counts",
      text: `${info.bridges[0]}:${info.bridges[1]}/${island.majority}`,
    }));
    if (controller !== null) { // astride the island's top edge, clear of its name and counts
      group.append(svg("circle", {
        cx: island.x, cy: island.y - r - 4, r: 9, class: `stone p${controller}`, fill: colours[controller],
      }));
    }
    group.append(svg("title", { text: `${island.name}: ${control}; bridges ${info.bridges[0]}:${info.bridges[1]} (player_0:player_1), majority ${island.majority}` }));
    layerIslands.append(group);
  }
  node.append(layerIslands);
  node.append(layerLabels);
  node.append(layerHits); // clickable lines above the islands' edges
  const banner = state.over ? "game over" : `round ${state.round} of 3`;
  node.append(svg("text", { x: 16, y: 26, class: "banner", text: `Kahuna, ${banner}` }));
  if (options.inactive) {
    node.append(svg("rect", { x: 0, y: 0, width, height, class: "inactive-veil" }));
    node.append(svg("text", { x: width / 2, y: height / 2, class: "inactive-text", text: options.inactive }));
  }
}

// The playable line nearest to a click on the board: at a phone's scale the lines' 48 px tap areas overlap near the
// islands, and the area drawn on top would take a tap on the middle of its neighbour.  Each point of the tap areas
// so belongs to the line nearest to it (distance to the segment, in the board's units).  A click that has no
// pointer position (detail 0: sent by the keyboard or a script) stays with the line it was sent to.
function nearestPlayable(node, event, playable, line) {
  const matrix = node.getScreenCTM();
  if (!matrix || event.detail === 0) return line;
  const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(matrix.inverse());
  let nearest = line;
  let best = Infinity;
  for (const candidate of playable.keys()) {
    const { a, b } = BOARD.lines[candidate];
    const distance = segmentDistance(point, BOARD.islands[a], BOARD.islands[b]);
    if (distance < best) [nearest, best] = [candidate, distance];
  }
  return nearest;
}

// The distance from the point p to the segment from a to b.
function segmentDistance(p, a, b) {
  const [dx, dy] = [b.x - a.x, b.y - a.y];
  const t = Math.max(0, Math.min(1, ((p.x - a.x) * dx + (p.y - a.y) * dy) / (dx * dx + dy * dy)));
  return Math.hypot(p.x - (a.x + t * dx), p.y - (a.y + t * dy));
}

// Keyboard on a playable line: Enter or Space chooses it, the arrow keys go to the next or previous one.
function lineKey(event, node, line, options) {
  if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    if (options.onLine) options.onLine(line, event);
    return;
  }
  const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
  if (!step) return;
  event.preventDefault();
  const all = [...node.querySelectorAll("g.playable")];
  const here = all.findIndex((item) => Number(item.dataset.line) === line);
  all[(here + step + all.length) % all.length].focus();
}

function playerName(names, player) {
  return el("span", { class: `p${player}`, text: names[player] });
}

function statusLine(state, names, thinking = false) {
  const line = el("div");
  line.append(`Round ${state.round} of 3 · scores `, playerName(names, 0), ` ${state.scores[0]} : ${state.scores[1]} `, playerName(names, 1));
  if (state.over) {
    line.append(" · game over");
  } else if (state.abandoned) {
    line.append(" · abandoned");
  } else {
    const actor = thinking && game ? 1 - game.seat : state.current_player;
    line.append(" · to act: ", playerName(names, actor));
    const notes = [];
    if (state.setup_left) notes.push(`handicap setup, ${state.setup_left} free bridge(s) left`);
    if (state.final_turns_left !== null) notes.push(`final turns, ${state.final_turns_left} left`);
    if (state.played_this_turn) notes.push(`${state.played_this_turn} card(s) played this turn`);
    if (state.discarded_this_turn) notes.push(`${state.discarded_this_turn} discarded this turn`);
    if (state.must_draw) notes.push("the opponent passed: this turn must end with a draw");
    if (notes.length && !thinking) line.append(` (${notes.join(", ")})`);
  }
  return line;
}

function cardNode(label, extra = {}) {
  if (label === null) return el("span", { class: "card empty", text: "empty" });
  if (label === "?") return el("span", { class: "card back", text: "?", title: "a hidden card" });
  return el("span", { class: "card", text: label, ...extra });
}

function badge(p) {
  return typeof p === "number" ? el("span", { class: "badge", text: percent(p) }) : null;
}

function withBadge(node, p) {
  if (typeof p === "number") node.append(badge(p));
  return node;
}

// "Your hand", "greedy's hand": whose cards a row shows.
function handLabel(names, player) {
  if (names[player] === "you") return el("span", {}, "Your hand");
  return el("span", {}, playerName(names, player), "'s hand");
}

// The cards and supply panel.  play (the person's turn only): {moves: [legal moves], onCard(card), onAction(id)};
// cardP: the analysis per hand card, take slot and draw ({hand: Map, take: Map, draw: p}); ownHand: where the
// viewer's own hand goes (the bar under the board), else with the rest.  Once the game is over the opponent's
// hand is the one the result reveals.
function drawCards(container, state, names, play = null, cardP = null, ownHand = null) {
  container.replaceChildren();
  if (ownHand) ownHand.replaceChildren();
  const row = (label, ...items) => el("div", { class: "row" }, el("span", { class: "label" }, label), ...items);
  const moves = play ? play.moves : [];
  const revealed = state.result && Array.isArray(state.result.revealed_hands) ? state.result.revealed_hands : null;
  for (const player of [0, 1]) {
    const hand = state.hands[player];
    const items = [];
    const cards = hand.cards ?? (revealed ? revealed[player] : null);
    if (cards !== null && cards !== undefined) {
      const title = hand.cards ? null : "revealed at the end of the game";
      cards.forEach((card) => {
        const usable = moves.filter((m) => m.pays.includes(card));
        if (play && player === state.viewer && usable.length) {
          const pressed = selectedCard === card;
          items.push(el("button", {
            type: "button", class: `card hand usable${pressed ? " selected" : ""}`, "data-card": card,
            "aria-pressed": pressed ? "true" : "false",
            "aria-label": `your card ${card}: show what it can do (${usable.length} move${usable.length === 1 ? "" : "s"})`,
            onclick: () => play.onCard(card),
          }, card, badge(cardP && cardP.hand.get(card))));
        } else {
          items.push(withBadge(cardNode(card, { title }), cardP && player === cardP.seat ? cardP.hand.get(card) : undefined));
        }
      });
    } else {
      for (const card of hand.known) items.push(cardNode(card, { title: "taken face up: publicly known" }));
      for (let k = hand.known.length; k < hand.size; k += 1) items.push(cardNode("?"));
    }
    if (!items.length) items.push(el("span", { class: "muted", text: "no cards" }));
    const label = el("span", {}, handLabel(names, player), ` (${cards ? cards.length : hand.size})`);
    const target = ownHand && player === state.viewer ? ownHand : container;
    target.append(row(label, ...items));
  }
  const slots = state.face_up.map((card, slot) => {
    const take = moves.find((m) => m.kind === "take" && m.slot === slot);
    if (take && card !== null) {
      return el("button", { type: "button", class: "card playable", "data-action": take.id, "aria-label": `take ${card} from the face-up row`, title: `take ${card} (face-up)`, onclick: () => play.onAction(take.id) }, card, badge(cardP && cardP.take.get(slot)));
    }
    return withBadge(cardNode(card), cardP && card !== null ? cardP.take.get(slot) : undefined);
  });
  container.append(row("Face-up row", ...slots));
  const draw = moves.find((m) => m.kind === "draw");
  const pileP = cardP && !draw ? cardP.draw : undefined;
  const pile = [withBadge(el("span", { class: "card back", text: String(state.pile_size), title: "cards in the pile" }), pileP)];
  if (draw) {
    pile.push(el("button", { type: "button", class: "card playable", "data-action": draw.id, onclick: () => play.onAction(draw.id) }, "draw", badge(cardP && cardP.draw)));
  }
  container.append(row("Pile", ...pile));
  const open = state.open_discard.length ? state.open_discard.join(" ") : "none";
  const faceDown = [0, 1].map((p) => {
    const value = state.face_down[p];
    return Array.isArray(value) ? `${names[p]}: ${value.length ? value.join(" ") : "none"}` : `${names[p]}: ${value} hidden`;
  });
  container.append(row("Discard pile", `played ${open}; face down ${faceDown.join(", ")}`));
  container.append(row("Bridges in supply", playerName(names, 0), ` ${state.supply[0]} · `, playerName(names, 1), ` ${state.supply[1]}`));
}

// ------------------------------------------------------------------------------------------------ play
function playNames() {
  const names = [game.opponent, game.opponent];
  names[game.seat] = "you";
  return names;
}

function isBusy() {
  return document.body.dataset.busy === "1";
}

function gameActive() {
  return Boolean(game && current && !current.over && !current.abandoned);
}

// A control of the game on or off; setBusy keeps it off while the page waits.
function enable(id, on) {
  const node = document.getElementById(id);
  node.dataset.off = on ? "0" : "1";
  node.disabled = controlOff(node);
}

function movesByLine(moves) {
  const byLine = new Map();
  for (const move of moves) {
    if (move.line === null || move.kind === "discard") continue;
    if (!byLine.has(move.line)) byLine.set(move.line, []);
    byLine.get(move.line).push(move);
  }
  return byLine;
}

// What the analysis says per line, hand card, face-up slot and the draw (an action's card counted once);
// the cards are those of `seat`, the player to act.
function analysisByPlace(probabilities, seat) {
  const byLine = new Map();
  const cards = { seat, hand: new Map(), take: new Map(), draw: undefined };
  for (const [action, p] of probabilities) {
    const info = actionInfo(action);
    if (info.line !== null) byLine.set(info.line, (byLine.get(info.line) || 0) + p);
    for (const card of new Set(info.pays)) cards.hand.set(card, (cards.hand.get(card) || 0) + p);
    if (info.kind === "take") cards.take.set(info.slot, p);
    if (info.kind === "draw") cards.draw = p;
  }
  return { byLine, cards };
}

function renderPlay(state, options = {}) {
  current = state;
  const names = playNames();
  const thinking = Boolean(options.thinking);
  const moves = thinking || state.abandoned || state.over ? [] : state.legal;
  const byLine = movesByLine(moves);
  const selected = new Set(moves.filter((m) => selectedCard && m.pays.includes(selectedCard) && m.line !== null).map((m) => m.line));
  const finished = state.over || state.abandoned;
  drawBoard(document.getElementById("play-board"), state, {
    playable: byLine,
    onLine: (line, event) => chooseLine(byLine.get(line), line, event),
    highlight: options.highlight ?? null,
    marks: turnMarks || { steps: [] },
    probabilities: analysisShown ? analysisShown.byLine : null,
    selected,
    names,
    inactive: state.abandoned ? "Game abandoned" : null,
  });
  document.getElementById("play-status").replaceChildren(statusLine(state, names, thinking));
  const play = moves.length ? { moves, onCard: selectCard, onAction: playAction } : null;
  drawCards(document.getElementById("play-cards"), state, names, play, analysisShown ? analysisShown.cards : null, document.getElementById("my-hand"));
  document.getElementById("chooser").hidden = true;
  drawCardInfo(moves);
  const list = document.getElementById("moves");
  list.replaceChildren();
  for (const move of moves) {
    const p = analysisShown ? analysisShown.probabilities.get(move.id) : undefined;
    const label = move.kind === "discard" ? `${move.text}…` : move.text;
    list.append(el("button", {
      type: "button", class: `move ${move.kind}${hinted === move.id ? " hinted" : ""}`, "data-action": move.id,
      onclick: () => playAction(move.id),
    }, label, badge(p)));
  }
  if (!moves.length) {
    const why = state.over ? "The game is over." : state.abandoned ? "The game was abandoned." : `${names[thinking ? 1 - game.seat : state.current_player]} is playing…`;
    list.append(el("span", { class: "muted", text: why }));
  }
  document.getElementById("play-area").classList.toggle("inactive", Boolean(state.abandoned));
  const mine = moves.length > 0;
  enable("hint", mine);
  enable("analyse", mine);
  // The server says when an undo is allowed (a play or discard of your turn in progress: it shows nothing
  // hidden); a step's state, shown while the opponent's actions play, has no can_undo: off until the answer's.
  enable("undo", !thinking && !finished && state.can_undo === true);
  enable("abandon", !finished);
}

// What the selected hand card can do: the moves it pays for, and discarding it face down (asked first).
function drawCardInfo(moves) {
  const box = document.getElementById("card-info");
  box.replaceChildren();
  const card = selectedCard;
  if (!card || !moves.some((m) => m.pays.includes(card))) {
    box.hidden = true;
    return;
  }
  const plays = moves.filter((m) => m.pays.includes(card) && m.kind !== "discard");
  const discard = moves.find((m) => m.kind === "discard" && m.island === card);
  const places = plays.every((m) => m.kind === "place");
  const title = !plays.length ? `${card} cannot pay for a bridge now.` : places ? `${card} can pay for a bridge on:` : `${card} can pay for:`;
  box.append(el("div", { class: "card-info-title", text: title }));
  const row = el("div", { class: "moves" });
  for (const move of plays) { // a placement by its line alone: short buttons, side by side on a phone
    const label = move.kind === "place" ? BOARD.lines[move.line].name : move.text;
    row.append(el("button", { type: "button", class: `move ${move.kind}`, "data-action": move.id, "aria-label": move.text, title: move.text, onclick: () => playAction(move.id) }, label));
  }
  if (plays.length) box.append(row);
  if (discard) {
    box.append(el("button", {
      type: "button", id: "discard", class: "discard-button", "data-action": discard.id,
      onclick: () => playAction(discard.id),
    }, `Discard ${card} face down…`));
  }
  box.hidden = false;
}

function selectCard(card) {
  selectedCard = selectedCard === card ? null : card;
  renderPlay(current);
  const again = document.querySelector(`#my-hand button[data-card="${card}"]`);
  if (again) again.focus({ preventScroll: true });
  keepGameInView();
}

// The turn line, the board and your hand (with the selected card's moves) in the window together when they fit
// (a phone): the page scrolls only when one of them is out of view.
function keepGameInView() {
  const top = document.getElementById("play-status").getBoundingClientRect().top;
  const bottom = document.getElementById("hand-bar").getBoundingClientRect().bottom;
  if (top >= 0 && bottom <= window.innerHeight) return;
  const fits = bottom - top <= window.innerHeight;
  window.scrollBy(0, top < 0 || !fits ? Math.floor(top) : Math.ceil(bottom - window.innerHeight));
}

// After a move the focus stays on the board (the line played is redrawn): its first playable line, else the board.
function focusBoard() {
  const target = document.querySelector("#play-board g.playable") || document.getElementById("play-board");
  target.focus({ preventScroll: true });
}

// Every action goes through here: a face-down discard is asked for first (it gives up playing this turn).
async function playAction(action) {
  if (isBusy() || !gameActive()) return;
  if (actionInfo(action).kind === "discard") {
    const card = actionInfo(action).pays[0];
    const question = `Discard ${card} face down? It cannot be played afterwards, and no card can be played for the rest of this turn.`;
    if (!(await confirmAction(question, `Discard ${card}`))) return;
  }
  await sendMove(action);
}

// A line was clicked (or chosen by keyboard): its only move is played at once, else the chooser opens beside it.
function chooseLine(moves, line, event) {
  if (isBusy() || !moves) return;
  if (moves.length === 1) {
    playAction(moves[0].id);
    return;
  }
  const box = document.getElementById("chooser");
  box.replaceChildren(el("div", { class: "chooser-title", text: `${BOARD.lines[line].name}: choose` }));
  for (const move of moves) {
    box.append(el("button", { type: "button", class: "move choice", "data-action": move.id, onclick: () => { box.hidden = true; playAction(move.id); } }, move.text));
  }
  const close = () => {
    box.hidden = true;
    const back = document.getElementById(`line-${line}`);
    if (back) back.focus();
  };
  box.append(el("button", { type: "button", class: "cancel", onclick: close }, "cancel"));
  box.onkeydown = (key) => { if (key.key === "Escape") close(); };
  box.hidden = false;
  placeChooser(box, line);
  box.querySelector("button").focus({ preventScroll: true });
}

// The chooser sits beside the line's middle (the board scales with the page), inside the board, in view.
function placeChooser(box, line) {
  const wrap = document.getElementById("play-wrap");
  const board = document.getElementById("play-board");
  const scale = board.clientWidth / BOARD.width;
  const a = BOARD.islands[BOARD.lines[line].a];
  const b = BOARD.islands[BOARD.lines[line].b];
  const [mx, my] = [((a.x + b.x) / 2) * scale, ((a.y + b.y) / 2) * scale];
  const [w, h] = [box.offsetWidth, box.offsetHeight];
  const left = Math.max(0, Math.min(mx - w / 2, wrap.clientWidth - w));
  let top = my + 14;
  if (top + h > wrap.clientHeight) top = Math.max(0, my - h - 14);
  box.style.left = `${left}px`;
  box.style.top = `${top}px`;
  box.scrollIntoView({ block: "nearest", inline: "nearest" });
}

function logItem(player, names, text, effects) {
  return el("li", {}, playerName(names, player), `: ${text}`, effects.length ? el("span", { class: "effects", text: ` — ${effects.join("; ")}` }) : null);
}

const logEffects = new Map(); // log number -> the effects of that action (bridges thrown off, control, scoring)

function countLog() {
  const log = document.getElementById("play-log");
  document.getElementById("log-count").textContent = `(${log.children.length})`;
  log.scrollTop = log.scrollHeight;
}

function rebuildLog(state) {
  const names = playNames();
  const log = document.getElementById("play-log");
  log.replaceChildren();
  for (const entry of state.log) log.append(logItem(entry.player, names, entry.text, logEffects.get(entry.n) || []));
  countLog();
}

// The opponent's whole turn (and what your own last action did) above the cards, until you act.
function drawTurnSummary(entries) {
  const box = document.getElementById("turn-summary");
  box.replaceChildren();
  const names = playNames();
  const theirs = entries.filter((e) => e.player !== game.seat);
  const mineWithEffects = entries.filter((e) => e.player === game.seat && effectsText(e, names).length);
  if (!theirs.length && !mineWithEffects.length) {
    box.hidden = true;
    return;
  }
  for (const entry of mineWithEffects) {
    box.append(el("div", { class: "own-effects" }, `Your ${entry.text}: ${effectsText(entry, names).join("; ")}`));
  }
  if (theirs.length) {
    box.append(el("div", { class: "summary-title" }, playerName(names, 1 - game.seat), `'s turn (${theirs.length} action${theirs.length === 1 ? "" : "s"}, numbered on the board):`));
    const list = el("ol", {});
    for (const entry of theirs) {
      const effects = effectsText(entry, names);
      list.append(el("li", { class: entry.scoring ? "scoring" : null }, entry.text, effects.length ? el("span", { class: "effects", text: ` — ${effects.join("; ")}` }) : null));
    }
    box.append(list);
  }
  box.hidden = false;
}

function clearTurn() {
  turnMarks = null;
  analysisShown = null;
  hinted = null;
  selectedCard = null;
  document.getElementById("turn-summary").hidden = true;
  document.getElementById("analysis").replaceChildren();
}

// ---------------------------------------------------------------- thinking
// The indicator of `who` = {opponent, game, opening} thinking: the opponent named is the one asked (a new game's,
// before the server has answered), and Stop goes to the game that thinks (POST .../stop: its best move so far, the
// game kept), enabled once its id is known: a new game against a searching opponent answers it at once (202).
function startThinking(who, already = 0) {
  stopThinking();
  pending = who;
  const started = performance.now() - 1000 * already; // a reopened game: the seconds it has thought already
  const box = document.getElementById("thinking");
  const text = document.getElementById("thinking-text");
  const stop = document.getElementById("stop");
  stop.textContent = "Stop";
  stop.setAttribute("aria-label", `Stop ${who.opponent}: it plays its best move so far`);
  const first = requestsMade === 0;
  const update = () => {
    const seconds = (performance.now() - started) / 1000;
    if (seconds * 1000 < THINKING_DELAY) return;
    const opening = who.opening ? " about its first move" : "";
    const loading = first && seconds >= 2 ? " (its first move also loads the agent's model)" : "";
    text.textContent = `${who.opponent} is thinking${opening}… ${Math.floor(seconds)} s${loading}`;
    if (box.hidden) {
      box.hidden = false;
      announce(`${who.opponent} is thinking.`);
    }
  };
  thinkingTimer = window.setInterval(update, 100);
  refreshControls();
}

function stopThinking() {
  if (thinkingTimer !== null) window.clearInterval(thinkingTimer);
  thinkingTimer = null;
  pending = null;
  document.getElementById("thinking").hidden = true;
  refreshControls();
}

async function stopSearch() {
  if (!pending || !pending.game || pending.stopping) return; // no game known yet, or asked already
  pending.stopping = true;
  refreshControls();
  document.getElementById("stop").textContent = "Stopping…";
  try {
    await api("POST", `/api/games/${pending.game}/stop`);
  } catch (error) {
    if (error.status !== 409) showMessage(error.message); // 409: the move was already played
  }
}

// A request that makes the bot move, for `who` (see startThinking): the indicator shows while it is pending.
async function botRequest(method, url, body, who) {
  clearMessage();
  startThinking(who);
  try {
    return await api(method, url, body);
  } finally {
    requestsMade += 1;
    stopThinking();
  }
}

// ---------------------------------------------------------------- moves
async function animate(response) {
  const names = playNames();
  const log = document.getElementById("play-log");
  const last = document.getElementById("last-action");
  const entries = [];
  for (const step of response.steps) {
    const entry = summaryEntry(step);
    entries.push(entry);
    const effects = effectsText(entry, names);
    const suffix = effects.length ? ` — ${effects.join("; ")}` : "";
    const who = step.player === game.seat ? "You play" : `${game.opponent} plays`;
    last.textContent = `${who}: ${step.text}${suffix}`;
    if (step.player !== game.seat) announce(`${game.opponent}: ${step.text}${suffix}`);
    renderPlay(step.state, { highlight: step.line });
    logEffects.set(log.children.length + 1, effects);
    log.append(logItem(step.player, names, step.text, effects));
    countLog();
    if (step.player !== game.seat && STEP_DELAY) await sleep(STEP_DELAY);
  }
  turnMarks = { steps: entries.filter((e) => e.player !== game.seat) };
  drawTurnSummary(entries);
  finishPlay(response.state);
  showNotes(response);
}

// The record holds the deal's seed (it would tell the hidden cards): it is offered once the game is over or
// abandoned, and until then the page says so; the server keeps it whatever happens to the page or to itself.
function showDownload(state) {
  const download = document.getElementById("download");
  download.href = `/api/games/${game.id}/record`;
  download.hidden = !state.record_ready;
  document.getElementById("download-later").hidden = Boolean(state.record_ready);
}

function finishPlay(state) {
  renderPlay(state);
  rebuildLog(state);
  showDownload(state);
  drawEnd(state);
  if (state.over) announce(document.getElementById("result").textContent);
  else if (state.abandoned) announce("The game was abandoned.");
  else if (state.legal.length) announce("Your turn.");
}

// A move is shown played only once the server has answered 2xx (it is then stored); a refusal (a 503 "not saved"
// included) leaves the page as it was before the click, the reason in the alert.
async function sendMove(action) {
  if (isBusy() || !gameActive()) return;
  const move = current.legal.find((m) => m.id === action);
  const lastAction = document.getElementById("last-action");
  const before = { text: lastAction.textContent, turnMarks, selectedCard, summary: document.getElementById("turn-summary").hidden };
  lastAction.textContent = `You play: ${move ? move.text : describeAction(action)}`;
  clearTurn();
  renderPlay(current, { thinking: true }); // no hints while the opponent thinks
  setBusy(true);
  try {
    const response = await botRequest("POST", `/api/games/${game.id}/move`, { action }, { opponent: game.opponent, game: game.id });
    await animate(response);
  } catch (error) {
    showMessage(`Your move was not played: ${error.message}`);
    if (error.status === 404) gameLost(game.id, error.message);
    else if (current) {
      lastAction.textContent = before.text;
      ({ turnMarks, selectedCard } = before);
      document.getElementById("turn-summary").hidden = before.summary;
      renderPlay(current);
    }
  } finally {
    setBusy(false);
  }
  if (game && document.activeElement === document.body) focusBoard();
}

// ---------------------------------------------------------------- the end
function drawEnd(state) {
  const box = document.getElementById("end-screen");
  const finished = state.over || state.abandoned;
  box.hidden = !finished;
  if (!finished) return;
  const names = playNames();
  const result = document.getElementById("result");
  const info = state.result && typeof state.result === "object" ? state.result : {};
  let outcome = "abandoned";
  if (state.over) {
    const winner = info.winner !== undefined ? info.winner : state.winner;
    const scores = info.scores || state.scores;
    const final = state.final_points || [0, 0];
    outcome = winner === null ? "draw" : winner === game.seat ? "win" : "loss";
    const verdict = winner === null ? "The game is a draw" : winner === game.seat ? "You win" : `${game.opponent} wins`;
    result.textContent = `${verdict}: ${names[0]} ${points(scores[0])}, ${names[1]} ${points(scores[1])} (final scoring ${final[0]} : ${final[1]})`;
  } else {
    result.textContent = "Game abandoned: the board is inactive. Its record can still be downloaded.";
  }
  result.className = `result ${outcome}`;
  box.dataset.outcome = outcome;
  const breakdown = document.getElementById("breakdown");
  breakdown.replaceChildren();
  if (info.scoring_breakdown) breakdown.append(breakdownTable(info.scoring_breakdown, names));
  const revealed = document.getElementById("revealed");
  revealed.replaceChildren();
  if (Array.isArray(info.revealed_hands)) {
    for (const seat of [1 - game.seat, game.seat]) {
      const hand = info.revealed_hands[seat] || [];
      const who = seat === game.seat ? "Your hand" : `${game.opponent}'s hand, revealed`;
      revealed.append(el("div", { class: "row", "data-seat": seat }, el("span", { class: "label" }, who), ...(hand.length ? hand.map((c) => cardNode(c)) : [el("span", { class: "muted", text: "no cards" })])));
    }
  }
}

// Every scoring of the game: round, islands controlled by each player, the points each scored.
function breakdownTable(breakdown, names) {
  const rows = Array.isArray(breakdown) ? breakdown.filter((row) => row && typeof row === "object") : [];
  if (!rows.length) return el("p", { class: "muted", text: "No scoring took place." });
  const head = el("tr", {}, ...["scoring", `islands ${names[0]} : ${names[1]}`, `points ${names[0]} : ${names[1]}`].map((h) => el("th", { text: h })));
  const table = el("table", { class: "results breakdown" }, head);
  for (const row of rows) {
    const detail = row.detail || {};
    const kind = detail.kind === "final" ? "final scoring" : detail.kind === "no_bridges" ? "end: no bridge left" : `round ${row.round}`;
    const islands = Array.isArray(detail.islands) ? `${detail.islands[0]} : ${detail.islands[1]}` : "";
    table.append(el("tr", {}, el("td", { text: kind }), el("td", { text: islands }), el("td", { text: `+${row.points[0]} : +${row.points[1]}` })));
  }
  return el("div", { class: "table-scroll" }, el("h4", { text: "Scoring" }), table);
}

// ---------------------------------------------------------------- games
function rememberGame(id) {
  const url = new URL(window.location.href);
  url.searchParams.set("game", id);
  window.history.replaceState(null, "", url);
  try {
    window.localStorage.setItem(LAST_GAME_KEY, id);
  } catch (error) { /* storage off: the address still names the game */ }
}

function forgetGame() {
  const url = new URL(window.location.href);
  url.searchParams.delete("game");
  window.history.replaceState(null, "", url);
  try {
    window.localStorage.removeItem(LAST_GAME_KEY);
  } catch (error) { /* storage off */ }
}

function showOpponent() {
  const rating = ratings.get(game.opponent);
  const box = document.getElementById("opponent-info");
  box.replaceChildren("You (", playerName(["player_0", "player_1"], game.seat), ") against ", el("b", { text: game.opponent }),
    el("span", { class: "strength", text: rating ? ` · ${rating}` : " · not rated in this server's results" }));
  if (game.notes.length) box.append(el("div", { class: "notes" }, game.notes.join("; ")));
}

// The server's notes about a game or record (moves taken back, ...), shown beside the players' names.
function noteList(notes) {
  return Array.isArray(notes) ? notes.filter((note) => typeof note === "string" && note) : [];
}

function responseNotes(response) {
  return response.notes ?? (response.state ? response.state.notes : undefined);
}

// The notes of a game answer (kept as they were when it carries none).
function showNotes(response) {
  const notes = responseNotes(response);
  if (!game || notes === undefined) return;
  game.notes = noteList(notes);
  showOpponent();
}

// A game answered by the server (new, rematch, reopened): put it on the page.
function openGame(response) {
  game = { id: response.id, seat: response.seat, opponent: response.opponent, config: response.config, notes: noteList(responseNotes(response)) };
  logEffects.clear();
  clearTurn();
  document.getElementById("lost-game").hidden = true;
  document.getElementById("play-area").hidden = false;
  document.getElementById("play-log").replaceChildren();
  document.getElementById("end-screen").hidden = true;
  showDownload({ record_ready: false });
  showOpponent();
  rememberGame(game.id);
}

// A new game against `opponent` (as asked: the indicator names it before the server answers).  A searching
// opponent that opens answers at once (202) with the game thinking: the page follows it as after a move
// (waitWhileThinking), so Stop reaches it and the game is kept with the opponent's best move so far.
async function newGameRequest(method, url, body, opponent) {
  setBusy(true);
  try {
    const response = await botRequest(method, url, body, { opponent, game: null, opening: true });
    openGame(response);
    document.getElementById("last-action").textContent = `New game: you are player_${game.seat} against ${game.opponent}.`;
    const thinking = Boolean(response.state.thinking);
    renderPlay(response.steps.length ? response.steps[0].state : response.state, { thinking });
    keepGameInView();
    if (thinking) await waitWhileThinking();
    else await animate(response);
  } catch (error) { // the game on the page (if any) is left as it was
    showMessage(`No new game: ${error.message}`);
  } finally {
    setBusy(false);
  }
}

async function startGame(event) {
  if (event) event.preventDefault();
  if (isBusy()) return;
  if (gameActive() && !(await confirmAction(`Leave the game in progress against ${game.opponent} and start a new one?`, "Start a new game"))) return;
  const seedText = document.getElementById("seed").value.trim();
  const handicap = document.getElementById("handicap").value;
  const opponent = document.getElementById("opponent").value;
  await newGameRequest("POST", "/api/games", {
    opponent,
    seat: Number(document.getElementById("seat").value),
    seed: seedText === "" ? null : Number(seedText),
    variant: document.getElementById("variant").value,
    discard_rule: document.getElementById("discard-rule").value,
    handicap: handicap ? handicap.split(",").map(Number) : null,
  }, opponent);
}

async function rematch(swapSeats) {
  if (!game || isBusy()) return;
  await newGameRequest("POST", `/api/games/${game.id}/rematch`, { swap_seats: swapSeats }, game.opponent);
}

async function abandonGame() {
  // Also while the opponent thinks: the server stops its search at once and the pending move answers too.
  // Not while a new game is asked for: the game shown is not the one thinking.
  if (!gameActive() || (pending && !pending.game)) return;
  if (!(await confirmAction(`Abandon the game against ${game.opponent}? It cannot be continued afterwards.`, "Abandon game"))) return;
  const thinking = isBusy();
  if (!thinking) setBusy(true);
  try {
    const response = await api("POST", `/api/games/${game.id}/abandon`);
    clearMessage();
    clearTurn();
    finishPlay(response.state);
  } catch (error) {
    showMessage(error.message);
  } finally {
    if (!thinking) setBusy(false);
  }
}

async function undoMove() {
  if (!gameActive() || isBusy()) return;
  setBusy(true);
  try {
    const response = await api("POST", `/api/games/${game.id}/undo`, {});
    clearMessage();
    clearTurn();
    logEffects.clear();
    document.getElementById("last-action").textContent = "Your last move was taken back.";
    finishPlay(response.state);
    showNotes(response);
    announce("Your last move was taken back.");
  } catch (error) {
    showMessage(error.message);
  } finally {
    setBusy(false);
  }
}

// The finished game on the Replay tab (its record, replayed by the server), with its analysis board.
async function replayThisGame() {
  if (!game) return;
  try {
    const response = await fetch(`/api/games/${game.id}/record`);
    const text = await response.text();
    if (!response.ok) throw new Error(JSON.parse(text).error || `HTTP ${response.status}`);
    const data = await api("POST", "/api/replay", text);
    selectTab("replay");
    openReplay(data, { game: game.id });
    clearMessage();
  } catch (error) {
    showMessage(error.message);
  }
}

function gameLost(id, reason) {
  const box = document.getElementById("lost-game");
  box.replaceChildren(`The game ${id} is no longer on this server (${reason}). `,
    el("button", { type: "button", id: "lost-new", onclick: () => { box.hidden = true; startGame(null); } }, "Start a new game"));
  box.hidden = false;
  document.getElementById("play-area").hidden = true;
  game = null;
  current = null;
  forgetGame();
  clearMessage();
}

// The game of the address (?game=ID) or the one this browser played last: reopened where it stands.
async function resumeGame(id) {
  let response;
  try {
    response = await api("GET", `/api/games/${encodeURIComponent(id)}`);
  } catch (error) {
    if (error.status === 404 || error.status === 400) gameLost(id, error.message);
    else showMessage(error.message);
    return;
  }
  openGame(response);
  document.getElementById("last-action").textContent = `Game reopened: you are player_${game.seat} against ${game.opponent}.`;
  showGameAnswer(response);
  if (response.state.thinking ?? response.thinking) waitWhileThinking(); // not awaited: the page is ready meanwhile
}

// A game answer without steps (GET): the opponent's last turn summarised and marked, the position shown.
function showGameAnswer(response) {
  const summary = response.state.turn_summary || response.turn_summary || [];
  const entries = summary.map((entry) => summaryEntry({ player: entry.player ?? 1 - game.seat, ...entry }));
  turnMarks = { steps: entries.filter((e) => e.player !== game.seat) };
  drawTurnSummary(entries);
  finishPlay(response.state);
}

// A game whose bot is still thinking (reopened, or a new game's opening): the indicator shows, Stop reaches the
// game, and the page looks again until it moved.
async function waitWhileThinking() {
  startThinking({ opponent: game.opponent, game: game.id, opening: !(current.log || []).length }, current.thinking_seconds || 0);
  setBusy(true);
  renderPlay(current, { thinking: true });
  try {
    for (;;) {
      await sleep(POLL_INTERVAL);
      const response = await api("GET", `/api/games/${game.id}`);
      if (!(response.state.thinking ?? response.thinking)) {
        stopThinking();
        showGameAnswer(response);
        showNotes(response);
        return;
      }
    }
  } catch (error) { // 404: the game is gone; otherwise (a new game's opening that could not be stored) the reason
    if (error.status === 404) gameLost(game.id, error.message);
    else showMessage(error.message);
  } finally {
    stopThinking();
    setBusy(false);
  }
}

// ---------------------------------------------------------------- analysis, hint
// An action's text (the engine's, docs/ENV.md); with the position's `state`, a face-up card by its name.
function describeAction(action, state = null) {
  const info = actionInfo(action);
  const line = info.line !== null ? BOARD.lines[info.line].name : "";
  const faceUp = info.kind === "take" && state && Array.isArray(state.face_up) ? state.face_up[info.slot] : null;
  switch (info.kind) {
    case "place": return `place ${line} paying ${info.pays[0]}`;
    case "remove": return `remove ${line} paying ${info.pays.join("+")}`;
    case "discard": return `discard ${info.pays[0]} face down`;
    case "take": return faceUp ? `take ${faceUp} (face-up)` : `take face-up slot ${info.slot}`;
    case "free": return `free bridge ${line}`;
    default: return info.kind;
  }
}

function analysisQuery(agentId, simulationsId) {
  const agent = document.getElementById(agentId).value.trim() || "champion";
  const simulations = document.getElementById(simulationsId).value.trim() || "0";
  return { agent, simulations };
}

// The analysis as a panel: the value as a win probability, every move's probability, the search's top moves.
function analysisPanel(data, agent, texts, seatLabel) {
  const probabilities = new Map(Object.entries(data.probabilities).map(([action, p]) => [Number(action), p]));
  const rows = [...probabilities].sort((x, y) => y[1] - x[1]);
  const block = el("div", { class: "analysis-result" });
  if (typeof data.value === "number") {
    block.append(el("div", { class: "value", "data-value": data.value }, `${agent}: win probability for ${seatLabel} `, el("b", { text: percent(data.value) })));
  }
  const table = el("table", { class: "results probabilities" }, el("tr", {}, el("th", { text: "move" }), el("th", { text: "probability" }), el("th", { text: "" })));
  for (const [action, p] of rows) {
    const bar = el("span", { class: "bar" });
    bar.style.width = `${(60 * p).toFixed(1)}px`;
    table.append(el("tr", { "data-action": action, "data-p": p }, el("td", { class: "name", text: texts(action) }), el("td", { text: percent(p) }), el("td", {}, bar)));
  }
  block.append(el("div", { class: "table-scroll probabilities-wrap" }, table));
  if (Array.isArray(data.search) && data.search.length) {
    const search = el("table", { class: "results search" }, el("tr", {}, ...["searched move", "visits", "value"].map((h) => el("th", { text: h }))));
    for (const entry of data.search) {
      const value = typeof entry.value === "number" ? percent(entry.value) : "";
      search.append(el("tr", { "data-action": entry.action }, el("td", { class: "name", text: entry.text || texts(entry.action) }), el("td", { text: entry.visits }), el("td", { text: value })));
    }
    block.append(el("div", { class: "table-scroll" }, search));
  }
  return { block, probabilities };
}

async function analyseGame() {
  if (!gameActive() || isBusy() || !current.legal.length) return;
  const { agent, simulations } = analysisQuery("analysis-agent", "analysis-simulations");
  const target = document.getElementById("analysis");
  target.replaceChildren(el("span", { class: "muted", text: `${agent} is analysing…` }));
  setBusy(true);
  try {
    const query = new URLSearchParams({ agent, simulations });
    const data = await api("GET", `/api/games/${game.id}/analysis?${query}`);
    const texts = new Map(current.legal.map((m) => [m.id, m.text]));
    const { block, probabilities } = analysisPanel(data, agent, (a) => texts.get(a) || describeAction(a, current), "you");
    target.replaceChildren(block);
    analysisShown = { probabilities, ...analysisByPlace(probabilities, game.seat) };
    renderPlay(current);
    announce(`Analysis by ${agent} shown on the board.`);
  } catch (error) {
    target.replaceChildren();
    showMessage(error.message);
  } finally {
    setBusy(false);
  }
}

async function askHint() {
  if (!gameActive() || isBusy() || !current.legal.length) return;
  const { agent, simulations } = analysisQuery("analysis-agent", "analysis-simulations");
  setBusy(true);
  try {
    const data = await api("POST", `/api/games/${game.id}/hint`, { agent, simulations: Number(simulations) });
    hinted = data.action;
    renderPlay(current);
    showMessage(`Hint from ${agent}: ${data.text}`, "info");
    announce(`Hint: ${data.text}`);
  } catch (error) {
    showMessage(error.message);
  } finally {
    setBusy(false);
  }
}

// ------------------------------------------------------------------------------------------------ replay
function stopAutoplay() {
  if (autoplayTimer !== null) clearInterval(autoplayTimer);
  autoplayTimer = null;
  document.getElementById("rp-auto").textContent = "autoplay";
}

function showFrame(index) {
  if (!replayData) return;
  const total = replayData.moves.length;
  replayIndex = Math.max(0, Math.min(total, index));
  const state = replayData.frames[replayIndex];
  const names = replayData.players;
  const move = replayIndex > 0 ? replayData.moves[replayIndex - 1] : null;
  const analysed = replayAnalysis && replayAnalysis.index === replayIndex ? replayAnalysis : null;
  if (!analysed) document.getElementById("replay-analysis").replaceChildren();
  drawBoard(document.getElementById("replay-board"), state, {
    highlight: move ? move.line : null,
    names,
    probabilities: analysed ? analysed.byLine : null,
  });
  document.getElementById("replay-status").replaceChildren(statusLine(state, names));
  const text = document.getElementById("replay-move");
  text.replaceChildren();
  if (move) text.append(`${replayIndex}. `, playerName(names, move.player), `: ${move.text}`);
  else text.append("The deal (before the first action).");
  drawCards(document.getElementById("replay-cards"), state, names, null, analysed ? analysed.cards : null);
  document.getElementById("rp-counter").textContent = `move ${replayIndex} of ${total}`;
  document.getElementById("rp-jump").value = replayIndex;
  const items = document.getElementById("replay-log").children;
  for (let k = 0; k < items.length; k += 1) items[k].classList.toggle("current", k === replayIndex - 1);
  if (replayIndex > 0) items[replayIndex - 1].scrollIntoView({ block: "nearest" });
}

function openReplay(data, source) {
  stopAutoplay();
  replayData = data;
  replaySource = source;
  replayAnalysis = null;
  document.getElementById("replay-area").hidden = false;
  const title = document.getElementById("replay-title");
  title.replaceChildren(playerName(data.players, 0), " vs ", playerName(data.players, 1), ` · seed ${data.seed} · ${data.moves.length} actions · ${data.result}`);
  const notes = document.getElementById("replay-notes");
  notes.textContent = noteList(data.notes).join("; ");
  notes.hidden = !notes.textContent;
  const log = document.getElementById("replay-log");
  log.replaceChildren();
  data.moves.forEach((move, k) => {
    const item = el("li", { onclick: () => { stopAutoplay(); showFrame(k + 1); } }, playerName(data.players, move.player), `: ${move.text}`);
    log.append(item);
  });
  showFrame(0);
}

async function loadRecordList() {
  const select = document.getElementById("record-list");
  select.replaceChildren();
  try {
    const data = await api("GET", "/api/records");
    if (!data.records.length) {
      select.append(el("option", { value: "", text: data.records_dir ? `no records in ${data.records_dir}` : "no records folder (--records DIR)" }));
    }
    for (const entry of data.records) {
      const label = entry.error ? `${entry.name} (unreadable)` : `${entry.name}: ${entry.players.join(" vs ")}, ${entry.actions} actions`;
      select.append(el("option", { value: entry.name, text: label }));
    }
  } catch (error) {
    showMessage(error.message);
  }
}

async function openListedRecord() {
  const name = document.getElementById("record-list").value;
  if (!name) return;
  try {
    openReplay(await api("GET", `/api/records/${encodeURIComponent(name)}`), { name });
    clearMessage();
  } catch (error) {
    showMessage(error.message);
  }
}

// A file chosen in an <input type=file>, sent as JSON to `url`; `show` gets the answer and the file's text.
// Errors go to the message box.
async function uploadFile(event, url, show) {
  const file = event.target.files[0];
  if (!file) return;
  try {
    const text = await readFile(file);
    show(await api("POST", url, text), file, text);
    clearMessage();
  } catch (error) {
    showMessage(`${file.name}: ${error.message}`);
  } finally {
    event.target.value = "";
  }
}

const openRecordFile = (event) => uploadFile(event, "/api/replay", (data, file, text) => openReplay(data, { record: JSON.parse(text) }));

// The analysis of the replayed position (the seat to act there, as that seat sees the game), drawn on the board.
async function analyseReplay() {
  if (!replayData || !replaySource) return;
  const { agent, simulations } = analysisQuery("replay-analysis-agent", "replay-analysis-simulations");
  const target = document.getElementById("replay-analysis");
  const state = replayData.frames[replayIndex];
  if (state.over) {
    target.replaceChildren(el("span", { class: "muted", text: "The game is over: nothing to analyse." }));
    return;
  }
  const index = replayIndex;
  target.replaceChildren(el("span", { class: "muted", text: `${agent} is analysing…` }));
  try {
    const data = await api("POST", "/api/analysis", { ...replaySource, ply: index, agent, simulations: Number(simulations) });
    if (replayIndex !== index) return; // moved on meanwhile
    const seat = data.seat ?? state.current_player;
    const seatLabel = seat === null || seat === undefined ? "the player to act" : replayData.players[seat];
    const { block, probabilities } = analysisPanel(data, agent, (a) => describeAction(a, state), seatLabel);
    replayAnalysis = { index, probabilities, ...analysisByPlace(probabilities, seat) };
    showFrame(index);
    target.replaceChildren(block);
  } catch (error) {
    target.replaceChildren();
    showMessage(error.message);
  }
}

function toggleAutoplay() {
  if (!replayData) return;
  if (autoplayTimer !== null) {
    stopAutoplay();
    return;
  }
  if (replayIndex >= replayData.moves.length) showFrame(0);
  document.getElementById("rp-auto").textContent = "pause";
  autoplayTimer = setInterval(() => {
    if (replayIndex >= replayData.moves.length) stopAutoplay();
    else showFrame(replayIndex + 1);
  }, AUTOPLAY_DELAY);
}

// ------------------------------------------------------------------------------------------------ results
function fixed(value, digits) {
  return typeof value === "number" ? value.toFixed(digits) : "";
}

function intervalBar(low, high, score) {
  const bar = svg("svg", { width: 120, height: 12, class: "interval", role: "img" });
  bar.append(svg("line", { x1: 0, y1: 6, x2: 120, y2: 6, stroke: "#ccc" }));
  bar.append(svg("line", { x1: 60, y1: 1, x2: 60, y2: 11, stroke: "#aaa" }));
  bar.append(svg("line", { x1: 120 * low, y1: 6, x2: 120 * high, y2: 6, stroke: "#285fc8", "stroke-width": 4 }));
  bar.append(svg("circle", { cx: 120 * score, cy: 6, r: 3.5, fill: "#1e1e23" }));
  bar.append(svg("title", { text: `score ${score.toFixed(3)}, 95% interval [${low.toFixed(3)}, ${high.toFixed(3)}]` }));
  return bar;
}

function resultsBlock(data) {
  const block = el("div", { class: "results-block" });
  const games = data.games_per_pairing ? `, ${data.games_per_pairing} games per pairing` : "";
  block.append(el("h3", { text: `${data.source}: ${data.entrants.join(", ")}${games}` }));
  const head = ["pairing", "games", "W-D-L", "score", "95% CI", "", "margin", "games/s"];
  const pairings = el("table", { class: "results pairings" }, el("tr", {}, ...head.map((h) => el("th", { text: h }))));
  for (const p of data.pairings) {
    const [low, high] = p.score_ci95;
    pairings.append(el("tr", {},
      el("td", { class: "name", text: `${p.a} vs ${p.b}` }),
      el("td", { text: p.games }),
      el("td", { text: `${p.wins}-${p.draws}-${p.losses}` }),
      el("td", { text: fixed(p.score, 3) }),
      el("td", { text: `[${fixed(low, 3)}, ${fixed(high, 3)}]` }),
      el("td", {}, intervalBar(low, high, p.score)),
      el("td", { text: (p.mean_margin >= 0 ? "+" : "") + fixed(p.mean_margin, 2) }),
      el("td", { text: fixed(p.games_per_second, 2) })));
  }
  block.append(el("div", { class: "table-scroll" }, pairings));
  if (data.ratings) {
    const rhead = ["rank", "entrant", "Elo", "±95%", "95% interval", "games", "score"];
    const ratings = el("table", { class: "results ratings" }, el("tr", {}, ...rhead.map((h) => el("th", { text: h }))));
    data.ratings.forEach((r, k) => {
      ratings.append(el("tr", {},
        el("td", { text: k + 1 }),
        el("td", { class: "name", text: r.entrant }),
        el("td", { text: fixed(r.elo, 0) }),
        el("td", { text: fixed(1.959963984540054 * r.elo_se, 0) }),
        el("td", { text: `[${fixed(r.elo_ci95[0], 0)}, ${fixed(r.elo_ci95[1], 0)}]` }),
        el("td", { text: r.games }),
        el("td", { text: fixed(r.score, 3) })));
    });
    block.append(el("div", { class: "table-scroll" }, ratings));
    for (const r of data.ratings) noteRating(r.entrant, `Elo ${fixed(r.elo, 0)} ±${fixed(1.959963984540054 * r.elo_se, 0)} (${data.source})`);
  } else {
    block.append(el("p", { class: "muted", text: "No ratings table (fewer than three entrants)." }));
  }
  return block;
}

// An entrant's rating for the strength shown beside the opponent's name (the ladder wins over a file).
function noteRating(entrant, text, preferred = false) {
  if (preferred || !ratings.has(entrant)) ratings.set(entrant, text);
  if (game && game.opponent === entrant) showOpponent();
}

async function loadResults() {
  try {
    const data = await api("GET", "/api/results");
    const list = document.getElementById("results-list");
    for (const result of data.results) list.append(resultsBlock(result));
  } catch (error) {
    showMessage(error.message);
  }
}

function openResultsFile(event) {
  return uploadFile(event, "/api/results", (data, file) => {
    data.source = file.name;
    document.getElementById("results-list").prepend(resultsBlock(data));
  });
}

// The ladder of the results store (kahuna-serve --db): every stored game in one Bradley-Terry table,
// the pairings worth playing next, and Elo against learner decisions for each training run.
function runsChart(runs) {
  const names = Object.keys(runs);
  const points = names.flatMap((name) => runs[name]);
  if (!points.length) return el("p", { class: "muted", text: "No training run has written to the store yet (eval.db)." });
  const width = 560, height = 240, pad = 40;
  const xs = points.map((p) => p.decisions), ys = points.flatMap((p) => [p.elo - p.elo_ci95, p.elo + p.elo_ci95]);
  const [x0, x1] = [Math.min(...xs, 0), Math.max(...xs, 1)], [y0, y1] = [Math.min(...ys), Math.max(...ys) + 1];
  const sx = (x) => pad + (width - 2 * pad) * (x - x0) / (x1 - x0 || 1);
  const sy = (y) => height - pad + (2 * pad - height) * (y - y0) / (y1 - y0 || 1);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "runs-chart", role: "img" });
  chart.append(svg("title", { text: "Elo against learner decisions, per training run (95% intervals)" }));
  chart.append(svg("line", { x1: pad, y1: height - pad, x2: width - pad, y2: height - pad, stroke: "#999" }));
  chart.append(svg("line", { x1: pad, y1: pad, x2: pad, y2: height - pad, stroke: "#999" }));
  chart.append(svg("text", { x: width / 2, y: height - 8, "text-anchor": "middle", "font-size": 11, text: "learner decisions" }));
  chart.append(svg("text", { x: 4, y: pad - 8, "font-size": 11, text: `Elo ${Math.round(y0)}..${Math.round(y1)}` }));
  const colours = ["#285fc8", "#d0561f", "#2a9d55", "#8a3fc1", "#b8860b", "#444"];
  names.forEach((name, k) => {
    const colour = colours[k % colours.length];
    const line = runs[name].map((p) => `${sx(p.decisions).toFixed(1)},${sy(p.elo).toFixed(1)}`).join(" ");
    chart.append(svg("polyline", { points: line, fill: "none", stroke: colour, "stroke-width": 2 }));
    for (const p of runs[name]) {
      chart.append(svg("line", { x1: sx(p.decisions), x2: sx(p.decisions), y1: sy(p.elo - p.elo_ci95), y2: sy(p.elo + p.elo_ci95), stroke: colour }));
    }
    chart.append(svg("text", { x: width - pad, y: pad + 14 * k, "text-anchor": "end", fill: colour, "font-size": 11, text: name }));
  });
  return chart;
}

function ladderBlock(data) {
  const block = el("div", { class: "results-block" });
  block.append(el("h3", { text: `Ladder of the results store: ${data.games} games` }));
  const head = ["rank", "entrant", "Elo", "±95%", "games", "score"];
  const table = el("table", { class: "results ladder" }, el("tr", {}, ...head.map((h) => el("th", { text: h }))));
  data.ratings.forEach((r, k) => {
    const half = r.elo_ci95 ? (r.elo_ci95[1] - r.elo_ci95[0]) / 2 : null;
    table.append(el("tr", {},
      el("td", { text: r.elo === null ? "-" : k + 1 }),
      el("td", { class: "name", text: r.entrant }),
      el("td", { text: r.elo === null ? "-" : fixed(r.elo, 0) }),
      el("td", { text: half === null ? "-" : fixed(half, 0) }),
      el("td", { text: r.games }),
      el("td", { text: fixed(r.score, 3) })));
  });
  block.append(el("div", { class: "table-scroll" }, table));
  for (const r of data.ratings) {
    if (r.elo !== null) noteRating(r.entrant, `Elo ${fixed(r.elo, 0)} (results store ladder)`, true);
  }
  const anchors = Object.entries(data.anchors).map(([name, elo]) => `${name} ${elo}`).join(", ");
  block.append(el("p", { class: "muted", text: anchors ? `Scale pinned by the anchors: ${anchors}.` : "No anchor took part: mean 1000." }));
  if (data.pairings.length) {
    block.append(el("h4", { text: "Most informative next pairings (kahuna-ratings --schedule)" }));
    block.append(el("ul", {}, ...data.pairings.map((p) => el("li", { text: `${p.a} vs ${p.b}: ${p.why}` }))));
  }
  block.append(el("h4", { text: "Elo across training runs" }));
  block.append(el("div", { class: "table-scroll" }, runsChart(data.runs)));
  return block;
}

async function loadLadder() {
  if (!BOARD.results_store) return;  // no --db: nothing to show (and no 404 in the console)
  const response = await fetch("/api/ladder");
  const data = await response.json();
  const target = document.getElementById("ladder");
  target.hidden = false;
  if (!response.ok) target.append(el("p", { class: "muted", text: `Results store: ${data.error}` }));
  else target.append(ladderBlock(data));
}

// ------------------------------------------------------------------------------------------------ rules
// The Rules panel: the players' rulebook as the server gives it (GET /api/rules), one collapsible section each.
async function toggleRules(open) {
  const panel = document.getElementById("rules-panel");
  const button = document.getElementById("rules-open");
  panel.hidden = !open;
  button.setAttribute("aria-expanded", open ? "true" : "false");
  if (!open) {
    button.focus();
    return;
  }
  const body = document.getElementById("rules-body");
  if (!body.dataset.loaded) {
    body.replaceChildren(el("p", { class: "muted", text: "Loading the rules…" }));
    try {
      const sections = await api("GET", "/api/rules");
      body.replaceChildren();
      (Array.isArray(sections) ? sections : sections.sections || []).forEach((section, k) => {
        const content = el("div", { class: "rules-text" });
        if (section.html !== undefined) content.innerHTML = section.html; // built and escaped by the server from its own rulebook
        else content.append(...String(section.text).split(/\n{2,}/).map((para) => el("p", { text: para })));
        const title = String(section.title).replaceAll("`", ""); // Markdown's code marks
        body.append(el("details", { open: k < 2 ? true : null }, el("summary", { text: title }), content));
      });
      body.dataset.loaded = "1";
    } catch (error) {
      body.replaceChildren(el("p", { class: "muted", text: `The rules cannot be shown: ${error.message}` }));
    }
  }
  document.getElementById("rules-close").focus();
}

// ------------------------------------------------------------------------------------------------ start
function selectTab(name) {
  for (const button of document.querySelectorAll("nav button.tab")) button.classList.toggle("active", button.dataset.tab === name);
  for (const panel of document.querySelectorAll(".tab-panel")) panel.hidden = panel.id !== `tab-${name}`;
  if (name !== "replay") stopAutoplay();
}

function storedGame() {
  try {
    return window.localStorage.getItem(LAST_GAME_KEY);
  } catch (error) {
    return null;
  }
}

async function init() {
  try {
    BOARD = await api("GET", "/api/board");
  } catch (error) {
    showMessage(`cannot load the board: ${error.message}`);
    return;
  }
  const opponents = document.getElementById("opponent-list");
  for (const name of [...BOARD.opponents, ...BOARD.agent_files]) opponents.append(el("option", { value: name }));
  for (const variant of BOARD.variants) document.getElementById("variant").append(el("option", { value: variant, text: variant }));
  for (const rule of BOARD.discard_rules) document.getElementById("discard-rule").append(el("option", { value: rule, text: rule }));
  const on = (id, event, handler) => document.getElementById(id).addEventListener(event, handler);
  for (const button of document.querySelectorAll("nav button.tab")) button.addEventListener("click", () => selectTab(button.dataset.tab));
  on("new-game", "submit", startGame);
  on("abandon", "click", abandonGame);
  on("stop", "click", stopSearch);
  on("undo", "click", undoMove);
  on("hint", "click", askHint);
  on("analyse", "click", analyseGame);
  on("rematch", "click", () => rematch(false));
  on("swap", "click", () => rematch(true));
  on("replay-game", "click", replayThisGame);
  on("message-close", "click", clearMessage);
  on("skip-board", "click", (event) => {
    event.preventDefault();
    if (game && !document.getElementById("play-area").hidden) {
      selectTab("play");
      focusBoard();
      keepGameInView();
    } else {
      document.getElementById("opponent").focus();
    }
  });
  // The log of moves is open beside the board; on a narrow window it starts folded (the board comes first).
  document.getElementById("log-panel").open = window.matchMedia("(min-width: 601px)").matches;
  // A page that leaves while its opponent thinks stops the search as Stop does: the game goes on (docs/WEB.md).
  on("rules-open", "click", () => toggleRules(document.getElementById("rules-panel").hidden));
  on("rules-close", "click", () => toggleRules(false));
  on("rules-panel", "keydown", (event) => { if (event.key === "Escape") toggleRules(false); });
  on("open-record", "click", openListedRecord);
  on("record-file", "change", openRecordFile);
  on("results-file", "change", openResultsFile);
  on("replay-analyse", "click", analyseReplay);
  on("rp-start", "click", () => { stopAutoplay(); showFrame(0); });
  on("rp-back", "click", () => { stopAutoplay(); showFrame(replayIndex - 1); });
  on("rp-forward", "click", () => { stopAutoplay(); showFrame(replayIndex + 1); });
  on("rp-end", "click", () => { stopAutoplay(); showFrame(Infinity); });
  on("rp-auto", "click", toggleAutoplay);
  on("rp-go", "click", () => {
    stopAutoplay();
    const value = Number(document.getElementById("rp-jump").value);
    if (Number.isInteger(value)) showFrame(value);
    else showMessage("move: a whole number, please");
  });
  // The results first: the opponent's strength shown beside its name comes from them.
  await Promise.all([loadRecordList(), loadResults(), loadLadder().catch((error) => showMessage(error.message))]);
  const id = params.get("game") || storedGame();
  if (id) await resumeGame(id);
  document.body.dataset.ready = "1";
}

init();
