import type { ServerMessage } from "./types.js";

export interface DedupeOptions {
  /** How many ids to remember (oldest forgotten first); default 2000. */
  maxKeys?: number;
  /** How long an id-less message (TICKET_EXPIRED, TICKET_REMOVED) stays a duplicate, ms; default 60 000. */
  windowMs?: number;
}

/**
 * Drops the repeats of at-least-once delivery (docs/asyncapi.yaml,
 * "Delivery"), and stale messages that a retry brings after a later one:
 *
 * - MATCH_FOUND, MATCH_ASSIGNED, MATCH_RESULT, MATCH_PROPOSED and
 *   MATCH_CANCELLED: once per `matchId` (each is said once per match);
 * - MATCH_ACCEPT_PROGRESS: only a larger `accepted` than before, and nothing
 *   about a proposal after its MATCH_FOUND or MATCH_CANCELLED;
 * - PARTY_CANCELLED once per `partyId`; PARTY_UPDATE unless it equals the
 *   party's previous update, and nothing after its PARTY_CANCELLED;
 * - TICKET_EXPIRED and TICKET_REMOVED once per world within `windowMs`,
 *   until a QUEUED for that world (a new ticket).
 *
 * QUEUED and PONG are never repeats (they are not retried).
 */
export class Deduper {
  #seen = new Map<string, number>();
  #maxKeys: number;
  #windowMs: number;

  constructor(options: DedupeOptions = {}) {
    this.#maxKeys = options.maxKeys ?? 2000;
    this.#windowMs = options.windowMs ?? 60_000;
  }

  /** Whether `msg` is new (and remembers it); false for a repeat or a stale message. */
  accept(msg: ServerMessage, now: number = Date.now()): boolean {
    switch (msg.type) {
      case "QUEUED":
        for (const kind of ["TICKET_EXPIRED", "TICKET_REMOVED"]) this.#seen.delete(`${kind}|${msg.worldType}`);
        return true;
      case "PONG":
        return true;
      case "MATCH_FOUND":
      case "MATCH_ASSIGNED":
      case "MATCH_RESULT":
      case "MATCH_CANCELLED":
        return this.#first(`${msg.type}|${msg.matchId}`, now);
      case "MATCH_PROPOSED":
        if (this.#decided(msg.matchId)) return false;
        return this.#first(`${msg.type}|${msg.matchId}`, now);
      case "MATCH_ACCEPT_PROGRESS": {
        if (this.#decided(msg.matchId)) return false;
        const key = `${msg.type}|${msg.matchId}`;
        const before = this.#seen.get(key);
        if (before !== undefined && before >= msg.accepted) return false;
        this.#remember(key, msg.accepted);
        return true;
      }
      case "PARTY_CANCELLED":
        return this.#first(`${msg.type}|${msg.partyId}`, now);
      case "PARTY_UPDATE": {
        if (this.#seen.has(`PARTY_CANCELLED|${msg.party.partyId}`)) return false;
        const key = `${msg.type}|${msg.party.partyId}|${stableJson(msg.party)}`;
        if (this.#seen.has(key)) return false;
        // Only the party's latest update counts: A, B, A again is news.
        for (const k of this.#seen.keys()) {
          if (k.startsWith(`${msg.type}|${msg.party.partyId}|`)) this.#seen.delete(k);
        }
        this.#remember(key, now);
        return true;
      }
      case "TICKET_EXPIRED":
      case "TICKET_REMOVED": {
        const key = `${msg.type}|${msg.worldType}`;
        const at = this.#seen.get(key);
        if (at !== undefined && now - at < this.#windowMs) return false;
        this.#remember(key, now);
        return true;
      }
      default:
        // A type this SDK does not know yet: never dropped.
        return true;
    }
  }

  #decided(matchId: string): boolean {
    return this.#seen.has(`MATCH_FOUND|${matchId}`) || this.#seen.has(`MATCH_CANCELLED|${matchId}`);
  }

  #first(key: string, now: number): boolean {
    if (this.#seen.has(key)) return false;
    this.#remember(key, now);
    return true;
  }

  #remember(key: string, value: number): void {
    this.#seen.delete(key);
    this.#seen.set(key, value);
    while (this.#seen.size > this.#maxKeys) {
      const oldest = this.#seen.keys().next().value;
      if (oldest === undefined) break;
      this.#seen.delete(oldest);
    }
  }
}

/** JSON with object keys sorted: equal values, equal text. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
