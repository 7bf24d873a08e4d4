//! Player attributes: the values a ticket carries for the attributes a rule
//! set declares (its top-level `attributes`, see docs/rules.md). The
//! declarations themselves, and the validation of a request's values
//! against them, are configuration (`crate::config::AttributeCatalog`);
//! here are the values, their stored encoding and the error a request gets.

use std::collections::BTreeMap;
use std::fmt;

/// The longest token any declaration may allow (`maxLength` is 1..=64).
pub const MAX_ATTRIBUTE_TOKEN_CHARS: usize = 64;

/// Whether `s` is a token of at most `max_length` characters:
/// `^[A-Za-z0-9._:-]{1,max_length}$`. Tokens are string values, list items
/// and map keys; none can hold the separators of the stored encoding
/// (`;`, `=`, `,`, `|`), and a map entry is split at its last `:`.
pub fn is_token(s: &str, max_length: usize) -> bool {
    !s.is_empty()
        && s.len() <= max_length
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// A number as stored and as the scripts parse it: Rust's `f64` Display
/// (never an exponent: `1e21` is `1000000000000000000000`), `-0` as `0`.
pub fn format_number(v: f64) -> String {
    // -0.0 + 0.0 is +0.0; every other value is unchanged.
    format!("{}", v + 0.0)
}

/// One attribute's value, of its declared type.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    /// `string`: a token.
    Str(String),
    /// `number`: finite.
    Num(f64),
    /// `stringList`: tokens, sorted (byte order) and without repeats once
    /// validated.
    List(Vec<String>),
    /// `numberMap`: token -> finite number.
    Map(BTreeMap<String, f64>),
}

impl AttributeValue {
    /// As a match record shows it: a string, a number, an array of strings
    /// or an object of numbers.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            AttributeValue::Str(s) => Value::String(s.clone()),
            AttributeValue::Num(n) => number_json(*n),
            AttributeValue::List(items) => {
                Value::Array(items.iter().cloned().map(Value::String).collect())
            }
            AttributeValue::Map(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), number_json(*v)))
                    .collect(),
            ),
        }
    }

    /// The stored encoding of the value alone (the part after `name=`):
    /// a string is its token; a number [`format_number`]; a list its items
    /// sorted (byte order), deduplicated, joined by `,`; a map its
    /// `key:number` entries sorted by key, joined by `,`.
    pub fn encode(&self) -> String {
        match self {
            AttributeValue::Str(s) => s.clone(),
            AttributeValue::Num(n) => format_number(*n),
            AttributeValue::List(items) => {
                let mut sorted: Vec<&str> = items.iter().map(String::as_str).collect();
                sorted.sort_unstable();
                sorted.dedup();
                sorted.join(",")
            }
            AttributeValue::Map(map) => map
                .iter()
                .map(|(k, v)| format!("{k}:{}", format_number(*v)))
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

/// A whole number as a JSON integer, any other as a float (so a record
/// shows `3`, not `3.0`).
fn number_json(v: f64) -> serde_json::Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if v.fract() == 0.0 && v.abs() < EXACT {
        // Whole and within ±2^53: the cast is exact.
        serde_json::Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, serde_json::Value::Number)
    }
}

/// One player's attributes, by name. The stored encoding (declaration
/// order) is `TicketAttributes::encode`, with the catalog
/// (`crate::config::AttributeCatalog`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TicketAttributes(BTreeMap<String, AttributeValue>);

impl TicketAttributes {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, name: &str) -> Option<&AttributeValue> {
        self.0.get(name)
    }

    /// Sets `name`'s value (replacing any), unchecked: values from a
    /// request go through the catalog's validation instead.
    pub fn insert(&mut self, name: impl Into<String>, value: AttributeValue) {
        self.0.insert(name.into(), value);
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// By name (byte order; the encoding follows the catalog's order).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &AttributeValue)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// As a match record shows one player's: `{name: value}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.0
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect(),
        )
    }
}

impl FromIterator<(String, AttributeValue)> for TicketAttributes {
    fn from_iter<I: IntoIterator<Item = (String, AttributeValue)>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

/// A request's attribute that cannot be used (HTTP 400), or a stored
/// encoding that cannot be read. `attribute` is empty when the whole
/// `attributes` value is wrong (not an object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeError {
    pub attribute: String,
    pub reason: String,
}

impl AttributeError {
    pub fn new(attribute: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            attribute: attribute.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for AttributeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.attribute.is_empty() {
            write!(f, "invalid attributes: {}", self.reason)
        } else {
            write!(f, "invalid attribute {:?}: {}", self.attribute, self.reason)
        }
    }
}

impl std::error::Error for AttributeError {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tokens_are_short_words_without_separators() {
        for good in ["ctf", "A.b_c:d-9", "x"] {
            assert!(is_token(good, 32), "{good}");
        }
        for bad in ["", "a b", "a,b", "a;b", "a=b", "a|b", "é", "abcd"] {
            assert!(!is_token(bad, 3), "{bad}");
        }
        assert!(!is_token(&"a".repeat(33), 32));
    }

    #[test]
    fn values_encode_canonically() {
        assert_eq!(AttributeValue::Str("ctf".into()).encode(), "ctf");
        assert_eq!(AttributeValue::Num(12.5).encode(), "12.5");
        assert_eq!(AttributeValue::Num(3.0).encode(), "3");
        assert_eq!(AttributeValue::Num(-0.0).encode(), "0");
        assert_eq!(AttributeValue::Num(1e21).encode(), "1000000000000000000000");
        assert_eq!(AttributeValue::Num(-1.5e-7).encode(), "-0.00000015");
        let list = AttributeValue::List(vec!["tdm".into(), "ctf".into(), "Z".into(), "ctf".into()]);
        assert_eq!(
            list.encode(),
            "Z,ctf,tdm",
            "sorted by byte, repeats dropped"
        );
        let map = AttributeValue::Map(BTreeMap::from([("tank".into(), 0.5), ("a:b".into(), 2.0)]));
        assert_eq!(map.encode(), "a:b:2,tank:0.5");
    }

    #[test]
    fn values_show_as_json() {
        let mut t = TicketAttributes::new();
        t.insert("mode", AttributeValue::List(vec!["ctf".into()]));
        t.insert("level", AttributeValue::Num(3.0));
        t.insert("skill", AttributeValue::Num(0.25));
        t.insert("map", AttributeValue::Str("dust".into()));
        t.insert(
            "roles",
            AttributeValue::Map(BTreeMap::from([("tank".into(), 1.0)])),
        );
        assert_eq!(
            t.to_json(),
            json!({"mode": ["ctf"], "level": 3, "skill": 0.25, "map": "dust", "roles": {"tank": 1}})
        );
    }

    #[test]
    fn errors_name_the_attribute() {
        let e = AttributeError::new("level", "must be a number from 0 to 100, got 120");
        assert_eq!(
            e.to_string(),
            "invalid attribute \"level\": must be a number from 0 to 100, got 120"
        );
        let e = AttributeError::new("", "must be an object");
        assert_eq!(e.to_string(), "invalid attributes: must be an object");
    }
}
