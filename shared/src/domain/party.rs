//! Parties: players who queue together as one ticket and are never split.

use serde::{Deserialize, Serialize};

use super::ids::{PartyId, PlayerId, WorldName};
use crate::error::ValidationError;

/// Where a party stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PartyState {
    /// Waiting for invited players to join.
    Assembling,
    /// Complete: waiting in the queue as one ticket.
    Queued,
    /// In a match proposal (a ready check) awaiting answers.
    Proposed,
}

/// One member of a party.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartyMember {
    pub player_id: PlayerId,
    /// False while only invited.
    pub joined: bool,
}

/// A party as its members see it (PARTY_UPDATE, the party routes,
/// my-status). Made by the scripts (`_tickets.lua` party_view).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartyView {
    pub party_id: PartyId,
    pub world_type: WorldName,
    pub leader: PlayerId,
    pub state: PartyState,
    /// Unix ms: the assembly deadline while assembling, then the ticket's.
    pub expires_at: u64,
    /// The leader first, then the invited in invitation order.
    pub members: Vec<PartyMember>,
    /// The other worlds of `world_type`'s queueGroup the party queues in
    /// (one ticket in all: the first match takes it from every one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_queued_in: Vec<WorldName>,
}

/// Why a party was cancelled (PARTY_CANCELLED).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PartyCancelReason {
    /// A member who had joined left (leave, or cancelled the party).
    Left,
    /// An invited player declined (cancelled before joining).
    Declined,
    /// A member lost their last connection.
    Disconnected,
    /// Not every invited player joined in time.
    Expired,
}

/// A ticket: one player's, or a party's (the scripts write a party's ticket
/// id as `\x01<party id>`; player ids never hold control characters).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TicketId {
    Solo(PlayerId),
    Party(PartyId),
}

impl std::fmt::Display for TicketId {
    /// The raw form the scripts use (what [`TicketId::parse`] reads).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TicketId::Solo(p) => f.write_str(p),
            TicketId::Party(id) => write!(f, "\u{1}{id}"),
        }
    }
}

impl PartialEq<&str> for TicketId {
    fn eq(&self, other: &&str) -> bool {
        matches!(self, TicketId::Solo(p) if p == *other)
    }
}

impl TicketId {
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        match raw.strip_prefix('\u{1}') {
            Some(party) => PartyId::parse(party).map(TicketId::Party),
            None => PlayerId::parse(raw).map(TicketId::Solo),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn party_ids_carry_their_world() {
        let id = PartyId::parse("arena.18f3a-2b").unwrap();
        assert_eq!(id.world(), "arena");
        for bad in ["arena", ".1-a", "Arena.1-a", "arena.", "arena.1_a", "a b.1"] {
            assert!(PartyId::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            TicketId::parse("\u{1}arena.1-a").unwrap(),
            TicketId::Party(id_of("arena.1-a"))
        );
        assert!(matches!(TicketId::parse("p1").unwrap(), TicketId::Solo(_)));
        assert!(TicketId::parse("\u{1}p1").is_err());
    }

    fn id_of(s: &str) -> PartyId {
        PartyId::parse(s).unwrap()
    }

    #[test]
    fn party_views_read_what_the_scripts_write() {
        let json = r#"{"partyId":"w.1-2","worldType":"w","leader":"a","state":"ASSEMBLING",
            "expiresAt":1732999999999,"members":[{"playerId":"a","joined":true},{"playerId":"b","joined":false}]}"#;
        let view: PartyView = serde_json::from_str(json).unwrap();
        assert_eq!(view.state, PartyState::Assembling);
        assert_eq!(view.members.len(), 2);
        assert!(!view.members[1].joined);
        let back: serde_json::Value = serde_json::to_value(&view).unwrap();
        assert_eq!(back["expiresAt"], 1732999999999u64);
    }
}
