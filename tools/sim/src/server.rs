//! A private `redis-server` whose clock runs `speed` times faster than real
//! time, through libfaketime (`LD_PRELOAD`, `FAKETIME="+0 x<speed>"`). The
//! scripts read time only from Redis (`redis.call('TIME')`), so the whole
//! queue — ticket ages, rating windows, relax times, deadlines, match
//! timestamps — lives on the compressed clock while nothing in the
//! production code accepts a caller's clock.
//!
//! Debian's `redis-server` links the system jemalloc, which deadlocks with
//! libfaketime at start (libfaketime's initialisation allocates, jemalloc's
//! initialisation reads the clock: the known jemalloc/libfaketime clash).
//! When the binary links jemalloc, tcmalloc (`libtcmalloc-minimal4`) is
//! preloaded ahead of it so that allocation never reaches jemalloc. The
//! allocator changes nothing the scripts compute.
//!
//! Two settings keep the server's own housekeeping at real-time rates: `hz`
//! 1 (one background cycle per simulated second; the default 10 per second
//! of compressed time makes the event loop spin) and a busy-script
//! threshold of 5 s of real time.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How `scripts/sim.sh` (or a person) installs what is missing.
pub const FAKETIME_HINT: &str =
    "install it with `sudo apt-get install -y faketime` (scripts/sim.sh installs it when missing)";
pub const TCMALLOC_HINT: &str = "install it with `sudo apt-get install -y libtcmalloc-minimal4` \
     (libtcmalloc-minimal4t64 on newer Debian; scripts/sim.sh installs it when missing)";
pub const REDIS_HINT: &str = "install it with `scripts/install-deps.sh redis` \
     (`sudo apt-get install -y redis-server`)";

/// The libraries preloaded into redis-server.
#[derive(Debug, Clone, PartialEq)]
pub struct Preload {
    pub faketime: PathBuf,
    /// An allocator to use instead of a jemalloc the binary links.
    pub allocator: Option<PathBuf>,
}

impl Preload {
    fn ld_preload(&self) -> String {
        let mut libs: Vec<String> = Vec::new();
        if let Some(a) = &self.allocator {
            libs.push(a.display().to_string());
        }
        libs.push(self.faketime.display().to_string());
        libs.join(":")
    }
}

fn multiarch() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "aarch64-linux-gnu",
        "arm" => "arm-linux-gnueabihf",
        "x86" => "i386-linux-gnu",
        _ => "x86_64-linux-gnu",
    }
}

/// A library: `env_var` if set, else the first existing candidate, else the
/// first file called `name` that `dpkg -L <package>` lists.
fn find_library(
    env_var: &str,
    candidates: &[PathBuf],
    packages: &[&str],
    name: &str,
) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env_var) {
        return Some(PathBuf::from(p));
    }
    if let Some(p) = candidates.iter().find(|p| p.is_file()) {
        return Some(p.clone());
    }
    for package in packages {
        let Ok(out) = Command::new("dpkg").args(["-L", package]).output() else {
            continue;
        };
        let listing = String::from_utf8_lossy(&out.stdout);
        if let Some(p) = listing
            .lines()
            .map(Path::new)
            .find(|p| p.file_name().is_some_and(|f| f == name) && p.is_file())
        {
            return Some(p.to_path_buf());
        }
    }
    None
}

/// Finds libfaketime (`MM_SIM_LIBFAKETIME` overrides).
pub fn find_faketime() -> Result<PathBuf, String> {
    let arch = multiarch();
    let candidates: Vec<PathBuf> = [
        format!("/usr/lib/{arch}/faketime/libfaketime.so.1"),
        "/usr/lib/faketime/libfaketime.so.1".into(),
        "/usr/lib64/faketime/libfaketime.so.1".into(),
        "/usr/local/lib/faketime/libfaketime.so.1".into(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect();
    let found = find_library(
        "MM_SIM_LIBFAKETIME",
        &candidates,
        &["libfaketime"],
        "libfaketime.so.1",
    )
    .ok_or_else(|| format!("libfaketime was not found; {FAKETIME_HINT}"))?;
    if found.is_file() {
        Ok(found)
    } else {
        Err(format!(
            "libfaketime {} does not exist; {FAKETIME_HINT}",
            found.display()
        ))
    }
}

/// Finds tcmalloc (`MM_SIM_ALLOCATOR` overrides).
pub fn find_tcmalloc() -> Result<PathBuf, String> {
    let arch = multiarch();
    let candidates: Vec<PathBuf> = [
        format!("/usr/lib/{arch}/libtcmalloc_minimal.so.4"),
        "/usr/lib64/libtcmalloc_minimal.so.4".into(),
        "/usr/lib/libtcmalloc_minimal.so.4".into(),
        "/usr/local/lib/libtcmalloc_minimal.so.4".into(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect();
    find_library(
        "MM_SIM_ALLOCATOR",
        &candidates,
        &["libtcmalloc-minimal4t64", "libtcmalloc-minimal4"],
        "libtcmalloc_minimal.so.4",
    )
    .filter(|p| p.is_file())
    .ok_or_else(|| {
        format!(
            "redis-server links jemalloc, which deadlocks under libfaketime, and tcmalloc to \
             preload instead was not found; {TCMALLOC_HINT}"
        )
    })
}

/// The executable `program` names (a path, or a name looked up on PATH).
pub fn resolve_program(program: &str) -> Result<PathBuf, String> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("{program} does not exist; {REDIS_HINT}"))
        };
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("`{program}` was not found on PATH; {REDIS_HINT}"))
}

/// Whether an executable links libjemalloc dynamically (its dynamic
/// section names the library).
pub fn links_jemalloc(binary: &Path) -> Result<bool, String> {
    let bytes =
        std::fs::read(binary).map_err(|e| format!("cannot read {}: {e}", binary.display()))?;
    let needle = b"libjemalloc.so";
    Ok(bytes.windows(needle.len()).any(|w| w == needle))
}

/// The preloads `redis_server` needs.
pub fn preload_for(redis_server: &Path) -> Result<Preload, String> {
    let faketime = find_faketime()?;
    let allocator = if links_jemalloc(redis_server)? {
        Some(find_tcmalloc()?)
    } else {
        None
    };
    Ok(Preload {
        faketime,
        allocator,
    })
}

/// A running time-compressed redis-server, stopped on drop.
pub struct FakeRedis {
    child: Child,
    pub port: u16,
    pub speed: f64,
    pub preload: Preload,
    pub log: PathBuf,
}

impl FakeRedis {
    /// Starts `program` on a free loopback port, without persistence, with
    /// its clock `speed` times faster, logging to `log`. Waits until it
    /// answers PING (does not check the speed: see [`crate::clock`]).
    pub async fn start(program: &str, speed: f64, log: &Path) -> Result<Self, String> {
        if !(speed.is_finite() && speed >= 1.0) {
            return Err(format!("--speed must be >= 1, got {speed}"));
        }
        let binary = resolve_program(program)?;
        let preload = preload_for(&binary)?;
        let mut last_error = String::new();
        // A free port can be taken between probing and binding: retry.
        for _ in 0..3 {
            let port = free_port()?;
            let log_file =
                File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
            let err_file = log_file
                .try_clone()
                .map_err(|e| format!("cannot share {}: {e}", log.display()))?;
            let child = Command::new(&binary)
                .args(["--port", &port.to_string()])
                .args(["--bind", "127.0.0.1"])
                .args(["--save", ""])
                .args(["--appendonly", "no"])
                .args(["--protected-mode", "no"])
                .args(["--daemonize", "no"])
                .args(["--loglevel", "warning"])
                // Background tasks once per simulated second: at the default
                // 10 Hz of a compressed clock the event loop would spin
                // (~20 % of a core idle at x40).
                .args(["--hz", "1", "--dynamic-hz", "no"])
                // A script is "busy" after 5 s of real time, as on a normal
                // server, not after 5 s of compressed time.
                .args(["--lua-time-limit", &format!("{:.0}", 5000.0 * speed)])
                .env("LD_PRELOAD", preload.ld_preload())
                .env("FAKETIME", format!("+0 x{speed}"))
                .stdin(Stdio::null())
                .stdout(Stdio::from(log_file))
                .stderr(Stdio::from(err_file))
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}; {REDIS_HINT}", binary.display()))?;
            let mut server = Self {
                child,
                port,
                speed,
                preload: preload.clone(),
                log: log.to_path_buf(),
            };
            match server.wait_ready(Duration::from_secs(15)).await {
                Ok(()) => return Ok(server),
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn wait_ready(&mut self, within: Duration) -> Result<(), String> {
        let deadline = Instant::now() + within;
        let client = redis::Client::open(self.url()).map_err(|e| e.to_string())?;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "redis-server (LD_PRELOAD={}) exited at start ({status}): {}",
                    self.preload.ld_preload(),
                    self.log_tail()
                ));
            }
            let ping = async {
                let mut conn = client.get_multiplexed_async_connection().await?;
                redis::cmd("PING").query_async::<String>(&mut conn).await
            };
            if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(500), ping).await {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "redis-server (LD_PRELOAD={}, FAKETIME=\"+0 x{}\") does not answer PING after \
                     {} s. A hang at start is the jemalloc/libfaketime clash: preload an allocator \
                     (MM_SIM_ALLOCATOR) or use a redis-server built without the system jemalloc. \
                     Its log: {}",
                    self.preload.ld_preload(),
                    self.speed,
                    within.as_secs(),
                    self.log_tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(8)..].join(" | ");
        if tail.is_empty() {
            format!("{} is empty", self.log.display())
        } else {
            tail
        }
    }
}

impl Drop for FakeRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free loopback port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jemalloc_is_detected_from_the_dynamic_section() {
        let dir = std::env::temp_dir().join(format!("mm-sim-je-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let with = dir.join("with");
        let without = dir.join("without");
        std::fs::write(&with, b"\x7fELF....libjemalloc.so.2\0libc.so.6\0").unwrap();
        std::fs::write(&without, b"\x7fELF....libc.so.6\0").unwrap();
        assert!(links_jemalloc(&with).unwrap());
        assert!(!links_jemalloc(&without).unwrap());
        assert!(links_jemalloc(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn preload_order_puts_the_allocator_first() {
        let p = Preload {
            faketime: "/f/libfaketime.so.1".into(),
            allocator: Some("/a/libtcmalloc_minimal.so.4".into()),
        };
        assert_eq!(
            p.ld_preload(),
            "/a/libtcmalloc_minimal.so.4:/f/libfaketime.so.1"
        );
    }

    #[test]
    fn missing_programs_get_the_install_hint() {
        let err = resolve_program("no-such-redis-server-here").unwrap_err();
        assert!(err.contains("install-deps.sh redis"), "{err}");
        let err = resolve_program("/no/such/redis-server").unwrap_err();
        assert!(err.contains("install-deps.sh redis"), "{err}");
    }
}
