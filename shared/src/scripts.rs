//! The Lua scripts, embedded at compile time. Each operation script is
//! prefixed with the library files (`lua/_*.lua`, in the order `_lib.lua`
//! lists), the helpers they share, so every operation is one self-contained
//! EVALSHA (the redis crate reloads it on NOSCRIPT).

use std::sync::LazyLock;

use redis::Script;

macro_rules! library {
    () => {
        concat!(
            include_str!("../../lua/_lib.lua"),
            "\n",
            include_str!("../../lua/_tickets.lua"),
            "\n",
            include_str!("../../lua/_presence.lua"),
            "\n",
            include_str!("../../lua/_teams.lua"),
            "\n",
            include_str!("../../lua/_proposals.lua"),
            "\n",
            include_str!("../../lua/_matching.lua"),
            "\n",
            include_str!("../../lua/_rated.lua"),
            "\n",
        )
    };
}

macro_rules! lua {
    ($file:literal) => {
        concat!(library!(), include_str!(concat!("../../lua/", $file)))
    };
}

/// The shared helpers every script starts with (tests drive single helpers,
/// such as the team packer, through a script of their own on top of this).
pub const LIBRARY: &str = library!();

/// Source of every operation script, by file name (for tests and tooling).
pub const SOURCES: &[(&str, &str)] = &[
    ("join.lua", lua!("join.lua")),
    ("leave.lua", lua!("leave.lua")),
    ("drop_stale_ticket.lua", lua!("drop_stale_ticket.lua")),
    ("form_matches.lua", lua!("form_matches.lua")),
    ("queue_status.lua", lua!("queue_status.lua")),
    ("player_status.lua", lua!("player_status.lua")),
    ("match_record.lua", lua!("match_record.lua")),
    ("rating_set.lua", lua!("rating_set.lua")),
    ("sweep_tickets.lua", lua!("sweep_tickets.lua")),
    ("housekeeping.lua", lua!("housekeeping.lua")),
    ("outbox_claim.lua", lua!("outbox_claim.lua")),
    ("outbox_settle.lua", lua!("outbox_settle.lua")),
    ("conn_register.lua", lua!("conn_register.lua")),
    ("conn_unregister.lua", lua!("conn_unregister.lua")),
    ("conn_heartbeat.lua", lua!("conn_heartbeat.lua")),
    ("lease_acquire.lua", lua!("lease_acquire.lua")),
    ("lease_release.lua", lua!("lease_release.lua")),
    ("party_create.lua", lua!("party_create.lua")),
    ("party_join.lua", lua!("party_join.lua")),
    ("party_cancel.lua", lua!("party_cancel.lua")),
    ("proposal_answer.lua", lua!("proposal_answer.lua")),
];

pub(crate) struct Scripts {
    pub join: Script,
    pub leave: Script,
    pub drop_stale_ticket: Script,
    pub form_matches: Script,
    pub queue_status: Script,
    pub player_status: Script,
    pub match_record: Script,
    pub rating_set: Script,
    pub sweep_tickets: Script,
    pub housekeeping: Script,
    pub outbox_claim: Script,
    pub outbox_settle: Script,
    pub conn_register: Script,
    pub conn_unregister: Script,
    pub conn_heartbeat: Script,
    pub lease_acquire: Script,
    pub lease_release: Script,
    pub party_create: Script,
    pub party_join: Script,
    pub party_cancel: Script,
    pub proposal_answer: Script,
}

pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    join: Script::new(lua!("join.lua")),
    leave: Script::new(lua!("leave.lua")),
    drop_stale_ticket: Script::new(lua!("drop_stale_ticket.lua")),
    form_matches: Script::new(lua!("form_matches.lua")),
    queue_status: Script::new(lua!("queue_status.lua")),
    player_status: Script::new(lua!("player_status.lua")),
    match_record: Script::new(lua!("match_record.lua")),
    rating_set: Script::new(lua!("rating_set.lua")),
    sweep_tickets: Script::new(lua!("sweep_tickets.lua")),
    housekeeping: Script::new(lua!("housekeeping.lua")),
    outbox_claim: Script::new(lua!("outbox_claim.lua")),
    outbox_settle: Script::new(lua!("outbox_settle.lua")),
    conn_register: Script::new(lua!("conn_register.lua")),
    conn_unregister: Script::new(lua!("conn_unregister.lua")),
    conn_heartbeat: Script::new(lua!("conn_heartbeat.lua")),
    lease_acquire: Script::new(lua!("lease_acquire.lua")),
    lease_release: Script::new(lua!("lease_release.lua")),
    party_create: Script::new(lua!("party_create.lua")),
    party_join: Script::new(lua!("party_join.lua")),
    party_cancel: Script::new(lua!("party_cancel.lua")),
    proposal_answer: Script::new(lua!("proposal_answer.lua")),
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_documents_keys_argv_and_reply() {
        for (name, src) in SOURCES {
            let own = src.split_once(&format!("-- {name}:")).map(|(_, rest)| rest);
            let own = own.unwrap_or_else(|| panic!("{name} must start with a `-- {name}:` header"));
            for section in ["KEYS[1]", "ARGV", "Reply"] {
                assert!(
                    own.contains(section),
                    "{name} header must document {section}"
                );
            }
        }
    }

    #[test]
    fn no_script_sets_expire_on_a_whole_key() {
        // The seed put EXPIRE on the queue: one join reset everyone's lifetime.
        for (name, src) in SOURCES {
            for cmd in ["'EXPIRE'", "'PEXPIRE'", "'EXPIREAT'"] {
                assert!(!src.contains(cmd), "{name} uses {cmd}");
            }
        }
    }
}
