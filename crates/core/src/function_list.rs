//! The functions offered to a model, prepared once (issue 41): their
//! specs, the request's `tools` array rendered to JSON text, and what they
//! cost in tokens. The session registry prepares one list per
//! configuration snapshot and shares it; a request carries a pointer to
//! it, and the provider's wire layer splices the text into each body
//! instead of serializing every function's schema again.

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::llm::ToolSpec;

/// The functions offered to a model; none by default. Cloning copies a
/// pointer.
#[derive(Clone, Default)]
pub struct FunctionList(Option<Arc<Prepared>>);

/// A list's parts, each built once.
struct Prepared {
    specs: Vec<Arc<ToolSpec>>,
    /// Rendered on first use (a list counted or shown but never sent is
    /// not).
    rendered: OnceLock<Rendered>,
    /// The functions' tokens, remembered per model.
    tokens: Mutex<Vec<(Box<str>, u32)>>,
}

/// The request's `tools` array as JSON text.
struct Rendered {
    /// `[{"type":"function","function":{"name":…,"description":…,"parameters":…}},…]`.
    json: Box<RawValue>,
    /// Where each function's object lies in `json`, in the order of the
    /// specs.
    spans: Vec<Range<usize>>,
}

/// Token counts a list remembers (one per model its sessions use).
const MAX_REMEMBERED_MODELS: usize = 8;

impl FunctionList {
    /// A list of `specs`, in the order the model is offered them.
    pub fn new(specs: Vec<Arc<ToolSpec>>) -> Self {
        if specs.is_empty() {
            return Self::default();
        }
        Self(Some(Arc::new(Prepared {
            specs,
            rendered: OnceLock::new(),
            tokens: Mutex::new(Vec::new()),
        })))
    }

    /// The functions, in the order the model is offered them.
    pub fn specs(&self) -> &[Arc<ToolSpec>] {
        self.0.as_deref().map_or(&[], |p| &p.specs)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub fn len(&self) -> usize {
        self.specs().len()
    }

    /// The request's `tools` array as JSON text, rendered once; `None`
    /// when there are no functions (the request leaves `tools` out).
    pub fn json(&self) -> Option<&RawValue> {
        self.0.as_deref().map(|p| &*p.rendered().json)
    }

    /// Each function's JSON as a request carries it
    /// (`{"type":"function","function":{…}}`), in order.
    pub fn function_texts(&self) -> impl Iterator<Item = &str> {
        self.0.as_deref().into_iter().flat_map(|p| {
            let rendered = p.rendered();
            let text = rendered.json.get();
            rendered
                .spans
                .iter()
                .filter_map(move |span| text.get(span.clone()))
        })
    }

    /// What the functions cost in tokens for `model`, each function's JSON
    /// counted by `count` ([`crate::tokens::tools_tokens`]); counted once
    /// per model and list (a client counts a model's text the same way
    /// every time).
    pub fn tokens(&self, model: &str, count: &dyn Fn(&str) -> u32) -> u32 {
        let Some(prepared) = self.0.as_deref() else {
            return 0;
        };
        let known = |remembered: &[(Box<str>, u32)]| {
            remembered
                .iter()
                .find(|(m, _)| &**m == model)
                .map(|(_, n)| *n)
        };
        if let Some(n) = known(&prepared.tokens.lock()) {
            return n;
        }
        // Counted outside the lock: a real tokenizer takes a while.
        let n = crate::tokens::tools_tokens(self, count);
        let mut remembered = prepared.tokens.lock();
        if remembered.len() < MAX_REMEMBERED_MODELS && known(&remembered).is_none() {
            remembered.push((model.into(), n));
        }
        n
    }
}

impl Prepared {
    fn rendered(&self) -> &Rendered {
        self.rendered.get_or_init(|| render(&self.specs))
    }
}

/// `specs` as the request's `tools` array.
fn render(specs: &[Arc<ToolSpec>]) -> Rendered {
    let mut text = Vec::with_capacity(256 * specs.len());
    let mut spans = Vec::with_capacity(specs.len());
    text.push(b'[');
    for (i, spec) in specs.iter().enumerate() {
        if i > 0 {
            text.push(b',');
        }
        let start = text.len();
        // Writing borrowed strings and a `Value` to memory cannot fail.
        let _ = serde_json::to_writer(&mut text, &Function(spec));
        spans.push(start..text.len());
    }
    text.push(b']');
    let json = String::from_utf8(text)
        .ok()
        .and_then(|t| RawValue::from_string(t).ok())
        .unwrap_or_else(|| unreachable!("serde_json writes valid UTF-8 JSON"));
    Rendered { json, spans }
}

impl From<Vec<Arc<ToolSpec>>> for FunctionList {
    fn from(specs: Vec<Arc<ToolSpec>>) -> Self {
        Self::new(specs)
    }
}

impl fmt::Debug for FunctionList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.specs().iter().map(|s| &s.name))
            .finish()
    }
}

/// Equal when they offer the same functions.
impl PartialEq for FunctionList {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a.specs == b.specs,
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

/// A function as a request offers it:
/// `{"type":"function","function":{"name":…,"description":…,"parameters":…}}`.
struct Function<'a>(&'a ToolSpec);

impl Serialize for Function<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Inner<'a> {
            name: &'a str,
            description: &'a str,
            parameters: &'a Value,
        }
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("type", "function")?;
        m.serialize_entry(
            "function",
            &Inner {
                name: &self.0.name,
                description: &self.0.description,
                parameters: &self.0.parameters,
            },
        )?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(name: &str) -> Arc<ToolSpec> {
        Arc::new(ToolSpec {
            name: name.into(),
            description: format!("Does {name} \"quoted\" — ünïcode."),
            parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
        })
    }

    /// The rendered array is what serializing each spec gives, and each
    /// function's text is its element.
    #[test]
    fn renders_the_tools_array_once() {
        let list = FunctionList::new(vec![spec("a"), spec("b")]);
        let parsed: Value = serde_json::from_str(list.json().map_or("", RawValue::get)).unwrap();
        let expected: Vec<Value> = list
            .specs()
            .iter()
            .map(|s| json!({"type": "function", "function": {"name": s.name, "description": s.description, "parameters": s.parameters}}))
            .collect();
        assert_eq!(parsed, Value::Array(expected.clone()));
        let texts: Vec<Value> = list
            .function_texts()
            .map(|t| serde_json::from_str(t).unwrap())
            .collect();
        assert_eq!(texts, expected);
        assert!(std::ptr::eq(list.json().unwrap(), list.json().unwrap()));
    }

    #[test]
    fn an_empty_list_has_no_json() {
        let list = FunctionList::new(Vec::new());
        assert!(list.is_empty() && list.json().is_none() && list.specs().is_empty());
        assert_eq!(list, FunctionList::default());
        assert_eq!(list.function_texts().count(), 0);
        assert_eq!(list.tokens("m", &|_| 1), 0);
    }

    /// Tokens are counted once per model, as `tools_tokens` counts them.
    #[test]
    fn tokens_are_counted_once_per_model() {
        let list = FunctionList::new(vec![spec("a"), spec("b")]);
        let calls = std::cell::Cell::new(0);
        let count = |t: &str| {
            calls.set(calls.get() + 1);
            crate::tokens::estimate(t)
        };
        let first = list.tokens("m1", &count);
        assert_eq!(
            first,
            crate::tokens::tools_tokens(&list, &crate::tokens::estimate)
        );
        assert_eq!(calls.get(), 2);
        assert_eq!(list.tokens("m1", &count), first);
        assert_eq!(calls.get(), 2);
        assert_eq!(
            list.clone().tokens("m2", &|_| 7),
            2 * (7 + crate::tokens::MESSAGE_OVERHEAD)
        );
    }
}
