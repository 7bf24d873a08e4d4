//! The player attributes a rule set declares (its top-level `attributes`,
//! see docs/rules.md): each one's type, where its value comes from, its
//! bounds, default and what a ticket without one means; and the validation
//! of a request's values against them.

use serde_json::Value;

use super::World;
use crate::domain::{is_token, AttributeError, AttributeValue, TicketAttributes};

mod codec;

/// Most attributes one rule set declares.
pub const MAX_ATTRIBUTES: usize = 32;
/// Most tokens in a declaration's `values` or `keys`.
pub const MAX_ALLOWED_TOKENS: usize = 64;
/// Most items a declaration's `maxItems` allows.
pub const MAX_ITEMS: usize = 32;
/// `maxLength` unless declared.
pub const DEFAULT_MAX_LENGTH: usize = 32;
/// `maxItems` unless declared.
pub const DEFAULT_MAX_ITEMS: usize = 8;
/// `min` and `max` unless declared.
pub const DEFAULT_MIN: f64 = -1e9;
pub const DEFAULT_MAX: f64 = 1e9;

/// An attribute's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttributeType {
    String,
    Number,
    StringList,
    NumberMap,
}

impl AttributeType {
    /// As the rule set (and the scripts' configuration) spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            AttributeType::String => "string",
            AttributeType::Number => "number",
            AttributeType::StringList => "stringList",
            AttributeType::NumberMap => "numberMap",
        }
    }
}

/// Where an attribute's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AttributeSource {
    /// The join (or party) body: the client's own word.
    #[default]
    Client,
    /// The trusted attribute store, written by a caller with the rule set's
    /// `attributeStore.writerScope`; never taken from a join body.
    Trusted,
}

/// What a ticket without a value (and without a default) means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Missing {
    /// It fits every value of every rule on the attribute.
    #[default]
    Any,
    /// A join without it is refused.
    Refuse,
}

/// One declared attribute. Fields that do not apply to its type keep their
/// defaults (`values`/`keys` `None`, `max_length` 32, `max_items` 8,
/// `min`..`max` -1e9..1e9).
#[derive(Debug, Clone, PartialEq)]
pub struct AttributeDecl {
    pub name: String,
    pub kind: AttributeType,
    pub source: AttributeSource,
    /// string, stringList: the allowed tokens; `None`: any token.
    pub values: Option<Vec<String>>,
    /// string, stringList, numberMap keys: the longest token.
    pub max_length: usize,
    /// stringList, numberMap: the most items.
    pub max_items: usize,
    /// number, numberMap values: the accepted range.
    pub min: f64,
    pub max: f64,
    /// numberMap: the allowed keys; `None`: any token.
    pub keys: Option<Vec<String>>,
    /// The value of a ticket that has none (validated like a value).
    pub default: Option<AttributeValue>,
    /// Without a value and a default (exclusive with `default`).
    pub missing: Missing,
}

impl AttributeDecl {
    /// A declaration of `kind` with every optional field at its default.
    pub fn new(name: impl Into<String>, kind: AttributeType) -> Self {
        Self {
            name: name.into(),
            kind,
            source: AttributeSource::Client,
            values: None,
            max_length: DEFAULT_MAX_LENGTH,
            max_items: DEFAULT_MAX_ITEMS,
            min: DEFAULT_MIN,
            max: DEFAULT_MAX,
            keys: None,
            default: None,
            missing: Missing::Any,
        }
    }

    /// Validates a JSON value (a request's, or the declaration's own
    /// `default`) against the declaration. A list comes back sorted (byte
    /// order); a repeated item, like a bad one, is refused. The reason does
    /// not name the attribute (the caller does).
    pub fn value_from_json(&self, value: &Value) -> Result<AttributeValue, String> {
        match self.kind {
            AttributeType::String => {
                let s = value
                    .as_str()
                    .ok_or_else(|| format!("must be a string, got {}", shown(value)))?;
                self.token("", s, self.values.as_deref())?;
                Ok(AttributeValue::Str(s.to_owned()))
            }
            AttributeType::Number => Ok(AttributeValue::Num(self.number("", value)?)),
            AttributeType::StringList => {
                let items = value.as_array().ok_or_else(|| {
                    format!(
                        "must be a list of 1 to {} strings, got {}",
                        self.max_items,
                        shown(value)
                    )
                })?;
                self.count(items.len())?;
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let s = item
                        .as_str()
                        .ok_or_else(|| format!("items must be strings, got {}", shown(item)))?;
                    self.token("item ", s, self.values.as_deref())?;
                    out.push(s.to_owned());
                }
                out.sort_unstable();
                if let Some(w) = out.windows(2).find(|w| w[0] == w[1]) {
                    return Err(format!("lists {:?} twice", w[0]));
                }
                Ok(AttributeValue::List(out))
            }
            AttributeType::NumberMap => {
                let entries = value.as_object().ok_or_else(|| {
                    format!(
                        "must be an object of 1 to {} key -> number entries, got {}",
                        self.max_items,
                        shown(value)
                    )
                })?;
                self.count(entries.len())?;
                let mut out = std::collections::BTreeMap::new();
                for (key, v) in entries {
                    self.token("key ", key, self.keys.as_deref())?;
                    out.insert(key.clone(), self.number(&format!("{key}: "), v)?);
                }
                Ok(AttributeValue::Map(out))
            }
        }
    }

    fn token(&self, what: &str, s: &str, allowed: Option<&[String]>) -> Result<(), String> {
        match allowed {
            Some(allowed) if !allowed.iter().any(|a| a == s) => Err(format!(
                "{what}must be one of {}, got {}",
                allowed.join(", "),
                shown_str(s)
            )),
            _ if !is_token(s, self.max_length) => Err(format!(
                "{what}must be 1 to {} characters of A-Z, a-z, 0-9, '.', '_', ':' or '-', got {}",
                self.max_length,
                shown_str(s)
            )),
            _ => Ok(()),
        }
    }

    fn number(&self, what: &str, value: &Value) -> Result<f64, String> {
        let (min, max) = (self.min, self.max);
        match value.as_f64() {
            Some(n) if n.is_finite() && (min..=max).contains(&n) => Ok(n + 0.0),
            _ => Err(format!(
                "{what}must be a number from {min} to {max}, got {}",
                shown(value)
            )),
        }
    }

    fn count(&self, n: usize) -> Result<(), String> {
        if (1..=self.max_items).contains(&n) {
            Ok(())
        } else {
            Err(format!("must have 1 to {} items, got {n}", self.max_items))
        }
    }
}

/// A request's value in a message, cut short.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => shown_str(s),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
        other => other.to_string(),
    }
}

fn shown_str(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        None => format!("{s:?}"),
        Some((cut, _)) => format!("{:?}...", &s[..cut]),
    }
}

/// The declared attributes, in declaration order (the order of the stored
/// encoding and of every list the scripts get).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttributeCatalog {
    decls: Vec<AttributeDecl>,
}

impl AttributeCatalog {
    /// The catalog of `decls` (the rule set's validation made them): at
    /// most [`MAX_ATTRIBUTES`], each name once.
    pub fn new(decls: Vec<AttributeDecl>) -> Result<Self, String> {
        if decls.len() > MAX_ATTRIBUTES {
            return Err(format!(
                "at most {MAX_ATTRIBUTES} attributes, got {}",
                decls.len()
            ));
        }
        for (i, d) in decls.iter().enumerate() {
            if decls[..i].iter().any(|e| e.name == d.name) {
                return Err(format!("{:?} is declared twice", d.name));
            }
        }
        Ok(Self { decls })
    }

    pub fn get(&self, name: &str) -> Option<&AttributeDecl> {
        self.decls.iter().find(|d| d.name == name)
    }

    /// The declarations in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = &AttributeDecl> {
        self.decls.iter()
    }

    pub fn len(&self) -> usize {
        self.decls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.decls.is_empty()
    }

    /// Whether any attribute comes from the trusted store.
    pub fn has_trusted(&self) -> bool {
        self.decls
            .iter()
            .any(|d| d.source == AttributeSource::Trusted)
    }

    /// Validates a join's (or party body's) `attributes` (`None`: the body
    /// has none) for `world`: every name one of the world's attributes
    /// (`World::attributes`) and a client one, every value valid for its
    /// declaration. Then the world's client attributes the body left out
    /// take their `default`; one without a default and with `missing:
    /// refuse` is an error. Trusted attributes are not filled in (the
    /// scripts read them from the store).
    pub fn client_attributes(
        &self,
        world: &World,
        body: Option<&Value>,
    ) -> Result<TicketAttributes, AttributeError> {
        let mut out = TicketAttributes::new();
        if let Some(body) = body {
            for (name, value) in object(body)? {
                let decl = world
                    .attributes
                    .iter()
                    .any(|a| a == name)
                    .then(|| self.get(name))
                    .flatten()
                    .ok_or_else(|| {
                        AttributeError::new(
                            cut(name),
                            format!("is not an attribute of world {}", world.name),
                        )
                    })?;
                if decl.source == AttributeSource::Trusted {
                    return Err(AttributeError::new(
                        name,
                        "is set by the server (trusted), a request cannot give it",
                    ));
                }
                let value = decl
                    .value_from_json(value)
                    .map_err(|reason| AttributeError::new(name, reason))?;
                out.insert(name.clone(), value);
            }
        }
        for decl in world.attributes.iter().filter_map(|a| self.get(a)) {
            if decl.source == AttributeSource::Trusted || out.contains(&decl.name) {
                continue;
            }
            match (&decl.default, decl.missing) {
                (Some(default), _) => out.insert(decl.name.clone(), default.clone()),
                (None, Missing::Refuse) => {
                    return Err(AttributeError::new(
                        &decl.name,
                        format!("is required in world {}", world.name),
                    ))
                }
                (None, Missing::Any) => {}
            }
        }
        Ok(out)
    }

    /// Validates the attributes a trusted writer stores for a player (an
    /// object of name -> value): only trusted attributes, every value
    /// valid. No default is filled in: the store holds what was written.
    pub fn trusted_attributes(&self, body: &Value) -> Result<TicketAttributes, AttributeError> {
        let mut out = TicketAttributes::new();
        for (name, value) in object(body)? {
            let decl = self
                .get(name)
                .ok_or_else(|| AttributeError::new(cut(name), "is not a declared attribute"))?;
            if decl.source != AttributeSource::Trusted {
                return Err(AttributeError::new(
                    name,
                    "comes from the client's request, it is not stored (not trusted)",
                ));
            }
            let value = decl
                .value_from_json(value)
                .map_err(|reason| AttributeError::new(name, reason))?;
            out.insert(name.clone(), value);
        }
        Ok(out)
    }
}

fn object(body: &Value) -> Result<&serde_json::Map<String, Value>, AttributeError> {
    body.as_object().ok_or_else(|| {
        AttributeError::new(
            "",
            format!("must be an object of name -> value, got {}", shown(body)),
        )
    })
}

/// A name from a request, cut short for a message.
fn cut(name: &str) -> String {
    match name.char_indices().nth(40) {
        None => name.to_owned(),
        Some((at, _)) => format!("{}...", &name[..at]),
    }
}

#[cfg(test)]
mod tests;
