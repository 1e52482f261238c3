//! The process's memory: what it holds now, for memory budgets, and its peak, for the
//! statistics of a run; and the machine's, which no fixed-size table may exceed.
//!
//! The peak comes from `getrusage`, one system call, rather than from `/proc/self/status`,
//! which takes about 10 µs to read: as long as a whole local model checking run of a small
//! space. But on Linux `getrusage`'s peak is not only this program's: `exec` carries the peak
//! of the memory it replaces into the new program's, so a `foretell` started by a large
//! process through `vfork` (Rust's `Command`, Python's `subprocess`) would report its
//! parent's peak as its own (a 300 MB Python parent made a 14 MB run report 314 MB). So the
//! first reading, taken when a run starts, bounds what was carried over; a later reading above
//! that bound is this program's own, and one at or below it is read from `/proc/self/status`
//! (`VmHWM`, the peak of this program's memory alone).

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

/// Takes the first reading of the peak, which bounds what `exec` carried over (see the module
/// doc), unless one was taken already. Every engine calls it when a run starts, so that the
/// peak at the end of the run costs one system call.
pub fn prepare_peak() {
    #[cfg(target_os = "linux")]
    exec_bound();
}

/// This process's peak resident set size in bytes (`None` where the platform does not say).
pub fn peak_resident_bytes() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let bound = exec_bound();
        let reported = reported_peak()?;
        if reported > bound {
            // Above anything carried over, so this program's own.
            return Some(reported);
        }
        own_peak_from_status().or(Some(reported))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The first peak `getrusage` reported in this process: at least what `exec` carried over.
#[cfg(target_os = "linux")]
fn exec_bound() -> u64 {
    static BOUND: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BOUND.get_or_init(|| reported_peak().unwrap_or(u64::MAX))
}

/// `getrusage`'s peak: the larger of this program's own and what `exec` carried over.
#[cfg(target_os = "linux")]
fn reported_peak() -> Option<u64> {
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

/// This program's own peak, `VmHWM` in `/proc/self/status`.
#[cfg(target_os = "linux")]
fn own_peak_from_status() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|line| line.strip_prefix("VmHWM:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
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

    /// `VmHWM` sees the memory this program touched, and `getrusage`, which may add what `exec`
    /// carried over, reports no less, but for the kernel's per-CPU page counts, which the two
    /// sum with different precision while other tests allocate (57 KB apart in one CI run).
    #[test]
    fn the_status_file_reads_this_program_s_own_peak() {
        prepare_peak();
        let block = vec![1u8; 64 << 20];
        std::hint::black_box(&block);
        let from_status = own_peak_from_status().expect("Linux has /proc/self/status");
        let reported = reported_peak().expect("Linux reports the peak");
        assert!(from_status >= 64 << 20, "VmHWM {from_status} below the 64 MiB just touched");
        assert!(reported + (1 << 20) >= from_status, "getrusage {reported} below VmHWM {from_status}");
    }
}
