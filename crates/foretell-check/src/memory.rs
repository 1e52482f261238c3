//! The process's memory: what it holds now, for memory budgets, and its peak, for the
//! statistics of a run; and the machine's, which no fixed-size table may exceed.
//!
//! The peak comes from `getrusage`, one system call, rather than from `/proc/self/status`,
//! which takes about 10 µs to read: as long as a whole local model checking run of a small
//! space.

/// Whether the process's resident memory has reached `budget` bytes: never without a budget, or
/// where the platform does not say (there a budget is not enforced). Every engine's memory
/// budget asks this.
pub fn over_budget(budget: Option<u64>) -> bool {
    budget.is_some_and(|max| resident_bytes().is_some_and(|used| used >= max))
}

/// The process's resident memory in bytes (Linux: `/proc/self/statm`); `None` elsewhere.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// The machine's physical memory in bytes (`None` where the platform does not say).
pub(crate) fn physical_bytes() -> Option<u64> {
    #[cfg(unix)]
    {
        // SAFETY: `sysconf` only reads constants of the system.
        let (pages, page) =
            unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
        u64::try_from(pages).ok()?.checked_mul(u64::try_from(page).ok()?)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// This process's peak resident set size in bytes (`None` where the platform does not say).
pub fn peak_resident_bytes() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `getrusage` writes a `rusage` through the pointer, which points to one.
        let status = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
        if status != 0 {
            return None;
        }
        // SAFETY: zeroed, then filled in by the successful call above.
        let usage = unsafe { usage.assume_init() };
        // Linux reports kibibytes.
        u64::try_from(usage.ru_maxrss).ok().map(|kib| kib * 1024)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_machine_has_more_memory_than_this_test_touches() {
        let physical = physical_bytes().expect("Linux reports its memory");
        assert!(physical >= 64 << 20, "{physical} bytes of memory");
    }

    #[test]
    fn the_peak_covers_memory_this_process_touched() {
        let block = vec![1u8; 64 << 20];
        std::hint::black_box(&block);
        let peak = peak_resident_bytes().expect("Linux reports the peak");
        assert!(peak >= 64 << 20, "peak {peak} below the 64 MiB just touched");
    }
}
