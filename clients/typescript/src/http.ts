import { errorOf, GatewayError } from "./errors.js";
import { fillPath, ROUTES } from "./routes.js";
import { resolveToken, type TokenSource } from "./token.js";
import type {
  AcceptRequest,
  AcceptResult,
  AssignmentRequest,
  AssignResult,
  AttributesResult,
  AvoidRequest,
  AvoidResult,
  BackfillKeepaliveResult,
  BackfillRequest,
  BackfillResult,
  CancelBackfillResult,
  CancelPartyResult,
  CreatePartyRequest,
  CreatePartyResult,
  JoinPartyRequest,
  JoinPartyResult,
  JoinRequest,
  JoinResult,
  LeaveRequest,
  LeaveResult,
  MatchId,
  MatchViewResult,
  MyStatusResult,
  OperationId,
  PartyId,
  PlayerId,
  QueueStatusResult,
  RatingRequest,
  RatingResult,
  ReportResult,
  RequestBody,
  ResultRequest,
  SuccessData,
  TrustedAttributesRequest,
  WorldName,
} from "./types.js";

export interface ClientOptions {
  /** The HTTP API's base URL, e.g. `https://abc.execute-api.eu-west-1.amazonaws.com` or `http://127.0.0.1:3000`. */
  httpUrl: string;
  /** The caller's JWT, or a function that returns one (see {@link TokenSource}). */
  token: TokenSource;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
}

/**
 * Typed calls for every route of the HTTP API (docs/openapi.yaml). Each
 * resolves to the answer's `data`, typed from the spec, and rejects with a
 * {@link MatchmakingError} (the documented `data.error` codes), a
 * {@link GatewayError} (API Gateway's own 401/404/429/500) or, for a network
 * failure, what `fetch` threw. A 401 from the gateway is retried once with a
 * refreshed token when the token source is a function.
 */
export class MatchmakingClient {
  readonly httpUrl: string;
  #token: TokenSource;
  #fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.httpUrl = options.httpUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /** Calls operation `op` of the spec; what the named methods below do. */
  async call<K extends OperationId>(
    op: K,
    params: Record<string, string> = {},
    body?: RequestBody<K>,
  ): Promise<SuccessData<K>> {
    const route = ROUTES[op];
    const url = this.httpUrl + fillPath(route.path, params);
    for (let refresh = false; ; refresh = true) {
      const token = await resolveToken(this.#token, { refresh, httpUrl: this.httpUrl });
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (body !== undefined) headers["content-type"] = "application/json";
      const init: RequestInit = { method: route.method, headers };
      if (body !== undefined) init.body = JSON.stringify(body);
      const res = await this.#fetch(url, init);
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // Not JSON: kept as text in the error.
      }
      const error = errorOf(res.status, parsed);
      if (error === null) return (parsed as { data: SuccessData<K> }).data;
      const retry = error instanceof GatewayError && error.status === 401 && typeof this.#token === "function";
      if (!retry || refresh) throw error;
    }
  }

  /** `POST /v1/matching/join`: queued, matched at once, or (ready check) proposed. */
  join(body: JoinRequest): Promise<JoinResult> {
    return this.call("join", {}, body);
  }

  /** `POST /v1/matching/leave`. */
  leave(body: LeaveRequest): Promise<LeaveResult> {
    return this.call("leave", {}, body);
  }

  /** `POST /v1/matching/accept`: answer a ready check. */
  accept(body: AcceptRequest): Promise<AcceptResult> {
    return this.call("accept", {}, body);
  }

  /** `GET /v1/matching/queue-status/{worldType}`. */
  queueStatus(worldType: WorldName): Promise<QueueStatusResult> {
    return this.call("queueStatus", { worldType });
  }

  /** `GET /v1/matching/my-status`: idle, in a party, queued, proposed or matched. */
  myStatus(): Promise<MyStatusResult> {
    return this.call("myStatus");
  }

  /** `GET /v1/matching/matches/{matchId}`: one of the caller's matches with its lifecycle. */
  match(matchId: MatchId): Promise<MatchViewResult> {
    return this.call("match", { matchId });
  }

  /** `POST /v1/parties`: create a party and invite its members. */
  createParty(body: CreatePartyRequest): Promise<CreatePartyResult> {
    return this.call("createParty", {}, body);
  }

  /** `POST /v1/parties/{partyId}/join`: join a party the caller is invited to. */
  joinParty(partyId: PartyId, body: JoinPartyRequest = {}): Promise<JoinPartyResult> {
    return this.call("joinParty", { partyId }, body);
  }

  /** `DELETE /v1/parties/{partyId}`: cancel a party, or decline an invitation. */
  cancelParty(partyId: PartyId): Promise<CancelPartyResult> {
    return this.call("cancelParty", { partyId });
  }

  /** `PUT /v1/ratings/{playerId}`: a trusted rating write (a token with `ratings.writerScope`). */
  putRating(playerId: PlayerId, body: RatingRequest): Promise<RatingResult> {
    return this.call("rating", { playerId }, body);
  }

  /**
   * `PUT /v1/attributes/{playerId}`: replaces a player's trusted attributes (those the rule set declares
   * `"source": "trusted"`; `{attributes: {}}` clears them), a token with `attributeStore.writerScope`.
   */
  putAttributes(playerId: PlayerId, body: TrustedAttributesRequest): Promise<AttributesResult> {
    return this.call("attributes", { playerId }, body);
  }

  /**
   * `PUT /v1/avoid/{playerId}`: replaces a player's avoid list (block lists; `{players: []}` clears it): the player and
   * every listed player are never matched or backfilled together. A token with `servers.scope`.
   */
  putAvoidList(playerId: PlayerId, body: AvoidRequest): Promise<AvoidResult> {
    return this.call("avoid", { playerId }, body);
  }

  /** `POST /v1/matching/matches/{matchId}/assignment`: the allocator names the match's server (a token with `servers.scope`). */
  assignMatch(matchId: MatchId, body: AssignmentRequest): Promise<AssignResult> {
    return this.call("assign", { matchId }, body);
  }

  /** `POST /v1/matching/matches/{matchId}/result`: the game server reports how the match ended (a token with `servers.scope`). */
  reportResult(matchId: MatchId, body: ResultRequest): Promise<ReportResult> {
    return this.call("report", { matchId }, body);
  }

  /**
   * `POST /v1/matching/matches/{matchId}/backfill`: a running match asks for players with the players it has now per
   * team (a token with `servers.scope`); replaces its open backfill. Renew it with {@link renewBackfill}.
   */
  requestBackfill(matchId: MatchId, body: BackfillRequest): Promise<BackfillResult> {
    return this.call("backfill", { matchId }, body);
  }

  /** `POST /v1/matching/matches/{matchId}/backfill/keepalive`: keeps the match's backfill open (a token with `servers.scope`). */
  renewBackfill(matchId: MatchId): Promise<BackfillKeepaliveResult> {
    return this.call("backfillKeepalive", { matchId });
  }

  /** `DELETE /v1/matching/matches/{matchId}/backfill`: ends the match's open backfill (a token with `servers.scope`). */
  cancelBackfill(matchId: MatchId): Promise<CancelBackfillResult> {
    return this.call("cancelBackfill", { matchId });
  }
}
