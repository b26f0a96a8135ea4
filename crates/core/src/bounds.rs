//! Bounds on what a tenant's configuration can make the server do that
//! are checked at save time (R-SEC-7): rules and `llm` leaves per
//! `updateState`. Each is configurable (`RTC_MAX_UPDATE_RULES`,
//! `RTC_MAX_LLM_LEAVES`) and checked again when a session starts, so a
//! configuration saved under looser bounds cannot run past them. Also the
//! size of a JSON value as it is stored, for the run-time bounds on
//! variables.

use std::io;

use rtc_expr::count_llm_leaves;
use rtc_protocol::{DynamicVariable, UpdateStateRule};
use serde_json::Value;

use crate::ValidationError;

/// What one `updateState` (the model's built-in, or a workflow node) may
/// hold, and the sizes of the values a configuration declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateBounds {
    /// Most rules (each one evaluation, each change a stored value).
    pub max_rules: usize,
    /// Most `llm` leaves over all its rules (each is a model call when
    /// the update runs).
    pub max_llm_leaves: usize,
    /// Most bytes (as JSON) of one variable's value
    /// (`RTC_MAX_VALUE_BYTES`): a declared default past it is refused at
    /// save, `value_too_large`.
    pub max_value_bytes: usize,
    /// Most bytes (as JSON) of all variables together
    /// (`RTC_MAX_VARIABLES_BYTES`): declared defaults past it are refused
    /// at save, `variables_too_large`.
    pub max_variables_bytes: usize,
}

impl Default for UpdateBounds {
    fn default() -> Self {
        Self {
            max_rules: 50,
            max_llm_leaves: 8,
            max_value_bytes: 16 * 1024,
            max_variables_bytes: 64 * 1024,
        }
    }
}

impl UpdateBounds {
    /// Check the rules of one update at `field` (`….updateState`, or a
    /// node): `too_many_rules`, `too_many_llm_leaves`.
    pub fn check(&self, rules: &[UpdateStateRule], field: &str) -> Result<(), ValidationError> {
        if rules.len() > self.max_rules {
            return Err(ValidationError::new(
                "too_many_rules",
                format!("{field}.rules"),
                format!(
                    "at most {} rules per update (this one has {})",
                    self.max_rules,
                    rules.len()
                ),
            ));
        }
        let leaves: usize = rules.iter().map(|r| count_llm_leaves(&r.expression)).sum();
        if leaves > self.max_llm_leaves {
            return Err(ValidationError::new(
                "too_many_llm_leaves",
                format!("{field}.rules"),
                format!(
                    "at most {} `llm` leaves per update, over all its rules (this one has {leaves}); each is a model call",
                    self.max_llm_leaves
                ),
            ));
        }
        Ok(())
    }

    /// Check the declared defaults' sizes: each at most
    /// `max_value_bytes` (`value_too_large` at
    /// `dynamicVariables[i].default`), all together at most
    /// `max_variables_bytes` (`variables_too_large` at
    /// `dynamicVariables`). A session could not start with them.
    pub fn check_defaults(&self, declared: &[DynamicVariable]) -> Result<(), ValidationError> {
        let mut total = 0;
        for (i, v) in declared.iter().enumerate() {
            let Some(default) = &v.default else { continue };
            let size = json_size(default);
            if size > self.max_value_bytes {
                return Err(ValidationError::new(
                    "value_too_large",
                    format!("dynamicVariables[{i}].default"),
                    format!(
                        "the default of `{}` is {size} bytes; a value may have at most {} (RTC_MAX_VALUE_BYTES)",
                        v.name, self.max_value_bytes
                    ),
                ));
            }
            total += v.name.len() + size;
        }
        if total > self.max_variables_bytes {
            return Err(ValidationError::new(
                "variables_too_large",
                "dynamicVariables",
                format!(
                    "the declared defaults take {total} bytes; a session's variables may take at most {} (RTC_MAX_VARIABLES_BYTES)",
                    self.max_variables_bytes
                ),
            ));
        }
        Ok(())
    }
}

/// The bytes of `value` as compact JSON, counted without building the
/// text.
pub fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail, and a `Value` always serializes.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(expression: Value) -> UpdateStateRule {
        serde_json::from_value(json!({"variable": "v", "expression": expression})).expect("a rule")
    }

    #[test]
    fn rules_and_leaves_are_counted_per_update() {
        let bounds = UpdateBounds {
            max_rules: 3,
            max_llm_leaves: 2,
            ..UpdateBounds::default()
        };
        let constant = json!({"type": "constant", "value": "x"});
        let leaf = json!({"type": "llm", "prompt": "p", "outputType": "string"});
        let ok = vec![
            rule(constant.clone()),
            rule(leaf.clone()),
            rule(leaf.clone()),
        ];
        assert_eq!(bounds.check(&ok, "f"), Ok(()));
        let many = vec![rule(constant.clone()); 4];
        let e = bounds.check(&many, "f").unwrap_err();
        assert_eq!((e.code, e.field.as_str()), ("too_many_rules", "f.rules"));
        let leafy = vec![rule(
            json!({"type": "concat", "args": [leaf.clone(), leaf.clone(), leaf]}),
        )];
        let e = bounds.check(&leafy, "f").unwrap_err();
        assert_eq!(e.code, "too_many_llm_leaves");
    }

    #[test]
    fn declared_defaults_are_bounded_one_by_one_and_together() {
        let bounds = UpdateBounds {
            max_value_bytes: 10,
            max_variables_bytes: 30,
            ..UpdateBounds::default()
        };
        let var = |name: &str, default: Value| -> DynamicVariable {
            serde_json::from_value(json!({"name": name, "type": "string", "default": default}))
                .expect("a variable")
        };
        assert_eq!(bounds.check_defaults(&[var("a", json!("short"))]), Ok(()));
        let e = bounds
            .check_defaults(&[var("a", json!("x")), var("b", json!("far too long"))])
            .unwrap_err();
        assert_eq!(
            (e.code, e.field.as_str()),
            ("value_too_large", "dynamicVariables[1].default")
        );
        let many: Vec<_> = (0..5)
            .map(|i| var(&format!("v{i}"), json!("1234")))
            .collect();
        let e = bounds.check_defaults(&many).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_str()),
            ("variables_too_large", "dynamicVariables")
        );
    }

    #[test]
    fn json_size_is_the_compact_text_length() {
        for v in [
            json!(null),
            json!("héllo \"x\""),
            json!({"a": [1, 2.5, true]}),
        ] {
            assert_eq!(json_size(&v), v.to_string().len());
        }
    }
}
