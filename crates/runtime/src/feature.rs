//! The kernel's feature hooks (`rtc_session::feature`) for the runtime's
//! host: what every folder under `features/` implements.

pub(crate) use rtc_session::feature::{AfterTurn, Feature, TurnEnd};

/// Work a feature does every so often.
pub(crate) type Periodic = rtc_session::feature::Periodic<crate::Inner>;
