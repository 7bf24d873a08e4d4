//! Integers as JSON writes them: also with a zero fraction (`2.0`, `2e0`),
//! which JSON Schema counts as integers too (the API spec's `integer`
//! fields: a result's places, a backfill's `fills`); `1.5`, negatives and
//! values past `u32` are refused. For `#[serde(deserialize_with)]`.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// A `u32` written as any integral JSON number.
struct Integral(u32);

impl<'de> Deserialize<'de> for Integral {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct IntegralVisitor;
        impl Visitor<'_> for IntegralVisitor {
            type Value = Integral;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer from 0 to 4294967295")
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Integral, E> {
                u32::try_from(v)
                    .map(Integral)
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Integral, E> {
                u32::try_from(v)
                    .map(Integral)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Integral, E> {
                if v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v) {
                    // Integral and in range: exact.
                    Ok(Integral(v as u32))
                } else {
                    Err(E::invalid_value(de::Unexpected::Float(v), &self))
                }
            }
        }
        d.deserialize_any(IntegralVisitor)
    }
}

pub fn option_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let n: Option<Integral> = Option::deserialize(d)?;
    Ok(n.map(|n| n.0))
}

pub fn option_vec_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u32>>, D::Error> {
    let list: Option<Vec<Integral>> = Option::deserialize(d)?;
    Ok(list.map(|l| l.into_iter().map(|n| n.0).collect()))
}

pub fn option_map_u32<'de, D, K>(d: D) -> Result<Option<BTreeMap<K, u32>>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de> + Ord,
{
    let map: Option<BTreeMap<K, Integral>> = Option::deserialize(d)?;
    Ok(map.map(|m| m.into_iter().map(|(k, n)| (k, n.0)).collect()))
}
