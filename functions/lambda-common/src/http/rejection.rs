//! The one answer to each admission refusal ([`Rejection`]), whichever
//! route (join, party creation, party join) met it. Its error code is the
//! code named by the refusal's status (a test holds every status to an
//! [`ErrorCode`]).

use shared::{MatchStore, Rejection, WorldName};

use super::errors::{ApiError, ErrorCode, ErrorDetails, Failure};

impl ErrorCode {
    /// The code whose name is `name` (a refusal's status).
    pub fn named(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == name)
    }
}

/// The answer to `rejection`.
pub(super) fn rejected(store: &MatchStore, rejection: Rejection) -> Failure {
    let code = ErrorCode::named(rejection.status()).unwrap_or(ErrorCode::InvalidRequest);
    let (msg, details) = match rejection {
        Rejection::AlreadyQueued(q) => (
            format!(
                "already queued in {} at position {} of {}; leave that queue first",
                q.world_type, q.position, q.queue_size
            ),
            ErrorDetails::Queued(Box::new(q)),
        ),
        Rejection::ProposalPending(proposal) => (
            format!(
                "match {} awaits your answer (POST /v1/matching/accept) first",
                proposal.match_id
            ),
            ErrorDetails::Proposal(Box::new(proposal)),
        ),
        Rejection::InParty {
            party_id,
            world_type,
        } => (
            format!(
                "you are in party {party_id} of {world_type}, which queues for you; leave or cancel the party first"
            ),
            ErrorDetails::InParty {
                party_id: party_id.to_string(),
                world_type,
            },
        ),
        Rejection::CoolingDown { retry_after_ms } => {
            let retry_after_seconds = retry_after_ms.div_ceil(1000);
            (
                format!(
                    "you declined or missed a ready check; you may join again in {retry_after_seconds} s"
                ),
                ErrorDetails::CoolingDown {
                    retry_after_seconds,
                },
            )
        }
        Rejection::InMatch {
            match_id,
            assignment,
        } => (
            format!(
                "your match {match_id} is not finished; you may queue again once its result is in"
            ),
            ErrorDetails::InMatch {
                match_id: match_id.to_string(),
                assignment: assignment.map(Box::new),
            },
        ),
        Rejection::QueueFull {
            world_type,
            queue_size,
        } => (
            format!("the {world_type} queue is full ({queue_size} waiting); try again later"),
            ErrorDetails::QueueFull {
                world_type,
                queue_size,
            },
        ),
        Rejection::NotConnected { world_type } => (
            format!(
                "{world_type} requires a live WebSocket connection: connect (and keep sending heartbeats), then join"
            ),
            ErrorDetails::World { world_type },
        ),
        Rejection::LatencyRequired { world_type } => (
            format!(
                "{world_type} matches by region: send latencies (milliseconds to each region you measured)"
            ),
            ErrorDetails::World { world_type },
        ),
        Rejection::RatingRequired { world_type } => (
            format!("{world_type} matches by rating and no rating is known for you"),
            ErrorDetails::World { world_type },
        ),
        Rejection::AttributesRequired {
            world_type,
            attribute,
        } => (
            format!("{world_type} needs a value of {attribute} for you and none is set"),
            ErrorDetails::WorldAttribute {
                world_type,
                attribute,
            },
        ),
        Rejection::InvalidRating { world_type, rating } => {
            return invalid_rating(store, Some(world_type), &rating.to_string(), "store")
        }
    };
    ApiError::new(code, msg).with(details).into()
}

/// 400/409 INVALID_RATING: a rating (from `source`) outside the configured range.
pub(super) fn invalid_rating(
    store: &MatchStore,
    world_type: Option<WorldName>,
    rating: &str,
    source: &'static str,
) -> Failure {
    let r = &store.settings().ratings;
    ApiError::new(
        ErrorCode::InvalidRating,
        format!(
            "the rating {rating:?} (from the {source}) is not a number in [{}, {}]",
            r.min, r.max
        ),
    )
    .with(ErrorDetails::Rating {
        world_type,
        rating: rating.chars().take(40).collect(),
        source,
        min: r.min,
        max: r.max,
    })
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_status_is_an_error_code() {
        for status in Rejection::STATUSES {
            assert!(
                ErrorCode::named(status).is_some(),
                "refusal {status} has no error code of its name"
            );
        }
    }
}
