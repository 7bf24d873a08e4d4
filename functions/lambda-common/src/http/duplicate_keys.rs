//! Finding an object key that appears twice in a JSON text.
//!
//! `serde_json::Value` (and every derived struct) keeps the last of two
//! equal keys without a word, so a body such as `{"latencies": {"eu": 30,
//! "eu": 40}}` would be read as `{"eu": 40}`. The HTTP API refuses such a
//! body instead (docs/http-api.md, "Requests with a body"): one pass over
//! the text, before any field is read, tracks the keys of every object at
//! every depth and stops at the first one seen twice. Keys are compared
//! after JSON unescaping (`"a"` and `"\u0061"` are the same key).

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};

/// The first key found twice in one object, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DuplicateKey {
    /// The key, unescaped.
    pub key: String,
    /// Where the second occurrence is: a JSON Pointer (RFC 6901) from the
    /// body to the duplicated member, e.g. `/latencies/eu`,
    /// `/players/1/properties/mode` or `/worldType`.
    pub path: String,
}

/// The first duplicate key of `text`, or `None` when every object's keys
/// are distinct (or when `text` is not JSON at all: reading it is left to
/// the caller's parser, which reports the syntax error).
pub(super) fn first_duplicate_key(text: &str) -> Option<DuplicateKey> {
    let mut path = Vec::new();
    let mut found = None;
    let mut de = serde_json::Deserializer::from_str(text);
    // The error of a found duplicate only stops the walk; `found` has it.
    let _ = Scan {
        path: &mut path,
        found: &mut found,
    }
    .deserialize(&mut de);
    found
}

/// A step from an object or an array to one of its members.
enum Step {
    Key(String),
    Index(usize),
}

/// The JSON Pointer of `path` then `key`.
fn pointer(path: &[Step], key: &str) -> String {
    let mut out = String::new();
    let mut push = |token: &str| {
        out.push('/');
        out.push_str(&token.replace('~', "~0").replace('/', "~1"));
    };
    for step in path {
        match step {
            Step::Key(k) => push(k),
            Step::Index(i) => push(&i.to_string()),
        }
    }
    push(key);
    out
}

/// Walks one JSON value; `path` is where it is.
struct Scan<'a> {
    path: &'a mut Vec<Step>,
    found: &'a mut Option<DuplicateKey>,
}

impl<'de> DeserializeSeed<'de> for Scan<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scan<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        loop {
            self.path.push(Step::Index(index));
            let more = seq.next_element_seed(Scan {
                path: self.path,
                found: self.found,
            });
            self.path.pop();
            if more?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                let path = pointer(self.path, &key);
                *self.found = Some(DuplicateKey { key, path });
                return Err(A::Error::custom("duplicate key"));
            }
            self.path.push(Step::Key(key.clone()));
            let value = map.next_value_seed(Scan {
                path: self.path,
                found: self.found,
            });
            self.path.pop();
            value?;
            seen.insert(key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(text: &str) -> Option<(String, String)> {
        first_duplicate_key(text).map(|d| (d.key, d.path))
    }

    fn at(key: &str, path: &str) -> Option<(String, String)> {
        Some((key.to_owned(), path.to_owned()))
    }

    #[test]
    fn distinct_keys_at_every_depth_pass() {
        for text in [
            "{}",
            "[]",
            "null",
            "1",
            r#"{"worldType":"w","latencies":{"eu":30,"us":40},"data":{"a":{"a":{"a":1}}}}"#,
            // The same key in sibling objects, and in an object and its child.
            r#"{"players":[{"id":"a"},{"id":"b"}],"id":{"id":1}}"#,
            r#"[{"a":1},{"a":1}]"#,
            // Keys differing only in case are different keys.
            r#"{"eu":1,"EU":2}"#,
        ] {
            assert_eq!(dup(text), None, "{text}");
        }
    }

    #[test]
    fn a_top_level_duplicate_is_found() {
        assert_eq!(
            dup(r#"{"worldType":"world1","worldType":"world2"}"#),
            at("worldType", "/worldType")
        );
    }

    #[test]
    fn a_duplicate_region_in_latencies_is_found() {
        assert_eq!(
            dup(r#"{"worldType":"geo","latencies":{"eu":30,"eu":40}}"#),
            at("eu", "/latencies/eu")
        );
    }

    #[test]
    fn duplicates_deep_inside_objects_and_arrays_are_found() {
        assert_eq!(
            dup(r#"{"data":{"a":{"b":[1,{"c":1,"c":2}]}}}"#),
            at("c", "/data/a/b/1/c")
        );
        assert_eq!(
            dup(
                r#"{"connection":{"ip":"1.2.3.4"},"players":[{"playerId":"a"},{"playerId":"b","token":"x","token":"y"}]}"#
            ),
            at("token", "/players/1/token")
        );
        assert_eq!(dup(r#"[[{"k":1,"k":1}]]"#), at("k", "/0/0/k"));
    }

    #[test]
    fn the_first_duplicate_in_document_order_is_named() {
        assert_eq!(
            dup(r#"{"a":{"x":1,"x":2},"a":3}"#),
            at("x", "/a/x"),
            "the inner one comes first"
        );
        assert_eq!(dup(r#"{"a":1,"b":2,"b":3,"a":4}"#), at("b", "/b"));
    }

    #[test]
    fn keys_are_compared_unescaped_and_pointers_escape_tilde_and_slash() {
        assert_eq!(dup(r#"{"a":1,"\u0061":2}"#), at("a", "/a"));
        assert_eq!(dup(r#"{"a/b":{"~":1,"\u007e":2}}"#), at("~", "/a~1b/~0"));
        assert_eq!(dup(r#"{"":1,"":2}"#), at("", "/"));
    }

    #[test]
    fn null_and_empty_values_still_count_as_a_key() {
        assert_eq!(dup(r#"{"data":null,"data":null}"#), at("data", "/data"));
        assert_eq!(dup(r#"{"x":{},"x":[]}"#), at("x", "/x"));
    }

    #[test]
    fn text_that_is_not_json_has_no_duplicate_to_report() {
        for text in ["", "{", "{\"a\":1,", "not json", "{\"a\" 1}"] {
            assert_eq!(dup(text), None, "{text}");
        }
    }
}
