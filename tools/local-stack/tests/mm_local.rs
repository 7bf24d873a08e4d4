//! `mm-local` as a newcomer meets it: the banner's "Try it" commands,
//! pasted into bash, work; a busy port ends the binary with one line naming
//! the variable to set; a demo run (a match played through to its result,
//! then idle) logs no WARN or ERROR and no EMF metric line unless asked
//! (`MM_METRICS_STDOUT`).
//!
//! The idle period is `MM_IDLE_SECS` (default 10 s, after a game of 8 s;
//! 60 s when `MM_SOAK_OPS` asks for the long runs). `MM_PRINT_LOG=1` prints
//! the run's log.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use support::binary::{MmLocal, Stream};
use tokio_tungstenite::tungstenite::Message;

const START: Duration = Duration::from_secs(30);
const WAIT: Duration = Duration::from_secs(30);

fn rules_file() -> String {
    format!("{}/rules.json", env!("CARGO_MANIFEST_DIR"))
}

/// A stack on free ports with the stack's default rules and `extra`.
fn start(extra: &[(&str, &str)]) -> MmLocal {
    let rules = rules_file();
    let mut vars = vec![
        ("MM_RULES_FILE", rules.as_str()),
        ("MM_HTTP_ADDR", "127.0.0.1:0"),
        ("MM_WS_ADDR", "127.0.0.1:0"),
    ];
    vars.extend_from_slice(extra);
    let mut stack = MmLocal::start(&vars);
    stack.wait_for_line(START, |l| l.starts_with("Press Ctrl-C"));
    stack
}

/// A line without its terminal colour codes.
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ ... final byte in @..~
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) && c != '[' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn level(line: &str) -> Option<String> {
    plain(line)
        .split_whitespace()
        .nth(1)
        .filter(|w| ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(w))
        .map(str::to_owned)
}

fn is_emf(line: &str) -> bool {
    line.trim_start().starts_with("{\"_aws\"")
}

#[test]
fn the_banner_commands_pasted_into_bash_succeed() {
    let mut stack = start(&[]);
    let out = stack.lines_of(Stream::Stdout);
    let block: Vec<&String> = out
        .iter()
        .skip_while(|l| !l.starts_with("Try it"))
        .skip(1)
        .take_while(|l| !l.starts_with("Press Ctrl-C"))
        .collect();
    assert!(block.len() >= 3, "the Try it block: {out:#?}");
    let script: String = block.iter().map(|l| format!("{l}\n")).collect();
    // Pasted: the lines on a shell's input; -e stops at the first failure.
    let mut bash = Command::new("bash")
        .arg("-e")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash");
    bash.stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("paste");
    let done = bash.wait_with_output().expect("bash runs");
    let stdout = String::from_utf8_lossy(&done.stdout);
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(
        done.status.success() && stderr.trim().is_empty(),
        "{}\n--- script:\n{script}--- stdout:\n{stdout}--- stderr:\n{stderr}",
        done.status
    );
    // Every answer (curl -s prints them back to back) is a 200: the join,
    // then my-status showing the ticket.
    let answers: Vec<Value> = serde_json::Deserializer::from_str(&stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(answers.len(), 2, "{stdout}");
    for answer in &answers {
        assert_eq!(
            answer["resultCode"], "200",
            "{answer}\n--- script:\n{script}"
        );
        assert_eq!(answer["data"]["status"], "QUEUED", "{answer}");
    }
    assert!(stack.stop().success());
}

#[test]
fn a_busy_port_exits_with_one_line_naming_its_variable() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = busy.local_addr().expect("its address").to_string();
    let rules = rules_file();
    for var in ["MM_HTTP_ADDR", "MM_WS_ADDR"] {
        let mut vars = vec![
            ("MM_RULES_FILE", rules.as_str()),
            ("MM_HTTP_ADDR", "127.0.0.1:0"),
            ("MM_WS_ADDR", "127.0.0.1:0"),
        ];
        vars.retain(|(k, _)| *k != var);
        vars.push((var, addr.as_str()));
        let mut stack = MmLocal::start(&vars);
        let status = stack.wait_exit(START);
        assert_eq!(status.code(), Some(1), "{:#?}", stack.lines());
        assert_eq!(
            stack.lines(),
            [(
                Stream::Stderr,
                format!("mm-local: {addr} is in use; set {var} to another address")
            )],
            "exactly one line, on stderr"
        );
    }
}

/// A player's socket: every message it receives, recorded.
struct Socket {
    received: Arc<Mutex<Vec<Value>>>,
    _reader: tokio::task::JoinHandle<()>,
}

impl Socket {
    async fn connect(ws: &str, token: &str) -> Self {
        let (socket, _) = tokio_tungstenite::connect_async(format!("{ws}/?token={token}"))
            .await
            .expect("WebSocket connect");
        let received: Arc<Mutex<Vec<Value>>> = Arc::default();
        let sink = received.clone();
        let reader = tokio::spawn(async move {
            let (_write, mut read) = socket.split();
            while let Some(Ok(Message::Text(text))) = read.next().await {
                if let Ok(v) = serde_json::from_str(&text) {
                    sink.lock().unwrap().push(v);
                }
            }
        });
        Self {
            received,
            _reader: reader,
        }
    }

    async fn heard(&self, kind: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            if let Some(m) = self
                .received
                .lock()
                .unwrap()
                .iter()
                .find(|m| m["type"] == kind)
            {
                return m.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no {kind} within {within:?}: {:?}",
                self.received.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn post(url: &str, token: Option<&str>, body: Value) -> Value {
    let mut req = support::http().post(url).body(body.to_string());
    if let Some(t) = token {
        req = req
            .bearer_auth(t)
            .header("content-type", "application/json");
    }
    let res = req.send().await.expect("POST");
    res.json().await.expect("JSON answer")
}

/// A token for `name` from the stack's `/dev/token`.
async fn dev_token(http: &str, name: &str) -> String {
    post(&format!("{http}/dev/token"), None, json!({"sub": name})).await["token"]
        .as_str()
        .expect("a token")
        .to_owned()
}

/// `name` connects and joins world1; returns the socket.
async fn connect_and_join(http: &str, ws: &str, name: &str) -> Socket {
    let token = dev_token(http, name).await;
    let socket = Socket::connect(ws, &token).await;
    let joined = post(
        &format!("{http}/v1/matching/join"),
        Some(&token),
        json!({"worldType": "world1"}),
    )
    .await;
    assert_eq!(joined["resultCode"], "200", "{joined}");
    socket
}

/// Three players in world1 play a whole demo game: matched, assigned, the
/// demo server's result. With `leave`, the first leaves the game as the
/// demo page's button does, and a fourth takes the seat the server's
/// backfill opens (the server renews the backfill until it hears it is
/// filled).
async fn play_a_game(stack: &MmLocal, leave: bool) {
    let http = stack.banner_url("HTTP API");
    let ws = stack.banner_url("WebSocket API");
    let mut sockets = Vec::new();
    for name in ["ann", "ben", "cat"] {
        sockets.push(connect_and_join(&http, &ws, name).await);
    }
    let seat = sockets[0].heard("MATCH_ASSIGNED", WAIT).await;
    if leave {
        let url = format!(
            "http://{}/leave?match={}&token={}",
            seat["assignment"]["connection"].as_str().expect("a server"),
            seat["matchId"].as_str().expect("a match"),
            seat["assignment"]["token"].as_str().expect("a seat token"),
        );
        let res = support::http()
            .get(url)
            .send()
            .await
            .expect("the game server");
        assert_eq!(res.status(), 200);
        let dan = connect_and_join(&http, &ws, "dan").await;
        let found = dan.heard("MATCH_FOUND", WAIT).await;
        assert_eq!(
            (&found["matchId"], &found["backfill"]),
            (&seat["matchId"], &json!(true)),
            "{found}"
        );
        sockets.push(dan);
    }
    for socket in &sockets {
        socket.heard("MATCH_ASSIGNED", WAIT).await;
        let result = socket.heard("MATCH_RESULT", WAIT).await;
        assert!(result["result"]["playerRanks"].is_object(), "{result}");
    }
}

fn idle_period() -> Duration {
    let secs = std::env::var("MM_IDLE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if std::env::var_os("MM_SOAK_OPS").is_some() {
            60
        } else {
            10
        });
    Duration::from_secs(secs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_run_then_idle_logs_no_warning_error_or_metric_line() {
    // A game that outlasts one backfill renewal (every 5 s), so the server
    // renews a backfill that was filled; the stack's own debug lines on,
    // to see that it did.
    let mut stack = start(&[
        ("MM_DEMO_GAME_SECS", "8"),
        ("RUST_LOG", "info,local_stack=debug"),
    ]);
    play_a_game(&stack, true).await;
    let idle = idle_period();
    tokio::time::sleep(idle).await;
    assert!(stack.stop().success());
    let lines = stack.lines();
    // It did what a demo does: the game ended with the server's result.
    for done in ["result reported", "backfill done"] {
        assert!(
            lines.iter().any(|(_, l)| l.contains(done)),
            "{done}: {lines:#?}"
        );
    }
    let bad: Vec<&String> = lines
        .iter()
        .map(|(_, l)| l)
        .filter(|l| {
            matches!(level(l).as_deref(), Some("WARN" | "ERROR"))
                || is_emf(l)
                // A join leaves the match event to the matcher by design.
                || l.contains("match event not sent")
        })
        .collect();
    if std::env::var_os("MM_PRINT_LOG").is_some() {
        for (_, l) in &lines {
            println!("{}", plain(l));
        }
    }
    assert!(
        bad.is_empty(),
        "warnings, errors, EMF or routine-as-failure lines in a demo run idle for {idle:?}: {bad:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metric_lines_come_when_asked() {
    let mut stack = start(&[("MM_METRICS_STDOUT", "true"), ("MM_DEMO_GAME_SECS", "0")]);
    play_a_game(&stack, false).await;
    assert!(stack.stop().success());
    let emf: Vec<Value> = stack
        .lines_of(Stream::Stdout)
        .iter()
        .filter(|l| is_emf(l))
        .map(|l| serde_json::from_str(l).expect("an EMF line is JSON"))
        .collect();
    assert!(
        emf.iter()
            .any(|m| m["World"] == "world1" && m["MatchesFormed"] == 1),
        "{emf:?}"
    );
}
