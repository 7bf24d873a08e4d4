import type { OperationId } from "./types.js";

export type HttpMethod = "GET" | "POST" | "PUT" | "DELETE";

/** A route of the HTTP API: who may call it is in `scope` (the rule set's setting naming the scope), if anyone but a player. */
export interface RouteSpec {
  readonly method: HttpMethod;
  readonly path: string;
  readonly scope?:
    | "ratings.writerScope"
    | "attributeStore.writerScope"
    | "servers.scope"
    | "admin.readScope"
    | "admin.actionScope";
}

/**
 * Every operation of docs/openapi.yaml by its operationId (the compiler
 * wants one entry per generated operation; a test holds method, path and
 * scope to the spec and to the server's route table).
 */
export const ROUTES = {
  join: { method: "POST", path: "/v1/matching/join" },
  leave: { method: "POST", path: "/v1/matching/leave" },
  accept: { method: "POST", path: "/v1/matching/accept" },
  queueStatus: { method: "GET", path: "/v1/matching/queue-status/{worldType}" },
  myStatus: { method: "GET", path: "/v1/matching/my-status" },
  match: { method: "GET", path: "/v1/matching/matches/{matchId}" },
  assign: { method: "POST", path: "/v1/matching/matches/{matchId}/assignment", scope: "servers.scope" },
  report: { method: "POST", path: "/v1/matching/matches/{matchId}/result", scope: "servers.scope" },
  backfill: { method: "POST", path: "/v1/matching/matches/{matchId}/backfill", scope: "servers.scope" },
  cancelBackfill: { method: "DELETE", path: "/v1/matching/matches/{matchId}/backfill", scope: "servers.scope" },
  backfillKeepalive: { method: "POST", path: "/v1/matching/matches/{matchId}/backfill/keepalive", scope: "servers.scope" },
  rating: { method: "PUT", path: "/v1/ratings/{playerId}", scope: "ratings.writerScope" },
  attributes: { method: "PUT", path: "/v1/attributes/{playerId}", scope: "attributeStore.writerScope" },
  avoid: { method: "PUT", path: "/v1/avoid/{playerId}", scope: "servers.scope" },
  createParty: { method: "POST", path: "/v1/parties" },
  joinParty: { method: "POST", path: "/v1/parties/{partyId}/join" },
  cancelParty: { method: "DELETE", path: "/v1/parties/{partyId}" },
  adminTickets: { method: "GET", path: "/v1/admin/worlds/{worldType}/tickets", scope: "admin.readScope" },
  adminMatches: { method: "GET", path: "/v1/admin/worlds/{worldType}/matches", scope: "admin.readScope" },
  adminPlayer: { method: "GET", path: "/v1/admin/players/{playerId}", scope: "admin.readScope" },
  adminAudit: { method: "GET", path: "/v1/admin/audit", scope: "admin.readScope" },
  adminRemoveTicket: { method: "POST", path: "/v1/admin/worlds/{worldType}/tickets/{playerId}/remove", scope: "admin.actionScope" },
  adminCancelProposal: { method: "POST", path: "/v1/admin/proposals/{matchId}/cancel", scope: "admin.actionScope" },
  adminFinishMatch: { method: "POST", path: "/v1/admin/matches/{matchId}/finish", scope: "admin.actionScope" },
  adminVoidMatch: { method: "POST", path: "/v1/admin/matches/{matchId}/void", scope: "admin.actionScope" },
} as const satisfies Record<OperationId, RouteSpec>;

/** `path` with its `{name}` parameters filled in (each percent-encoded). */
export function fillPath(path: string, params: Record<string, string>): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new TypeError(`missing path parameter ${name} for ${path}`);
    return encodeURIComponent(value);
  });
}
