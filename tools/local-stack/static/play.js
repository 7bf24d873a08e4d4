// The demo page's Play view. Everything on it is rendered from one player
// state, the SDK's reducer (clients/typescript/src/player-state.ts), fed by
// the socket's pushes, the calls' answers and a my-status poll: the
// headline, the details, which controls are enabled, the party, the ready
// check and the match cards. Every HTTP call and the WebSocket go through
// the TypeScript SDK, bundled at /mm-client.js.
import {
  Matchmaking,
  MatchmakingError,
  controls,
  describeMessage,
  describeRating,
  describeResult,
  describeState,
  devToken,
  initialState,
  reduce,
} from "/mm-client.js";

const $ = (id) => document.getElementById(id);
const NAME_KEY = "mm.player";
const CONNECTED_KEY = "mm.connected";

// `player` is the SDK's state; the rest is the page's own: the socket, the
// game-server buttons' outcomes (not matchmaking state) and the poll timer.
const page = { config: null, mm: null, connected: false, player: initialState(""), seats: new Map(), poll: undefined, polls: 0 };

function dispatch(event) {
  page.player = reduce(page.player, event);
  render();
}

function log(line, raw) {
  const div = document.createElement("div");
  div.textContent = new Date().toLocaleTimeString() + "  " + line;
  if (raw !== undefined) div.title = JSON.stringify(raw);
  $("log").prepend(div);
  while ($("log").childElementCount > 200) $("log").lastChild.remove();
}

// One SDK call: its answer or its refusal goes to the state; a refusal also
// asks my-status, since it often says where the player is (IN_MATCH...).
async function call(op, request) {
  if (!page.mm) return null;
  try {
    const data = await request(page.mm);
    log(`${op}: ${data.status || "done"}`, data);
    dispatch({ type: "answer", op, data });
    return data;
  } catch (e) {
    const known = e instanceof MatchmakingError;
    log(`${op} refused: ${known ? `${e.status} ${e.code}` : e}`, known ? e.data : undefined);
    dispatch({ type: "failed", op, code: known ? e.code : null, message: known ? e.msg : String(e.message || e), data: known ? e.data : undefined });
    refreshStatus();
    return null;
  }
}

function world() {
  return page.config.worlds.find((w) => w.worldType === $("world").value);
}

function render() {
  const s = page.player;
  const c = controls(s, { connected: page.connected, gameServers: !!page.config.gameServers });
  $("status").textContent = s.phase;
  $("status").dataset.phase = s.phase;
  $("detail").textContent = describeState(s);
  $("error").textContent = s.error ? (s.error.code ? `${s.error.code}: ${s.error.message}` : s.error.message) : "";
  $("join").disabled = !c.join;
  $("leave").disabled = !c.leave;
  $("create-party").disabled = !c.createParty;
  $("join-party").hidden = !c.joinParty;
  $("leave-party").hidden = !c.leaveParty;
  $("world").disabled = !c.changeWorld;
  const live = page.mm !== null;
  $("connect").textContent = live ? "Disconnect" : "Connect";
  $("player").disabled = live;
  $("rating").disabled = live;
  renderParty(s);
  renderProposal(s, c);
  renderMatches(s);
  document.body.dataset.polls = String(page.polls);
}

function renderParty(s) {
  const p = s.party;
  const el = $("party");
  if (!p) {
    el.textContent = "No party.";
    delete el.dataset.partyId;
    delete el.dataset.state;
    return;
  }
  const who = p.members.map((m) => (m.playerId === s.playerId ? m.playerId + " (you)" : m.playerId) + (m.joined ? " ✓" : " …")).join(", ");
  el.textContent = `${p.partyId} · ${p.worldType} · ${p.state.toLowerCase()} · ${who}`;
  el.dataset.partyId = p.partyId;
  el.dataset.state = p.state;
}

// The ready check: a dialog with a countdown until acceptBy, open exactly while PROPOSED.
function renderProposal(s, c) {
  const dialog = $("ready");
  const p = s.phase === "PROPOSED" ? s.proposal : null;
  if (!p) {
    clearInterval(page.countdown);
    page.countdown = undefined;
    if (dialog.open) dialog.close();
    return;
  }
  if (dialog.dataset.matchId !== p.matchId) {
    dialog.dataset.matchId = p.matchId;
    clearInterval(page.countdown);
    const tick = () => ($("ready-countdown").textContent = String(Math.max(0, Math.ceil((p.acceptBy - Date.now()) / 1000))));
    tick();
    page.countdown = setInterval(tick, 250);
  }
  const others = p.participants.filter((x) => x !== s.playerId).join(", ");
  $("ready-who").textContent = `${p.worldType} with ${others}` + (p.backfillOf ? ` (open seats in match ${p.backfillOf})` : "");
  $("ready-progress").textContent = `${p.accepted} of ${p.participants.length}`;
  $("ready-accept").disabled = !c.accept;
  $("ready-decline").disabled = !c.decline;
  if (!dialog.open) dialog.show();
}

function renderMatches(s) {
  const box = $("matches");
  box.textContent = "";
  if (!s.matches.length) {
    box.innerHTML = '<p class="muted">No match yet.</p>';
    return;
  }
  for (const m of s.matches) box.appendChild(matchCard(m, s.playerId));
}

function matchCard(m, me) {
  const div = document.createElement("div");
  div.className = "match";
  div.dataset.matchId = m.matchId;
  div.dataset.state = m.state;
  const rated = (p) => (m.ratings && m.ratings[p] != null ? ` [${m.ratings[p]}]` : "");
  const name = (p) => (p === me ? p + " (you)" : p) + rated(p);
  const spread = m.spread != null ? ` · spread ${m.spread}` : "";
  const region = m.region ? ` · region ${m.region} (worst ${m.worstLatency} ms)` : "";
  const balance = m.teamDifference != null ? ` · team averages ${m.teamDifference} apart` : "";
  const backfill = m.backfill ? " · you took an open seat of this running match (backfill)" : "";
  div.textContent = `${m.state} · ${m.worldType || "?"} · ${m.matchId}${region}${spread}${balance}${backfill}`;
  if (m.region) div.dataset.region = m.region;
  if (m.backfill) div.dataset.backfill = "yes";
  // Backfills add players to the record: those not in a team line are shown too.
  const inTeams = new Set((m.teams || []).flat());
  if (m.teams) {
    m.teams.forEach((team, i) => {
      div.appendChild(line("team", `Team ${i + 1}: ${team.map(name).join(", ")}`)).dataset.team = String(i + 1);
    });
  }
  const rest = m.participants.filter((p) => !inTeams.has(p));
  if (rest.length) div.appendChild(line("players", (m.teams ? "Also: " : "Players: ") + rest.map(name).join(", ")));
  if (m.assignment && m.state === "ASSIGNED") div.appendChild(seatLine(m, me));
  else if (m.assignment) div.appendChild(line("assignment", `Played on ${m.assignment.connection}`)).dataset.connection = m.assignment.connection;
  if (m.state === "FINISHED") {
    const result = line("result", m.result ? `Result: ${describeResult(m.result, me)}` : "Finished");
    if (m.rating) {
      result.textContent += ` · ${describeRating(m.rating)}`;
      result.dataset.ratingAfter = String(Math.round(m.rating.after));
    }
    div.appendChild(result);
  }
  return div;
}

function line(cls, text) {
  const span = document.createElement("span");
  span.className = cls;
  span.textContent = text;
  return span;
}

// The running game's server (the local stack's demo game server): join it
// with this player's seat, or leave it (it then asks for a backfill).
function seatLine(m, me) {
  const a = m.assignment;
  const seat = page.seats.get(m.matchId) || {};
  const el = line("assignment", `Server ${a.connection}` + (a.token ? " · your token " + a.token.slice(0, 8) + "…" : ""));
  el.dataset.connection = a.connection;
  if (seat.joined) el.dataset.joined = seat.joined;
  if (seat.left) el.dataset.left = seat.left;
  // Who I am to the game server: my seat token, or (seated by a backfill
  // after the assignment was made) my player id.
  const query = `match=${encodeURIComponent(m.matchId)}&` + (a.token ? `token=${encodeURIComponent(a.token)}` : `player=${encodeURIComponent(me)}`);
  const join = button("join-server", seat.joinText || "Join the game server", () => gameServer(m.matchId, a, `/join?${query}`, "joined"));
  const leave = button("leave-game", seat.leaveText || "Leave the game", () => gameServer(m.matchId, a, `/leave?${query}`, "left"));
  leave.disabled = seat.left === "yes";
  el.append(" ", join, " ", leave);
  return el;
}

function button(cls, text, onclick) {
  const b = document.createElement("button");
  b.className = cls;
  b.textContent = text;
  b.onclick = onclick;
  return b;
}

async function gameServer(matchId, a, path, what) {
  const seat = { ...(page.seats.get(matchId) || {}) };
  try {
    const res = await fetch(`http://${a.connection}${path}`);
    const json = await res.json().catch(() => ({}));
    seat[what] = res.ok ? "yes" : "no";
    if (what === "joined") seat.joinText = res.ok ? "Joined" : `Refused (${res.status})`;
    else seat.leaveText = res.ok ? "Left: your seat is being backfilled" : `Refused (${res.status})`;
    log(`game server ${a.connection}: ${res.status} ${json.message || ""}`, json);
  } catch (e) {
    log(`game server ${a.connection} unreachable: ${e}`);
  }
  page.seats.set(matchId, seat);
  render();
}

// my-status, remembering the state's version when asked: an answer never
// overrides what a push or an answer said after the request went out.
async function refreshStatus() {
  const mm = page.mm;
  if (!mm) return;
  const sentAt = page.player.version;
  const data = await mm.myStatus().catch((e) => {
    log(`my-status failed: ${e.message || e}`);
    return null;
  });
  if (!data || mm !== page.mm) return;
  page.polls++;
  dispatch({ type: "status", data, sentAt });
}

// Poll my-status: every second while a rated ticket's window widens, else every 3 s.
function schedulePoll() {
  clearTimeout(page.poll);
  if (!page.mm) return;
  const s = page.player;
  const fast = s.phase === "QUEUED" && s.queue && s.queue.rating !== undefined;
  page.poll = setTimeout(async () => {
    await refreshStatus();
    schedulePoll();
  }, fast ? 1000 : 3000);
}

async function connect() {
  if (page.mm) return disconnect();
  const sub = $("player").value.trim();
  if (!sub) {
    dispatch({ type: "failed", op: "connect", code: null, message: "Pick a player name first." });
    return;
  }
  const rating = $("rating").value.trim();
  const claims = rating === "" || !world()?.rated ? {} : { mmr: Number(rating) };
  // Development tokens from this stack's /dev/token; minted once here so a
  // refused one shows, then again whenever the socket reconnects.
  const token = devToken(sub, { httpUrl: location.origin, claims });
  try {
    await token({ refresh: true });
  } catch (e) {
    dispatch({ type: "failed", op: "connect", code: null, message: e.message });
    return;
  }
  localStorage.setItem(NAME_KEY, sub);
  localStorage.setItem(CONNECTED_KEY, sub);
  const mm = new Matchmaking({ httpUrl: location.origin, wsUrl: page.config.websocketUrl, token, heartbeatSeconds: page.config.heartbeatSeconds });
  page.mm = mm;
  page.player = initialState(sub);
  page.seats.clear();
  mm.on("open", ({ reconnected }) => {
    page.connected = true;
    $("connection").textContent = (reconnected ? "reconnected as " : "connected as ") + sub;
    refreshStatus();
    render();
  });
  mm.on("close", ({ willReconnect }) => {
    page.connected = false;
    $("connection").textContent = willReconnect ? "disconnected; reconnecting…" : "disconnected";
    render();
  });
  mm.on("reconnecting", ({ attempt, delayMs }) => {
    $("connection").textContent = `reconnecting (attempt ${attempt}, in ${(delayMs / 1000).toFixed(1)} s)…`;
  });
  mm.on("message", (msg) => {
    log(describeMessage(msg, sub), msg);
    if (msg.type !== "PONG") dispatch({ type: "push", message: msg });
  });
  mm.on("duplicate", (msg) => log(`(repeat dropped) ${describeMessage(msg, sub)}`, msg));
  mm.on("text", ({ data }) => log(describeMessage({ type: "TEXT", data }, sub)));
  render();
  schedulePoll();
  mm.connect().catch((e) => dispatch({ type: "failed", op: "connect", code: null, message: e.message }));
}

function disconnect() {
  localStorage.removeItem(CONNECTED_KEY);
  clearTimeout(page.poll);
  page.mm.close();
  page.mm = null;
  page.connected = false;
  $("connection").textContent = "not connected";
  render();
}

// `{"eu": 30, ...}` from "eu=30, us=120", for a world with regions.
function latencies() {
  if (!world()?.regions) return undefined;
  const out = {};
  for (const part of $("latencies").value.split(",").map((p) => p.trim()).filter((p) => p)) {
    const [name, ms] = part.split("=").map((x) => x.trim());
    out[name] = Number(ms);
  }
  return Object.keys(out).length ? out : undefined;
}

// The fields the selected world uses: a rating for rated worlds; latencies
// (a real default to edit, never a placeholder that looks like one) for
// worlds with regions.
function showWorldFields(keepLatencies) {
  const w = world();
  $("rating-label").hidden = !w?.rated;
  $("latencies-label").hidden = !w?.regions;
  if (w?.regions && !keepLatencies) $("latencies").value = w.regions.map((r, i) => `${r}=${30 + 60 * i}`).join(", ");
}

const actions = {
  join: () => call("join", (mm) => mm.join({ worldType: $("world").value, latencies: latencies() })),
  leave: () => call("leave", (mm) => mm.leave({ worldType: page.player.queue?.worldType || $("world").value })),
  createParty: () => {
    const members = $("invite").value.split(",").map((m) => m.trim()).filter((m) => m);
    return call("createParty", (mm) => mm.createParty({ worldType: $("world").value, members, latencies: latencies() }));
  },
  joinParty: () => {
    const party = page.player.party;
    if (!party) return null;
    const w = page.config.worlds.find((x) => x.worldType === party.worldType);
    return call("joinParty", (mm) => mm.joinParty(party.partyId, w?.regions ? { latencies: latencies() } : {}));
  },
  leaveParty: () => {
    const party = page.player.party;
    return party ? call("cancelParty", (mm) => mm.cancelParty(party.partyId)) : null;
  },
  answer: (accept) => {
    const p = page.player.proposal;
    return p ? call("accept", (mm) => mm.accept({ matchId: p.matchId, accept })) : null;
  },
};

export async function startPlay() {
  page.config = await (await fetch("/dev/config")).json();
  for (const w of page.config.worlds) {
    const opt = document.createElement("option");
    opt.value = w.worldType;
    opt.textContent = w.teams > 1 ? `${w.worldType} (${w.teams} teams of ${w.teamSize})` : `${w.worldType} (${w.teamSize} players)`;
    $("world").appendChild(opt);
  }
  const params = new URLSearchParams(location.search);
  // A reload remembers the name; a name in the URL (one per tab) wins.
  const remembered = localStorage.getItem(NAME_KEY);
  $("player").value = params.get("player") || remembered || "player-" + Math.random().toString(36).slice(2, 7);
  if (params.get("world")) $("world").value = params.get("world");
  if (params.get("rating")) $("rating").value = params.get("rating");
  if (params.get("latencies")) $("latencies").value = params.get("latencies");
  showWorldFields(params.has("latencies"));
  $("world").onchange = () => showWorldFields(false);
  $("connect").onclick = connect;
  $("join").onclick = actions.join;
  $("leave").onclick = actions.leave;
  $("create-party").onclick = actions.createParty;
  $("join-party").onclick = actions.joinParty;
  $("leave-party").onclick = actions.leaveParty;
  $("ready-accept").onclick = () => actions.answer(true);
  $("ready-decline").onclick = () => actions.answer(false);
  render();
  // Back where the reload left off: connected, with the state from my-status.
  if (!params.get("player") && remembered && localStorage.getItem(CONNECTED_KEY) === remembered) connect();
}
