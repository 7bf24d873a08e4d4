export { Matchmaking, type MatchmakingOptions } from "./matchmaking.js";
export { MatchmakingClient, type ClientOptions } from "./http.js";
export {
  Connection,
  defaultWebSocket,
  type ConnectionEvents,
  type ConnectionOptions,
  type ConnectionState,
  type ReconnectOptions,
  type WebSocketConstructor,
  type WebSocketLike,
} from "./connection.js";
export { Deduper, type DedupeOptions } from "./dedupe.js";
export { Emitter } from "./emitter.js";
export { ApiError, GatewayError, MatchmakingError, errorOf, isMatchmakingError } from "./errors.js";
export { devToken, type DevTokenOptions, type TokenRequest, type TokenSource } from "./token.js";
export { ROUTES, type RouteSpec, type HttpMethod } from "./routes.js";
export { SERVER_MESSAGE_TYPES } from "./types.js";
export type * from "./types.js";
export {
  controls,
  initialState,
  isIdle,
  matchOf,
  reduce,
  IDLE_PHASES,
  type AnswerEvent,
  type Controls,
  type ControlsContext,
  type FailedEvent,
  type MatchCard,
  type Phase,
  type PlayerEvent,
  type PlayerState,
  type ProposalState,
  type PushEvent,
  type QueuePlace,
  type StatusEvent,
} from "./player-state.js";
export { describeMessage, describeRating, describeResult, describeState } from "./words.js";
