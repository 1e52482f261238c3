//! Starting the workers of one process: connections to the other processes, timely's
//! allocators, and one thread per worker.
//!
//! timely's own launcher (`timely::execute`) reads its flags from the command line (its `-h`
//! would shadow clap's help) and wants a `'static` worker closure; this module builds the same
//! allocators from a [`ClusterConfig`] and runs the workers on scoped threads, so that they can
//! borrow the model. It also makes the TCP connections itself, instead of timely's
//! `create_sockets`: retries are quick, the wait is bounded, nothing is printed to stdout, and
//! every connection starts with a handshake that checks that both processes run the same
//! model, options and cluster shape (`digest`) — a mismatch is an error, not a hang or a wrong
//! answer. The handshake is not authentication: clusters belong on trusted networks only.
//!
//! A worker that fails raises a flag that the other workers of the process poll while they
//! wait ([`wait_until`]); the process then exits, its connections close, and timely's
//! communication threads in the other processes fail in turn, so a failure takes the whole
//! cluster down rather than leaving it waiting. Those threads fail by panicking; their panics,
//! and the workers' that follow, are not printed: the process reports one error, the lost
//! connection, with the cause timely's thread gave.

use crate::{ClusterConfig, ClusterError};
use foretell_model::{catch_panic, panic_message};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once, PoisonError};
use std::time::{Duration, Instant};
use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::ProcessBuilder;
use timely::communication::{Allocator, Hooks};
use timely::worker::Worker;
use timely::WorkerConfig;

/// The longest a waiting worker parks before it checks the failure flag again.
const PARK: Duration = Duration::from_millis(100);
/// How often a process retries a connection or polls for incoming ones.
const RETRY: Duration = Duration::from_millis(25);
/// How long an accepted connection has to send its hello before it is dropped as a stranger.
const HELLO_WAIT: Duration = Duration::from_secs(5);
/// The handshake's first bytes.
const MAGIC: &[u8; 8] = b"FORETELL";
/// The handshake's version: change it whenever what travels between processes changes.
const PROTOCOL: u32 = 1;

/// What a worker can see of its process: the flag that says another local worker failed.
pub(crate) struct Local<'a> {
    failed: &'a AtomicBool,
}

/// Steps `worker` (parking when there is nothing to do) until `done`, or until another worker
/// of this process fails.
pub(crate) fn wait_until(
    worker: &mut Worker,
    local: &Local<'_>,
    mut done: impl FnMut() -> bool,
) -> Result<(), ClusterError> {
    while !done() {
        if local.failed.load(Ordering::Relaxed) {
            return Err(echo());
        }
        worker.step_or_park(Some(PARK));
    }
    Ok(())
}

/// A value that is dropped normally, but leaked if its thread unwinds.
///
/// Dropping a timely input handle flushes its buffers to the other processes. When a worker
/// unwinds it is usually because a connection broke, and that flush would panic a second time,
/// which aborts the whole process instead of reporting the lost connection. Input handles are
/// held in this wrapper for that reason.
pub(crate) struct LeakOnUnwind<T>(Option<T>);

impl<T> LeakOnUnwind<T> {
    pub(crate) fn new(value: T) -> Self {
        LeakOnUnwind(Some(value))
    }
}

impl<T> std::ops::Deref for LeakOnUnwind<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_ref().expect("the value is present until the wrapper is dropped")
    }
}

impl<T> std::ops::DerefMut for LeakOnUnwind<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.as_mut().expect("the value is present until the wrapper is dropped")
    }
}

impl<T> Drop for LeakOnUnwind<T> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            std::mem::forget(self.0.take());
        }
    }
}

/// The error of a worker that stops because another worker of its process failed.
fn echo() -> ClusterError {
    ClusterError::Worker("another worker of this process failed".into())
}

/// Runs `work` on every worker of this process and returns their results in worker order.
/// `digest` names the run (model, options, mode): every process must compute the same.
pub(crate) fn run<T: Send>(
    config: &ClusterConfig,
    digest: u64,
    work: impl Fn(&mut Worker, &Local<'_>) -> Result<T, ClusterError> + Sync,
) -> Result<Vec<T>, ClusterError> {
    let addresses = config.addresses()?;
    let hooks = Hooks::default();
    let process = ProcessBuilder::new_typed_vector(config.workers, hooks.refill.clone(), hooks.spill.clone());
    let (builders, comms): (Vec<Builder>, _) = if config.processes == 1 {
        (process.into_iter().map(Builder::Process).collect(), None)
    } else {
        quiet_communication_panics();
        let sockets = connect(config, &addresses, digest)?;
        let (tcp, guard) =
            initialize_networking_from_sockets(process, sockets, config.process_index, config.workers, hooks)
                .map_err(|e| ClusterError::Network(format!("cannot start the communication threads: {e}")))?;
        (tcp.into_iter().map(Builder::Tcp).collect(), Some(guard))
    };
    let failed = AtomicBool::new(false);
    let results: Vec<Result<T, ClusterError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = builders
            .into_iter()
            .enumerate()
            .map(|(i, builder)| {
                let (work, failed) = (&work, &failed);
                std::thread::Builder::new()
                    .name(format!("foretell-cluster-{i}"))
                    .spawn_scoped(scope, move || run_worker(builder, work, failed))
                    .map_err(|e| {
                        failed.store(true, Ordering::Relaxed);
                        ClusterError::Worker(format!("cannot start a worker thread: {e}"))
                    })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                let handle = handle?;
                handle.join().unwrap_or_else(|panic| Err(worker_panic(&panic_message(&*panic))))
            })
            .collect()
    });
    let ok = results.iter().all(Result::is_ok);
    if let Some(guard) = comms {
        if ok {
            // Joins the communication threads, which end once every process has finished; one
            // that failed (a peer vanished at the very end) must not turn a result into a panic.
            let _ = catch_panic(|| drop(guard));
        } else {
            // The threads may wait on peers that will never finish: do not join them.
            std::mem::forget(guard);
        }
    }
    if ok {
        return results.into_iter().collect();
    }
    // The first failure that is not a consequence of another worker's.
    let errors = results.into_iter().filter_map(Result::err);
    let (echoes, causes): (Vec<_>, Vec<_>) = errors.partition(|e| *e == echo());
    Err(causes.into_iter().chain(echoes).next().expect("a failed run has an error"))
}

/// An allocator builder of either kind, moved into its worker's thread.
enum Builder {
    Process(ProcessBuilder),
    Tcp(timely::communication::allocator::zero_copy::allocator::TcpBuilder),
}

fn run_worker<T>(
    builder: Builder,
    work: &(impl Fn(&mut Worker, &Local<'_>) -> Result<T, ClusterError> + Sync),
    failed: &AtomicBool,
) -> Result<T, ClusterError> {
    let local = Local { failed };
    let outcome = catch_panic(|| {
        let allocator = match builder {
            Builder::Process(b) => Allocator::Process(b.build()),
            Builder::Tcp(b) => Allocator::Tcp(b.build()),
        };
        let mut worker = Worker::new(WorkerConfig::default(), allocator, Some(Instant::now()));
        let result = work(&mut worker, &local)?;
        // Let the dataflows finish (every worker closes its inputs), so that no process exits
        // while another still needs its messages.
        while worker.has_dataflows() {
            if local.failed.load(Ordering::Relaxed) {
                return Err(echo());
            }
            worker.step_or_park(Some(PARK));
        }
        Ok(result)
    });
    let result = outcome.unwrap_or_else(|panic| Err(worker_panic(&panic)));
    if result.is_err() {
        failed.store(true, Ordering::Relaxed);
    }
    result
}

/// The error for a worker that panicked with `text`: a lost connection when timely's
/// communication failed (its threads poison the queues the workers read), with the cause its
/// thread gave; a failure of foretell otherwise.
fn worker_panic(text: &str) -> ClusterError {
    if text.contains("MergeQueue poisoned") || text.contains("timely communication error") {
        let failure = COMMUNICATION_FAILURE.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let cause = failure.as_deref().unwrap_or(text);
        ClusterError::Network(format!(
            "lost the connection to another process, which may have failed ({cause})"
        ))
    } else {
        ClusterError::Worker(text.to_owned())
    }
}

/// The first panic of one of timely's communication threads (named `timely:send-N` and
/// `timely:recv-N`), such as "timely communication error: reading data: socket closed".
static COMMUNICATION_FAILURE: Mutex<Option<String>> = Mutex::new(None);

/// Keeps the panics of timely's communication threads off standard error, recording the first
/// of this run in [`COMMUNICATION_FAILURE`] for the error the process reports; every other
/// thread's panic goes to the hook installed before. (A process runs one cluster at a time.)
fn quiet_communication_panics() {
    static INSTALLED: Once = Once::new();
    *COMMUNICATION_FAILURE.lock().unwrap_or_else(PoisonError::into_inner) = None;
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name().is_some_and(|name| name.starts_with("timely:")) {
                let message = panic_message(info.payload());
                COMMUNICATION_FAILURE.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(message);
            } else {
                previous(info);
            }
        }));
    });
}

/// This process's view of the handshake: who it is and what it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hello {
    processes: u32,
    workers: u32,
    index: u32,
    digest: u64,
}

const HELLO_BYTES: usize = 8 + 4 + 4 + 4 + 4 + 8;

impl Hello {
    fn encode(self) -> [u8; HELLO_BYTES] {
        let mut bytes = [0u8; HELLO_BYTES];
        bytes[..8].copy_from_slice(MAGIC);
        bytes[8..12].copy_from_slice(&PROTOCOL.to_le_bytes());
        bytes[12..16].copy_from_slice(&self.processes.to_le_bytes());
        bytes[16..20].copy_from_slice(&self.workers.to_le_bytes());
        bytes[20..24].copy_from_slice(&self.index.to_le_bytes());
        bytes[24..].copy_from_slice(&self.digest.to_le_bytes());
        bytes
    }

    fn decode(bytes: &[u8; HELLO_BYTES]) -> Result<Hello, ClusterError> {
        let word = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        if &bytes[..8] != MAGIC {
            return Err(ClusterError::Network("a connection that is not a foretell cluster process".into()));
        }
        if word(8) != PROTOCOL {
            return Err(ClusterError::Mismatch(format!(
                "a peer speaks cluster protocol {}, this process {PROTOCOL} (different foretell versions)",
                word(8)
            )));
        }
        let mut digest = [0u8; 8];
        digest.copy_from_slice(&bytes[24..]);
        Ok(Hello {
            processes: word(12),
            workers: word(16),
            index: word(20),
            digest: u64::from_le_bytes(digest),
        })
    }

    /// Checks a peer's hello against this process's; `expected` is the peer's index if known.
    fn check_peer(self, peer: Hello, expected: Option<u32>) -> Result<(), ClusterError> {
        let mismatch = |what: String| Err(ClusterError::Mismatch(what));
        if (peer.processes, peer.workers) != (self.processes, self.workers) {
            return mismatch(format!(
                "process {} runs {} processes of {} workers, this one {} of {}",
                peer.index, peer.processes, peer.workers, self.processes, self.workers
            ));
        }
        if peer.digest != self.digest {
            return mismatch(format!(
                "process {} checks another model or with other options (run digest {:016x}, here {:016x})",
                peer.index, peer.digest, self.digest
            ));
        }
        if let Some(expected) = expected.filter(|&e| e != peer.index) {
            return mismatch(format!("the address of process {expected} answers as process {}", peer.index));
        }
        Ok(())
    }
}

/// Opens a connection to every other process: this one connects to the lower-indexed ones and
/// accepts the higher-indexed ones (timely's convention), exchanging hellos on each.
fn connect(
    config: &ClusterConfig,
    addresses: &[String],
    digest: u64,
) -> Result<Vec<Option<TcpStream>>, ClusterError> {
    let me = config.process_index;
    let hello = Hello {
        processes: config.processes as u32,
        workers: config.workers as u32,
        index: me as u32,
        digest,
    };
    // A timeout too long for the clock to represent never runs out.
    let deadline = Instant::now().checked_add(config.connect_timeout);
    let listener = TcpListener::bind(&addresses[me]).map_err(|e| {
        ClusterError::Network(format!("process {me} cannot listen on {}: {e}", addresses[me]))
    })?;
    let mut sockets: Vec<Option<TcpStream>> = (0..config.processes).map(|_| None).collect();
    // Connections that were not foretell cluster processes, ignored.
    let mut strangers = 0;
    for (peer, address) in addresses.iter().enumerate().take(me) {
        let mut stream = connect_to(address, deadline)?;
        let theirs = shake(&mut stream, hello, deadline)?;
        hello.check_peer(theirs, Some(peer as u32))?;
        sockets[peer] = Some(stream);
    }
    listener
        .set_nonblocking(true)
        .map_err(|e| ClusterError::Network(format!("cannot configure the listener: {e}")))?;
    while sockets.iter().skip(me + 1).any(Option::is_none) {
        match listener.accept() {
            Ok((mut stream, from)) => {
                stream.set_nonblocking(false).map_err(|e| ClusterError::Network(format!("{from}: {e}")))?;
                // A peer sends its hello as soon as it connects; anything that does not (a port
                // scanner, a health check) is dropped, and the wait for the peers goes on. A
                // foretell process that disagrees is still an error.
                let patience = Instant::now() + HELLO_WAIT;
                let theirs =
                    match shake(&mut stream, hello, Some(deadline.map_or(patience, |d| d.min(patience)))) {
                        Err(ClusterError::Network(_)) => {
                            strangers += 1;
                            continue;
                        }
                        shaken => shaken?,
                    };
                hello.check_peer(theirs, None)?;
                let index = theirs.index as usize;
                if index <= me || index >= config.processes || sockets[index].is_some() {
                    return Err(ClusterError::Mismatch(format!(
                        "{from} connected as process {index}, which process {me} does not expect"
                    )));
                }
                sockets[index] = Some(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if passed(deadline) {
                    let missing: Vec<String> = (me + 1..config.processes)
                        .filter(|&i| sockets[i].is_none())
                        .map(|i| i.to_string())
                        .collect();
                    let ignored = match strangers {
                        0 => String::new(),
                        n => format!(
                            " (and ignored {n} connection(s) that were not foretell cluster processes)"
                        ),
                    };
                    return Err(ClusterError::Network(format!(
                        "process {me} waited {:?} for process(es) {} to connect{ignored}",
                        config.connect_timeout,
                        missing.join(", ")
                    )));
                }
                std::thread::sleep(RETRY);
            }
            Err(e) => return Err(ClusterError::Network(format!("accepting a connection: {e}"))),
        }
    }
    Ok(sockets)
}

/// Whether `deadline` (none: never) has passed.
fn passed(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// Connects to `address`, retrying until `deadline` (the peer may not have started yet).
fn connect_to(address: &str, deadline: Option<Instant>) -> Result<TcpStream, ClusterError> {
    let resolved: Vec<_> = address
        .to_socket_addrs()
        .map_err(|e| ClusterError::Network(format!("cannot resolve {address}: {e}")))?
        .collect();
    loop {
        let mut last = None;
        for target in &resolved {
            match TcpStream::connect_timeout(target, RETRY.max(Duration::from_millis(250))) {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(e),
            }
        }
        if passed(deadline) {
            let reason = last.map_or_else(|| "no address".to_string(), |e| e.to_string());
            return Err(ClusterError::Network(format!("cannot connect to {address}: {reason}")));
        }
        std::thread::sleep(RETRY);
    }
}

/// Sends this process's hello and reads the peer's, then leaves the socket as timely expects it
/// (blocking, no read timeout, no Nagle delay).
fn shake(stream: &mut TcpStream, hello: Hello, deadline: Option<Instant>) -> Result<Hello, ClusterError> {
    let io = |e: std::io::Error| ClusterError::Network(format!("handshake: {e}"));
    let remaining =
        deadline.map(|d| d.saturating_duration_since(Instant::now()).max(Duration::from_millis(100)));
    stream.set_read_timeout(remaining).map_err(io)?;
    stream.write_all(&hello.encode()).map_err(io)?;
    let mut bytes = [0u8; HELLO_BYTES];
    stream.read_exact(&mut bytes).map_err(io)?;
    let theirs = Hello::decode(&bytes)?;
    stream.set_read_timeout(None).map_err(io)?;
    stream.set_nodelay(true).map_err(io)?;
    Ok(theirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trips_and_mismatches_are_named() {
        let mine = Hello { processes: 2, workers: 3, index: 0, digest: 42 };
        let theirs = Hello { index: 1, ..mine };
        assert_eq!(Hello::decode(&theirs.encode()).unwrap(), theirs);
        mine.check_peer(theirs, Some(1)).unwrap();
        assert!(matches!(mine.check_peer(theirs, Some(2)), Err(ClusterError::Mismatch(_))));
        let other_model = Hello { digest: 7, ..theirs };
        assert!(matches!(mine.check_peer(other_model, None), Err(ClusterError::Mismatch(_))));
        let other_shape = Hello { workers: 1, ..theirs };
        assert!(matches!(mine.check_peer(other_shape, None), Err(ClusterError::Mismatch(_))));
        let mut garbage = theirs.encode();
        garbage[0] = b'X';
        assert!(matches!(Hello::decode(&garbage), Err(ClusterError::Network(_))));
        let mut future = theirs.encode();
        future[8] = 9;
        assert!(matches!(Hello::decode(&future), Err(ClusterError::Mismatch(_))));
    }

    /// Two free loopback addresses, process 1's configuration with `connect_timeout`, and
    /// process 0 connecting on a thread (its answer: whether it got process 1's socket).
    fn accepting_on_loopback(
        connect_timeout: Duration,
    ) -> (Vec<String>, ClusterConfig, std::thread::JoinHandle<Result<bool, ClusterError>>) {
        let free = || TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let addresses = vec![free(), free()];
        let config = |process_index| ClusterConfig {
            processes: 2,
            process_index,
            connect_timeout,
            ..ClusterConfig::default()
        };
        let accepting = std::thread::spawn({
            let (addresses, config) = (addresses.clone(), config(0));
            move || connect(&config, &addresses, 42).map(|sockets| sockets[1].is_some())
        });
        (addresses, config(1), accepting)
    }

    /// Connections that are not foretell processes (one sends an HTTP request, one nothing at
    /// all) do not end the wait: the real peer, connecting after them, is accepted.
    #[test]
    fn strangers_on_the_port_are_ignored() {
        let (addresses, config, accepting) = accepting_on_loopback(Duration::from_secs(60));
        let deadline = Instant::now().checked_add(Duration::from_secs(60));
        let mut http = connect_to(&addresses[0], deadline).unwrap();
        http.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
        drop(http);
        let silent = connect_to(&addresses[0], deadline).unwrap();
        let connecting = connect(&config, &addresses, 42).expect("process 1 connects");
        drop(silent);
        assert!(connecting[0].is_some());
        assert!(accepting.join().unwrap().expect("process 0 accepts"));
    }

    /// A connect timeout too long for the clock is no timeout: two processes on loopback still
    /// connect and shake hands.
    #[test]
    fn an_endless_connect_timeout_still_connects() {
        let (addresses, config, accepting) = accepting_on_loopback(Duration::MAX);
        let connecting = connect(&config, &addresses, 42).expect("process 1 connects");
        assert!(connecting[0].is_some());
        assert!(accepting.join().unwrap().expect("process 0 accepts"));
    }
}
