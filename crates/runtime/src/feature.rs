//! The kernel's feature hooks (`rtc_session::feature`) for the runtime's
//! host: what every folder under `features/` implements, and the view a
//! feature's service works through.

use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;

pub(crate) use rtc_session::feature::{AfterTurn, Feature, TurnEnd};

use crate::Inner;

/// Work a feature does every so often.
pub(crate) type Periodic = rtc_session::feature::Periodic<crate::Inner>;

/// One feature's service: its operations on the runtime that hosts it,
/// for the length of a call. Each folder under `features/` implements its
/// operations on `Service<'_, ItsFeature>` (named by a type alias such as
/// `GoalService`), so the runtime's own type carries no feature's methods
/// and a call names the feature it reaches: `GoalService::of(rt)`.
pub(crate) struct Service<'a, F> {
    /// The host, shared: what spawned work and other features' services
    /// are given.
    pub rt: &'a Arc<Inner>,
    feature: PhantomData<fn() -> F>,
}

impl<'a, F> Service<'a, F> {
    /// The feature's service on `rt`.
    pub(crate) fn of(rt: &'a Arc<Inner>) -> Self {
        Service {
            rt,
            feature: PhantomData,
        }
    }
}

impl<F> Clone for Service<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F> Copy for Service<'_, F> {}

/// The kernel, its store and the runtime's configuration read as they
/// are on the host.
impl<F> Deref for Service<'_, F> {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        self.rt
    }
}
