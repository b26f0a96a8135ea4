//! The platform's read-only `system__*` variables (R-DV-2).

use rtc_protocol::ValueType;

/// Every `system__` variable the runtime maintains, with its type.
pub const SYSTEM_VARIABLES: &[(&str, ValueType)] = &[
    ("system__session_id", ValueType::String),
    ("system__root_session_id", ValueType::String),
    ("system__parent_session_id", ValueType::String),
    ("system__assistant_id", ValueType::String),
    ("system__user_id", ValueType::String),
    ("system__time_utc", ValueType::String),
    ("system__turn_count", ValueType::Number),
    ("system__run_mode", ValueType::String),
];

/// The type of a system variable, if `name` is one.
pub fn system_variable_type(name: &str) -> Option<ValueType> {
    SYSTEM_VARIABLES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
}
