//! The stored encoding of one player's attributes (the `attributes`
//! argument of join, party_create and party_join, the trusted store's
//! fields, a ticket's record): `name=value` pairs joined by `;` in the
//! catalog's declaration order, each value as `AttributeValue::encode`
//! writes it. A party ticket joins its members' encodings by `|`.

use std::collections::BTreeMap;

use super::{AttributeCatalog, AttributeType};
use crate::domain::{
    is_token, AttributeError, AttributeValue, TicketAttributes, MAX_ATTRIBUTE_TOKEN_CHARS,
};

impl TicketAttributes {
    /// The stored encoding: `name=value;...` in `catalog`'s declaration
    /// order, attributes without a value absent (so no attributes encode
    /// as `""`). Names the catalog does not declare are left out.
    pub fn encode(&self, catalog: &AttributeCatalog) -> String {
        catalog
            .iter()
            .filter_map(|d| {
                self.get(&d.name)
                    .map(|v| format!("{}={}", d.name, v.encode()))
            })
            .collect::<Vec<_>>()
            .join(";")
    }

    /// Reads an encoding back (the inverse of [`TicketAttributes::encode`]):
    /// every name declared in `catalog`, once, and its value of the
    /// declared type in the encoding's syntax (tokens, finite numbers, a
    /// map entry split at its last `:`). Bounds and allowed values are not
    /// checked again: they were when the value was written, and a rule set
    /// may have changed since.
    pub fn decode(catalog: &AttributeCatalog, text: &str) -> Result<Self, AttributeError> {
        let mut out = TicketAttributes::new();
        for pair in text.split(';').filter(|p| !p.is_empty()) {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| AttributeError::new("", format!("{pair:?} is not name=value")))?;
            let bad = |reason: String| AttributeError::new(name, reason);
            let decl = catalog
                .get(name)
                .ok_or_else(|| bad("is not a declared attribute".into()))?;
            if out.contains(name) {
                return Err(bad("is encoded twice".into()));
            }
            let value = match decl.kind {
                AttributeType::String => AttributeValue::Str(token(value).map_err(bad)?),
                AttributeType::Number => AttributeValue::Num(number(value).map_err(bad)?),
                AttributeType::StringList => AttributeValue::List(
                    value
                        .split(',')
                        .map(token)
                        .collect::<Result<_, _>>()
                        .map_err(bad)?,
                ),
                AttributeType::NumberMap => {
                    let mut map = BTreeMap::new();
                    for entry in value.split(',') {
                        let (key, n) = entry
                            .rsplit_once(':')
                            .ok_or_else(|| bad(format!("{entry:?} is not key:number")))?;
                        map.insert(token(key).map_err(bad)?, number(n).map_err(bad)?);
                    }
                    AttributeValue::Map(map)
                }
            };
            out.insert(name, value);
        }
        Ok(out)
    }

    /// Reads a party ticket's stored attributes: its members' encodings
    /// joined by `|`, in member order.
    pub fn decode_party(
        catalog: &AttributeCatalog,
        text: &str,
    ) -> Result<Vec<Self>, AttributeError> {
        text.split('|').map(|m| Self::decode(catalog, m)).collect()
    }
}

fn token(s: &str) -> Result<String, String> {
    if is_token(s, MAX_ATTRIBUTE_TOKEN_CHARS) {
        Ok(s.to_owned())
    } else {
        Err(format!("{s:?} is not a token"))
    }
}

fn number(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        // Only digits, sign and point: "inf", "NaN" and "1e5" are not ours.
        Ok(n)
            if n.is_finite()
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || b == b'-' || b == b'.') =>
        {
            Ok(n)
        }
        _ => Err(format!("{s:?} is not a number")),
    }
}
