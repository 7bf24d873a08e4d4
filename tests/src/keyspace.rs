//! The one key walker of the tests: every key of a set with its logical
//! contents. Snapshots ("did this change anything?"), footprints ("did memory
//! come back?") and the hostile-input checks ("was a key ever built from
//! input?") are all views of what it reads.
//!
//! Contents are read logically (type, sorted fields, members with scores,
//! whether the key expires), not with `DUMP`: a hash's DUMP changes with
//! Redis's incremental rehashing, which reads alone can advance.

use std::collections::BTreeMap;

use shared::MatchStore;

/// One key's type and contents. `entries` are sorted for hashes (as
/// `field\0value`) and sets; zsets keep score order as `member\0score`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyContents {
    pub kind: String,
    pub entries: Vec<Vec<u8>>,
    pub expires: bool,
}

impl KeyContents {
    /// Fields, members or elements (1 for a string).
    pub fn len(&self) -> u64 {
        self.entries.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Keys and their contents, by name.
pub type Keyspace = BTreeMap<String, KeyContents>;

/// Which keys to walk.
pub enum Scope {
    /// The keys `store.keys().all(..)` names for the configured worlds: exact
    /// on a cluster too, since they all live in the namespace's slot.
    Layout,
    /// Every key under the namespace's prefix (SCAN; standalone servers),
    /// including any key the layout does not name.
    Prefix,
    /// Every key of the server (standalone), whoever wrote it.
    Server,
}

/// Reads every key of `scope` with its contents. Keys that do not exist are
/// left out.
pub async fn walk(store: &MatchStore, scope: Scope) -> Keyspace {
    let names: Vec<String> = match scope {
        Scope::Layout => store.keys().all(&store.settings().worlds),
        Scope::Prefix => scan(store, &format!("{}*", store.keys().prefix())).await,
        Scope::Server => scan(store, "*").await,
    };
    let mut out = Keyspace::new();
    for key in names {
        if let Some(contents) = read(store, &key).await {
            out.insert(key, contents);
        }
    }
    out
}

async fn scan(store: &MatchStore, pattern: &str) -> Vec<String> {
    let mut keys = std::collections::BTreeSet::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, batch): (u64, Vec<String>) = store
            .command(
                redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(pattern)
                    .arg("COUNT")
                    .arg(1000),
            )
            .await
            .expect("SCAN");
        keys.extend(batch);
        if next == 0 {
            return keys.into_iter().collect();
        }
        cursor = next;
    }
}

async fn read(store: &MatchStore, key: &str) -> Option<KeyContents> {
    let kind: String = store
        .command(redis::cmd("TYPE").arg(key))
        .await
        .expect("TYPE");
    let pairs = |items: Vec<Vec<u8>>| -> Vec<Vec<u8>> {
        items
            .chunks(2)
            .map(|p| {
                [
                    p[0].as_slice(),
                    b"\0",
                    p.get(1).map_or(&[][..], Vec::as_slice),
                ]
                .concat()
            })
            .collect()
    };
    let entries: Vec<Vec<u8>> = match kind.as_str() {
        "none" => return None,
        "string" => {
            let v: Option<Vec<u8>> = store
                .command(redis::cmd("GET").arg(key))
                .await
                .expect("GET");
            v.into_iter().collect()
        }
        "hash" => {
            let items: Vec<Vec<u8>> = store
                .command(redis::cmd("HGETALL").arg(key))
                .await
                .expect("HGETALL");
            let mut p = pairs(items);
            p.sort();
            p
        }
        "zset" => {
            let items: Vec<Vec<u8>> = store
                .command(
                    redis::cmd("ZRANGE")
                        .arg(key)
                        .arg(0)
                        .arg(-1)
                        .arg("WITHSCORES"),
                )
                .await
                .expect("ZRANGE");
            pairs(items)
        }
        "set" => {
            let mut items: Vec<Vec<u8>> = store
                .command(redis::cmd("SMEMBERS").arg(key))
                .await
                .expect("SMEMBERS");
            items.sort();
            items
        }
        "list" => store
            .command(redis::cmd("LRANGE").arg(key).arg(0).arg(-1))
            .await
            .expect("LRANGE"),
        other => panic!("unexpected type {other} of {key}"),
    };
    let pttl: i64 = store
        .command(redis::cmd("PTTL").arg(key))
        .await
        .expect("PTTL");
    Some(KeyContents {
        kind,
        entries,
        expires: pttl >= 0,
    })
}
