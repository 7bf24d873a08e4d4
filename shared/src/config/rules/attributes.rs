//! The rule set's `attributes` (the declarations, in document order) and
//! `attributeStore`, as written in the document.

use std::fmt;

use serde::de::{Deserializer, Error as _, MapAccess, Visitor};

use super::fields::{integer, number, one_of, string};
use super::*;
use crate::config::attributes::{
    AttributeCatalog, AttributeDecl, AttributeSource, AttributeType, Missing, MAX_ALLOWED_TOKENS,
    MAX_ATTRIBUTES, MAX_ITEMS,
};
use crate::domain::{is_token, MAX_ATTRIBUTE_TOKEN_CHARS};

/// The `attributes` object's entries in document order (a JSON object
/// read into a map would lose it), each name once.
pub(super) struct Declarations(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Declarations {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Declarations;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of attribute name -> declaration")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Declarations, A::Error> {
                let mut out: Vec<(String, Value)> = Vec::new();
                while let Some((name, decl)) = map.next_entry::<String, Value>()? {
                    if out.iter().any(|(n, _)| *n == name) {
                        return Err(A::Error::custom(format!(
                            "attributes: {name:?} is declared twice"
                        )));
                    }
                    out.push((name, decl));
                }
                Ok(Declarations(out))
            }
        }
        d.deserialize_map(Entries)
    }
}

/// Who may write trusted attributes, as written in the document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct AttributeStoreSection {
    writer_scope: String,
}

impl AttributeStoreSection {
    pub(super) fn validate(self) -> Result<String, String> {
        if self.writer_scope.trim().is_empty() {
            return Err("attributeStore.writerScope: must not be empty".into());
        }
        Ok(self.writer_scope)
    }
}

/// One declaration, as written in the document (every field as JSON, so
/// a message names the field of a wrong type).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AttributeSection {
    #[serde(rename = "type")]
    kind: Option<Value>,
    source: Option<Value>,
    values: Option<Value>,
    max_length: Option<Value>,
    max_items: Option<Value>,
    min: Option<Value>,
    max: Option<Value>,
    keys: Option<Value>,
    default: Option<Value>,
    missing: Option<Value>,
}

/// Whether `name` may name an attribute: `^[a-z][A-Za-z0-9_]{0,31}$`.
fn is_attribute_name(name: &str) -> bool {
    name.len() <= 32
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The catalog of the document's `attributes` (empty without).
pub(super) fn catalog(decls: Option<Declarations>) -> Result<AttributeCatalog, String> {
    let Some(Declarations(entries)) = decls else {
        return Ok(AttributeCatalog::default());
    };
    if entries.len() > MAX_ATTRIBUTES {
        return Err(format!(
            "attributes: at most {MAX_ATTRIBUTES} attributes, got {}",
            entries.len()
        ));
    }
    let mut out = Vec::with_capacity(entries.len());
    for (name, value) in entries {
        if !is_attribute_name(&name) {
            return Err(format!(
                "attributes: {name:?} is not a name of [a-z][A-Za-z0-9_]{{0,31}}"
            ));
        }
        let section: AttributeSection =
            serde_json::from_value(value).map_err(|e| format!("attributes.{name}: {e}"))?;
        out.push(
            section
                .validate(&name)
                .map_err(|e| format!("attributes.{name}.{e}"))?,
        );
    }
    AttributeCatalog::new(out).map_err(|e| format!("attributes: {e}"))
}

impl AttributeSection {
    /// The declaration of `name`; a message starts with the field.
    fn validate(self, name: &str) -> Result<AttributeDecl, String> {
        use AttributeType as T;
        let kind = match &self.kind {
            None => return Err("type: required: string, number, stringList or numberMap".into()),
            Some(v) => match one_of("type", v, &["string", "number", "stringList", "numberMap"])? {
                "string" => T::String,
                "number" => T::Number,
                "stringList" => T::StringList,
                _ => T::NumberMap,
            },
        };
        for (field, given, applies) in [
            ("values", &self.values, &[T::String, T::StringList][..]),
            (
                "maxLength",
                &self.max_length,
                &[T::String, T::StringList, T::NumberMap],
            ),
            ("maxItems", &self.max_items, &[T::StringList, T::NumberMap]),
            ("min", &self.min, &[T::Number, T::NumberMap]),
            ("max", &self.max, &[T::Number, T::NumberMap]),
            ("keys", &self.keys, &[T::NumberMap]),
        ] {
            if given.is_some() && !applies.contains(&kind) {
                return Err(format!("{field}: not for a {} attribute", kind.as_str()));
            }
        }
        let mut decl = AttributeDecl::new(name, kind);
        if let Some(v) = &self.source {
            decl.source = match one_of("source", v, &["client", "trusted"])? {
                "client" => AttributeSource::Client,
                _ => AttributeSource::Trusted,
            };
        }
        let token_cap = MAX_ATTRIBUTE_TOKEN_CHARS as u32;
        if let Some(v) = &self.max_length {
            decl.max_length = integer("maxLength", v, 1, token_cap)? as usize;
        }
        if let Some(v) = &self.max_items {
            decl.max_items = integer("maxItems", v, 1, MAX_ITEMS as u32)? as usize;
        }
        if let Some(v) = &self.min {
            decl.min = number("min", v)?;
        }
        if let Some(v) = &self.max {
            decl.max = number("max", v)?;
        }
        if decl.min > decl.max {
            return Err(format!(
                "min: must be <= max ({}), got {}",
                decl.max, decl.min
            ));
        }
        if let Some(v) = &self.values {
            decl.values = Some(tokens("values", v, decl.max_length)?);
        }
        if let Some(v) = &self.keys {
            decl.keys = Some(tokens("keys", v, decl.max_length)?);
        }
        if let Some(v) = &self.missing {
            if self.default.is_some() {
                return Err(
                    "missing: not with default (a ticket without a value takes the default)".into(),
                );
            }
            decl.missing = match one_of("missing", v, &["any", "refuse"])? {
                "any" => Missing::Any,
                _ => Missing::Refuse,
            };
        }
        if let Some(v) = &self.default {
            decl.default = Some(
                decl.value_from_json(v)
                    .map_err(|e| format!("default: {e}"))?,
            );
        }
        Ok(decl)
    }
}

/// `values` or `keys`: 1..=64 distinct tokens of at most `max_length`.
fn tokens(field: &str, v: &Value, max_length: usize) -> Result<Vec<String>, String> {
    let items = v
        .as_array()
        .filter(|a| (1..=MAX_ALLOWED_TOKENS).contains(&a.len()))
        .ok_or_else(|| format!("{field}: must be a list of 1 to {MAX_ALLOWED_TOKENS} tokens"))?;
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let s = string(field, item)?;
        if !is_token(s, max_length) {
            return Err(format!(
                "{field}: {s:?} is not a token of 1 to {max_length} characters of A-Z, a-z, 0-9, '.', '_', ':' or '-'"
            ));
        }
        if out.iter().any(|o| o == s) {
            return Err(format!("{field}: {s:?} is listed twice"));
        }
        out.push(s.to_owned());
    }
    Ok(out)
}
