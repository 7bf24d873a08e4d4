//! Reading one field of a rule-set section given as JSON, with a message
//! that names the field (`<field>: must be ..., got <value>`): the sections
//! of attributes and match rules take their fields as JSON values so that
//! a wrong type is reported with its field, which serde's message is not.

use std::time::Duration;

use serde_json::Value;

/// The longest wait a rule may name (about 31 years): converts to whole
/// milliseconds without overflow.
const MAX_SECONDS: f64 = 1e9;

pub(super) fn string<'a>(field: &str, v: &'a Value) -> Result<&'a str, String> {
    v.as_str()
        .ok_or_else(|| format!("{field}: must be a string, got {v}"))
}

/// One of `choices`.
pub(super) fn one_of<'a>(field: &str, v: &Value, choices: &[&'a str]) -> Result<&'a str, String> {
    let s = string(field, v)?;
    choices
        .iter()
        .find(|c| **c == s)
        .copied()
        .ok_or_else(|| format!("{field}: must be one of {}, got {s:?}", choices.join(", ")))
}

/// A finite number.
pub(super) fn number(field: &str, v: &Value) -> Result<f64, String> {
    v.as_f64()
        .filter(|n| n.is_finite())
        .map(|n| n + 0.0)
        .ok_or_else(|| format!("{field}: must be a number, got {v}"))
}

/// A finite number >= `min`.
pub(super) fn at_least(field: &str, v: &Value, min: f64) -> Result<f64, String> {
    v.as_f64()
        .filter(|n| n.is_finite() && *n >= min)
        .map(|n| n + 0.0)
        .ok_or_else(|| format!("{field}: must be a number >= {min}, got {v}"))
}

/// A whole number in `lo..=hi`.
pub(super) fn integer(field: &str, v: &Value, lo: u32, hi: u32) -> Result<u32, String> {
    v.as_f64()
        .filter(|n| n.fract() == 0.0 && (f64::from(lo)..=f64::from(hi)).contains(n))
        // Whole and within u32's range: the cast is exact.
        .map(|n| n as u32)
        .ok_or_else(|| format!("{field}: must be a whole number from {lo} to {hi}, got {v}"))
}

/// A number of seconds > 0, kept in whole milliseconds (rounded up, as
/// the scripts count waits).
pub(super) fn seconds(field: &str, v: &Value) -> Result<Duration, String> {
    match v.as_f64() {
        Some(s) if s > 0.0 && s <= MAX_SECONDS => {
            // In (0, 1e12] ms: the cast is exact.
            Ok(Duration::from_millis((s * 1000.0).ceil() as u64))
        }
        _ => Err(format!(
            "{field}: must be a number of seconds > 0 (at most {MAX_SECONDS}), got {v}"
        )),
    }
}
