//! The demo page in real headless Chromium: three browser players join
//! world1 and each page shows the same match id; a party of tabs plays in
//! one team.

mod support;

use std::time::Duration;

use support::cdp::{Browser, Page};
use support::start_stack;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_browser_players_see_the_same_match() {
    let stack = start_stack("world1:3,world2:2", &[]).await;
    let mut browser = Browser::launch().await;
    let mut pages = Vec::new();
    for name in ["ann", "ben", "cat"] {
        let url = format!("{}/?player={name}&world=world1", stack.http_url);
        let page = open_connected(&mut browser, &url, "join").await;
        pages.push(page);
    }
    for (i, page) in pages.iter().enumerate() {
        browser
            .eval(page, "document.getElementById('join').click()")
            .await;
        if i < 2 {
            let status = browser
                .wait_for(page, "QUEUED", "document.getElementById('status').textContent === 'QUEUED' && document.getElementById('detail').textContent", Duration::from_secs(15))
                .await;
            assert!(
                status
                    .as_str()
                    .unwrap_or_default()
                    .contains(&format!("position {}", i + 1)),
                "{status}"
            );
        }
    }
    let mut ids = Vec::new();
    for page in &pages {
        let id = browser
            .wait_for(
                page,
                "MATCH_FOUND on the page",
                "(document.querySelector('#matches .match') || {}).dataset?.matchId",
                Duration::from_secs(15),
            )
            .await;
        let text = browser
            .eval(
                page,
                "document.querySelector('#matches .match').textContent",
            )
            .await;
        for name in ["ann", "ben", "cat"] {
            assert!(
                text.as_str().unwrap_or_default().contains(name),
                "teammates shown: {text}"
            );
        }
        ids.push(id);
    }
    assert!(ids[0].is_string());
    assert!(
        ids.iter().all(|id| *id == ids[0]),
        "all pages show one match id: {ids:?}"
    );

    // The overview view lists that match and the (now empty) queue.
    let overview = browser
        .open(&format!("{}/?view=overview", stack.http_url))
        .await;
    let listed = format!(
        "document.getElementById('recent').textContent.includes({})",
        ids[0]
    );
    browser
        .wait_for(
            &overview,
            "the overview to list the match",
            &listed,
            Duration::from_secs(15),
        )
        .await;
    let shot = browser.screenshot(&pages[0]).await;
    assert!(shot.starts_with(b"\x89PNG"), "a real screenshot");
    let _ = std::fs::write(std::env::temp_dir().join("mm-demo-page.png"), shot);
    stack.stop().await;
}

/// A party of browser tabs: one tab invites another, the invited tab joins
/// from the PARTY_UPDATE it was pushed, two solo tabs complete a 2 x 2
/// match, and every page shows the teams with the party in one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_party_of_tabs_plays_in_one_team() {
    let rules = r#"{"worlds": [{"name": "arena", "teamSize": 2, "teams": 2}]}"#;
    let stack = support::start_stack_vars(&[("MM_RULES", rules)]).await;
    let mut browser = Browser::launch().await;
    let mut pages = Vec::new();
    for name in ["ann", "ben", "cat", "dan"] {
        let url = format!("{}/?player={name}&world=arena", stack.http_url);
        let page = open_connected(&mut browser, &url, "create-party").await;
        pages.push(page);
    }
    let (ann, ben) = (&pages[0], &pages[1]);
    browser
        .eval(
            ann,
            "document.getElementById('invite').value = 'ben'; document.getElementById('create-party').click()",
        )
        .await;
    browser
        .wait_for(
            ann,
            "ann's party to assemble",
            "document.getElementById('party').dataset.state === 'ASSEMBLING'",
            Duration::from_secs(15),
        )
        .await;
    // ben learns of the invitation by push, and joins from the page.
    browser
        .wait_for(
            ben,
            "ben's invitation",
            "!document.getElementById('join-party').hidden",
            Duration::from_secs(15),
        )
        .await;
    browser
        .eval(ben, "document.getElementById('join-party').click()")
        .await;
    browser
        .wait_for(
            ann,
            "ann to see the party queued",
            "document.getElementById('party').dataset.state === 'QUEUED'",
            Duration::from_secs(15),
        )
        .await;
    for page in &pages[2..] {
        browser
            .eval(page, "document.getElementById('join').click()")
            .await;
    }
    for page in &pages {
        let teams = browser
            .wait_for(
                page,
                "the match with its teams",
                "Array.from(document.querySelectorAll('#matches .match .team')).map((t) => t.textContent).join(' | ') || null",
                Duration::from_secs(15),
            )
            .await;
        let teams = teams.as_str().unwrap_or_default().to_owned();
        let lines: Vec<&str> = teams.split(" | ").collect();
        assert_eq!(lines.len(), 2, "two teams shown: {teams}");
        assert!(
            lines.iter().any(|l| l.contains("ann") && l.contains("ben")),
            "the party plays in one team: {teams}"
        );
        assert!(
            lines.iter().any(|l| l.contains("cat") && l.contains("dan")),
            "{teams}"
        );
    }
    stack.stop().await;
}

/// A ready check in two tabs: both see the dialog with a countdown; one
/// accepts, the other sees the progress and accepts; both show the match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ready_check_dialog_counts_down_and_both_accept() {
    let rules =
        r#"{"worlds": [{"name": "duel", "teamSize": 2, "readyCheck": {"acceptSeconds": 30}}]}"#;
    let stack = support::start_stack_vars(&[("MM_RULES", rules)]).await;
    let mut browser = Browser::launch().await;
    let mut pages = Vec::new();
    for name in ["amy", "bo"] {
        let url = format!("{}/?player={name}&world=duel", stack.http_url);
        let page = open_connected(&mut browser, &url, "join").await;
        browser
            .eval(&page, "document.getElementById('join').click()")
            .await;
        pages.push(page);
    }
    for page in &pages {
        let countdown = browser
            .wait_for(
                page,
                "the ready dialog with a countdown",
                "document.getElementById('ready').open && Number(document.getElementById('ready-countdown').textContent) > 0 && document.getElementById('ready-countdown').textContent",
                Duration::from_secs(15),
            )
            .await;
        let left: u64 = countdown.as_str().unwrap_or_default().parse().unwrap_or(0);
        assert!((1..=30).contains(&left), "{countdown}");
    }
    browser
        .eval(&pages[0], "document.getElementById('ready-accept').click()")
        .await;
    browser
        .wait_for(
            &pages[1],
            "bo to see amy's accept",
            "document.getElementById('ready-progress').textContent.startsWith('1 of 2')",
            Duration::from_secs(15),
        )
        .await;
    browser
        .eval(&pages[1], "document.getElementById('ready-accept').click()")
        .await;
    for page in &pages {
        browser
            .wait_for(
                page,
                "the match on the page, the dialog closed",
                "!document.getElementById('ready').open && (document.querySelector('#matches .match') || {}).dataset?.matchId",
                Duration::from_secs(15),
            )
            .await;
    }
    stack.stop().await;
}

/// Players of a world with regions enter their latencies on the page; the
/// match plays in the region with the lowest worst latency, which every
/// page shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_world_with_regions_shows_the_region_chosen() {
    let rules = r#"{"worlds": [{"name": "geo", "teamSize": 2,
        "regions": {"names": ["eu", "us"], "maxLatencyMs": 50, "widenPerSecond": 0,
                    "maxLatencyCapMs": 150}}]}"#;
    let stack = support::start_stack_vars(&[("MM_RULES", rules)]).await;
    let mut browser = Browser::launch().await;
    let mut pages = Vec::new();
    // us is within the cap for ben only: the match plays in eu.
    for (name, latencies) in [("ann", "eu%3D30,us%3D140"), ("ben", "eu%3D40,us%3D20")] {
        let url = format!(
            "{}/?player={name}&world=geo&latencies={latencies}",
            stack.http_url
        );
        let page = open_connected(&mut browser, &url, "join").await;
        let shown = browser
            .eval(&page, "!document.getElementById('latencies-label').hidden")
            .await;
        assert_eq!(
            shown,
            serde_json::json!(true),
            "the latencies field shows for geo"
        );
        browser
            .eval(&page, "document.getElementById('join').click()")
            .await;
        pages.push(page);
    }
    for page in &pages {
        let region = browser
            .wait_for(
                page,
                "the match with its region",
                "(document.querySelector('#matches .match') || {}).dataset?.region",
                Duration::from_secs(15),
            )
            .await;
        assert_eq!(region, serde_json::json!("eu"));
        let text = browser
            .eval(
                page,
                "document.querySelector('#matches .match').textContent",
            )
            .await;
        assert!(
            text.as_str().unwrap_or_default().contains("worst 40 ms"),
            "{text}"
        );
    }
    stack.stop().await;
}

/// The page's client is the TypeScript SDK (the bundle at /mm-client.js):
/// two tabs are matched, the demo allocator assigns the match, each tab
/// shows its server from MATCH_ASSIGNED (delivered once, whatever the
/// outbox repeats) and joins the demo game server with its own token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_page_shows_the_assigned_server_and_joins_it() {
    let rules = r#"{"servers": {"scope": "matchmaking/server"},
        "worlds": [{"name": "duo", "teamSize": 2}]}"#;
    let stack = support::start_stack_vars(&[("MM_RULES", rules)]).await;
    let mut browser = Browser::launch().await;
    let mut pages = Vec::new();
    for name in ["amy", "bo"] {
        let url = format!("{}/?player={name}&world=duo", stack.http_url);
        let page = open_connected(&mut browser, &url, "join").await;
        let sdk = browser
            .eval(
                &page,
                "performance.getEntriesByType('resource').some((e) => e.name.endsWith('/mm-client.js'))",
            )
            .await;
        assert_eq!(
            sdk,
            serde_json::json!(true),
            "the page loads the SDK bundle"
        );
        browser
            .eval(&page, "document.getElementById('join').click()")
            .await;
        pages.push(page);
    }
    for page in &pages {
        let connection = browser
            .wait_for(
                page,
                "the assigned server on the page",
                "(document.querySelector('#matches .match .assignment') || {}).dataset?.connection",
                Duration::from_secs(20),
            )
            .await;
        assert!(
            connection
                .as_str()
                .unwrap_or_default()
                .starts_with("127.0.0.1:"),
            "{connection}"
        );
        let shown = browser
            .eval(
                page,
                "document.querySelectorAll('#matches .match .assignment').length",
            )
            .await;
        assert_eq!(shown, serde_json::json!(1), "one assignment shown");
        browser
            .eval(
                page,
                "document.querySelector('#matches .join-server').click()",
            )
            .await;
        browser
            .wait_for(
                page,
                "the game server to admit the player",
                "(document.querySelector('#matches .match .assignment') || {}).dataset?.joined === 'yes'",
                Duration::from_secs(15),
            )
            .await;
    }
    stack.stop().await;
}

/// A backfill on the demo page: three tabs are matched and assigned; one
/// leaves the game (two players still play, so the demo game server asks
/// for a backfill of the seat, through the real route; with one left it
/// would end the game); a fourth tab joins the world and is seated in the
/// running match at once (shown as a backfill), with the match's server,
/// which admits it by its player id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_who_leaves_the_game_is_replaced_by_a_backfill() {
    let rules = r#"{"servers": {"scope": "matchmaking/server"},
        "worlds": [{"name": "trio", "teamSize": 3}]}"#;
    let stack = support::start_stack_vars(&[("MM_RULES", rules)]).await;
    let mut browser = Browser::launch().await;
    let mut pages = Vec::new();
    for name in ["ada", "ben", "dan"] {
        let url = format!("{}/?player={name}&world=trio", stack.http_url);
        let page = open_connected(&mut browser, &url, "join").await;
        browser
            .eval(&page, "document.getElementById('join').click()")
            .await;
        pages.push(page);
    }
    for page in &pages {
        browser
            .wait_for(
                page,
                "the assigned server on the page",
                "!!document.querySelector('#matches .match .leave-game')",
                Duration::from_secs(20),
            )
            .await;
    }
    let match_id = browser
        .eval(
            &pages[0],
            "document.querySelector('#matches .match').dataset.matchId",
        )
        .await;
    browser
        .eval(
            &pages[0],
            "document.querySelector('#matches .leave-game').click()",
        )
        .await;
    browser
        .wait_for(
            &pages[0],
            "the game server to let ada go",
            "(document.querySelector('#matches .match .assignment') || {}).dataset?.left === 'yes'",
            Duration::from_secs(15),
        )
        .await;
    // The game server's backfill is open: the next joiner takes the seat.
    integration_tests::eventually("the backfill to open", Duration::from_secs(15), || async {
        let status = stack
            .store
            .queue_status(stack.store.settings().worlds.get("trio").unwrap())
            .await
            .unwrap();
        (status.open_backfills == 1).then_some(())
    })
    .await;
    let url = format!("{}/?player=cyd&world=trio", stack.http_url);
    let cyd = open_connected(&mut browser, &url, "join").await;
    browser
        .eval(&cyd, "document.getElementById('join').click()")
        .await;
    let seated = browser
        .wait_for(
            &cyd,
            "the running match, marked a backfill",
            "(document.querySelector('#matches .match[data-backfill=\"yes\"]') || {}).dataset?.matchId",
            Duration::from_secs(20),
        )
        .await;
    assert_eq!(seated, match_id);
    browser
        .wait_for(
            &cyd,
            "the match's server on cyd's page",
            "!!document.querySelector('#matches .match .join-server')",
            Duration::from_secs(20),
        )
        .await;
    browser
        .eval(
            &cyd,
            "document.querySelector('#matches .join-server').click()",
        )
        .await;
    browser
        .wait_for(
            &cyd,
            "the game server to admit cyd",
            "(document.querySelector('#matches .match .assignment') || {}).dataset?.joined === 'yes'",
            Duration::from_secs(15),
        )
        .await;
    stack.stop().await;
}

/// Opens the demo page at `url`, waits for its worlds, connects, and waits
/// until the button `enabled_id` is enabled (the socket is open).
async fn open_connected(browser: &mut Browser, url: &str, enabled_id: &str) -> Page {
    let page = browser.open_demo_page(url).await;
    browser.connect_demo_page(&page, enabled_id).await;
    page
}
