//! The `mm-local` binary as a user runs it: a child process with exactly
//! the environment given (plus `PATH`, to find `redis-server`), its stdout
//! and stderr lines recorded as they come, stopped with SIGTERM (so its
//! embedded `redis-server` stops with it).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

pub struct MmLocal {
    child: Child,
    lines: Arc<Mutex<Vec<(Stream, String)>>>,
    /// The threads reading stdout and stderr (they end at end of file).
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl MmLocal {
    /// Starts `mm-local` with `vars` (and `PATH`, `HOME`).
    pub fn start(vars: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mm-local"));
        cmd.env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for var in ["PATH", "HOME"] {
            if let Some(v) = std::env::var_os(var) {
                cmd.env(var, v);
            }
        }
        cmd.envs(vars.iter().copied());
        let mut child = cmd.spawn().expect("mm-local starts");
        let lines: Arc<Mutex<Vec<(Stream, String)>>> = Arc::default();
        let mut readers = Vec::new();
        let out = child.stdout.take().expect("stdout");
        let err = child.stderr.take().expect("stderr");
        for (stream, reader) in [
            (
                Stream::Stdout,
                Box::new(out) as Box<dyn std::io::Read + Send>,
            ),
            (Stream::Stderr, Box::new(err)),
        ] {
            let sink = lines.clone();
            readers.push(std::thread::spawn(move || {
                for line in BufReader::new(reader).lines().map_while(Result::ok) {
                    sink.lock().unwrap().push((stream, line));
                }
            }));
        }
        Self {
            child,
            lines,
            readers,
        }
    }

    /// Every line so far, both streams in arrival order.
    pub fn lines(&self) -> Vec<(Stream, String)> {
        self.lines.lock().unwrap().clone()
    }

    /// The lines of `stream` so far.
    pub fn lines_of(&self, stream: Stream) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|(s, _)| *s == stream)
            .map(|(_, l)| l)
            .collect()
    }

    /// Waits until a stdout line satisfies `pred`; panics with the output
    /// after `within` or if the process exits first.
    pub fn wait_for_line(&mut self, within: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(line) = self.lines_of(Stream::Stdout).into_iter().find(|l| pred(l)) {
                return line;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("mm-local exited ({status}): {:#?}", self.lines());
            }
            assert!(
                Instant::now() < deadline,
                "no such line within {within:?}: {:#?}",
                self.lines()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the process to exit on its own within `within`.
    pub fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // The readers take the last lines until end of file (a
                // process the child started may hold its pipes a little
                // longer: bounded).
                let until = Instant::now() + Duration::from_secs(5);
                while self.readers.iter().any(|r| !r.is_finished()) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(10));
                }
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "mm-local still runs: {:#?}",
                self.lines()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops it as Ctrl-C or a service manager would (SIGTERM), waiting for
    /// a clean exit.
    pub fn stop(&mut self) -> ExitStatus {
        if let Ok(Some(status)) = self.child.try_wait() {
            return status;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.wait_exit(Duration::from_secs(15))
    }

    /// The banner's URL after `label` (e.g. "HTTP API" gives
    /// `http://127.0.0.1:port`).
    pub fn banner_url(&self, label: &str) -> String {
        let line = self
            .lines_of(Stream::Stdout)
            .into_iter()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} line: {:#?}", self.lines()));
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://") || w.starts_with("ws://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"));
        let url = url.split(['?']).next().unwrap_or_default();
        url.split("/v1")
            .next()
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_owned()
    }
}

impl Drop for MmLocal {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = Command::new("kill")
                .args(["-TERM", &self.child.id().to_string()])
                .status();
            let _ = self.child.wait();
        }
    }
}
