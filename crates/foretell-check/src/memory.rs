//! The process's memory: what it holds now, for memory budgets, and its peak, for the
//! statistics of a run; and the machine's, which no fixed-size table may exceed and which sets
//! the budget a run gets when it names none ([`default_budget`]).
//!
//! Reading what the process holds costs a few microseconds (a file of `/proc`), and engines ask
//! every thousand worlds: far below the budget, a reading younger than [`READING_LIFETIME`]
//! answers instead, so a budget costs little more than the clock; near it, every question reads
//! afresh, so a budget is held as closely as the engines poll.
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

use std::time::{Duration, Instant};

/// Whether the process's resident memory has reached `budget` bytes: never without a budget, or
/// where the platform does not say (there a budget is not enforced). Every engine's memory
/// budget asks this; below seven eighths of the budget the answer may come from a reading up to
/// [`READING_LIFETIME`] old.
pub fn over_budget(budget: Option<u64>) -> bool {
    budget.is_some_and(|max| recent_resident_bytes(max - max / 8).is_some_and(|used| used >= max))
}

/// How long a reading of the process's memory below the trusted level answers
/// [`over_budget`]. A search would have to grow by an eighth of its budget within it to pass the
/// budget unseen.
const READING_LIFETIME: Duration = Duration::from_millis(5);

/// What the process holds: the last reading if it is younger than [`READING_LIFETIME`] and
/// below `trusted` bytes, else a new one. The last reading is shared by every run in the
/// process, since the memory is.
fn recent_resident_bytes(trusted: u64) -> Option<u64> {
    use std::sync::Mutex;
    static LAST: Mutex<Option<Reading>> = Mutex::new(None);
    let now = Instant::now();
    let mut last = LAST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(reading) = last.filter(|reading| reading.answers(now, trusted)) {
        return reading.bytes;
    }
    let bytes = resident_bytes();
    *last = Some(Reading { at: now, bytes });
    bytes
}

/// A reading of what the process holds, and when it was taken.
#[derive(Clone, Copy)]
struct Reading {
    at: Instant,
    bytes: Option<u64>,
}

impl Reading {
    /// Whether this reading may answer at `now` instead of a new one: it is younger than
    /// [`READING_LIFETIME`] and below `trusted` bytes (or says the platform does not tell).
    fn answers(&self, now: Instant, trusted: u64) -> bool {
        now.duration_since(self.at) < READING_LIFETIME && self.bytes.is_none_or(|held| held < trusted)
    }
}

/// The memory budget of a run that names none: nine tenths of what this process may use (what
/// it holds and what the machine has available now, or its container's limit if lower), so that
/// a search that would exhaust it stops with its report rather than being killed without one.
/// `None` where the platform does not say.
pub fn default_budget() -> Option<u64> {
    let machine =
        available_bytes().map(|available| available + resident_bytes().unwrap_or(0)).or_else(physical_bytes);
    let usable = match (machine, container_limit()) {
        (Some(machine), Some(limit)) => machine.min(limit),
        (machine, limit) => machine.or(limit)?,
    };
    Some(usable / 10 * 9)
}

/// The memory the machine can give without swapping (Linux: `MemAvailable` in `/proc/meminfo`).
fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find_map(|line| line.strip_prefix("MemAvailable:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

/// The memory limit of this process's control group (cgroup v2 `memory.max`, else v1
/// `memory.limit_in_bytes`), if it has one.
fn container_limit() -> Option<u64> {
    ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| parse_limit(&text))
}

/// A control group's memory limit file: a number of bytes, or `max` for none. (Version 1 says
/// "none" with a number near 2^63, which is above any machine's memory and so never the lower.)
fn parse_limit(text: &str) -> Option<u64> {
    text.trim().parse().ok()
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
    fn a_control_group_limit_is_a_number_of_bytes_or_none() {
        assert_eq!(parse_limit("1073741824\n"), Some(1 << 30));
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit(""), None);
    }

    /// The default budget lies below the machine's memory and above what this process holds
    /// (the memory available moves while other tests run, so it is not compared exactly).
    #[test]
    fn the_default_budget_is_below_the_machine_s_memory_and_above_this_process_s() {
        let physical = physical_bytes().expect("Linux reports its memory");
        let available = available_bytes().expect("Linux reports the memory available");
        assert!(available <= physical, "{available} bytes available of {physical}");
        let budget = default_budget().expect("Linux reports its memory");
        let held = resident_bytes().expect("Linux reports the memory held");
        assert!(budget < physical, "a default budget of {budget} bytes of {physical}");
        assert!(budget > held, "a default budget of {budget} bytes, {held} held");
    }

    #[test]
    fn a_budget_is_reached_by_the_memory_the_process_holds() {
        assert!(over_budget(Some(1)));
        assert!(!over_budget(Some(u64::MAX)));
        assert!(!over_budget(None));
    }

    /// A reading answers while it is young and below the trusted level; an old one, or one
    /// near the budget, is taken again.
    #[test]
    fn a_reading_answers_while_young_and_far_below_the_budget() {
        let at = Instant::now();
        let reading = Reading { at, bytes: Some(100 << 20) };
        let soon = at + READING_LIFETIME / 2;
        assert!(reading.answers(soon, 200 << 20));
        assert!(!reading.answers(soon, 100 << 20), "at the trusted level");
        assert!(!reading.answers(at + READING_LIFETIME, 200 << 20), "too old");
        let silent = Reading { at, bytes: None };
        assert!(silent.answers(soon, 0), "a platform that does not say is not asked again soon");
    }

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
