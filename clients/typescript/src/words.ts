// Every message of docs/asyncapi.yaml, and a player's state, in words a
// person reads: what a UI shows instead of raw JSON. A test holds the
// message list to the spec's, so a new message needs its sentence here.
import { matchOf, type PlayerState } from "./player-state.js";
import type { MatchResult, PlayerId, RatingChange, RuleOutcome, ServerMessage } from "./types.js";

/** One sentence for a server message (`me`: the player, to leave out of "with ..."); a text frame is the heartbeat failure. */
export function describeMessage(msg: ServerMessage | { type: "TEXT"; data: string }, me?: PlayerId): string {
  const others = (players: PlayerId[]) => players.filter((p) => p !== me).join(", ") || "nobody else";
  switch (msg.type) {
    case "TEXT":
      return `the heartbeat was not recorded (${msg.data}); the next one retries`;
    case "PONG":
      return msg.registered
        ? `heartbeat answered: keep sending one every ${msg.heartbeatSeconds} s (presence lapses after ${msg.presenceTimeoutSeconds} s)`
        : "heartbeat answered, but the registration had lapsed: the server closes this socket and the client reconnects";
    case "QUEUED":
      return `queued in ${msg.worldType} at position ${msg.position} of ${msg.queueSize}` + wait(msg.estimatedWaitSeconds);
    case "MATCH_FOUND":
      return msg.backfill
        ? `seated in the running match ${msg.matchId} in ${msg.worldType} (backfill) with ${others(msg.participants)}`
        : `match ${msg.matchId} found in ${msg.worldType} with ${others(msg.participants)}`;
    case "MATCH_ASSIGNED":
      return `match ${msg.matchId} has a server: connect to ${msg.assignment.connection}` + (msg.assignment.token ? " with your seat token" : "");
    case "MATCH_RESULT":
      return `match ${msg.matchId} finished: ${describeResult(msg.result, me)}` + (msg.rating ? `; ${describeRating(msg.rating)}` : "");
    case "TICKET_EXPIRED":
      return `your ticket in ${msg.worldType} waited too long and expired; join again`;
    case "TICKET_REMOVED":
      return msg.reason === "OPERATOR"
        ? `an operator removed your ticket in ${msg.worldType}; join again`
        : `your ticket in ${msg.worldType} was removed: ${msg.worldType} needs a live connection and you had none; join again`;
    case "PARTY_UPDATE": {
      const p = msg.party;
      const who = p.members.map((m) => `${m.playerId}${m.joined ? " ✓" : " (invited)"}`).join(", ");
      const state = p.state === "ASSEMBLING" ? "assembling" : p.state === "QUEUED" ? "queued" : "in a ready check";
      return `party ${p.partyId} of ${p.leader} in ${p.worldType} is ${state}: ${who}`;
    }
    case "PARTY_CANCELLED":
      return `party ${msg.partyId} was cancelled: ${PARTY_REASONS[msg.reason] ?? msg.reason.toLowerCase()}` + (msg.by ? ` (${msg.by})` : "");
    case "MATCH_PROPOSED":
      return (
        `ready check for ${msg.backfillOf ? `open seats in match ${msg.backfillOf}` : `match ${msg.matchId}`} in ${msg.worldType} ` +
        `with ${others(msg.participants)}: accept within ${Math.max(0, Math.round((msg.acceptBy - Date.now()) / 1000))} s`
      );
    case "MATCH_ACCEPT_PROGRESS":
      return `${msg.accepted} of ${msg.total} accepted match ${msg.matchId}; waiting for the others`;
    case "MATCH_CANCELLED":
      return (
        `match ${msg.matchId} was cancelled (${CANCEL_REASONS[msg.reason] ?? msg.reason.toLowerCase()}); ` +
        (msg.requeued ? "you are back in the queue at your place" : "you are no longer queued")
      );
    default:
      return `a ${(msg as { type: string }).type} message`;
  }
}

const PARTY_REASONS: Record<string, string> = {
  LEFT: "a member left",
  DECLINED: "an invited player declined",
  DISCONNECTED: "a member lost their connection",
  EXPIRED: "not everyone joined in time",
};
const CANCEL_REASONS: Record<string, string> = {
  DECLINED: "declined",
  LEFT: "a player left the queue",
  TIMEOUT: "not everyone accepted in time",
  OPERATOR: "an operator cancelled it",
};

/** A result as reported: places, or cancelled. */
export function describeResult(result: MatchResult, me?: PlayerId): string {
  if (result.cancelled) return "cancelled, no winner";
  if (result.playerRanks) {
    const mine = me !== undefined ? result.playerRanks[me] : undefined;
    if (mine !== undefined) return `you placed ${ordinal(mine)} of ${Object.keys(result.playerRanks).length}`;
    return Object.entries(result.playerRanks).map(([p, r]) => `${p} ${ordinal(r)}`).join(", ");
  }
  if (result.teamRanks) return result.teamRanks.map((r, i) => `team ${i + 1} ${ordinal(r)}`).join(", ");
  return "no placings";
}

export function describeRating(change: RatingChange): string {
  return `your rating ${Math.round(change.before)} → ${Math.round(change.after)}`;
}

/** The line under the headline: the details of the state. */
export function describeState(state: PlayerState): string {
  const parts: string[] = [];
  const match = matchOf(state, state.matchId);
  switch (state.phase) {
    case "QUEUED": {
      const q = state.queue;
      if (!q) break;
      if (q.position === null) parts.push(`${q.worldType}: waiting for your place…`);
      else parts.push(`${q.worldType}: position ${q.position} of ${q.queueSize}` + wait(q.estimatedWaitSeconds));
      if (q.rating !== undefined) {
        const window = q.ratingWindow == null ? "any rating (relaxed)" : `±${Math.round(q.ratingWindow)}`;
        parts.push(`rating ${q.rating}, window ${window}` + (q.ratingWindow != null ? `, relaxes in ${q.relaxesInSeconds} s` : ""));
      }
      if (state.party) parts.push(`with your party ${state.party.partyId}`);
      break;
    }
    case "PARTY":
      parts.push(`waiting for the party to assemble`);
      break;
    case "PROPOSED":
      if (state.proposal) parts.push(`match ${state.proposal.matchId} awaits everyone's answer (${state.proposal.accepted} of ${state.proposal.participants.length} accepted)`);
      break;
    case "MATCHED":
      if (match) parts.push(`match ${match.matchId}: waiting for a game server`);
      if (match?.rules) parts.push(...sharedValues(match.rules));
      break;
    case "ASSIGNED":
      if (match?.assignment) parts.push(`match ${match.matchId}: connect to ${match.assignment.connection}`);
      else if (match) parts.push(`match ${match.matchId}: the game is on`);
      if (match?.rules) parts.push(...sharedValues(match.rules));
      break;
    case "FINISHED":
      if (match) {
        parts.push(`match ${match.matchId} finished` + (match.result ? `: ${describeResult(match.result, state.playerId)}` : ""));
        if (match.rating) parts.push(describeRating(match.rating));
      }
      break;
    case "EXPIRED":
      parts.push("your ticket waited too long and expired; join again");
      break;
    case "REMOVED":
      parts.push("your ticket was removed: the world needs a live connection; join again");
      break;
    case "IDLE":
      break;
  }
  if (state.note) parts.push(state.note);
  return parts.join(" · ");
}

/** What the match's intersection rules found in common (e.g. `commonMap: harbor`), the rules in force only. */
function sharedValues(rules: RuleOutcome[]): string[] {
  return rules.filter((r) => r.inForce && r.shared?.length).map((r) => `${r.name}: ${r.shared!.join(", ")}`);
}

function wait(seconds: number | null): string {
  return seconds == null ? " · estimated wait unknown" : ` · estimated wait ${seconds} s`;
}

function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${s}`;
}
