//! `Ignored<T>`: a field of a local state that does not count toward fingerprints.
//!
//! MaceMC lets the programmer annotate state variables "believed to not contribute meaningfully to
//! the uniqueness of global system state" (NSDI'07, section 3.2). In foretell such a field is
//! wrapped in `Ignored`. Fingerprints hash a state's canonical serialization, so an `Ignored`
//! field serializes as nothing; for the same reason it compares equal to every other `Ignored`
//! value, so a derived `Eq` agrees with the fingerprint.
//!
//! Use it only for data that cannot change future behaviour (statistics, caches rebuilt on
//! demand, debugging aids). Ignoring a field that handlers read makes the search unsound: two
//! worlds would be merged although they behave differently.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::ops::{Deref, DerefMut};

/// A value that is part of a node's state but not of its fingerprint or equality.
///
/// # Examples
/// ```
/// use foretell_model::Ignored;
/// let a = Ignored::new(3);
/// let b = Ignored::new(4);
/// assert_eq!(a, b);
/// assert_eq!(*a + 1, 4);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Ignored<T>(pub T);

impl<T> Ignored<T> {
    /// Wraps a value.
    pub fn new(value: T) -> Self {
        Ignored(value)
    }

    /// Unwraps the value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Ignored<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Ignored<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T> PartialEq for Ignored<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for Ignored<T> {}

impl<T> PartialOrd for Ignored<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Ignored<T> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<T> std::hash::Hash for Ignored<T> {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl<T> Serialize for Ignored<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_unit()
    }
}

impl<'de, T: Default> Deserialize<'de> for Ignored<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <()>::deserialize(deserializer)?;
        Ok(Ignored(T::default()))
    }
}
