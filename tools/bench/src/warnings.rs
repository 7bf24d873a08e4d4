//! Counts the WARN and ERROR events the in-process local stack logs (for
//! example a MATCH_FOUND push that failed and was left to the matcher), so
//! the end-to-end row can say why a latency tail exists.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

static COUNTS: OnceLock<Mutex<BTreeMap<String, u64>>> = OnceLock::new();

fn counts() -> &'static Mutex<BTreeMap<String, u64>> {
    COUNTS.get_or_init(|| Mutex::new(BTreeMap::new()))
}

struct Counter;

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: Subscriber> Layer<S> for Counter {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let level = *event.metadata().level();
        if level > Level::WARN {
            return;
        }
        let mut m = Message(String::new());
        event.record(&mut m);
        let key = format!("{level} {}: {}", event.metadata().target(), m.0);
        if let Ok(mut c) = counts().lock() {
            *c.entry(key).or_default() += 1;
        }
    }
}

/// Installs the counter as the process's subscriber (once).
pub fn install() {
    let _ = tracing_subscriber::registry().with(Counter).try_init();
}

/// The counts so far, and resets them.
pub fn take() -> BTreeMap<String, u64> {
    counts()
        .lock()
        .map(|mut c| std::mem::take(&mut *c))
        .unwrap_or_default()
}
