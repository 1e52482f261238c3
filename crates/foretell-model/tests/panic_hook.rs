//! The quiet hook that `catch_panic` installs keeps caught panics to itself and passes every
//! other panic to the hook that was there before. (One test in its own process: the panic hook
//! is global.)

use foretell_model::catch_panic;
use std::sync::atomic::{AtomicUsize, Ordering};

static PRINTED: AtomicUsize = AtomicUsize::new(0);

#[test]
fn caught_panics_stay_quiet_and_others_reach_the_previous_hook() {
    std::panic::set_hook(Box::new(|_| {
        PRINTED.fetch_add(1, Ordering::SeqCst);
    }));
    assert!(catch_panic(|| panic!("caught")).is_err());
    assert_eq!(PRINTED.load(Ordering::SeqCst), 0, "a caught panic reaches no hook");
    assert!(std::thread::spawn(|| panic!("not caught")).join().is_err());
    assert_eq!(PRINTED.load(Ordering::SeqCst), 1, "any other panic reaches the previous hook");
    assert!(catch_panic(|| panic!("caught again")).is_err());
    assert_eq!(PRINTED.load(Ordering::SeqCst), 1);
}
