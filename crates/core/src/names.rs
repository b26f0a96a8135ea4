//! Naming rules shared by every resource: tool and variable names, reserved
//! prefixes; the names of the platform's own tools come from the runtime's
//! tool registry.

use crate::error::{Rule, ValidationError};

/// Prefix of platform-maintained, read-only variables.
pub const SYSTEM_PREFIX: &str = "system__";
/// Prefix every secret name must carry.
pub const SECRET_PREFIX: &str = "secret__";
/// Shortest secret value accepted, in characters: a shorter value could not
/// be scrubbed from tool results without mangling ordinary text (and stdio
/// `env` values shorter than this are not scrubbed, for the same reason).
pub const MIN_SECRET_CHARS: usize = 8;
/// Prefix of per-binding template inputs in placeholders.
pub const INPUT_PREFIX: &str = "input__";

/// A tool name the model calls: letters, digits, `_`, `-`, 1–64
/// characters, and not one of the platform's own (`is_reserved`, which
/// the runtime's tool registry answers; R-TB-7).
pub fn check_tool_name(name: &str, field: &str, is_reserved: &dyn Fn(&str) -> bool) -> Rule {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !ok {
        return Err(ValidationError::new(
            "invalid_name",
            field,
            format!("`{field}` must be 1 to 64 letters, digits, `_` or `-`; got {name:?}"),
        ));
    }
    if is_reserved(name) {
        return Err(ValidationError::new(
            "reserved_name",
            field,
            format!("`{name}` is the name of a platform built-in tool"),
        ));
    }
    Ok(())
}

/// An identifier: a letter or `_`, then letters, digits or `_`, at most 64.
pub fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    first_ok && name.len() <= 64 && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A name checked as an identifier, with a field-naming error.
pub fn check_identifier(name: &str, field: &str) -> Rule {
    if is_identifier(name) {
        Ok(())
    } else {
        Err(ValidationError::new(
            "invalid_name",
            field,
            format!(
                "`{field}` must start with a letter or `_` and contain only letters, digits and `_` (at most 64); got {name:?}"
            ),
        ))
    }
}

/// A secret name: `secret__` followed by an identifier.
pub fn check_secret_name(name: &str, field: &str) -> Rule {
    match name.strip_prefix(SECRET_PREFIX) {
        Some(rest) if !rest.is_empty() && is_identifier(name) => Ok(()),
        _ => Err(ValidationError::new(
            "invalid_secret_name",
            field,
            format!(
                "secret names must start with `secret__` followed by letters, digits or `_` (at most 64 in all); got {name:?}"
            ),
        )),
    }
}

/// A display name: non-blank, at most `max` characters.
pub fn check_display_name(name: &str, field: &str, max: usize) -> Rule {
    if name.trim().is_empty() || name.chars().count() > max {
        Err(ValidationError::new(
            "invalid_name",
            field,
            format!("`{field}` must be 1 to {max} characters"),
        ))
    } else {
        Ok(())
    }
}

/// Free text of at most `max` characters.
pub fn check_max_chars(text: &str, field: &str, max: usize) -> Rule {
    if text.chars().count() > max {
        Err(ValidationError::new(
            "too_long",
            field,
            format!("`{field}` must be at most {max} characters"),
        ))
    } else {
        Ok(())
    }
}

/// An HTTP header name (RFC 9110 token), not one the client sets itself.
pub fn check_header_name(name: &str, field: &str) -> Rule {
    const TCHAR: &[u8] = b"!#$%&'*+-.^_`|~";
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || TCHAR.contains(&b));
    if !valid {
        return Err(ValidationError::new(
            "invalid_header",
            field,
            format!("{name:?} is not a valid HTTP header name"),
        ));
    }
    let lower = name.to_ascii_lowercase();
    if ["host", "content-length", "transfer-encoding", "connection"].contains(&lower.as_str()) {
        return Err(ValidationError::new(
            "invalid_header",
            field,
            format!("header `{name}` is set by the platform and cannot be configured"),
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;
