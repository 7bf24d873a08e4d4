//! The operator's scripts: `lua/admin_tickets.lua`, `lua/admin_matches.lua`
//! (reads, one bounded page each), `lua/admin_remove_ticket.lua`,
//! `lua/admin_cancel_proposal.lua` and `lua/audit_append.lua`; plus the
//! plain reads of the audit list and a player's stored ratings.

use std::collections::BTreeMap;

use super::reply::Reply;
use super::MatchStore;
use crate::config::World;
use crate::domain::{
    MatchId, MatchesPage, OpenProposal, PartyId, PlayerId, ProposalCancellation, Rating,
    TicketRemoval, TicketsPage, WaitingTicket, WorldName, AUDIT_CAP, MAX_MATCHES_PAGE,
};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

/// Match index entries one matches page looks at per match it may return:
/// the index is shared by every world, so a world's page skips the others'.
const SCAN_PER_MATCH: u32 = 10;

fn players(what: &str, text: &str) -> Result<Vec<PlayerId>, StoreError> {
    text.split_whitespace()
        .map(PlayerId::parse)
        .collect::<Result<_, _>>()
        .map_err(|e| StoreError::UnexpectedReply(format!("{what}: {e}")))
}

/// `<region>=<ms>,...` as `lua/_regions.lua` stores it.
fn latencies(text: &str) -> Result<BTreeMap<String, u64>, StoreError> {
    text.split(',')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (region, ms) = pair.split_once('=').unwrap_or((pair, ""));
            ms.parse()
                .map(|ms| (region.to_owned(), ms))
                .map_err(|_| StoreError::UnexpectedReply(format!("latencies {text:?}")))
        })
        .collect()
}

impl MatchStore {
    /// Up to `limit` (1..=200) of `world`'s waiting tickets after the one
    /// with sequence `after` (0: from the front), oldest first.
    pub async fn admin_tickets(
        &self,
        world: &World,
        after: u64,
        limit: u32,
    ) -> Result<TicketsPage, StoreError> {
        const SCRIPT: &str = "admin_tickets.lua";
        let mut inv = SCRIPTS.admin_tickets.invocation_with(
            self.keys(),
            &[&world.name],
            self.features(&[world]),
        );
        inv.arg(after).arg(limit);
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, true).await?)?;
        let now = reply.uint("now")?;
        let waiting = reply.uint("waiting")?;
        let next_after = reply
            .optional_text("next after")?
            .map(|t| t.parse::<u64>())
            .transpose()
            .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: next after: {e}")))?;
        let count = reply.uint("count")?;
        let mut tickets = Vec::new();
        for _ in 0..count {
            let ticket = reply.text("ticket")?;
            let seq = reply.uint("seq")?;
            let joined_at = reply.uint("joined")?;
            let deadline_at = reply.uint("deadline")?;
            let data = reply.optional_json("data")?;
            let rating: Option<Rating> = reply.optional_rating("rating")?;
            let latencies = reply
                .optional_text("latencies")?
                .map(|t| latencies(&t))
                .transpose()?;
            let members = players(SCRIPT, &reply.text("players")?)?;
            let party_id = match ticket.strip_prefix('\u{1}') {
                Some(id) => Some(
                    PartyId::parse(id)
                        .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: {e}")))?,
                ),
                None => None,
            };
            tickets.push(WaitingTicket {
                players: members,
                party_id,
                seq,
                joined_at,
                wait_ms: now.saturating_sub(joined_at),
                deadline_at,
                data,
                rating,
                latencies,
            });
        }
        reply.finish()?;
        Ok(TicketsPage {
            world_type: world.name.clone(),
            waiting,
            tickets,
            next_after,
        })
    }

    /// `world`'s open proposals and up to `limit` (1..=100) of its live
    /// matches, latest expiry first, after skipping `offset` entries of the
    /// match index (the previous page's `next_offset`).
    pub async fn admin_matches(
        &self,
        world: &WorldName,
        offset: u64,
        limit: u32,
    ) -> Result<MatchesPage, StoreError> {
        const SCRIPT: &str = "admin_matches.lua";
        let limit = limit.clamp(1, MAX_MATCHES_PAGE);
        let mut inv = SCRIPTS
            .admin_matches
            .invocation_with(self.keys(), &[], self.features(&[]));
        inv.arg(world.as_str())
            .arg(offset)
            .arg((limit * SCAN_PER_MATCH).min(1000))
            .arg(limit);
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, true).await?)?;
        let now_ms = reply.uint("now")?;
        let next_offset = reply
            .optional_text("next offset")?
            .map(|t| t.parse::<u64>())
            .transpose()
            .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: next offset: {e}")))?;
        let mut proposals = Vec::new();
        for _ in 0..reply.uint("proposals")? {
            proposals.push(OpenProposal {
                match_id: reply.parsed("proposal id", MatchId::parse)?,
                created_at: reply.uint("created")?,
                accept_by: reply.uint("accept by")?,
                players: players(SCRIPT, &reply.text("players")?)?,
                accepted: players(SCRIPT, &reply.text("accepted")?)?,
            });
        }
        let mut matches = Vec::new();
        for _ in 0..reply.uint("matches")? {
            matches.push(reply.match_with_lifecycle()?);
        }
        reply.finish()?;
        Ok(MatchesPage {
            now_ms,
            proposals,
            matches,
            next_offset,
        })
    }

    /// Removes `player`'s waiting ticket (or their queued party's) from
    /// `world`; everyone on it hears TICKET_REMOVED (reason OPERATOR).
    pub async fn admin_remove_ticket(
        &self,
        world: &World,
        player: &PlayerId,
    ) -> Result<TicketRemoval, StoreError> {
        const SCRIPT: &str = "admin_remove_ticket.lua";
        let mut inv = self.group_invocation(&SCRIPTS.admin_remove_ticket, world);
        inv.arg(player.as_str());
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, false).await?)?;
        let outcome = match reply.text("status")?.as_str() {
            "REMOVED" => TicketRemoval::Removed {
                previous_position: reply.uint("previous position")?,
                remaining_queue_size: reply.uint("remaining queue size")?,
                players_told: reply.uint("players told")?,
            },
            "NOT_QUEUED" => TicketRemoval::NotQueued {
                state: reply.text("state")?,
                world: reply.optional_text("world")?,
            },
            other => {
                return Err(StoreError::UnexpectedReply(format!(
                    "{SCRIPT}: status {other:?}"
                )))
            }
        };
        reply.finish()?;
        Ok(outcome)
    }

    /// Cancels the open proposal `id`: everyone is requeued at their place
    /// and hears MATCH_CANCELLED (reason OPERATOR).
    pub async fn admin_cancel_proposal(
        &self,
        id: &MatchId,
    ) -> Result<ProposalCancellation, StoreError> {
        const SCRIPT: &str = "admin_cancel_proposal.lua";
        let mut inv = SCRIPTS
            .admin_cancel_proposal
            .invocation(self.keys(), &self.world_names());
        inv.arg(id.as_str());
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, false).await?)?;
        let outcome = match reply.text("status")?.as_str() {
            "CANCELLED" => ProposalCancellation::Cancelled {
                world: reply.text("world")?,
                requeued: reply.uint("requeued")?,
            },
            "NOT_FOUND" => ProposalCancellation::NotFound,
            other => {
                return Err(StoreError::UnexpectedReply(format!(
                    "{SCRIPT}: status {other:?}"
                )))
            }
        };
        reply.finish()?;
        Ok(outcome)
    }

    /// Adds one entry (JSON) to the audit list, which keeps the latest
    /// [`AUDIT_CAP`].
    pub async fn audit_append(&self, entry: &str) -> Result<(), StoreError> {
        let mut inv = SCRIPTS.audit_append.invocation(self.keys(), &[]);
        inv.arg(entry).arg(AUDIT_CAP);
        let mut reply = Reply::new("audit_append.lua", self.invoke(&inv, false).await?)?;
        reply.uint("entries")?;
        reply.finish()
    }

    /// The latest `limit` audit entries (JSON each), newest first.
    pub async fn audit(&self, limit: u32) -> Result<Vec<String>, StoreError> {
        let last = i64::from(limit.clamp(1, AUDIT_CAP)) - 1;
        self.command(
            redis::cmd("LRANGE")
                .arg(self.keys().audit())
                .arg(0)
                .arg(last),
        )
        .await
    }

    /// `player`'s entries in the trusted ratings store: `*` (every world)
    /// and each configured world's own, where set (the value matching uses).
    pub async fn stored_ratings(
        &self,
        player: &PlayerId,
    ) -> Result<BTreeMap<String, Rating>, StoreError> {
        let mut scopes = vec!["*".to_owned()];
        scopes.extend(self.world_names().iter().map(|w| w.as_str().to_owned()));
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.keys().player_ratings());
        for scope in &scopes {
            cmd.arg(format!("{scope}|{player}"));
        }
        let values: Vec<Option<String>> = self.command(&cmd).await?;
        let mut out = BTreeMap::new();
        for (scope, value) in scopes.into_iter().zip(values) {
            // A rating that results updated reads "<value> <mean> ...".
            let Some(value) = value else { continue };
            let first = value.split(' ').next().unwrap_or_default();
            let rating = Rating::parse(first)
                .map_err(|e| StoreError::UnexpectedReply(format!("player-ratings: {e}")))?;
            out.insert(scope, rating);
        }
        Ok(out)
    }
}
