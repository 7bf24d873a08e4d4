//! What the scenarios of worlds sharing tickets (a `queueGroup`) share:
//! the rule sets, joins and party joins into several worlds, and the queues
//! read back.

use serde_json::json;
use shared::store::{AlsoJoined, JoinInput};
use shared::use_cases::{self, PartyRejection};
use shared::{PartyCreateOutcome, PartyId, PartyJoinOutcome, PartyView};

use super::attributes::encoded;
use super::*;

/// A rule set whose worlds `specs` all share the queueGroup "any".
pub(super) fn grouped(specs: serde_json::Value, extra: serde_json::Value) -> serde_json::Value {
    let mut worlds = specs;
    for w in worlds.as_array_mut().into_iter().flatten() {
        w["queueGroup"] = json!("any");
    }
    let mut doc = json!({ "worlds": worlds });
    for (k, v) in extra.as_object().into_iter().flatten() {
        doc[k] = v.clone();
    }
    doc
}

/// Joins `p` into `first` and `also`, the client attributes per world
/// given in `attrs` (world -> attributes; none when absent).
pub(super) async fn join_many(
    store: &MatchStore,
    p: &str,
    first: &str,
    also: &[&str],
    attrs: &serde_json::Value,
) -> JoinOutcome {
    let first_text = texts(store, &[first], attrs).remove(0);
    let also_texts = texts(store, also, attrs);
    let also = also_joined(store, also, &also_texts);
    let input = JoinInput {
        attributes: first_text.as_deref(),
        also: &also,
        ..JoinInput::default()
    };
    store
        .join_reply(world(store, first), &player(p), &input, false)
        .await
        .expect("join")
        .outcome
}

/// The attributes of `attrs` (world -> client attributes) encoded per world.
pub(super) fn texts(
    store: &MatchStore,
    worlds: &[&str],
    attrs: &serde_json::Value,
) -> Vec<Option<String>> {
    worlds
        .iter()
        .map(|w| attrs.get(*w).map(|a| encoded(store, w, a)))
        .collect()
}

/// `worlds` with their attributes `texts` (one each), as the store takes
/// them.
pub(super) fn also_joined<'a>(
    store: &'a MatchStore,
    worlds: &[&str],
    texts: &'a [Option<String>],
) -> Vec<AlsoJoined<'a>> {
    worlds
        .iter()
        .zip(texts)
        .map(|(w, a)| AlsoJoined {
            world: world(store, w),
            attributes: a.as_deref(),
        })
        .collect()
}

/// `leader` creates a party of `leader` and `members` in `first` and the
/// worlds of `also`, with the leader's attributes per world in `attrs`.
pub(super) async fn create_in(
    store: &MatchStore,
    (first, also): (&str, &[&str]),
    leader: &str,
    members: &[&str],
    attrs: &serde_json::Value,
) -> Result<PartyCreateOutcome, PartyRejection> {
    let first_text = texts(store, &[first], attrs).remove(0);
    let also_texts = texts(store, also, attrs);
    let also = also_joined(store, also, &also_texts);
    let input = JoinInput {
        attributes: first_text.as_deref(),
        also: &also,
        ..JoinInput::default()
    };
    let members: Vec<PlayerId> = members.iter().map(|m| player(m)).collect();
    use_cases::create_party(
        store,
        world(store, first),
        &player(leader),
        &members,
        &input,
    )
    .await
    .expect("create party")
}

pub(super) async fn created(
    store: &MatchStore,
    worlds: (&str, &[&str]),
    leader: &str,
    members: &[&str],
) -> PartyView {
    match create_in(store, worlds, leader, members, &json!({})).await {
        Ok(PartyCreateOutcome::Created(view)) => view,
        other => panic!("party created: {other:?}"),
    }
}

/// `p` joins `party` as a client would: told the party's other worlds by
/// the first call (which writes nothing), it describes them in the second,
/// with its attributes per world from `attrs`.
pub(super) async fn join_in(
    store: &MatchStore,
    party: &PartyId,
    p: &str,
    attrs: &serde_json::Value,
) -> PartyJoinOutcome {
    let first = party.world();
    let mut others: Vec<String> = Vec::new();
    for attempt in 0..2 {
        let other_names: Vec<&str> = others.iter().map(String::as_str).collect();
        let first_text = texts(store, &[first.as_str()], attrs).remove(0);
        let also_texts = texts(store, &other_names, attrs);
        let also = also_joined(store, &other_names, &also_texts);
        let input = JoinInput {
            attributes: first_text.as_deref(),
            also: &also,
            ..JoinInput::default()
        };
        let outcome = store
            .join_party_claiming(
                world(store, first.as_str()),
                party,
                &player(p),
                &input,
                false,
            )
            .await
            .expect("join party");
        match outcome {
            PartyJoinOutcome::OtherWorlds(worlds) if attempt == 0 => {
                others = worlds.iter().map(|w| w.to_string()).collect();
            }
            other => return other,
        }
    }
    panic!("{p}: told the party's worlds twice")
}

/// The tickets waiting in `w`, oldest first (a party's as `\u{1}<id>`).
pub(super) async fn queue_of(store: &MatchStore, w: &str) -> Vec<String> {
    let key = store.keys().world(&world_name(w)).queue;
    store
        .command(redis::cmd("ZRANGE").arg(key).arg(0).arg(-1))
        .await
        .expect("ZRANGE queue")
}

/// Sweeps `w` until it has removed an expired ticket (deadline 5 s).
pub(super) async fn swept_in(store: &MatchStore, w: &str) {
    eventually(
        &format!("{w} sweeps an expired ticket"),
        Duration::from_secs(5),
        || async {
            let swept = store
                .sweep_expired_tickets(world(store, w), 100)
                .await
                .expect("sweep");
            (!swept.is_empty()).then_some(())
        },
    )
    .await;
}
