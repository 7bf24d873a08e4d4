//! The operator's routes through the local stack, over real HTTP and
//! WebSockets: list a world's tickets and matches, look a player up, remove
//! a ticket, finish a match, cancel a proposal and void a match, each with
//! the admin scopes (403 without), each repeated (idempotent), each seen in
//! the players' my-status and pushes and in the audit; bad input answered
//! in the envelope and changing nothing.

mod support;

use std::time::Duration;

use local_stack::LocalStack;
use serde_json::{json, Value};
use support::{call, token, token_with, Player};

const READ: &str = "matchmaking/admin.read";
const ACT: &str = "matchmaking/admin.act";
const WAIT: Duration = Duration::from_secs(20);

fn rules() -> String {
    json!({
        "servers": {"scope": support::SERVER_SCOPE},
        "admin": {"readScope": READ, "actionScope": ACT},
        "worlds": [
            {"name": "duo", "teamSize": 2},
            {"name": "duel", "teamSize": 2, "readyCheck": {"acceptSeconds": 30}},
        ],
    })
    .to_string()
}

async fn stack() -> LocalStack {
    // No demo allocator: the test decides how its matches end.
    support::start_stack_vars(&[("MM_RULES", &rules()), ("MM_DEMO_ALLOCATOR", "false")]).await
}

async fn operator(stack: &LocalStack) -> String {
    token_with(stack, "op-1", json!({"scp": [READ, ACT]})).await
}

/// Asserts an error answer: status, code, and the envelope around it.
#[track_caller]
fn refused(answer: &(u16, Value), status: u16, code: &str) {
    let (got, body) = answer;
    assert_eq!(
        (*got, body["data"]["error"].as_str()),
        (status, Some(code)),
        "{body}"
    );
    assert_eq!(body["resultCode"], status.to_string(), "{body}");
    assert!(body["msg"].is_string(), "{body}");
}

#[track_caller]
fn done(answer: &(u16, Value), changed: bool) -> Value {
    let (got, body) = answer;
    assert_eq!(*got, 200, "{body}");
    assert_eq!(body["data"]["changed"], changed, "{body}");
    body["data"].clone()
}

async fn post(stack: &LocalStack, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
    call(stack, "POST", path, Some(token), body).await
}

async fn get(stack: &LocalStack, path: &str, token: &str) -> (u16, Value) {
    call(stack, "GET", path, Some(token), None).await
}

async fn audit(stack: &LocalStack, token: &str) -> Vec<Value> {
    let (status, body) = get(stack, "/v1/admin/audit", token).await;
    assert_eq!(status, 200, "{body}");
    body["data"]["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The match `id` on the world's matches page.
async fn listed_match(stack: &LocalStack, world: &str, id: &str, token: &str) -> Value {
    let (status, body) = get(stack, &format!("/v1/admin/worlds/{world}/matches"), token).await;
    assert_eq!(status, 200, "{body}");
    body["data"]["matches"]
        .as_array()
        .and_then(|all| all.iter().find(|m| m["match"]["matchId"] == id).cloned())
        .unwrap_or_else(|| panic!("match {id} is not listed: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_lists_looks_up_removes_a_ticket_and_finishes_a_match() {
    let stack = stack().await;
    let op = operator(&stack).await;
    let reader = token_with(&stack, "support-1", json!({"scp": [READ]})).await;
    let nobody = token(&stack, "mallory").await;

    // A waiting ticket, listed and looked up.
    let ann = Player::connect(&stack, "ann").await;
    assert_eq!(ann.join(&stack, "duo").await.0, 200);
    let tickets = "/v1/admin/worlds/duo/tickets";
    refused(&get(&stack, tickets, &nobody).await, 403, "FORBIDDEN");
    let (status, page) = get(&stack, tickets, &reader).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["data"]["waiting"], 1, "{page}");
    assert_eq!(
        page["data"]["tickets"][0]["players"],
        json!(["ann"]),
        "{page}"
    );
    assert!(
        page["data"]["tickets"][0]["waitMs"].as_u64().is_some(),
        "{page}"
    );
    assert!(page["data"].get("nextAfter").is_none(), "{page}");
    let (_, empty) = get(&stack, "/v1/admin/worlds/duel/tickets", &op).await;
    assert_eq!(empty["data"]["tickets"], json!([]), "{empty}");
    refused(
        &get(&stack, "/v1/admin/worlds/nowhere/tickets", &op).await,
        404,
        "UNKNOWN_WORLD",
    );
    refused(
        &get(&stack, "/v1/admin/worlds/Bad!/tickets", &op).await,
        400,
        "INVALID_REQUEST",
    );
    refused(
        &get(&stack, &format!("{tickets}?limit=0"), &op).await,
        400,
        "INVALID_REQUEST",
    );
    let (status, found) = get(&stack, "/v1/admin/players/ann", &reader).await;
    assert_eq!(
        (status, &found["data"]["state"]["status"]),
        (200, &json!("QUEUED")),
        "{found}"
    );
    assert_eq!(found["data"]["connections"], 1, "{found}");
    refused(
        &get(&stack, "/v1/admin/players/ann", &nobody).await,
        403,
        "FORBIDDEN",
    );
    let too_long = "p".repeat(200);
    refused(
        &get(&stack, &format!("/v1/admin/players/{too_long}"), &op).await,
        400,
        "INVALID_REQUEST",
    );

    // Removing it: refused without the action scope and on bad input, all
    // changing nothing; then removed once, and a repeat changes nothing.
    let remove = "/v1/admin/worlds/duo/tickets/ann/remove";
    refused(&post(&stack, remove, &reader, None).await, 403, "FORBIDDEN");
    refused(&post(&stack, remove, &nobody, None).await, 403, "FORBIDDEN");
    refused(
        &post(&stack, remove, &op, Some(json!({"why": "x"}))).await,
        400,
        "INVALID_REQUEST",
    );
    refused(
        &post(&stack, remove, &op, Some(json!({"note": "n".repeat(201)}))).await,
        400,
        "INVALID_REQUEST",
    );
    refused(
        &post(
            &stack,
            "/v1/admin/worlds/nowhere/tickets/ann/remove",
            &op,
            None,
        )
        .await,
        404,
        "UNKNOWN_WORLD",
    );
    refused(
        &post(
            &stack,
            &format!("/v1/admin/worlds/duo/tickets/{too_long}/remove"),
            &op,
            None,
        )
        .await,
        400,
        "INVALID_REQUEST",
    );
    assert_eq!(ann.my_status(&stack).await["status"], "QUEUED");
    assert!(ann.messages_of_type("TICKET_REMOVED").is_empty());
    let removed = done(
        &post(&stack, remove, &op, Some(json!({"note": "stuck"}))).await,
        true,
    );
    assert_eq!(
        (
            removed["previousPosition"].as_u64(),
            removed["playersTold"].as_u64()
        ),
        (Some(1), Some(1))
    );
    let heard = ann.heard("TICKET_REMOVED", 1, WAIT).await;
    assert_eq!(
        heard[0],
        json!({"type": "TICKET_REMOVED", "worldType": "duo", "reason": "OPERATOR"})
    );
    assert_eq!(ann.my_status(&stack).await["status"], "IDLE");
    let again = done(&post(&stack, remove, &op, None).await, false);
    assert_eq!(again["playerState"], "idle", "{again}");
    let (_, page) = get(&stack, tickets, &op).await;
    assert_eq!(page["data"]["waiting"], 0, "{page}");

    // A match, listed with its state and players, finished by the operator.
    let bob = Player::connect(&stack, "bob").await;
    let cat = Player::connect(&stack, "cat").await;
    bob.join(&stack, "duo").await;
    let (_, joined) = cat.join(&stack, "duo").await;
    let id = joined["data"]["match"]["matchId"]
        .as_str()
        .expect("matched")
        .to_owned();
    let listed = listed_match(&stack, "duo", &id, &reader).await;
    assert_eq!(listed["state"], "FORMED", "{listed}");
    assert_eq!(
        listed["match"]["participants"],
        json!(["bob", "cat"]),
        "{listed}"
    );
    let finish = format!("/v1/admin/matches/{id}/finish");
    let result = json!({"result": {"playerRanks": {"bob": 1, "cat": 2}}});
    refused(
        &post(&stack, &finish, &reader, Some(result.clone())).await,
        403,
        "FORBIDDEN",
    );
    refused(
        &post(&stack, &finish, &op, Some(json!({"playerRanks": {}}))).await,
        400,
        "INVALID_REQUEST",
    );
    refused(
        &post(
            &stack,
            &finish,
            &op,
            Some(json!({"result": {"playerRanks": {"bob": 1}}})),
        )
        .await,
        400,
        "INVALID_RESULT",
    );
    refused(
        &post(
            &stack,
            "/v1/admin/matches/1-1/finish",
            &op,
            Some(result.clone()),
        )
        .await,
        404,
        "MATCH_NOT_FOUND",
    );
    refused(
        &post(
            &stack,
            "/v1/admin/matches/%20/finish",
            &op,
            Some(result.clone()),
        )
        .await,
        400,
        "INVALID_REQUEST",
    );
    assert_eq!(bob.my_status(&stack).await["match"]["state"], "FORMED");
    let ended = done(
        &post(&stack, &finish, &op, Some(result.clone())).await,
        true,
    );
    assert_eq!(ended["state"], "FINISHED", "{ended}");
    for p in [&bob, &cat] {
        let heard = p.heard("MATCH_RESULT", 1, WAIT).await;
        assert_eq!(heard[0]["matchId"], id.as_str());
        let status = p.my_status(&stack).await;
        assert_eq!(
            (&status["status"], &status["match"]["state"]),
            (&json!("MATCHED"), &json!("FINISHED")),
            "{status}"
        );
    }
    done(&post(&stack, &finish, &op, Some(result)).await, false);
    refused(
        &post(
            &stack,
            &finish,
            &op,
            Some(json!({"result": {"playerRanks": {"bob": 2, "cat": 1}}})),
        )
        .await,
        409,
        "RESULT_CONFLICT",
    );
    assert_eq!(
        listed_match(&stack, "duo", &id, &op).await["state"],
        "FINISHED"
    );
    // Free again: bob may queue.
    assert_eq!(bob.join(&stack, "duo").await.0, 200);

    let entries = audit(&stack, &reader).await;
    refused(
        &get(&stack, "/v1/admin/audit", &nobody).await,
        403,
        "FORBIDDEN",
    );
    let actions: Vec<(&str, bool)> = entries
        .iter()
        .map(|e| (e["action"].as_str().unwrap_or(""), e["changed"] == true))
        .collect();
    assert_eq!(
        actions,
        [
            ("FINISH_MATCH", false),
            ("FINISH_MATCH", true),
            ("REMOVE_TICKET", false),
            ("REMOVE_TICKET", true)
        ],
        "{entries:?}"
    );
    assert_eq!(entries[3]["note"], "stuck");
    assert_eq!(entries[3]["operator"], "op-1");
    assert_eq!(entries[3]["playerId"], "ann");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_cancels_a_proposal_and_voids_a_match() {
    let stack = stack().await;
    let op = operator(&stack).await;
    let nobody = token(&stack, "mallory").await;

    // A ready check, cancelled: both back in the queue, nobody at fault.
    let dan = Player::connect(&stack, "dan").await;
    let eve = Player::connect(&stack, "eve").await;
    dan.join(&stack, "duel").await;
    let (_, proposed) = eve.join(&stack, "duel").await;
    let id = proposed["data"]["proposal"]["matchId"]
        .as_str()
        .expect("proposed")
        .to_owned();
    let (_, page) = get(&stack, "/v1/admin/worlds/duel/matches", &op).await;
    assert_eq!(
        page["data"]["proposals"][0]["matchId"],
        id.as_str(),
        "{page}"
    );
    let cancel = format!("/v1/admin/proposals/{id}/cancel");
    refused(
        &post(&stack, &cancel, &nobody, None).await,
        403,
        "FORBIDDEN",
    );
    refused(
        &post(&stack, &cancel, &op, Some(json!([1]))).await,
        400,
        "INVALID_REQUEST",
    );
    refused(
        &post(&stack, "/v1/admin/proposals/%20/cancel", &op, None).await,
        400,
        "INVALID_REQUEST",
    );
    assert_eq!(dan.my_status(&stack).await["status"], "PROPOSED");
    let cancelled = done(&post(&stack, &cancel, &op, None).await, true);
    assert_eq!(
        (
            cancelled["requeued"].as_u64(),
            cancelled["worldType"].as_str()
        ),
        (Some(2), Some("duel"))
    );
    for p in [&dan, &eve] {
        let heard = p.heard("MATCH_CANCELLED", 1, WAIT).await;
        assert_eq!(heard[0]["reason"], "OPERATOR", "{heard:?}");
        assert_eq!(heard[0]["requeued"], true, "{heard:?}");
        // Back in the queue, or already in the next proposal the matcher
        // formed from it: not this one, and not cooling down.
        let status = p.my_status(&stack).await;
        let again = status["proposal"]["matchId"].as_str();
        assert!(
            status["status"] == "QUEUED"
                || (status["status"] == "PROPOSED" && again != Some(id.as_str())),
            "{status}"
        );
    }
    done(&post(&stack, &cancel, &op, None).await, false);

    // A match, voided: finished as cancelled, its players free.
    let fay = Player::connect(&stack, "fay").await;
    let gus = Player::connect(&stack, "gus").await;
    fay.join(&stack, "duo").await;
    let (_, joined) = gus.join(&stack, "duo").await;
    let id = joined["data"]["match"]["matchId"]
        .as_str()
        .expect("matched")
        .to_owned();
    let void = format!("/v1/admin/matches/{id}/void");
    refused(&post(&stack, &void, &nobody, None).await, 403, "FORBIDDEN");
    refused(
        &post(&stack, &void, &op, Some(json!({"cancelled": true}))).await,
        400,
        "INVALID_REQUEST",
    );
    refused(
        &post(&stack, "/v1/admin/matches/1-1/void", &op, None).await,
        404,
        "MATCH_NOT_FOUND",
    );
    assert_eq!(fay.my_status(&stack).await["match"]["state"], "FORMED");
    let voided = done(
        &post(&stack, &void, &op, Some(json!({"note": "server crashed"}))).await,
        true,
    );
    assert_eq!(
        (&voided["state"], &voided["result"]),
        (&json!("FINISHED"), &json!({"cancelled": true}))
    );
    for p in [&fay, &gus] {
        let heard = p.heard("MATCH_RESULT", 1, WAIT).await;
        assert_eq!(heard[0]["result"]["cancelled"], true, "{heard:?}");
        assert_eq!(p.my_status(&stack).await["match"]["state"], "FINISHED");
    }
    done(&post(&stack, &void, &op, None).await, false);
    refused(
        &post(
            &stack,
            &format!("/v1/admin/matches/{id}/finish"),
            &op,
            Some(json!({"result": {"playerRanks": {"fay": 1, "gus": 2}}})),
        )
        .await,
        409,
        "RESULT_CONFLICT",
    );
    let actions: Vec<String> = audit(&stack, &op)
        .await
        .iter()
        .map(|e| format!("{} {}", e["action"].as_str().unwrap_or(""), e["changed"]))
        .collect();
    assert_eq!(
        actions,
        [
            "VOID_MATCH false",
            "VOID_MATCH true",
            "CANCEL_PROPOSAL false",
            "CANCEL_PROPOSAL true"
        ]
    );
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_page_is_served_and_dev_config_names_the_admin_scopes() {
    let stack = stack().await;
    let page = support::http()
        .get(format!("{}/operator", stack.http_url))
        .send()
        .await
        .expect("GET /operator");
    assert_eq!(page.status(), 200);
    let html = page.text().await.expect("page");
    assert!(
        html.contains("/v1/admin/worlds/") && html.contains("confirm("),
        "operator page"
    );
    let (_, config) = call(&stack, "GET", "/dev/config", None, None).await;
    assert_eq!(
        (
            config["adminReadScope"].as_str(),
            config["adminActionScope"].as_str()
        ),
        (Some(READ), Some(ACT))
    );
    stack.stop().await;
}
