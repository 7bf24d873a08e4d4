//! The local stack's embedded default: a private `redis-server` on a free
//! loopback port, without persistence, stopped when the stack stops.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

#[derive(Debug, thiserror::Error)]
pub enum EmbeddedRedisError {
    #[error(
        "redis-server was not found on PATH ({0}). Set REDIS_URL to use a running Redis, or install it: \
         `sudo apt-get install -y redis-server` (scripts/run-local.sh does this for you)"
    )]
    NotInstalled(std::io::Error),
    #[error("no free loopback port: {0}")]
    NoPort(std::io::Error),
    #[error("redis-server did not answer within {0:?}")]
    NotReady(Duration),
}

pub struct EmbeddedRedis {
    pub url: String,
    child: Child,
}

impl EmbeddedRedis {
    pub async fn start() -> Result<Self, EmbeddedRedisError> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(EmbeddedRedisError::NoPort)?
            .port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--daemonize", "no", "--loglevel", "warning"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(EmbeddedRedisError::NotInstalled)?;
        let url = format!("redis://127.0.0.1:{port}");
        let server = Self { url, child };
        server.wait_ready(Duration::from_secs(10)).await?;
        Ok(server)
    }

    async fn wait_ready(&self, limit: Duration) -> Result<(), EmbeddedRedisError> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(client) = redis::Client::open(self.url.as_str()) {
                if let Ok(mut conn) = client.get_multiplexed_async_connection().await {
                    if redis::cmd("PING")
                        .query_async::<String>(&mut conn)
                        .await
                        .is_ok()
                    {
                        return Ok(());
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        Err(EmbeddedRedisError::NotReady(limit))
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}
