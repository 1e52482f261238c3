//! Panics in the user's code (handlers, `init`, properties) are findings, not crashes. The
//! checker catches each one and reports it: as a violation with its trace, or under local model
//! checking as a discarded local state. This module does the catching.
//!
//! The standard panic hook would also print every caught panic on stderr, so a run that ends
//! with "holds" would look as if it had crashed, and a search that meets the same panic in many
//! worlds would print it many times. So the first catch installs a hook that stays quiet for
//! the panics caught here and records where each was raised, for the report. Every other panic
//! goes to the hook that was there before.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Whether this thread is running code whose panics [`catch_panic`] catches.
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    /// Where this thread's latest caught panic was raised, as `file:line:column`.
    static RAISED_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

static QUIET_HOOK: Once = Once::new();

/// Runs `user_code`, returning its panic, if it panics, as its message followed by where it
/// was raised (`... at src/lib.rs:12:5`); the panic is not printed.
pub fn catch_panic<R>(user_code: impl FnOnce() -> R) -> Result<R, String> {
    QUIET_HOOK.call_once(install_quiet_hook);
    let outer = CATCHING.replace(true);
    let result = panic::catch_unwind(AssertUnwindSafe(user_code));
    CATCHING.set(outer);
    result.map_err(|payload| {
        let message = panic_message(payload.as_ref());
        match RAISED_AT.take() {
            Some(at) => format!("{message} at {at}"),
            None => message,
        }
    })
}

/// The text of a panic's payload.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".into()
    }
}

fn install_quiet_hook() {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if CATCHING.get() {
            let at = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
            RAISED_AT.set(at);
        } else {
            previous(info);
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caught_panic_says_what_and_where() {
        let line = line!() + 1;
        let caught = catch_panic(|| -> u8 { panic!("handler gave up on {}", 7) });
        let message = caught.unwrap_err();
        assert!(message.starts_with("handler gave up on 7 at "), "{message}");
        assert!(message.contains(&format!("caught_panic.rs:{line}:")), "{message}");
        assert_eq!(catch_panic(|| 5), Ok(5));
        assert!(!CATCHING.get(), "the flag is cleared after the catch");
    }
}
