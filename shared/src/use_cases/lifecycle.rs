//! After a match formed: the allocator's assignment and the game server's
//! result (with the rating updates it makes).

use std::collections::BTreeMap;

use crate::config::MatchMode;
use crate::domain::{
    Assignment, MatchId, MatchLifecycle, MatchRecord, MatchReport, MatchWithLifecycle, PlayerId,
    RatingChange, StoredRating,
};
use crate::error::{StoreError, ValidationError};
use crate::store::{AssignOutcome, BackfillOutcome, MatchStore, RatingWrite, ResultOutcome};

/// Whether a caller's verified token carries the configured server scope.
pub fn is_server(store: &MatchStore, caller_scopes: &[&str]) -> bool {
    store
        .settings()
        .server_scope
        .as_deref()
        .is_some_and(|scope| caller_scopes.contains(&scope))
}

/// Stores the studio allocator's `assignment` for match `id` (the caller
/// checked the scope and the assignment's limits) and announces it to every
/// participant through the outbox (MATCH_ASSIGNED).
pub async fn assign_match(
    store: &MatchStore,
    id: &MatchId,
    assignment: &Assignment,
) -> Result<AssignOutcome, StoreError> {
    store.assign_match(id, assignment).await
}

/// Match `id` as the server side sees it (the caller checked the scope):
/// the record with every addition, the whole lifecycle and the open
/// backfill, if any.
pub async fn match_for_server(
    store: &MatchStore,
    id: &MatchId,
) -> Result<Option<(MatchWithLifecycle, Option<crate::domain::Backfill>)>, StoreError> {
    store.match_state(id).await
}

/// Opens (or replaces) the backfill of running match `id`, whose current
/// players are `teams` (the caller checked the scope); players fills after
/// the first `seen_fills` added keep their seats.
pub async fn request_backfill(
    store: &MatchStore,
    id: &MatchId,
    teams: &[Vec<PlayerId>],
    seen_fills: Option<u32>,
) -> Result<BackfillOutcome, StoreError> {
    store.request_backfill(id, teams, seen_fills).await
}

/// Keeps the backfill of match `id` open for another keep-alive.
pub async fn renew_backfill(
    store: &MatchStore,
    id: &MatchId,
) -> Result<BackfillOutcome, StoreError> {
    store.renew_backfill(id).await
}

/// Cancels the backfill of match `id`.
pub async fn cancel_backfill(
    store: &MatchStore,
    id: &MatchId,
) -> Result<BackfillOutcome, StoreError> {
    store.cancel_backfill(id).await
}

/// What reporting a result came to.
#[derive(Debug, Clone, PartialEq)]
pub enum ResultReport {
    /// Stored, ratings updated; every participant hears MATCH_RESULT.
    Finished(MatchWithLifecycle),
    /// The same result was stored already; nothing changed.
    Unchanged(MatchWithLifecycle),
    /// A different result is stored; nothing changed.
    Conflict(MatchLifecycle),
    /// The report does not fit the match (teams, players, ranks).
    Invalid(ValidationError),
    NotFound,
}

/// How often a result is recomputed when the ratings it read changed
/// underneath (another result for the same players landing meanwhile).
const RESULT_ATTEMPTS: usize = 8;

/// Stores the game server's `report` for match `id` and, in a rated world
/// whose rule set updates ratings, every participant's new rating, in one
/// step: computed from what was read, applied only if none of it changed
/// meanwhile (else read and computed again). A repeat of the same report
/// changes nothing; a concurrent double report applies once.
pub async fn report_result(
    store: &MatchStore,
    id: &MatchId,
    report: &MatchReport,
) -> Result<ResultReport, StoreError> {
    for _ in 0..RESULT_ATTEMPTS {
        let Some((text, life)) = store.match_texts(id).await? else {
            return Ok(ResultReport::NotFound);
        };
        let base: MatchRecord = serde_json::from_slice(&text)
            .map_err(|e| StoreError::UnexpectedReply(format!("match record: {e}")))?;
        // With the players backfills added; the script checks both parts.
        let lifecycle = MatchLifecycle::parse(&life)
            .map_err(|e| StoreError::UnexpectedReply(format!("match lifecycle: {e}")))?;
        let record = lifecycle.merged(base);
        let additions = life
            .rsplit('\n')
            .next()
            .filter(|_| !life.is_empty())
            .unwrap_or("");
        let placing = match report.placing(&record) {
            Ok(p) => p,
            Err(e) => return Ok(ResultReport::Invalid(e)),
        };
        let (changes, writes) = match &placing {
            Some(placing) => rating_changes(store, &record, placing).await?,
            None => (None, Vec::new()),
        };
        let mut hashed = text.clone();
        hashed.push(b'\n');
        hashed.extend_from_slice(additions.as_bytes());
        let sha = sha1_smol::Sha1::from(&hashed).digest().to_string();
        let world = store
            .settings()
            .worlds
            .get(record.world_type.as_str())
            .map(|w| &w.name);
        match store
            .finish_match(id, world, report, changes.as_ref(), &sha, &writes)
            .await?
        {
            ResultOutcome::Finished(m) => return Ok(ResultReport::Finished(m)),
            ResultOutcome::Unchanged(m) => return Ok(ResultReport::Unchanged(m)),
            ResultOutcome::Conflict(l) => return Ok(ResultReport::Conflict(l)),
            ResultOutcome::NotFound => return Ok(ResultReport::NotFound),
            ResultOutcome::Retry => continue,
        }
    }
    Err(StoreError::Rejected(format!(
        "result of {id}: the ratings kept changing during {RESULT_ATTEMPTS} attempts"
    )))
}

/// The rating changes of a placed match in a world that updates ratings
/// (none elsewhere), and the ratings-store writes that make them.
async fn rating_changes(
    store: &MatchStore,
    record: &MatchRecord,
    placing: &crate::domain::Placing,
) -> Result<(Option<BTreeMap<PlayerId, RatingChange>>, Vec<RatingWrite>), StoreError> {
    let settings = store.settings();
    let updates = match settings
        .worlds
        .get(record.world_type.as_str())
        .map(|w| &w.mode)
    {
        Some(MatchMode::Rating(rules)) => rules.updates,
        _ => None,
    };
    let Some(updates) = updates else {
        return Ok((None, Vec::new()));
    };
    let world = record.world_type.as_str();
    let players: Vec<&PlayerId> = placing.sides.iter().flat_map(|(ps, _)| ps).collect();
    let fields: Vec<String> = players
        .iter()
        .flat_map(|p| {
            [
                format!("{world}|{}", p.as_str()),
                format!("*|{}", p.as_str()),
            ]
        })
        .collect();
    let entries = store.rating_entries(&fields).await?;
    let mut current = BTreeMap::new();
    for (i, player) in players.iter().enumerate() {
        let own = entries.get(2 * i).cloned().flatten();
        let every = entries.get(2 * i + 1).cloned().flatten();
        // This world's entry, the every-world entry, then what the ticket
        // joined with (a token claim or the default).
        let rating = own
            .as_deref()
            .and_then(StoredRating::parse)
            .or_else(|| every.as_deref().and_then(StoredRating::parse))
            .or_else(|| {
                record
                    .ratings
                    .as_ref()
                    .and_then(|r| r.get(player.as_str()))
                    .map(|r| StoredRating::plain(r.value()))
            })
            .or_else(|| settings.ratings.default.map(StoredRating::plain));
        let Some(rating) = rating else {
            return Err(StoreError::UnexpectedReply(format!(
                "no rating for {player} in rated match {}",
                record.match_id
            )));
        };
        current.insert((*player).clone(), (rating, own));
    }
    let sides: Vec<(Vec<StoredRating>, u32)> = placing
        .sides
        .iter()
        .map(|(ps, rank)| (ps.iter().map(|p| current[p].0).collect(), *rank))
        .collect();
    let new = updates.apply(&sides);
    let mut changes = BTreeMap::new();
    let mut writes = Vec::new();
    for ((ps, _), news) in placing.sides.iter().zip(new) {
        for (player, after) in ps.iter().zip(news) {
            let (before, read) = &current[player];
            changes.insert(
                player.clone(),
                RatingChange {
                    before: before.value,
                    after: after.value,
                    mean: after.mean,
                    uncertainty: after.uncertainty,
                    games: after.games,
                },
            );
            writes.push(RatingWrite {
                field: format!("{world}|{}", player.as_str()),
                read: read.clone(),
                new: after.encode(),
            });
        }
    }
    Ok((Some(changes), writes))
}
