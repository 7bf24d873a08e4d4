//! `lua/match_result.lua`: store a match's result and apply the rating
//! changes computed from it, once, if nothing they were computed from
//! changed.

use std::collections::BTreeMap;

use super::reply::Reply;
use super::MatchStore;
use crate::domain::{
    MatchId, MatchLifecycle, MatchReport, PlayerId, RatingChange, ResultOutcome, WorldName,
};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "match_result.lua";

/// A ratings-store field the result rewrites: what it held when the new
/// value was computed (`None`: nothing) and the new value.
#[derive(Debug, Clone, PartialEq)]
pub struct RatingWrite {
    pub field: String,
    pub read: Option<String>,
    pub new: String,
}

impl MatchStore {
    /// Stores `report` for match `id` with the `changes` it makes, writing
    /// `writes` to the ratings store, unless the record (by its SHA-1) or
    /// any field written changed since it was read. `world`: the match's,
    /// when it is still configured (its backfill's proposals, if any, are
    /// cancelled and their players requeued there).
    pub async fn finish_match(
        &self,
        id: &MatchId,
        world: Option<&WorldName>,
        report: &MatchReport,
        changes: Option<&BTreeMap<PlayerId, RatingChange>>,
        record_sha: &str,
        writes: &[RatingWrite],
    ) -> Result<ResultOutcome, StoreError> {
        let ratings: serde_json::Map<String, serde_json::Value> = writes
            .iter()
            .map(|w| {
                (
                    w.field.clone(),
                    serde_json::json!([w.read.as_deref(), w.new.as_str()]),
                )
            })
            .collect();
        let changes = changes.map_or_else(String::new, |c| {
            serde_json::to_string(c).unwrap_or_default()
        });
        let worlds: Vec<&WorldName> = world.into_iter().collect();
        let mut inv = SCRIPTS.match_result.invocation(self.keys(), &worlds);
        inv.arg(id.as_str())
            .arg(report.canonical_json())
            .arg(changes)
            .arg(record_sha)
            .arg(serde_json::Value::Object(ratings).to_string());
        // A repeat finds the same result stored and changes nothing.
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, true).await?)?;
        let outcome = match reply.text("status")?.as_str() {
            "FINISHED" => ResultOutcome::Finished(reply.match_with_lifecycle()?),
            "ALREADY" => ResultOutcome::Unchanged(reply.match_with_lifecycle()?),
            "CONFLICT" => {
                let raw = reply.text("lifecycle")?;
                ResultOutcome::Conflict(
                    MatchLifecycle::parse(&raw)
                        .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: {e}")))?,
                )
            }
            "RETRY" => ResultOutcome::Retry,
            "NOT_FOUND" => ResultOutcome::NotFound,
            other => {
                return Err(StoreError::UnexpectedReply(format!(
                    "{SCRIPT}: status {other:?}"
                )))
            }
        };
        reply.finish()?;
        Ok(outcome)
    }

    /// The raw ratings-store entries of `fields` (one HMGET; the result's
    /// script re-checks every one it rewrites).
    pub async fn rating_entries(
        &self,
        fields: &[String],
    ) -> Result<Vec<Option<String>>, StoreError> {
        if fields.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.keys().player_ratings());
        for f in fields {
            cmd.arg(f);
        }
        self.command(&cmd).await
    }

    /// The stored text of match `id`'s record (byte for byte as stored).
    pub async fn record_text(&self, id: &MatchId) -> Result<Option<Vec<u8>>, StoreError> {
        self.command(
            redis::cmd("HGET")
                .arg(self.keys().matches())
                .arg(id.as_str()),
        )
        .await
    }

    /// Match `id` as a result is computed from it: its record text and its
    /// lifecycle's raw text ("" for none), read together.
    pub async fn match_texts(&self, id: &MatchId) -> Result<Option<(Vec<u8>, String)>, StoreError> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET")
            .arg(self.keys().matches())
            .arg(id.as_str())
            .cmd("HGET")
            .arg(self.keys().match_lifecycle())
            .arg(id.as_str());
        let (record, life): (Option<Vec<u8>>, Option<String>) = self.pipeline(&pipe).await?;
        Ok(record.map(|r| (r, life.unwrap_or_default())))
    }
}
