//! `mm-local`: runs the whole matchmaking system on this machine.
//! Configuration comes from the same environment variables as the Lambda
//! functions (docs/deploy.md#configuration), plus `MM_HTTP_ADDR` / `MM_WS_ADDR`, the EventBridge
//! stand-in's `MM_EVENTBRIDGE_ADDR`, the demo game server's
//! `MM_GAME_SERVER_ADDR`, `MM_DEMO_ALLOCATOR` and `MM_DEMO_GAME_SECS`.

use std::process::ExitCode;
use std::time::Duration;

use local_stack::{LocalStack, StackConfig};

/// A failure to start is one line on stderr saying what to change (no
/// `Debug` dump of the error), and exit code 1.
#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mm-local: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    lambda_common::telemetry::init();
    let config = StackConfig::from_lookup(|k| std::env::var(k).ok())?;
    let external = config.external_redis;
    let game = config.demo_game;
    let stack = LocalStack::start(config).await?;
    print_banner(&stack, external, game);
    // Ctrl-C or a service manager's SIGTERM: stop cleanly either way, so the
    // embedded redis-server never outlives the stack.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result?,
        _ = terminate.recv() => {}
    }
    println!("\nshutting down...");
    stack.stop().await;
    Ok(())
}

fn print_banner(stack: &LocalStack, external_redis: bool, game: Duration) {
    let settings = stack.store.settings();
    let redis = if external_redis {
        "REDIS_URL"
    } else {
        "embedded redis-server (stops with the stack)"
    };
    let worlds: Vec<String> = settings
        .worlds
        .iter()
        .map(|w| match w.teams {
            1 => format!("{} (matches of {})", w.name, w.team_size),
            teams => format!("{} ({teams} teams of {})", w.name, w.team_size),
        })
        .collect();
    let http = &stack.http_url;
    let ws = &stack.websocket_url;
    println!(
        r#"
Matchmaking local stack is running.

  Demo page       {http}/
  HTTP API        {http}/v1/matching/...   (JWT authorizer emulated)
  WebSocket API   {ws}?token=<JWT>
  @connections    {ws_http}@connections/{{id}}
  JWKS            {http}/.well-known/jwks.json
  EventBridge     {eventbridge} (PutEvents stand-in; what it got: {http}/dev/events)
  Demo allocator  {allocator}
  Redis           {url} — {redis}
  Namespace       {ns}
  Worlds          {worlds}

Try it (three players fill a match in world1):

  TOKEN=$(curl -s -X POST {http}/dev/token -d '{{"sub":"alice"}}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
  # in another terminal, to see the pushes:  npx wscat -c "{ws}?token=$TOKEN"
  curl -s -X POST {http}/v1/matching/join -H "Authorization: Bearer $TOKEN" \
       -H 'content-type: application/json' -d '{{"worldType":"world1"}}'
  curl -s {http}/v1/matching/my-status -H "Authorization: Bearer $TOKEN"

Press Ctrl-C to stop.
"#,
        ws_http = ws.replacen("ws://", "http://", 1),
        eventbridge = if settings.match_events {
            stack.eventbridge_url.clone()
        } else {
            format!("{} (idle: MM_MATCH_EVENTS=false)", stack.eventbridge_url)
        },
        allocator = if stack.demo_allocator {
            format!(
                "assigns every match to the game server http://{}, which plays each game for {} s \
                 (MM_DEMO_GAME_SECS) and reports its result (MM_DEMO_ALLOCATOR=false: off)",
                stack.game_server_addr,
                game.as_secs_f64()
            )
        } else {
            "off (MM_DEMO_ALLOCATOR=false, MM_MATCH_EVENTS=false or no servers.scope in the rules)"
                .to_owned()
        },
        url = settings.redis.urls.join(","),
        ns = settings.namespace,
        worlds = worlds.join(", "),
    );
}
