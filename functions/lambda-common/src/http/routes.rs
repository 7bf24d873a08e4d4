//! The route table of the HTTP API, declared once. Everything else is
//! derived from it: [`Route::of`] (which route a request's path asks for),
//! each route's method and route key, path parameters read from a path, the
//! function crates' dispatch ([`route_for`]), the local stack's resolution
//! and choice of handler, the hostile-input tests' routes, and the check
//! that `template.yaml` declares exactly these routes
//! (`tests/routes.rs`).
//!
//! Adding a route is one row in [`route_table!`] below plus its handler,
//! called from its function crate's `handle` (a route without one answers
//! `NOT_FOUND`, which the local stack's tests catch), and its event in
//! `template.yaml` (the template test names what is missing).

use lambda_http::http::Method;
use serde::{Deserialize, Serialize};
use shared::Settings;

/// The Lambda function that serves a route (serialized as its binary name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Function {
    /// `functions/join`: joins, parties, ready-check answers.
    Join,
    /// `functions/leave`: leaving a queue, cancelling a party.
    Leave,
    /// `functions/status`: reads, rating writes, the game servers'
    /// reports (assignments, results) and the operator's routes (`/v1/admin`:
    /// low-traffic reads and writes that push nothing themselves, like the
    /// servers' reports, so they need no function of their own).
    Status,
}

impl Function {
    pub const ALL: [Function; 3] = [Function::Join, Function::Leave, Function::Status];

    /// The function's logical id in `template.yaml`.
    pub const fn logical_id(self) -> &'static str {
        match self {
            Function::Join => "JoinFunction",
            Function::Leave => "LeaveFunction",
            Function::Status => "StatusFunction",
        }
    }

    /// The function's crate and binary name (`functions/<name>`).
    pub const fn binary(self) -> &'static str {
        match self {
            Function::Join => "join",
            Function::Leave => "leave",
            Function::Status => "status",
        }
    }
}

/// Who may call a route. Every route is behind the JWT authorizer first, so
/// every caller has a verified token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Any authenticated player: the token's `sub`.
    Player,
    /// Only a token that carries the scope the configuration names; with
    /// none configured, nobody.
    Scope(ConfiguredScope),
}

/// A scope whose value comes from the configuration (the rule set), so it
/// is set in one place for every function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfiguredScope {
    /// `ratings.writerScope`: trusted rating writes (game servers, admin tools).
    RatingsWriter,
    /// `attributeStore.writerScope`: trusted attribute writes.
    AttributesWriter,
    /// `servers.scope`: the studio's allocator and game servers
    /// (assignments, results).
    Server,
    /// `admin.readScope`: an operator reading queues, matches, players and
    /// the audit.
    AdminRead,
    /// `admin.actionScope`: an operator removing tickets, cancelling
    /// proposals, finishing and voiding matches.
    AdminAction,
}

impl ConfiguredScope {
    /// The scope a caller needs, if one is configured.
    pub fn required(self, settings: &Settings) -> Option<&str> {
        match self {
            ConfiguredScope::RatingsWriter => settings.ratings.writer_scope.as_deref(),
            ConfiguredScope::AttributesWriter => settings.attribute_writer_scope.as_deref(),
            ConfiguredScope::Server => settings.server_scope.as_deref(),
            ConfiguredScope::AdminRead => settings.admin.read.as_deref(),
            ConfiguredScope::AdminAction => settings.admin.action.as_deref(),
        }
    }

    /// The setting that names the scope.
    pub const fn setting(self) -> &'static str {
        match self {
            ConfiguredScope::RatingsWriter => "ratings.writerScope",
            ConfiguredScope::AttributesWriter => "attributeStore.writerScope",
            ConfiguredScope::Server => "servers.scope",
            ConfiguredScope::AdminRead => "admin.readScope",
            ConfiguredScope::AdminAction => "admin.actionScope",
        }
    }

    /// `msg` of the 403 answer to a caller without the scope.
    pub(super) const fn refusal(self) -> &'static str {
        match self {
            ConfiguredScope::RatingsWriter => {
                "writing ratings needs a token with the configured writer scope"
            }
            ConfiguredScope::AttributesWriter => {
                "writing trusted attributes needs a token with the configured attribute writer scope"
            }
            ConfiguredScope::Server => {
                "assignments, results, backfills and avoid lists need a token with the configured server scope"
            }
            ConfiguredScope::AdminRead => {
                "the operator's reads need a token with the configured admin read scope"
            }
            ConfiguredScope::AdminAction => {
                "the operator's actions need a token with the configured admin action scope"
            }
        }
    }
}

/// One row of the route table.
#[derive(Debug)]
pub struct RouteSpec {
    pub route: Route,
    /// The one method the route answers.
    pub method: Method,
    /// The path template, as in `template.yaml`: literal segments and
    /// `{name}` parameters, each one whole segment.
    pub path: &'static str,
    /// `"<METHOD> <path>"`, API Gateway's `routeKey`.
    pub route_key: &'static str,
    pub function: Function,
    pub access: Access,
}

/// Declares the [`Route`] enum and [`ROUTES`] from one list, in the same
/// order, so `ROUTES[route as usize]` is always the route's own row.
macro_rules! route_table {
    ($(
        $(#[$doc:meta])*
        $route:ident: $method:ident $path:literal => $function:ident, $access:expr;
    )+) => {
        /// The routes of the API: one per row of [`ROUTES`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Route {
            $( $(#[$doc])* $route, )+
        }

        /// Every route of the HTTP API, in [`Route`] order.
        pub const ROUTES: &[RouteSpec] = &[
            $( RouteSpec {
                route: Route::$route,
                method: Method::$method,
                path: $path,
                route_key: concat!(stringify!($method), " ", $path),
                function: Function::$function,
                access: $access,
            }, )+
        ];
    };
}

route_table! {
    /// `POST /v1/matching/join`
    Join: POST "/v1/matching/join" => Join, Access::Player;
    /// `POST /v1/matching/leave`
    Leave: POST "/v1/matching/leave" => Leave, Access::Player;
    /// `GET /v1/matching/queue-status/{worldType}`
    QueueStatus: GET "/v1/matching/queue-status/{worldType}" => Status, Access::Player;
    /// `GET /v1/matching/my-status`
    MyStatus: GET "/v1/matching/my-status" => Status, Access::Player;
    /// `GET /v1/matching/matches/{matchId}`
    Match: GET "/v1/matching/matches/{matchId}" => Status, Access::Player;
    /// `PUT /v1/ratings/{playerId}`
    Rating: PUT "/v1/ratings/{playerId}" => Status, Access::Scope(ConfiguredScope::RatingsWriter);
    /// `PUT /v1/attributes/{playerId}`
    Attributes: PUT "/v1/attributes/{playerId}" => Status, Access::Scope(ConfiguredScope::AttributesWriter);
    /// `PUT /v1/avoid/{playerId}`
    Avoid: PUT "/v1/avoid/{playerId}" => Status, Access::Scope(ConfiguredScope::Server);
    /// `POST /v1/parties`
    CreateParty: POST "/v1/parties" => Join, Access::Player;
    /// `POST /v1/parties/{partyId}/join`
    JoinParty: POST "/v1/parties/{partyId}/join" => Join, Access::Player;
    /// `DELETE /v1/parties/{partyId}`
    CancelParty: DELETE "/v1/parties/{partyId}" => Leave, Access::Player;
    /// `POST /v1/matching/accept`
    Accept: POST "/v1/matching/accept" => Join, Access::Player;
    /// `POST /v1/matching/matches/{matchId}/assignment`
    Assign: POST "/v1/matching/matches/{matchId}/assignment" => Status, Access::Scope(ConfiguredScope::Server);
    /// `POST /v1/matching/matches/{matchId}/result`
    Report: POST "/v1/matching/matches/{matchId}/result" => Status, Access::Scope(ConfiguredScope::Server);
    /// `POST /v1/matching/matches/{matchId}/backfill`
    Backfill: POST "/v1/matching/matches/{matchId}/backfill" => Status, Access::Scope(ConfiguredScope::Server);
    /// `POST /v1/matching/matches/{matchId}/backfill/keepalive`
    BackfillKeepalive: POST "/v1/matching/matches/{matchId}/backfill/keepalive" => Status, Access::Scope(ConfiguredScope::Server);
    /// `DELETE /v1/matching/matches/{matchId}/backfill`
    CancelBackfill: DELETE "/v1/matching/matches/{matchId}/backfill" => Status, Access::Scope(ConfiguredScope::Server);
    /// `GET /v1/admin/worlds/{worldType}/tickets`
    AdminTickets: GET "/v1/admin/worlds/{worldType}/tickets" => Status, Access::Scope(ConfiguredScope::AdminRead);
    /// `GET /v1/admin/worlds/{worldType}/matches`
    AdminMatches: GET "/v1/admin/worlds/{worldType}/matches" => Status, Access::Scope(ConfiguredScope::AdminRead);
    /// `GET /v1/admin/players/{playerId}`
    AdminPlayer: GET "/v1/admin/players/{playerId}" => Status, Access::Scope(ConfiguredScope::AdminRead);
    /// `GET /v1/admin/audit`
    AdminAudit: GET "/v1/admin/audit" => Status, Access::Scope(ConfiguredScope::AdminRead);
    /// `POST /v1/admin/worlds/{worldType}/tickets/{playerId}/remove`
    AdminRemoveTicket: POST "/v1/admin/worlds/{worldType}/tickets/{playerId}/remove" => Status, Access::Scope(ConfiguredScope::AdminAction);
    /// `POST /v1/admin/proposals/{matchId}/cancel`
    AdminCancelProposal: POST "/v1/admin/proposals/{matchId}/cancel" => Status, Access::Scope(ConfiguredScope::AdminAction);
    /// `POST /v1/admin/matches/{matchId}/finish`
    AdminFinishMatch: POST "/v1/admin/matches/{matchId}/finish" => Status, Access::Scope(ConfiguredScope::AdminAction);
    /// `POST /v1/admin/matches/{matchId}/void`
    AdminVoidMatch: POST "/v1/admin/matches/{matchId}/void" => Status, Access::Scope(ConfiguredScope::AdminAction);
}

impl RouteSpec {
    /// The path parameters (`name`, raw segment: not percent-decoded) if
    /// `path` fits this route's template: the same number of segments, each
    /// literal equal, each parameter non-empty.
    pub fn match_path<'p>(&self, path: &'p str) -> Option<Vec<(&'static str, &'p str)>> {
        let mut template = self.path.strip_prefix('/')?.split('/');
        let mut segments = path.strip_prefix('/')?.split('/');
        let mut parameters = Vec::new();
        loop {
            match (template.next(), segments.next()) {
                (None, None) => return Some(parameters),
                (Some(want), Some(got)) => match parameter_name(want) {
                    Some(name) if !got.is_empty() => parameters.push((name, got)),
                    Some(_) => return None,
                    None if want == got => {}
                    None => return None,
                },
                _ => return None,
            }
        }
    }

    /// The names of the template's `{name}` parameters, in path order.
    pub fn parameter_names(&self) -> impl Iterator<Item = &'static str> {
        self.path.split('/').filter_map(parameter_name)
    }
}

/// `name` of a `{name}` template segment.
fn parameter_name(segment: &str) -> Option<&str> {
    segment.strip_prefix('{')?.strip_suffix('}')
}

impl Route {
    /// This route's row of [`ROUTES`].
    pub const fn spec(self) -> &'static RouteSpec {
        &ROUTES[self as usize]
    }

    /// The largest body the route reads (a larger one is `413`): 8 KiB,
    /// but a list of up to 100 players (a match's most) with a
    /// part each (an assignment's tokens, a backfill's teams) may take
    /// 64 KiB.
    pub const fn max_body_bytes(self) -> usize {
        match self {
            Route::Assign | Route::Backfill | Route::Avoid => super::request::MAX_LIST_BODY_BYTES,
            _ => super::request::MAX_BODY_BYTES,
        }
    }

    /// The route whose template `path` fits, whatever the method (its
    /// handler answers another method 405); were several to fit, the one
    /// that answers `method`.
    pub fn at(method: &Method, path: &str) -> Option<Self> {
        let fitting = || ROUTES.iter().filter(|spec| spec.match_path(path).is_some());
        fitting()
            .find(|spec| spec.method == *method)
            .or_else(|| fitting().next())
            .map(|spec| spec.route)
    }

    /// The one method the route answers.
    pub fn method(self) -> Method {
        self.spec().method.clone()
    }

    pub fn method_name(self) -> &'static str {
        self.spec().method.as_str()
    }

    /// API Gateway's route key, e.g. `"GET /v1/matching/matches/{matchId}"`.
    pub const fn route_key(self) -> &'static str {
        self.spec().route_key
    }

    /// The path template, e.g. `/v1/matching/matches/{matchId}`.
    pub const fn path_template(self) -> &'static str {
        self.spec().path
    }

    /// The Lambda function that serves the route.
    pub const fn function(self) -> Function {
        self.spec().function
    }

    pub const fn access(self) -> Access {
        self.spec().access
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_its_routes_own_and_every_route_key_is_unique() {
        for (i, spec) in ROUTES.iter().enumerate() {
            assert_eq!(spec.route as usize, i, "{spec:?}");
            assert_eq!(spec.route.spec().route, spec.route);
            assert_eq!(
                spec.route_key,
                format!("{} {}", spec.method, spec.path),
                "{spec:?}"
            );
        }
        let mut keys: Vec<&str> = ROUTES.iter().map(|s| s.route_key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), ROUTES.len(), "a route key is declared twice");
    }

    #[test]
    fn templates_match_whole_segments_and_name_their_parameters() {
        let spec = Route::JoinParty.spec();
        assert_eq!(
            spec.match_path("/v1/parties/world1.1-a/join"),
            Some(vec![("partyId", "world1.1-a")])
        );
        assert_eq!(
            spec.match_path("/v1/parties/a%2Fb/join"),
            Some(vec![("partyId", "a%2Fb")])
        );
        for path in [
            "/v1/parties//join",
            "/v1/parties/a/b/join",
            "/v1/parties/a/join/",
            "v1/parties/a/join",
            "",
        ] {
            assert_eq!(spec.match_path(path), None, "{path}");
        }
        assert_eq!(
            Route::Join.spec().match_path("/v1/matching/join"),
            Some(vec![])
        );
        assert_eq!(Route::Join.spec().match_path("/v1/matching/join/"), None);
        assert_eq!(
            Route::QueueStatus
                .spec()
                .parameter_names()
                .collect::<Vec<_>>(),
            ["worldType"]
        );
        assert_eq!(Route::MyStatus.spec().parameter_names().count(), 0);
    }

    #[test]
    fn a_route_is_found_by_its_path_whatever_the_method() {
        // `/v1/parties/join` fits only the cancel route (`{partyId}` = `join`).
        assert_eq!(
            Route::at(&Method::POST, "/v1/parties/join"),
            Some(Route::CancelParty)
        );
        assert_eq!(
            Route::at(&Method::GET, "/v1/ratings/alice"),
            Some(Route::Rating)
        );
        assert_eq!(Route::at(&Method::PUT, "/v1/ratings"), None);
    }
}
