// Kahuna in the browser: the page of kahuna-serve (docs/WEB.md).  Plain JavaScript and SVG, no build step.
// Everything the page shows comes from the JSON API; it holds no game logic of its own: the server lists
// the legal moves and the page offers only those.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const params = new URLSearchParams(window.location.search);
const STEP_DELAY = Math.max(0, Number(params.get("delay") ?? 600)); // ms between the opponent's animated actions
const AUTOPLAY_DELAY = Math.max(20, Number(params.get("autoplay") ?? 700));

let BOARD = null; // /api/board: geometry, colours, options
let game = null; // the play session: {id, seat, opponent, config}
let replayData = null;
let replayIndex = 0;
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

function showMessage(text, kind = "error") {
  const box = document.getElementById("message");
  box.textContent = text;
  box.className = kind;
  box.hidden = !text;
}

function clearMessage() {
  showMessage("");
}

function setBusy(busy) {
  document.body.dataset.busy = busy ? "1" : "0";
}

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

// ------------------------------------------------------------------------------------------------ the board
// drawBoard(svgNode, state, {playable: Map(line -> [actions]), onLine, highlight: line})
function drawBoard(node, state, options = {}) {
  const { width, height, island_radius: r, islands, lines, colours } = BOARD;
  node.setAttribute("viewBox", `0 0 ${width} ${height}`);
  node.replaceChildren();
  const playable = options.playable || new Map();
  const layerLines = svg("g", { class: "lines" });
  const layerHits = svg("g", { class: "hits" });
  for (const line of lines) {
    const a = islands[line.a];
    const b = islands[line.b];
    const ends = { x1: a.x, y1: a.y, x2: b.x, y2: b.y };
    const owner = state.lines[line.id];
    const group = svg("g", { class: "line", "data-line": line.id, "data-owner": owner === null ? "" : owner });
    if (owner === null) {
      group.append(svg("line", { ...ends, class: "free" }));
    } else {
      group.append(svg("line", { ...ends, class: "bridge-edge" }));
      group.append(svg("line", { ...ends, class: `bridge p${owner}`, stroke: colours[owner], "stroke-width": 9, "stroke-linecap": "round" }));
    }
    if (state.claim_line === line.id) group.append(svg("line", { ...ends, class: "claim" }));
    if (options.highlight === line.id) group.append(svg("line", { ...ends, class: "last" }));
    if (playable.has(line.id)) group.append(svg("line", { ...ends, class: "hint" })); // under the islands
    layerLines.append(group);
    if (playable.has(line.id)) {
      const hit = svg("g", { class: "playable", id: `line-${line.id}`, "data-line": line.id });
      hit.append(svg("line", { ...ends, class: "hit" }));
      const title = svg("title", { text: `${line.name}: ${playable.get(line.id).map((m) => m.text).join(" / ")}` });
      hit.append(title);
      hit.addEventListener("click", () => options.onLine && options.onLine(line.id));
      layerHits.append(hit);
    }
  }
  node.append(layerLines);
  const layerIslands = svg("g", { class: "islands" });
  for (const island of islands) {
    const info = state.islands[island.id];
    const group = svg("g", { class: "island-group", "data-island": island.name });
    const controller = info.controller;
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
    if (controller !== null) {
      group.append(svg("circle", {
        cx: island.x + 0.75 * r, cy: island.y - 0.75 * r, r: 9, class: `stone p${controller}`, fill: colours[controller],
      }));
    }
    const tip = controller === null ? "not controlled" : `controlled by player_${controller}`;
    group.append(svg("title", { text: `${island.name}: ${tip}; bridges ${info.bridges[0]}:${info.bridges[1]}, majority ${island.majority}` }));
    layerIslands.append(group);
  }
  node.append(layerIslands);
  node.append(layerHits); // clickable lines above the islands' edges
  const banner = state.over ? "game over" : `round ${state.round} of 3`;
  node.append(svg("text", { x: 16, y: 26, class: "banner", text: `Kahuna, ${banner}` }));
}

function playerName(names, player) {
  return el("span", { class: `p${player}`, text: names[player] });
}

function statusLine(state, names) {
  const line = el("div");
  line.append(`Round ${state.round} of 3 · scores `, playerName(names, 0), ` ${state.scores[0]} : ${state.scores[1]} `, playerName(names, 1));
  if (state.over) {
    line.append(" · game over");
  } else {
    line.append(" · to act: ", playerName(names, state.to_act));
    const notes = [];
    if (state.setup_bridges_left) notes.push(`handicap setup, ${state.setup_bridges_left} free bridge(s) left`);
    if (state.final_turns_left !== null) notes.push(`final turns, ${state.final_turns_left} left`);
    if (state.cards_played) notes.push(`${state.cards_played} card(s) played this turn`);
    if (state.cards_discarded) notes.push(`${state.cards_discarded} discarded this turn`);
    if (state.must_draw) notes.push("the opponent passed: this turn must end with a draw");
    if (notes.length) line.append(` (${notes.join(", ")})`);
  }
  return line;
}

function cardNode(label, extra = {}) {
  if (label === null) return el("span", { class: "card empty", text: "empty" });
  if (label === "?") return el("span", { class: "card back", text: "?" });
  return el("span", { class: "card", text: label, ...extra });
}

// The cards and supply panel.  legalBy: {discard: Map(island -> action), take: Map(slot -> action), draw: action}
function drawCards(container, state, names, legalBy = null, onAction = null) {
  container.replaceChildren();
  const row = (label, ...items) => el("div", { class: "row" }, el("span", { class: "label" }, label), ...items);
  for (const player of [0, 1]) {
    const hand = state.hands[player];
    const items = [];
    if (hand.cards !== null && hand.cards !== undefined) {
      for (const card of hand.cards) {
        const action = legalBy && player === state.viewer ? legalBy.discard.get(card) : undefined;
        if (action !== undefined) {
          items.push(el("button", { type: "button", class: "card playable", "data-action": action, title: `discard ${card} face down`, onclick: () => onAction(action) }, card));
        } else {
          items.push(cardNode(card));
        }
      }
    } else {
      for (const card of hand.known) items.push(cardNode(card, { title: "taken face up: publicly known" }));
      for (let k = hand.known.length; k < hand.size; k += 1) items.push(cardNode("?"));
    }
    if (!hand.size) items.push(el("span", { class: "muted", text: "no cards" }));
    const label = el("span", {}, playerName(names, player), ` hand (${hand.size})`);
    container.append(row(label, ...items));
  }
  const slots = state.face_up.map((card, slot) => {
    const action = legalBy ? legalBy.take.get(slot) : undefined;
    if (action !== undefined && card !== null) {
      return el("button", { type: "button", class: "card playable", "data-action": action, title: `take face-up slot ${slot}`, onclick: () => onAction(action) }, card);
    }
    return cardNode(card);
  });
  container.append(row("Face-up row", ...slots));
  const pile = [el("span", { class: "card back", text: String(state.pile) })];
  if (legalBy && legalBy.draw !== undefined) {
    pile.push(el("button", { type: "button", class: "card playable", "data-action": legalBy.draw, onclick: () => onAction(legalBy.draw) }, "draw"));
  }
  container.append(row("Pile", ...pile));
  const open = state.discard_open.length ? state.discard_open.join(" ") : "none";
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

function legalIndex(state) {
  const byLine = new Map();
  const byKind = { discard: new Map(), take: new Map(), draw: undefined };
  for (const move of state.legal) {
    if (move.line !== null && move.kind !== "discard") {
      if (!byLine.has(move.line)) byLine.set(move.line, []);
      byLine.get(move.line).push(move);
    }
    if (move.kind === "discard") byKind.discard.set(move.island, move.id);
    if (move.kind === "take") byKind.take.set(move.slot, move.id);
    if (move.kind === "draw") byKind.draw = move.id;
  }
  return { byLine, byKind };
}

function showChooser(moves) {
  const box = document.getElementById("chooser");
  box.replaceChildren(el("div", { text: `${BOARD.lines[moves[0].line].name}: choose` }));
  for (const move of moves) {
    box.append(el("button", { type: "button", class: "move choice", "data-action": move.id, onclick: () => sendMove(move.id) }, move.text));
  }
  box.append(el("button", { type: "button", class: "cancel", onclick: () => { box.hidden = true; } }, "cancel"));
  box.hidden = false;
}

function renderPlay(state, highlight = null) {
  const names = playNames();
  const { byLine, byKind } = legalIndex(state);
  drawBoard(document.getElementById("play-board"), state, { playable: byLine, onLine: (line) => showChooser(byLine.get(line)), highlight });
  const status = document.getElementById("play-status");
  status.replaceChildren(statusLine(state, names));
  drawCards(document.getElementById("play-cards"), state, names, byKind, sendMove);
  document.getElementById("chooser").hidden = true;
  const moves = document.getElementById("moves");
  moves.replaceChildren();
  for (const move of state.legal) {
    moves.append(el("button", { type: "button", class: `move ${move.kind}`, "data-action": move.id, onclick: () => sendMove(move.id) }, move.text));
  }
  if (!state.legal.length) {
    const why = state.over ? "The game is over." : state.abandoned ? "The game was abandoned." : `${names[state.to_act]} is playing…`;
    moves.append(el("span", { class: "muted", text: why }));
  }
}

function appendLog(list, player, names, text) {
  const item = el("li", {}, playerName(names, player), `: ${text}`);
  list.append(item);
  list.scrollTop = list.scrollHeight;
}

function finishPlay(state) {
  renderPlay(state, null);
  const result = document.getElementById("result");
  result.textContent = state.result || (state.abandoned ? "Game abandoned." : "");
  const download = document.getElementById("download");
  download.hidden = !state.record_ready;
  download.href = `/api/games/${game.id}/record`;
  document.getElementById("abandon").disabled = state.over || state.abandoned;
  const log = document.getElementById("play-log");
  log.replaceChildren();
  for (const entry of state.log) appendLog(log, entry.player, playNames(), entry.text);
}

async function animate(response) {
  const names = playNames();
  const log = document.getElementById("play-log");
  const last = document.getElementById("last-action");
  for (const step of response.steps) {
    const who = step.player === game.seat ? "You play" : `${game.opponent} plays`;
    last.textContent = `${who}: ${step.text}`;
    renderPlay(step.state, step.line);
    appendLog(log, step.player, names, step.text);
    if (step.player !== game.seat && STEP_DELAY) await sleep(STEP_DELAY);
  }
  finishPlay(response.state);
}

async function sendMove(action) {
  if (document.body.dataset.busy === "1" || !game) return;
  setBusy(true);
  try {
    const response = await api("POST", `/api/games/${game.id}/move`, { action });
    clearMessage();
    await animate(response);
  } catch (error) {
    showMessage(error.message);
  } finally {
    setBusy(false);
  }
}

async function startGame(event) {
  event.preventDefault();
  if (document.body.dataset.busy === "1") return;
  const seedText = document.getElementById("seed").value.trim();
  const handicap = document.getElementById("handicap").value;
  const request = {
    opponent: document.getElementById("opponent").value,
    seat: Number(document.getElementById("seat").value),
    seed: seedText === "" ? null : Number(seedText),
    variant: document.getElementById("variant").value,
    discard_rule: document.getElementById("discard-rule").value,
    handicap: handicap ? handicap.split(",").map(Number) : null,
  };
  setBusy(true);
  try {
    const response = await api("POST", "/api/games", request);
    clearMessage();
    game = { id: response.id, seat: response.seat, opponent: response.opponent };
    document.getElementById("play-area").hidden = false;
    document.getElementById("play-log").replaceChildren();
    document.getElementById("result").textContent = "";
    document.getElementById("last-action").textContent = `New game: you are player_${game.seat} against ${game.opponent}.`;
    document.getElementById("download").hidden = true;
    document.getElementById("abandon").disabled = false;
    renderPlay(response.steps.length ? response.steps[0].state : response.state);
    await animate(response);
  } catch (error) {
    showMessage(error.message); // the game on the page (if any) is left as it was
  } finally {
    setBusy(false);
  }
}

async function abandonGame() {
  // Also while the opponent thinks: the server stops its search at once and the pending move answers too.
  if (!game) return;
  const thinking = document.body.dataset.busy === "1";
  if (!thinking) setBusy(true);
  try {
    const response = await api("POST", `/api/games/${game.id}/abandon`);
    clearMessage();
    finishPlay(response.state);
  } catch (error) {
    showMessage(error.message);
  } finally {
    if (!thinking) setBusy(false);
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
  drawBoard(document.getElementById("replay-board"), state, { highlight: move ? move.line : null });
  document.getElementById("replay-status").replaceChildren(statusLine(state, names));
  const text = document.getElementById("replay-move");
  text.replaceChildren();
  if (move) text.append(`${replayIndex}. `, playerName(names, move.player), `: ${move.text}`);
  else text.append("The deal (before the first action).");
  drawCards(document.getElementById("replay-cards"), state, names);
  document.getElementById("rp-counter").textContent = `move ${replayIndex} of ${total}`;
  document.getElementById("rp-jump").value = replayIndex;
  const items = document.getElementById("replay-log").children;
  for (let k = 0; k < items.length; k += 1) items[k].classList.toggle("current", k === replayIndex - 1);
  if (replayIndex > 0) items[replayIndex - 1].scrollIntoView({ block: "nearest" });
}

function openReplay(data) {
  stopAutoplay();
  replayData = data;
  document.getElementById("replay-area").hidden = false;
  const title = document.getElementById("replay-title");
  title.replaceChildren(playerName(data.players, 0), " vs ", playerName(data.players, 1), ` · seed ${data.seed} · ${data.moves.length} actions · ${data.result}`);
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
    openReplay(await api("GET", `/api/records/${encodeURIComponent(name)}`));
    clearMessage();
  } catch (error) {
    showMessage(error.message);
  }
}

// A file chosen in an <input type=file>, sent as JSON to `url`; `show` gets the answer.  Errors go to the message box.
async function uploadFile(event, url, show) {
  const file = event.target.files[0];
  if (!file) return;
  try {
    show(await api("POST", url, await readFile(file)), file);
    clearMessage();
  } catch (error) {
    showMessage(`${file.name}: ${error.message}`);
  } finally {
    event.target.value = "";
  }
}

const openRecordFile = (event) => uploadFile(event, "/api/replay", (data) => openReplay(data));

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
  block.append(pairings);
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
    block.append(ratings);
  } else {
    block.append(el("p", { class: "muted", text: "No ratings table (fewer than three entrants)." }));
  }
  return block;
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
  const chart = svg("svg", { width, height, class: "runs-chart", role: "img" });
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
  block.append(table);
  const anchors = Object.entries(data.anchors).map(([name, elo]) => `${name} ${elo}`).join(", ");
  block.append(el("p", { class: "muted", text: anchors ? `Scale pinned by the anchors: ${anchors}.` : "No anchor took part: mean 1000." }));
  if (data.pairings.length) {
    block.append(el("h4", { text: "Most informative next pairings (kahuna-ratings --schedule)" }));
    block.append(el("ul", {}, ...data.pairings.map((p) => el("li", { text: `${p.a} vs ${p.b}: ${p.why}` }))));
  }
  block.append(el("h4", { text: "Elo across training runs" }));
  block.append(runsChart(data.runs));
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

// ------------------------------------------------------------------------------------------------ start
function selectTab(name) {
  for (const button of document.querySelectorAll("nav button.tab")) button.classList.toggle("active", button.dataset.tab === name);
  for (const panel of document.querySelectorAll(".tab-panel")) panel.hidden = panel.id !== `tab-${name}`;
  if (name !== "replay") stopAutoplay();
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
  for (const button of document.querySelectorAll("nav button.tab")) button.addEventListener("click", () => selectTab(button.dataset.tab));
  document.getElementById("new-game").addEventListener("submit", startGame);
  document.getElementById("abandon").addEventListener("click", abandonGame);
  document.getElementById("open-record").addEventListener("click", openListedRecord);
  document.getElementById("record-file").addEventListener("change", openRecordFile);
  document.getElementById("results-file").addEventListener("change", openResultsFile);
  document.getElementById("rp-start").addEventListener("click", () => { stopAutoplay(); showFrame(0); });
  document.getElementById("rp-back").addEventListener("click", () => { stopAutoplay(); showFrame(replayIndex - 1); });
  document.getElementById("rp-forward").addEventListener("click", () => { stopAutoplay(); showFrame(replayIndex + 1); });
  document.getElementById("rp-end").addEventListener("click", () => { stopAutoplay(); showFrame(Infinity); });
  document.getElementById("rp-auto").addEventListener("click", toggleAutoplay);
  document.getElementById("rp-go").addEventListener("click", () => {
    stopAutoplay();
    const value = Number(document.getElementById("rp-jump").value);
    if (Number.isInteger(value)) showFrame(value);
    else showMessage("move: a whole number, please");
  });
  await Promise.all([loadRecordList(), loadResults(), loadLadder().catch((error) => showMessage(error.message))]);
  document.body.dataset.ready = "1";
}

init();
