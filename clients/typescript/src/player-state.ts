// One player's matchmaking state on the client, fed by pushes, HTTP answers
// and my-status polls through a pure reducer, so a UI renders from it alone
// and a unit test can replay any order of events. Its two rules against a
// UI that contradicts itself: a match only moves forward (FORMED → ASSIGNED
// → FINISHED, whatever order the news comes in), and a my-status answer
// never overrides what was learned after its request was sent.
import type {
  MatchId,
  MatchResult,
  MatchState,
  MyStatusResult,
  PartyView,
  PlayerId,
  RatingChange,
  RuleOutcome,
  SeatAssignment,
  ServerMessage,
  WorldName,
} from "./types.js";

/** What the player is doing, as a UI's headline. The idle ones (may join): IDLE, FINISHED, EXPIRED, REMOVED. */
export type Phase = "IDLE" | "PARTY" | "QUEUED" | "PROPOSED" | "MATCHED" | "ASSIGNED" | "FINISHED" | "EXPIRED" | "REMOVED";

/** One match the player was in, as far as it got. */
export interface MatchCard {
  matchId: MatchId;
  worldType: WorldName;
  participants: PlayerId[];
  teams?: PlayerId[][];
  ratings?: Record<string, number>;
  spread?: number;
  teamDifference?: number;
  region?: string;
  worstLatency?: number;
  /** Worlds with match rules: each rule as it stood when the match formed (`shared`: the values an intersection found, e.g. the map to play). */
  rules?: RuleOutcome[];
  /** A backfill seated this player in the running match. */
  backfill?: boolean;
  state: MatchState;
  /** This player's seat, once a server is assigned. */
  assignment?: SeatAssignment;
  result?: MatchResult;
  /** This player's rating change (rated worlds), once the result is in. */
  rating?: RatingChange;
}

export interface QueuePlace {
  worldType: WorldName;
  position: number | null;
  queueSize: number | null;
  estimatedWaitSeconds: number | null;
  rating?: number;
  ratingWindow?: number | null;
  relaxesInSeconds?: number;
}

export interface ProposalState {
  matchId: MatchId;
  worldType: WorldName;
  acceptBy: number;
  participants: PlayerId[];
  /** How many accepted so far (the largest count heard). */
  accepted: number;
  /** This player has accepted. */
  answered: boolean;
  backfillOf?: MatchId;
}

export interface PlayerState {
  playerId: PlayerId;
  /** Bumped by every event that changed the state; a my-status request remembers it (see {@link StatusEvent}). */
  version: number;
  phase: Phase;
  queue: QueuePlace | null;
  /** The party the player is in or invited to. */
  party: PartyView | null;
  proposal: ProposalState | null;
  /** The match the headline is about (MATCHED, ASSIGNED, FINISHED). */
  matchId: MatchId | null;
  /** Every match seen, newest first. */
  matches: MatchCard[];
  /** What last happened, in words, when the phase alone does not say (a cancelled proposal, a party gone). */
  note: string | null;
  /** The last refused request; cleared when the state moves on. */
  error: { code: string | null; message: string } | null;
}

/** A my-status answer; `sentAt` is the state's `version` when the request was sent. */
export interface StatusEvent {
  type: "status";
  data: MyStatusResult;
  sentAt: number;
}
export interface PushEvent {
  type: "push";
  message: ServerMessage;
}
/** The success answer of one of the player's calls. */
export interface AnswerEvent {
  type: "answer";
  op: "join" | "leave" | "accept" | "createParty" | "joinParty" | "cancelParty";
  data: unknown;
}
/** A refused call: `code` and `data` of a documented error, else just the message. */
export interface FailedEvent {
  type: "failed";
  op: string;
  code: string | null;
  message: string;
  data?: Record<string, unknown>;
}
export type PlayerEvent = StatusEvent | PushEvent | AnswerEvent | FailedEvent;

export const IDLE_PHASES: readonly Phase[] = ["IDLE", "FINISHED", "EXPIRED", "REMOVED"];
const MATCHED_PHASES: readonly Phase[] = ["MATCHED", "ASSIGNED", "FINISHED"];
const MATCH_ORDER: Record<MatchState, number> = { FORMED: 0, ASSIGNED: 1, FINISHED: 2 };
const PHASE_OF: Record<MatchState, Phase> = { FORMED: "MATCHED", ASSIGNED: "ASSIGNED", FINISHED: "FINISHED" };

export function initialState(playerId: PlayerId): PlayerState {
  return { playerId, version: 0, phase: "IDLE", queue: null, party: null, proposal: null, matchId: null, matches: [], note: null, error: null };
}

export function isIdle(phase: Phase): boolean {
  return IDLE_PHASES.includes(phase);
}

/** The card of `matchId`, if seen. */
export function matchOf(state: PlayerState, matchId: MatchId | null): MatchCard | undefined {
  return state.matches.find((m) => m.matchId === matchId);
}

/** The state after `event` (a new object; `state` is left as it was). */
export function reduce(state: PlayerState, event: PlayerEvent): PlayerState {
  let next: PlayerState;
  switch (event.type) {
    case "status":
      // Anything learned after the request went out is newer than its answer.
      if (event.sentAt < state.version) return mergeStale(state, event.data);
      next = fromStatus(state, event.data);
      break;
    case "push":
      next = fromPush(state, event.message);
      break;
    case "answer":
      next = fromAnswer(state, event);
      break;
    case "failed":
      next = fromFailure(state, event);
      return { ...next, version: state.version + 1, error: { code: event.code, message: event.message } };
  }
  if (next === state) return state;
  const moved = next.phase !== state.phase || next.matchId !== state.matchId || matchOf(next, next.matchId)?.state !== matchOf(state, state.matchId)?.state;
  return { ...next, version: state.version + 1, error: moved ? null : next.error };
}

/** A late my-status answer: only what cannot be older than what the state has (a match's players, a later match state). */
function mergeStale(state: PlayerState, data: MyStatusResult): PlayerState {
  if (data.status !== "MATCHED" || !matchOf(state, data.match.matchId)) return state;
  const matches = upsert(state.matches, cardOf(data.match, data.match.state, state.playerId));
  // The headline's match may be further on than the headline said: the
  // headline follows it (forward only: the card's state never moves back).
  const headline = data.match.matchId === state.matchId && MATCHED_PHASES.includes(state.phase);
  const phase = headline ? PHASE_OF[matches.find((m) => m.matchId === state.matchId)!.state] : state.phase;
  return { ...state, matches, phase };
}

function fromStatus(state: PlayerState, data: MyStatusResult): PlayerState {
  switch (data.status) {
    case "IDLE": {
      // An idle phase keeps its reason (FINISHED, a cancelled proposal...); an invitation is not in my-status.
      const party = state.party && !joined(state.party, state.playerId) ? state.party : null;
      if (isIdle(state.phase) && party === state.party) return state;
      if (isIdle(state.phase)) return { ...state, party };
      return { ...state, phase: "IDLE", queue: null, proposal: null, party, note: null };
    }
    case "PARTY":
      return { ...state, phase: "PARTY", party: data.party, queue: null, proposal: null, note: null };
    case "QUEUED": {
      const { status: _s, party, ...place } = data;
      const same = sameQueue(state.queue, place);
      if (state.phase === "QUEUED" && same && (party ?? null) === state.party) return state;
      return { ...state, phase: "QUEUED", queue: { ...place }, party: party ?? keepInvitation(state), proposal: null };
    }
    case "PROPOSED": {
      const p = data.proposal;
      const proposal: ProposalState = {
        matchId: p.matchId,
        worldType: p.worldType,
        acceptBy: p.acceptBy,
        participants: p.participants,
        accepted: Math.max(p.accepted.length, state.proposal?.matchId === p.matchId ? state.proposal.accepted : 0),
        answered: p.accepted.includes(state.playerId),
      };
      if (state.phase === "PROPOSED" && state.proposal && sameJson(state.proposal, proposal)) return state;
      return { ...state, phase: "PROPOSED", proposal, queue: null };
    }
    case "MATCHED": {
      // A join's or an accept's match record has no state yet: it was just formed.
      const card = cardOf(data.match, (data.match as { state?: MatchState }).state ?? "FORMED", state.playerId);
      const merged = withMatch(state, card, true);
      return sameJson(merged, state) ? state : merged;
    }
  }
  return state;
}

function fromPush(state: PlayerState, msg: ServerMessage): PlayerState {
  switch (msg.type) {
    case "QUEUED": {
      const { type: _t, ...place } = msg;
      // The push has no rating fields: keep those the join answer gave.
      const before = state.queue?.worldType === place.worldType ? state.queue : null;
      return { ...state, phase: "QUEUED", queue: { ...before, ...place }, proposal: null, note: null };
    }
    case "MATCH_FOUND": {
      const card = cardOf(msg, "FORMED", state.playerId);
      if (msg.backfill) card.backfill = true;
      return withMatch(state, card, true);
    }
    case "MATCH_ASSIGNED":
      return withMatch(state, { ...cardOf(msg, "ASSIGNED", state.playerId), assignment: msg.assignment }, true);
    case "MATCH_RESULT": {
      const card = matchOf(state, msg.matchId) ?? { matchId: msg.matchId, worldType: msg.worldType, participants: [], state: "FINISHED" as MatchState };
      const done: MatchCard = { ...card, state: "FINISHED", result: msg.result };
      if (msg.rating) done.rating = msg.rating;
      // The headline moves only if it was about this match (a late push leaves a new queue alone).
      const about = state.matchId === msg.matchId ? MATCHED_PHASES.includes(state.phase) : state.phase === "IDLE";
      return withMatch(state, done, about);
    }
    case "TICKET_EXPIRED":
    case "TICKET_REMOVED": {
      if (state.phase !== "QUEUED" || state.queue?.worldType !== msg.worldType) return state;
      const phase = msg.type === "TICKET_EXPIRED" ? "EXPIRED" : "REMOVED";
      return { ...state, phase, queue: null, party: null, note: null };
    }
    case "PARTY_UPDATE": {
      const party = msg.party;
      const mine = joined(party, state.playerId);
      if (mine && party.state === "ASSEMBLING" && (isIdle(state.phase) || state.phase === "PARTY")) {
        return { ...state, party, phase: "PARTY", note: null };
      }
      if (mine && party.state === "QUEUED" && (isIdle(state.phase) || state.phase === "PARTY")) {
        const queue: QueuePlace = { worldType: party.worldType, position: null, queueSize: null, estimatedWaitSeconds: null };
        return { ...state, party, phase: "QUEUED", queue, note: null };
      }
      return { ...state, party };
    }
    case "PARTY_CANCELLED": {
      if (state.party && state.party.partyId !== msg.partyId) return state;
      const note = `party ${msg.partyId} was cancelled: ${words(msg.reason)}${msg.by ? ` (${msg.by})` : ""}`;
      const inIt = state.phase === "PARTY" || (state.phase === "QUEUED" && state.party !== null);
      return { ...state, party: null, note, ...(inIt ? { phase: "IDLE" as Phase, queue: null } : {}) };
    }
    case "MATCH_PROPOSED": {
      const proposal: ProposalState = {
        matchId: msg.matchId,
        worldType: msg.worldType,
        acceptBy: msg.acceptBy,
        participants: msg.participants,
        accepted: 0,
        answered: false,
      };
      if (msg.backfillOf) proposal.backfillOf = msg.backfillOf;
      return { ...state, phase: "PROPOSED", proposal, queue: null, note: null };
    }
    case "MATCH_ACCEPT_PROGRESS": {
      const p = state.proposal;
      if (!p || p.matchId !== msg.matchId || msg.accepted <= p.accepted) return state;
      return { ...state, proposal: { ...p, accepted: msg.accepted } };
    }
    case "MATCH_CANCELLED": {
      if (state.phase !== "PROPOSED" && state.proposal?.matchId !== msg.matchId) return state;
      return cancelled(state, msg.matchId, msg.worldType, msg.reason, msg.requeued);
    }
    default:
      return state; // PONG, and types this SDK does not know
  }
}

function fromAnswer(state: PlayerState, event: AnswerEvent): PlayerState {
  const data = event.data as Record<string, unknown> & { status?: string };
  switch (event.op) {
    case "join":
    case "createParty":
    case "joinParty":
      return data.status ? fromStatus(state, data as MyStatusResult) : state;
    case "leave": {
      const note = `you left the queue in ${String(data["worldType"] ?? state.queue?.worldType)}`;
      return { ...state, phase: "IDLE", queue: null, party: null, note };
    }
    case "accept":
      if (data.status === "ACCEPTED" && state.proposal && state.proposal.matchId === data["matchId"]) {
        const p = state.proposal;
        return { ...state, proposal: { ...p, accepted: Math.max(Number(data["accepted"]), p.accepted), answered: true } };
      }
      if (data.status === "CANCELLED") {
        return cancelled(state, String(data["matchId"]), String(data["worldType"]), "DECLINED", false, true);
      }
      return data.status === "MATCHED" ? fromStatus(state, data as MyStatusResult) : state;
    case "cancelParty":
      return { ...state, party: null, note: "you left the party", ...(isIdle(state.phase) ? {} : { phase: "IDLE" as Phase, queue: null }) };
  }
  return state;
}

/** A refusal that says where the player is: the match they are held by, their place in the queue. */
function fromFailure(state: PlayerState, event: FailedEvent): PlayerState {
  const data = event.data ?? {};
  if (event.code === "IN_MATCH" && typeof data["matchId"] === "string") {
    const old = matchOf(state, data["matchId"]);
    const assignment = data["assignment"] as SeatAssignment | undefined;
    const card: MatchCard = old ?? { matchId: data["matchId"], worldType: "", participants: [state.playerId], state: "FORMED" };
    return withMatch(state, assignment ? { ...card, state: later(card.state, "ASSIGNED"), assignment } : card, true);
  }
  if (event.code === "ALREADY_QUEUED" && typeof data["worldType"] === "string") {
    const { error: _e, party, ...place } = data as unknown as QueuePlace & { error: string; party?: PartyView };
    return { ...state, phase: "QUEUED", queue: place, party: party ?? state.party };
  }
  return state;
}

function cancelled(state: PlayerState, matchId: string, worldType: string, reason: string, requeued: boolean, self = false): PlayerState {
  const why = self ? "you declined" : words(reason);
  const note = `match ${matchId} was cancelled (${why}); ` + (requeued ? "you are back in the queue at your place" : "you left the queue");
  const queue: QueuePlace | null = requeued ? { worldType, position: null, queueSize: null, estimatedWaitSeconds: null } : null;
  return { ...state, phase: requeued ? "QUEUED" : "IDLE", proposal: null, queue, note };
}

/** `state` with `card` merged in (never moving a match back); the headline follows it when `focus`. */
function withMatch(state: PlayerState, card: MatchCard, focus: boolean): PlayerState {
  const matches = upsert(state.matches, card);
  if (!focus) return { ...state, matches };
  const merged = matches.find((m) => m.matchId === card.matchId)!;
  // An older match's news never takes the headline from a newer one.
  const current = matchOf(state, state.matchId);
  if (current && current.matchId !== card.matchId && index(state, current.matchId) < index(state, card.matchId)) {
    return { ...state, matches };
  }
  const fresh = state.matchId !== card.matchId;
  return {
    ...state,
    matches,
    matchId: card.matchId,
    phase: PHASE_OF[merged.state],
    queue: null,
    proposal: null,
    party: fresh && state.party && joined(state.party, state.playerId) ? null : state.party,
    note: fresh ? null : state.note,
  };
}

function upsert(matches: MatchCard[], card: MatchCard): MatchCard[] {
  const i = matches.findIndex((m) => m.matchId === card.matchId);
  if (i < 0) return [card, ...matches];
  const old = matches[i]!;
  const forward = MATCH_ORDER[card.state] >= MATCH_ORDER[old.state];
  const merged: MatchCard = forward ? { ...old, ...defined(card) } : { ...defined(card), ...old };
  merged.state = later(old.state, card.state);
  // Players only join a match's list (backfills add them; those who left stay listed).
  merged.participants = [...old.participants, ...card.participants.filter((p) => !old.participants.includes(p))];
  if (old.backfill || card.backfill) merged.backfill = true;
  return matches.map((m, j) => (j === i ? merged : m));
}

type MatchLike = { matchId: MatchId; worldType: WorldName; participants: PlayerId[] } & { [key: string]: unknown };

/** The card of a match record (a push, an answer, my-status); `me` picks this player's rating change. */
function cardOf(m: MatchLike, state: MatchState, me: PlayerId): MatchCard {
  const card: MatchCard = { matchId: m.matchId, worldType: m.worldType, participants: [...m.participants], state };
  for (const key of ["teams", "ratings", "spread", "teamDifference", "region", "worstLatency", "rules", "assignment", "result"] as const) {
    if (m[key] !== undefined) (card as unknown as Record<string, unknown>)[key] = m[key];
  }
  const changes = m["ratingChanges"] as Record<string, RatingChange> | undefined;
  const mine = changes?.[me];
  if (mine) card.rating = mine;
  return card;
}

function later(a: MatchState, b: MatchState): MatchState {
  return MATCH_ORDER[a] >= MATCH_ORDER[b] ? a : b;
}

function index(state: PlayerState, matchId: MatchId): number {
  return state.matches.findIndex((m) => m.matchId === matchId);
}

function joined(party: PartyView, me: PlayerId): boolean {
  return party.members.some((m) => m.playerId === me && m.joined);
}

function keepInvitation(state: PlayerState): PartyView | null {
  return state.party && !joined(state.party, state.playerId) ? state.party : null;
}

function sameQueue(a: QueuePlace | null, b: QueuePlace): boolean {
  return a !== null && sameJson(a, b);
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function defined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function words(code: string): string {
  return code.toLowerCase().replaceAll("_", " ");
}

/** Where the player's world stands, for {@link controls}. */
export interface ControlsContext {
  /** The socket is open (a world with presence refuses joins without one; pushes need it). */
  connected: boolean;
  /** The rule set names game servers (`servers.scope`): a FORMED match then holds its players (`IN_MATCH`). */
  gameServers: boolean;
}

/** Which calls the API would accept now (a UI enables exactly these). */
export interface Controls {
  join: boolean;
  leave: boolean;
  createParty: boolean;
  joinParty: boolean;
  leaveParty: boolean;
  accept: boolean;
  decline: boolean;
  /** The world may be changed (not while queued, proposed, matched or in a party). */
  changeWorld: boolean;
}

export function controls(state: PlayerState, ctx: ControlsContext): Controls {
  const on = ctx.connected;
  const member = state.party !== null && joined(state.party, state.playerId);
  const invited = state.party !== null && !member && state.party.members.some((m) => m.playerId === state.playerId);
  // Free to queue: idle, or matched where nobody assigns a server (the match holds nobody).
  const free = isIdle(state.phase) || (state.phase === "MATCHED" && !ctx.gameServers);
  const proposed = state.phase === "PROPOSED" && state.proposal !== null;
  return {
    join: on && free && !member,
    leave: on && state.phase === "QUEUED",
    createParty: on && free && !member,
    joinParty: on && free && invited,
    leaveParty: on && (member || invited) && (free || state.phase === "PARTY" || state.phase === "QUEUED"),
    accept: on && proposed && !state.proposal!.answered,
    decline: on && proposed,
    changeWorld: free && !member,
  };
}
