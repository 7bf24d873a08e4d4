//! A minimal Chrome DevTools Protocol client: launches Debian's headless
//! `chromium`, opens pages and evaluates JavaScript in them. Just enough to
//! drive the demo page like a person would (click, read the DOM).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub struct Browser {
    child: Child,
    profile: PathBuf,
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
}

/// A page (target) attached with a flat session.
#[derive(Clone)]
pub struct Page {
    session: String,
}

fn chromium_binary() -> String {
    for candidate in ["chromium", "chromium-browser", "google-chrome"] {
        if Command::new(candidate)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            return candidate.to_owned();
        }
    }
    panic!(
        "no Chromium found on PATH: install it with `sudo apt-get install -y chromium` \
         or run the README's test command (scripts/test.sh), which does"
    );
}

impl Browser {
    pub async fn launch() -> Self {
        let binary = chromium_binary();
        let profile = std::env::temp_dir().join(format!(
            "mm-chromium-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&profile).expect("profile dir");
        // Flags as this machine needs them: root needs --no-sandbox, and
        // background networking would try (and fail) to reach the Internet.
        let child = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromium");
        // Chromium writes its DevTools port and browser path to this file.
        let port_file = profile.join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(30);
        let endpoint = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break format!("ws://127.0.0.1:{port}{path}");
                }
            }
            assert!(
                Instant::now() < deadline,
                "chromium did not open its DevTools port"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let (socket, _) = tokio_tungstenite::connect_async(endpoint)
            .await
            .expect("connect to DevTools");
        Self {
            child,
            profile,
            socket,
            next_id: 0,
        }
    }

    /// Sends one command and waits for its reply (events are skipped).
    pub async fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        self.socket
            .send(Message::Text(message.to_string().into()))
            .await
            .expect("send CDP command");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let next = tokio::time::timeout(remaining, self.socket.next()).await;
            let Ok(Some(Ok(Message::Text(text)))) = next else {
                assert!(Instant::now() < deadline, "no reply to {method}");
                continue;
            };
            let reply: Value = serde_json::from_str(&text).expect("CDP JSON");
            if reply["id"] == id {
                assert!(
                    reply.get("error").is_none(),
                    "{method} failed: {}",
                    reply["error"]
                );
                return reply["result"].clone();
            }
        }
    }

    pub async fn open(&mut self, url: &str) -> Page {
        let target = self
            .call(None, "Target.createTarget", json!({ "url": url }))
            .await;
        let target_id = target["targetId"].as_str().expect("targetId").to_owned();
        let attached = self
            .call(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
            )
            .await;
        Page {
            session: attached["sessionId"]
                .as_str()
                .expect("sessionId")
                .to_owned(),
        }
    }

    /// Opens the demo page at `url` and waits until it has loaded its
    /// worlds (its first request to the stack answered).
    pub async fn open_demo_page(&mut self, url: &str) -> Page {
        let page = self.open(url).await;
        self.wait_for(
            &page,
            "the page to load its worlds",
            "document.getElementById('world').options.length > 0",
            Duration::from_secs(15),
        )
        .await;
        page
    }

    /// Clicks the demo page's Connect and waits until the button
    /// `enabled_id` is enabled (the socket is open).
    pub async fn connect_demo_page(&mut self, page: &Page, enabled_id: &str) {
        self.eval(page, "document.getElementById('connect').click()")
            .await;
        self.wait_for(
            page,
            "the socket to open",
            &format!("!document.getElementById('{enabled_id}').disabled"),
            Duration::from_secs(15),
        )
        .await;
    }

    /// Evaluates `expression` in `page`: its value, or the exception it threw.
    pub async fn try_eval(&mut self, page: &Page, expression: &str) -> Result<Value, Value> {
        let result = self
            .call(
                Some(&page.session),
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            )
            .await;
        match result.get("exceptionDetails") {
            Some(exception) => Err(exception.clone()),
            None => Ok(result["result"]["value"].clone()),
        }
    }

    /// Evaluates `expression` in `page` and returns its value.
    pub async fn eval(&mut self, page: &Page, expression: &str) -> Value {
        self.try_eval(page, expression)
            .await
            .unwrap_or_else(|e| panic!("{expression}: {e}"))
    }

    /// Polls `expression` until it is truthy (an exception counts as not
    /// yet: the page may still be loading).
    pub async fn wait_for(
        &mut self,
        page: &Page,
        what: &str,
        expression: &str,
        limit: Duration,
    ) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let outcome = self.try_eval(page, expression).await;
            if let Ok(value) = &outcome {
                if !(value.is_null() || *value == json!(false) || *value == json!("")) {
                    return value.clone();
                }
            }
            if Instant::now() >= deadline {
                // What the page saw: its log (newest first) and its matches.
                let seen = self
                    .try_eval(
                        page,
                        "[(document.getElementById('log') || {}).innerText, \
                          (document.getElementById('matches') || {}).innerHTML]",
                    )
                    .await;
                panic!("timed out waiting for {what}; last: {outcome:?}; the page: {seen:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A PNG screenshot of `page`.
    pub async fn screenshot(&mut self, page: &Page) -> Vec<u8> {
        use base64::Engine;
        let shot = self
            .call(
                Some(&page.session),
                "Page.captureScreenshot",
                json!({ "format": "png" }),
            )
            .await;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .unwrap_or_default()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
