//! `{{name}}` placeholders in URLs, headers, bodies, prompts and binding
//! templates: parsing, classification and rendering.

use serde_json::Value;

use crate::error::{Rule, ValidationError};
use crate::names::{INPUT_PREFIX, SECRET_PREFIX, is_identifier};

/// What a placeholder refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placeholder<'a> {
    /// `{{secret__x}}`: a workspace secret (HTTP headers only).
    Secret(&'a str),
    /// `{{input__x}}`: a template input supplied by each binding.
    Input(&'a str),
    /// `{{x}}`: a parameter (in tool resources) or a variable (in prompts).
    Plain(&'a str),
}

impl<'a> Placeholder<'a> {
    fn classify(name: &'a str) -> Self {
        if name.starts_with(SECRET_PREFIX) {
            Self::Secret(name)
        } else if let Some(rest) = name.strip_prefix(INPUT_PREFIX) {
            Self::Input(rest)
        } else {
            Self::Plain(name)
        }
    }
}

/// Every placeholder in `text`, in order; a malformed one is an error on `field`.
pub fn parse<'a>(text: &'a str, field: &str) -> Rule<Vec<Placeholder<'a>>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Err(ValidationError::new(
                "invalid_placeholder",
                field,
                format!("`{field}` has an unclosed `{{{{`"),
            ));
        };
        let name = after[..end].trim();
        if !is_identifier(name) {
            return Err(ValidationError::new(
                "invalid_placeholder",
                field,
                format!(
                    "`{field}` has an invalid placeholder `{{{{{}}}}}`: names are letters, digits and `_`",
                    &after[..end]
                ),
            ));
        }
        out.push(Placeholder::classify(name));
        rest = &after[end + 2..];
    }
    Ok(out)
}

/// Every placeholder in the strings (and object keys) of a JSON value, each
/// with the path of the string it was found in.
pub fn parse_json<'a>(value: &'a Value, field: &str) -> Rule<Vec<(String, Placeholder<'a>)>> {
    let mut out = Vec::new();
    walk(value, field.to_owned(), &mut out)?;
    Ok(out)
}

fn walk<'a>(value: &'a Value, path: String, out: &mut Vec<(String, Placeholder<'a>)>) -> Rule {
    match value {
        Value::String(s) => {
            for p in parse(s, &path)? {
                out.push((path.clone(), p));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, format!("{path}[{i}]"), out)?;
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let p = format!("{path}.{k}");
                for ph in parse(k, &p)? {
                    out.push((p.clone(), ph));
                }
                walk(v, p, out)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Replace each `{{name}}` by `lookup(name)`; unknown names render empty.
/// Assumes `text` passed [`parse`].
pub fn render(text: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        out.push_str(&lookup(after[..end].trim()).unwrap_or_default());
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The secret names referenced by `{{secret__…}}` placeholders in `texts`
/// (malformed texts contribute none; validation reports them).
pub fn secrets_in<'a>(texts: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    texts
        .into_iter()
        .flat_map(|t| parse(t, "").unwrap_or_default())
        .filter_map(|p| match p {
            Placeholder::Secret(s) => Some(s.to_owned()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
#[path = "placeholders_tests.rs"]
mod tests;
