//! Paths into a tool's JSON result, as used by `resultAssignments` and
//! `modelResultFilter`: `status`, `data.items[0].id`.

use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A parsed result path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultPath(pub Vec<Step>);

impl ResultPath {
    /// Parse `a.b[0].c`; keys are any characters but `.`, `[` and `]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() || text.len() > 512 {
            return Err("a path must have 1 to 512 characters".to_owned());
        }
        let mut steps = Vec::new();
        for segment in text.split('.') {
            let (key, mut rest) = match segment.find('[') {
                Some(i) => (&segment[..i], &segment[i..]),
                None => (segment, ""),
            };
            if key.is_empty() && (steps.is_empty() || rest.is_empty()) {
                return Err(format!("empty key in path `{text}`"));
            }
            if key.contains(']') {
                return Err(format!("unexpected `]` in path `{text}`"));
            }
            if !key.is_empty() {
                steps.push(Step::Key(key.to_owned()));
            }
            while !rest.is_empty() {
                let close = rest
                    .find(']')
                    .ok_or_else(|| format!("unclosed `[` in path `{text}`"))?;
                let index = rest[1..close].parse::<usize>().map_err(|_| {
                    format!(
                        "`{}` is not an array index in path `{text}`",
                        &rest[1..close]
                    )
                })?;
                steps.push(Step::Index(index));
                rest = &rest[close + 1..];
                if !rest.is_empty() && !rest.starts_with('[') {
                    return Err(format!("unexpected `{rest}` in path `{text}`"));
                }
            }
        }
        Ok(Self(steps))
    }

    /// The value at this path, if present.
    pub fn get<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        self.0.iter().try_fold(value, |v, step| match step {
            Step::Key(k) => v.get(k),
            Step::Index(i) => v.get(*i),
        })
    }
}

/// Keep only the values at `paths` (R-BX-6), preserving their nesting.
pub fn filter(value: &Value, paths: &[ResultPath]) -> Value {
    let mut out = Value::Null;
    for path in paths {
        if let Some(v) = path.get(value) {
            insert(&mut out, &path.0, v.clone());
        }
    }
    out
}

fn insert(target: &mut Value, steps: &[Step], v: Value) {
    let Some((first, rest)) = steps.split_first() else {
        *target = v;
        return;
    };
    match first {
        Step::Key(k) => {
            if !target.is_object() {
                *target = Value::Object(Default::default());
            }
            if let Value::Object(map) = target {
                insert(map.entry(k.clone()).or_insert(Value::Null), rest, v);
            }
        }
        Step::Index(i) => {
            if !target.is_array() {
                *target = Value::Array(Vec::new());
            }
            if let Value::Array(items) = target {
                if items.len() <= *i {
                    items.resize(*i + 1, Value::Null);
                }
                insert(&mut items[*i], rest, v);
            }
        }
    }
}

#[cfg(test)]
#[path = "result_path_tests.rs"]
mod tests;
