//! The seed's List + LPOS scripts (`bench/baseline/`), the baseline of row 1.

use redis::aio::MultiplexedConnection;
use redis::{Script, Value};

use super::{name, Size};
use crate::common::{Ctx, Res};

/// The seed's scripts, verbatim from the post.
pub(super) struct Seed {
    pub(super) add: Script,
    pub(super) remove: Script,
}

impl Seed {
    pub(super) fn new() -> Self {
        Self {
            add: Script::new(include_str!("../../../../bench/baseline/addToQueue.lua")),
            remove: Script::new(include_str!(
                "../../../../bench/baseline/removeFromQueue.lua"
            )),
        }
    }

    pub(super) fn data(user: &str) -> String {
        format!(r#"{{"memberId":"{user}","worldType":"WORLD1"}}"#)
    }

    pub(super) async fn add(
        &self,
        conn: &mut MultiplexedConnection,
        s: &Size,
        user: &str,
    ) -> Res<()> {
        // The seed returns string-keyed Lua tables, which Redis turns into an
        // empty array: there is nothing to decode (one of its defects).
        self.add
            .key(&s.seed_queue)
            .key(&s.seed_data)
            .arg(user)
            .arg(Self::data(user))
            .arg("3600")
            .invoke_async::<Value>(conn)
            .await
            .ctx("seed addToQueue")?;
        Ok(())
    }

    pub(super) async fn remove(
        &self,
        conn: &mut MultiplexedConnection,
        s: &Size,
        user: &str,
    ) -> Res<()> {
        self.remove
            .key(&s.seed_queue)
            .key(&s.seed_data)
            .arg(user)
            .invoke_async::<Value>(conn)
            .await
            .ctx("seed removeFromQueue")?;
        Ok(())
    }

    /// The seed's list after addToQueue of p0..p(n-1) in order: LPUSH puts
    /// the newest at the head, so p0 (the oldest, next to be matched) is the
    /// tail, which is where extractUsers RPOPs.
    pub(super) async fn fill(conn: &mut MultiplexedConnection, s: &Size) -> Res<()> {
        const CHUNK: usize = 1_000;
        let mut pipe = redis::pipe();
        let mut queued = 0;
        let mut start = 0;
        while start < s.n {
            let stop = (start + CHUNK).min(s.n);
            let mut push = redis::cmd("LPUSH");
            let mut data = redis::cmd("HSET");
            push.arg(&s.seed_queue);
            data.arg(&s.seed_data);
            for i in start..stop {
                push.arg(name(i));
                data.arg(name(i)).arg(Self::data(&name(i)));
            }
            pipe.add_command(push).ignore();
            pipe.add_command(data).ignore();
            queued += 2;
            if queued >= 20 {
                pipe.query_async::<()>(conn)
                    .await
                    .ctx("fill the seed list")?;
                pipe = redis::pipe();
                queued = 0;
            }
            start = stop;
        }
        if queued > 0 {
            pipe.query_async::<()>(conn)
                .await
                .ctx("fill the seed list")?;
        }
        Ok(())
    }
}
