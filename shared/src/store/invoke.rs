//! Running one script: within the command timeout, with replica
//! acknowledgements when its outcome is told, retried as far as an error
//! proves it did not run, and the function library loaded on first use.

use super::*;

impl MatchStore {
    /// Runs one script invocation within the command timeout, waiting for
    /// replica acknowledgements when its outcome is told (see
    /// [`durability`]). Retries follow what an error proves: one that
    /// shows the script did not run (MOVED, ASK, TRYAGAIN, CLUSTERDOWN,
    /// READONLY, a refused connection, ...) is retried with backoff until
    /// the deadline; one after which it may have run (a dropped connection)
    /// only for `idempotent` scripts, once.
    pub(super) async fn invoke(
        &self,
        inv: &Invocation<'_>,
        idempotent: bool,
    ) -> Result<Value, StoreError> {
        let timeout = self.timeout();
        let deadline = Instant::now() + timeout;
        let attempt = async {
            let mut conn = self.connection().await?;
            let idle_ms = self
                .elapsed_ms()
                .saturating_sub(self.inner.last_ok_ms.load(Ordering::Relaxed));
            if idle_ms >= millis(self.inner.settings.redis.idle_check_after) {
                // After an idle spell (a frozen-and-thawed Lambda, a NAT that
                // dropped the flow) the connection may be dead. A PING is safe
                // to retry, so it pays for the reconnect before the real
                // command goes out; writes themselves are never blindly
                // retried, since a lost reply could hide an applied write.
                if redis::cmd("PING")
                    .query_async::<()>(&mut conn)
                    .await
                    .is_err()
                {
                    redis::cmd("PING").query_async::<()>(&mut conn).await?;
                }
            }
            let mut backoff = RETRY_BACKOFF;
            let mut resent = false;
            loop {
                let e = match self.call_synced(&mut conn, inv).await {
                    Ok(v) => return Ok(v),
                    Err(durability::CallError::Store(e)) => return Err(e),
                    Err(durability::CallError::Redis(e)) => e,
                };
                if self.did_not_run(&e) && Instant::now() + backoff < deadline {
                    if is_read_only(&e) {
                        self.forget_connection();
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_RETRY_BACKOFF);
                    conn = self.connection().await?;
                    continue;
                }
                if idempotent && !resent && (e.is_connection_dropped() || e.is_io_error()) {
                    resent = true;
                    continue;
                }
                if is_read_only(&e) {
                    self.forget_connection();
                }
                return Err(StoreError::from(e));
            }
        };
        let mut value = tokio::time::timeout(timeout, attempt)
            .await
            .map_err(|_| StoreError::Timeout(timeout))??;
        // A waking operation's table reply ends with its wake flag.
        let wake = match &mut value {
            Value::Array(values) if inv.wakes() => values.pop() == Some(Value::Int(1)),
            _ => false,
        };
        self.inner
            .last_ok_ms
            .store(self.elapsed_ms(), Ordering::Relaxed);
        if wake {
            self.wake_matcher().await;
        }
        Ok(value)
    }

    /// Whether `e` proves the command was not executed, so sending it again
    /// is safe: the cluster refused it before running it (a redirect, a
    /// slot in migration or not served, a primary down or loading, a
    /// replica), or it never reached a node. READONLY on a single endpoint
    /// too (a replica now, see [`MatchStore::forget_connection`]).
    pub(super) fn did_not_run(&self, e: &RedisError) -> bool {
        use redis::{ErrorKind, ServerErrorKind};
        if is_read_only(e) {
            return true;
        }
        self.is_cluster()
            && (e.is_connection_refusal()
                || matches!(
                    e.kind(),
                    ErrorKind::ClusterConnectionNotFound
                        | ErrorKind::Server(
                            ServerErrorKind::Moved
                                | ServerErrorKind::Ask
                                | ServerErrorKind::TryAgain
                                | ServerErrorKind::ClusterDown
                                | ServerErrorKind::MasterDown
                                | ServerErrorKind::BusyLoading
                        )
                ))
    }

    /// One call: `FCALL`, loading the library first when the server does not
    /// have it (a new or flushed server, a new cluster node, a new version),
    /// or EVALSHA where functions are off or unavailable.
    pub(super) async fn call(
        &self,
        conn: &mut Connection,
        inv: &Invocation<'_>,
    ) -> Result<Value, RedisError> {
        if self.inner.functions.load(Ordering::Relaxed) {
            let loads_before = self.inner.function_loads.load(Ordering::Acquire);
            match inv.fcall().query_async::<Value>(conn).await {
                Err(e) if function_missing(&e) => {
                    if self.load_functions(conn, loads_before).await? {
                        return inv.fcall().query_async::<Value>(conn).await;
                    }
                }
                other => return other,
            }
        }
        inv.script_invocation().invoke_async::<Value>(conn).await
    }

    /// Loads the function library (on every primary of a cluster). `false`
    /// when the server does not offer functions (before Redis 7, or an ACL
    /// that denies `FUNCTION`): the store then stays on EVALSHA.
    pub(super) async fn load_functions(
        &self,
        conn: &mut Connection,
        loads_before: u64,
    ) -> Result<bool, RedisError> {
        let _loading = self.inner.load_lock.lock().await;
        if self.inner.function_loads.load(Ordering::Acquire) != loads_before {
            // Another call of this process loaded it since ours was sent.
            return Ok(self.inner.functions.load(Ordering::Relaxed));
        }
        let loaded = redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(&FUNCTIONS.code)
            .query_async::<Value>(conn)
            .await;
        match loaded {
            Ok(_) => {
                self.inner.function_loads.fetch_add(1, Ordering::Release);
                tracing::debug!(library = %FUNCTIONS.name, "loaded the function library");
                Ok(true)
            }
            // Our own code failing to load is a bug, never a reason to fall back.
            Err(e) if e.is_io_error() || e.is_connection_dropped() || library_broken(&e) => Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "Redis refused FUNCTION LOAD; running operations as EVALSHA");
                self.inner.functions.store(false, Ordering::Relaxed);
                self.inner.function_loads.fetch_add(1, Ordering::Release);
                Ok(false)
            }
        }
    }
}

/// First pause before sending a command again that did not run.
pub(super) const RETRY_BACKOFF: Duration = Duration::from_millis(20);
pub(super) const MAX_RETRY_BACKOFF: Duration = Duration::from_millis(250);

pub(super) fn is_read_only(e: &RedisError) -> bool {
    e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
}

/// `FCALL` of a function the server does not have, or a server without
/// `FCALL` at all.
pub(super) fn function_missing(e: &RedisError) -> bool {
    let text = e.to_string();
    text.contains("Function not found") || text.contains("unknown command")
}

/// The server rejected the library's code (a Lua error in `lua/`).
pub(super) fn library_broken(e: &RedisError) -> bool {
    let text = e.to_string();
    text.contains("Error compiling")
        || text.contains("Error registering")
        || text.contains("user_function")
}
