//! State a feature owns, kept by type (the `Extensions` type map of `http`
//! and axum): per session on the session context, and the feature's
//! services (task drivers, realtime bridges, …) on the runtime. The kernel
//! holds the maps, never knows what is in them, and only the feature that
//! defines a type can read or write its value.

use std::any::{Any, TypeId};
use std::collections::HashMap;

/// Values by their type, at most one of each.
#[derive(Default)]
pub struct Extensions {
    map: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl Extensions {
    /// Put `value` in, giving back the one it replaces.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        self.map
            .insert(TypeId::of::<T>(), Box::new(value))
            .and_then(|old| old.downcast().ok().map(|b| *b))
    }

    /// The value of type `T`, if there is one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref())
    }

    /// The value of type `T`, to change, if there is one.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.map
            .get_mut(&TypeId::of::<T>())
            .and_then(|value| value.downcast_mut())
    }

    /// The value of type `T`, put in as its default if there is none yet.
    pub fn get_or_default<T: Default + Send + Sync + 'static>(&mut self) -> &mut T {
        self.map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()))
            .downcast_mut::<T>()
            .unwrap_or_else(|| unreachable!("the map holds a `T` under `T`'s id"))
    }

    /// Take the value of type `T` out.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        self.map
            .remove(&TypeId::of::<T>())
            .and_then(|old| old.downcast().ok().map(|b| *b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Note(u32);
    #[derive(Debug, PartialEq)]
    struct Other(&'static str);

    #[test]
    fn one_value_per_type() {
        let mut e = Extensions::default();
        assert_eq!(e.insert(Note(1)), None);
        assert_eq!(e.insert(Other("x")), None);
        assert_eq!(e.insert(Note(2)), Some(Note(1)));
        assert_eq!(e.get::<Note>(), Some(&Note(2)));
        if let Some(g) = e.get_mut::<Note>() {
            g.0 = 3;
        }
        assert_eq!(e.insert(Note(2)), Some(Note(3)));
        assert_eq!(e.remove::<Note>(), Some(Note(2)));
        assert_eq!(e.remove::<Note>(), None);
        assert_eq!(e.remove::<Other>(), Some(Other("x")));
    }

    #[derive(Debug, Default, PartialEq)]
    struct Count(u32);

    #[test]
    fn a_missing_value_starts_at_its_default() {
        let mut e = Extensions::default();
        e.get_or_default::<Count>().0 += 2;
        e.get_or_default::<Count>().0 += 1;
        assert_eq!(e.remove::<Count>(), Some(Count(3)));
    }
}
