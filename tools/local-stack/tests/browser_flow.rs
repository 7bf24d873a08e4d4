//! The whole demo in headless Chromium, as a newcomer plays it: three tabs
//! in the rated world `ranked` of the stack's own rules.json (game servers
//! configured, so the demo allocator assigns and the demo game server plays
//! each game for `MM_DEMO_GAME_SECS` and reports its result), twice in a
//! row: join → found → assigned → the result → the rating shown → join
//! again → the second match. Each tab records every headline the page
//! renders with the controls it enabled at that moment; the test asserts
//! that record, so a headline that flips back (ASSIGNED → MATCHED, FINISHED
//! → MATCHED: the status poll ignoring the match's state) fails it.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::cdp::{Browser, Page};

const PLAYERS: [&str; 3] = ["ann", "ben", "cat"];

/// Installed in each tab: every render's headline with the controls and
/// cards as they are then (a MutationObserver on the headline runs after
/// the render that set it), consecutive repeats merged.
const RECORDER: &str = r#"(() => {
  const $ = (id) => document.getElementById(id);
  window.__snap = () => ({
    h: $('status').textContent,
    join: !$('join').disabled,
    leave: !$('leave').disabled,
    party: !$('create-party').disabled,
    world: !$('world').disabled,
    connect: $('connect').textContent,
    error: $('error').textContent,
    rating: !$('rating-label').hidden,
    latencies: !$('latencies-label').hidden,
    leaveGame: !!document.querySelector('.match[data-state="ASSIGNED"] .leave-game'),
    finishedLeaveGame: !!document.querySelector('.match[data-state="FINISHED"] .leave-game'),
  });
  window.__history = [window.__snap()];
  new MutationObserver(() => {
    const s = window.__snap();
    const last = window.__history[window.__history.length - 1];
    if (JSON.stringify(s) !== JSON.stringify(last)) window.__history.push(s);
  }).observe($('status'), { childList: true, characterData: true, subtree: true });
  return true;
})()"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_tabs_play_two_whole_games_in_a_row() {
    let rules = concat!(env!("CARGO_MANIFEST_DIR"), "/rules.json");
    let stack =
        support::start_stack_vars(&[("MM_RULES_FILE", rules), ("MM_DEMO_GAME_SECS", "2")]).await;
    let mut browser = Browser::launch().await;
    let mut pages = Vec::new();
    for name in PLAYERS {
        let url = format!("{}/?player={name}&world=ranked", stack.http_url);
        pages.push(open(&mut browser, &url).await);
    }
    let mut match_ids = Vec::new();
    for round in 1..=2 {
        let id = play_round(&mut browser, &pages, round).await;
        assert!(!match_ids.contains(&id), "round {round} is a new match");
        match_ids.push(id);
    }
    for page in &pages {
        let cards = browser
            .eval(
                page,
                "Array.from(document.querySelectorAll('#matches .match')).map((m) => m.dataset.matchId + ' ' + m.dataset.state)",
            )
            .await;
        let expected: Vec<String> = match_ids
            .iter()
            .rev()
            .map(|id| format!("{} FINISHED", id.as_str().unwrap()))
            .collect();
        assert_eq!(cards, json!(expected), "both games' cards, newest first");
    }

    // A reload without a name in the URL: the page remembers the last
    // player, connects, and shows the finished match from my-status.
    let reloaded = browser
        .open(&format!("{}/?world=ranked", stack.http_url))
        .await;
    let restored = browser
        .wait_for(
            &reloaded,
            "the reloaded page to restore the finished match",
            "document.getElementById('status').textContent === 'FINISHED' && document.getElementById('player').value",
            Duration::from_secs(15),
        )
        .await;
    assert_eq!(restored, json!("cat"), "the last name connected");
    let detail = browser
        .eval(&reloaded, "document.getElementById('detail').textContent")
        .await;
    assert!(
        detail.as_str().unwrap_or_default().contains("your rating"),
        "{detail}"
    );
    stack.stop().await;
}

/// Opens the page, installs the recorder, connects, and checks the idle
/// state's controls.
async fn open(browser: &mut Browser, url: &str) -> Page {
    let page = browser.open_demo_page(url).await;
    browser.eval(&page, RECORDER).await;
    let before = browser.eval(&page, "window.__snap()").await;
    assert_eq!(before["join"], json!(false), "no Join before Connect");
    assert_eq!(before["connect"], json!("Connect"));
    assert_eq!(before["rating"], json!(true), "ranked is rated");
    assert_eq!(before["latencies"], json!(false), "ranked has no regions");
    browser.connect_demo_page(&page, "join").await;
    let idle = browser.eval(&page, "window.__snap()").await;
    assert_eq!(idle["h"], json!("IDLE"));
    assert_eq!(idle["connect"], json!("Disconnect"), "Connect toggles");
    assert_eq!(
        (&idle["leave"], &idle["party"]),
        (&json!(false), &json!(true)),
        "idle: no Leave, Create party: {idle}"
    );
    page
}

/// One game: everyone joins, is matched, assigned, gets the demo game
/// server's result with a rating change; returns the match id.
async fn play_round(browser: &mut Browser, pages: &[Page], round: u32) -> Value {
    for (i, page) in pages.iter().enumerate() {
        browser
            .eval(
                page,
                "window.__history = [window.__snap()]; document.getElementById('join').click()",
            )
            .await;
        if i < 2 {
            let queued = browser
                .wait_for(
                    page,
                    "QUEUED",
                    "document.getElementById('status').textContent === 'QUEUED' && window.__snap()",
                    Duration::from_secs(15),
                )
                .await;
            assert_eq!(queued["leave"], json!(true), "queued: Leave: {queued}");
            assert_eq!(queued["join"], json!(false), "queued: no Join: {queued}");
        }
    }
    // Round 2: the ratings moved apart; the window widens until they fit (at most relaxAfterSeconds, 60 s).
    let limit = Duration::from_secs(if round == 1 { 20 } else { 90 });
    let mut ids = Vec::new();
    for page in pages {
        // This round's card (the previous round's FINISHED shows until the join answers).
        let finished = format!(
            "document.getElementById('status').textContent === 'FINISHED' \
             && document.querySelectorAll('#matches .match').length === {round} \
             && document.querySelector('#matches .match').dataset.matchId"
        );
        let id = browser
            .wait_for(page, "the game's result on the page", &finished, limit)
            .await;
        ids.push(id);
    }
    assert!(ids.iter().all(|id| *id == ids[0]), "one match: {ids:?}");
    for (page, name) in pages.iter().zip(PLAYERS) {
        // A poll sent after the result was shown has been answered: the old
        // page flipped FINISHED back to MATCHED right here.
        let polls: u64 = browser
            .eval(page, "Number(document.body.dataset.polls)")
            .await
            .as_u64()
            .unwrap_or(0);
        browser
            .wait_for(
                page,
                "two more my-status answers",
                &format!("Number(document.body.dataset.polls) >= {}", polls + 2),
                Duration::from_secs(15),
            )
            .await;
        let card = browser
            .eval(
                page,
                "(() => { const r = document.querySelector('#matches .match .result'); return r && r.dataset.ratingAfter; })()",
            )
            .await;
        assert!(card.is_string(), "{name}: the card shows the new rating");
        let history = browser.eval(page, "window.__history").await;
        check_history(name, round, history.as_array().unwrap());
    }
    ids.swap_remove(0)
}

/// The headlines of one round only move forward, each with the controls
/// the API would accept then.
fn check_history(name: &str, round: u32, history: &[Value]) {
    let order = ["QUEUED", "MATCHED", "ASSIGNED", "FINISHED"];
    let start = if round == 1 { "IDLE" } else { "FINISHED" };
    assert_eq!(history[0]["h"], json!(start), "{name}: {history:?}");
    let mut rank = 0;
    let mut seen = Vec::new();
    for (i, snap) in history.iter().enumerate() {
        let h = snap["h"].as_str().unwrap_or_default();
        let context = format!("{name}, round {round}: {snap} in {history:?}");
        assert_eq!(snap["error"], json!(""), "no error shown: {context}");
        assert_eq!(snap["connect"], json!("Disconnect"), "{context}");
        if i > 0 {
            let r = order.iter().position(|o| *o == h).unwrap_or(usize::MAX) + 1;
            assert!(r > rank && r <= order.len(), "forward only: {context}");
            rank = r;
            seen.push(h.to_owned());
        }
        let (join, leave, free) = match h {
            "IDLE" | "FINISHED" => (true, false, true),
            "QUEUED" => (false, true, false),
            "MATCHED" | "ASSIGNED" => (false, false, false),
            other => panic!("unexpected headline {other}: {context}"),
        };
        assert_eq!(snap["join"], json!(join), "Join: {context}");
        assert_eq!(snap["leave"], json!(leave), "Leave: {context}");
        assert_eq!(snap["party"], json!(free), "Create party: {context}");
        assert_eq!(snap["world"], json!(free), "world choice: {context}");
        assert_eq!(
            snap["leaveGame"],
            json!(h == "ASSIGNED"),
            "Leave the game only while the game is on: {context}"
        );
        assert_eq!(snap["finishedLeaveGame"], json!(false), "{context}");
    }
    // cat's join completes the match: no QUEUED for the last joiner.
    for needed in ["ASSIGNED", "FINISHED"] {
        assert!(
            seen.iter().any(|h| h == needed),
            "{name}: {needed} shown: {seen:?}"
        );
    }
    if name != "cat" {
        assert_eq!(seen.first().map(String::as_str), Some("QUEUED"), "{name}");
    }
}
