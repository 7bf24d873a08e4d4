// The wire types, named. Everything here is derived from the generated
// spec types (src/generated/): change the specs, run `npm run generate`,
// and `tsc` holds the SDK to them.
import type { components as HttpComponents, operations } from "./generated/openapi.js";
import type { components as WsComponents } from "./generated/asyncapi.js";

/** Every schema of docs/openapi.yaml. */
export type Schemas = HttpComponents["schemas"];
/** Every message payload and shared schema of docs/asyncapi.yaml. */
export type WsSchemas = WsComponents["schemas"];
export type Operations = operations;
export type OperationId = keyof operations;

type JsonOf<R> = R extends { content: { "application/json": infer B } } ? B : never;
type Responses<Op> = Op extends { responses: infer R } ? R : never;
type Envelopes<Op, Status> = JsonOf<Responses<Op>[keyof Responses<Op> & Status]>;
type DataOf<E> = E extends { data: infer D } ? D : never;
type ErrorStatus = 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 503;

/** `data` of an operation's success answer (200 or 201). */
export type SuccessData<K extends OperationId> = DataOf<Envelopes<operations[K], 200 | 201>>;
/** `data` of any error answer of an operation (the documented envelope). */
export type ErrorDataOf<K extends OperationId> = DataOf<Envelopes<operations[K], ErrorStatus>>;
/** The JSON request body of an operation. */
export type RequestBody<K extends OperationId> = operations[K] extends {
  requestBody?: infer B;
}
  ? JsonOf<NonNullable<B>>
  : never;

// ---- identifiers -----------------------------------------------------------
export type WorldName = Schemas["WorldName"];
export type PlayerId = Schemas["PlayerId"];
export type MatchId = Schemas["MatchId"];
export type PartyId = Schemas["PartyId"];
export type ErrorCode = Schemas["ErrorCode"];
export type AttributeName = Schemas["AttributeName"];
export type RuleName = Schemas["RuleName"];

// ---- request bodies ----------------------------------------------------------
export type JoinRequest = RequestBody<"join">;
export type LeaveRequest = RequestBody<"leave">;
export type AcceptRequest = RequestBody<"accept">;
export type RatingRequest = RequestBody<"rating">;
export type TrustedAttributesRequest = RequestBody<"attributes">;
export type AvoidRequest = RequestBody<"avoid">;
export type CreatePartyRequest = RequestBody<"createParty">;
export type JoinPartyRequest = RequestBody<"joinParty">;
export type AssignmentRequest = RequestBody<"assign">;
export type ResultRequest = RequestBody<"report">;
export type BackfillRequest = RequestBody<"backfill">;

// ---- what answers carry --------------------------------------------------------
export type MatchRecord = Schemas["MatchRecord"];
export type PartyView = Schemas["PartyView"];
export type ProposalView = Schemas["ProposalView"];
export type QueueStatus = Schemas["QueueStatus"];
export type MatchState = Schemas["MatchState"];
export type SeatAssignment = Schemas["SeatAssignment"];
export type MatchResult = Schemas["MatchResult"];
export type RatingChange = Schemas["RatingChange"];
export type Backfill = Schemas["Backfill"];
/** One attribute's value: a token, a number, a list of tokens or a token -> number map. */
export type AttributeValue = Schemas["AttributeValue"];
/** One player's attribute values by attribute name (a join's `attributes`, a match record's per player). */
export type Attributes = Schemas["Attributes"];
/** A match rule as it stood when the match formed (a match record's `rules`). */
export type RuleOutcome = Schemas["RuleOutcome"];

export type JoinResult = SuccessData<"join">;
export type LeaveResult = SuccessData<"leave">;
export type AcceptResult = SuccessData<"accept">;
export type QueueStatusResult = SuccessData<"queueStatus">;
export type MyStatusResult = SuccessData<"myStatus">;
export type MatchViewResult = SuccessData<"match">;
export type RatingResult = SuccessData<"rating">;
export type AttributesResult = SuccessData<"attributes">;
export type AvoidResult = SuccessData<"avoid">;
export type CreatePartyResult = SuccessData<"createParty">;
export type JoinPartyResult = SuccessData<"joinParty">;
export type CancelPartyResult = SuccessData<"cancelParty">;
export type AssignResult = SuccessData<"assign">;
export type ReportResult = SuccessData<"report">;
export type BackfillResult = SuccessData<"backfill">;
export type BackfillKeepaliveResult = SuccessData<"backfillKeepalive">;
export type CancelBackfillResult = SuccessData<"cancelBackfill">;

/** `data` of every documented error answer, discriminated by `error`. */
export type ErrorData = { [K in OperationId]: ErrorDataOf<K> }[OperationId];
/** The `data` of an error answer with code `C`. */
export type ErrorDataFor<C extends ErrorCode> = Extract<ErrorData, { error: C }>;
/** API Gateway's own answers (401/404/429/500): not the envelope. */
export type GatewayMessage = Schemas["GatewayMessage"];

// ---- WebSocket messages (docs/asyncapi.yaml) -------------------------------------
/**
 * A message of the AsyncAPI document, or `Fallback` while the document does
 * not describe it yet (the type then follows shared ServerMessage by hand;
 * the generated one takes over as soon as the spec has it).
 */
type WsMessage<Name extends string, Fallback> = `${Name}Message` extends keyof WsSchemas
  ? WsSchemas[`${Name}Message`]
  : Fallback;

export type QueuedMessage = WsMessage<"Queued", never>;
export type MatchFoundMessage = WsMessage<"MatchFound", never>;
export type TicketExpiredMessage = WsMessage<"TicketExpired", never>;
export type TicketRemovedMessage = WsMessage<"TicketRemoved", never>;
export type PartyUpdateMessage = WsMessage<"PartyUpdate", never>;
export type PartyCancelledMessage = WsMessage<"PartyCancelled", never>;
export type MatchProposedMessage = WsMessage<"MatchProposed", never>;
export type MatchAcceptProgressMessage = WsMessage<"MatchAcceptProgress", never>;
export type MatchCancelledMessage = WsMessage<"MatchCancelled", never>;
export type PongMessage = WsMessage<"Pong", never>;
/** The studio's allocator assigned the match a server: where to connect, with this player's own token. */
export type MatchAssignedMessage = WsMessage<
  "MatchAssigned",
  { type: "MATCH_ASSIGNED"; assignment: SeatAssignment; playerDataOmitted?: true } & Omit<
    MatchRecord,
    "state" | "assignment" | "result" | "ratingChanges"
  >
>;
/** The game server reported the result; `rating` is this player's own change (rated worlds). */
export type MatchResultMessage = WsMessage<
  "MatchResult",
  {
    type: "MATCH_RESULT";
    matchId: MatchId;
    worldType: WorldName;
    result: MatchResult;
    rating?: RatingChange;
  }
>;

/** Every JSON message the server sends on the socket. */
export type ServerMessage =
  | QueuedMessage
  | MatchFoundMessage
  | MatchAssignedMessage
  | MatchResultMessage
  | TicketExpiredMessage
  | TicketRemovedMessage
  | PartyUpdateMessage
  | PartyCancelledMessage
  | MatchProposedMessage
  | MatchAcceptProgressMessage
  | MatchCancelledMessage
  | PongMessage;
export type ServerMessageType = ServerMessage["type"];
/** The message of a `type`. */
export type MessageOf<T extends ServerMessageType> = Extract<ServerMessage, { type: T }>;

/** Every server message type, at run time (a test holds it to the specs and to shared's ServerMessage). */
export const SERVER_MESSAGE_TYPES = [
  "QUEUED",
  "MATCH_FOUND",
  "MATCH_ASSIGNED",
  "MATCH_RESULT",
  "TICKET_EXPIRED",
  "TICKET_REMOVED",
  "PARTY_UPDATE",
  "PARTY_CANCELLED",
  "MATCH_PROPOSED",
  "MATCH_ACCEPT_PROGRESS",
  "MATCH_CANCELLED",
  "PONG",
] as const satisfies readonly ServerMessageType[];

// Compile-time check that the list above names every type exactly.
type Missing = Exclude<ServerMessageType, (typeof SERVER_MESSAGE_TYPES)[number]>;
const _everyType: [Missing] extends [never] ? true : Missing = true;
void _everyType;
