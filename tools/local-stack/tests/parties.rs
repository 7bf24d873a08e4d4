//! Parties and teams through the local stack, over real HTTP and real
//! WebSockets: invitations and progress arrive as PARTY_UPDATE pushes, the
//! party is matched whole into one team, every member hears MATCH_FOUND with
//! the teams, and a member's disconnect cancels a party for the others.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{call, Player};

const RULES: &str = r#"{"worlds": [{"name": "arena", "teamSize": 2, "teams": 2}]}"#;
const WAIT: Duration = Duration::from_secs(30);

async fn create(
    stack: &local_stack::LocalStack,
    leader: &Player,
    members: &[&str],
) -> (u16, Value) {
    call(
        stack,
        "POST",
        "/v1/parties",
        Some(&leader.token),
        Some(json!({"worldType": "arena", "members": members})),
    )
    .await
}

async fn join_party(stack: &local_stack::LocalStack, p: &Player, id: &str) -> (u16, Value) {
    call(
        stack,
        "POST",
        &format!("/v1/parties/{id}/join"),
        Some(&p.token),
        None,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_party_is_invited_assembled_and_matched_whole_into_one_team() {
    let stack = support::start_stack_vars(&[("MM_RULES", RULES)]).await;
    let ana = Player::connect(&stack, "ana").await;
    let ben = Player::connect(&stack, "ben").await;
    let (code, body) = create(&stack, &ana, &["ben"]).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["data"]["status"], "PARTY");
    let party = &body["data"]["party"];
    assert_eq!(party["state"], "ASSEMBLING");
    let id = party["partyId"].as_str().expect("party id").to_owned();

    // The invitation reaches ben's socket.
    let invite = ben.heard("PARTY_UPDATE", 1, WAIT).await;
    assert_eq!(invite[0]["party"]["partyId"], id.as_str());
    assert_eq!(
        invite[0]["party"]["members"],
        json!([{"playerId": "ana", "joined": true}, {"playerId": "ben", "joined": false}])
    );
    assert_eq!(ana.my_status(&stack).await["status"], "PARTY");

    // ben joins: the party is queued as one ticket; ana hears it.
    let (code, body) = join_party(&stack, &ben, &id).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["data"]["status"], "QUEUED");
    assert_eq!(body["data"]["party"]["state"], "QUEUED");
    let update = ana.heard("PARTY_UPDATE", 1, WAIT).await;
    assert_eq!(update[0]["party"]["state"], "QUEUED");
    assert_eq!(ana.my_status(&stack).await["party"]["partyId"], id.as_str());

    // Two solos complete 2 x 2: the party is one team.
    let cid = Player::connect(&stack, "cid").await;
    let dee = Player::connect(&stack, "dee").await;
    cid.join(&stack, "arena").await;
    let (code, body) = dee.join(&stack, "arena").await;
    assert_eq!(
        (code, body["data"]["status"].as_str()),
        (200, Some("MATCHED")),
        "{body}"
    );
    for p in [&ana, &ben, &cid, &dee] {
        let found = p.heard("MATCH_FOUND", 1, WAIT).await;
        let teams = &found[0]["teams"];
        assert!(
            teams == &json!([["ana", "ben"], ["cid", "dee"]])
                || teams == &json!([["cid", "dee"], ["ana", "ben"]]),
            "{}",
            found[0]
        );
        assert_eq!(found[0]["parties"], json!([["ana", "ben"]]));
    }
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_last_disconnect_cancels_the_party_for_the_others() {
    let stack = support::start_stack_vars(&[("MM_RULES", RULES)]).await;
    let ana = Player::connect(&stack, "ana").await;
    let ben = Player::connect(&stack, "ben").await;
    let (code, body) = create(&stack, &ana, &["ben"]).await;
    assert_eq!(code, 201, "{body}");
    let id = body["data"]["party"]["partyId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, _) = join_party(&stack, &ben, &id).await;
    assert_eq!(code, 200);
    ben.disconnect().await;
    let cancelled = ana.heard("PARTY_CANCELLED", 1, WAIT).await;
    assert_eq!(
        cancelled[0],
        json!({"type": "PARTY_CANCELLED", "partyId": id, "worldType": "arena",
               "reason": "DISCONNECTED", "by": "ben"})
    );
    assert_eq!(ana.my_status(&stack).await["status"], "IDLE");
    // Cancelling it again: it is gone.
    let (code, body) = call(
        &stack,
        "DELETE",
        &format!("/v1/parties/{id}"),
        Some(&ana.token),
        None,
    )
    .await;
    assert_eq!(
        (code, body["data"]["error"].as_str()),
        (404, Some("PARTY_NOT_FOUND"))
    );
    stack.stop().await;
}
