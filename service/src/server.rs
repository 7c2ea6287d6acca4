//! `fairshare serve`: the listener, its connections, the signals, and the order things
//! start and stop in.
//!
//! Start: the configuration is read and its files checked (tokens, TLS), the exposure
//! rule applied (a TCP listener beyond loopback needs `[auth]` and `[tls]`, or
//! `--insecure`), the socket bound (a Unix socket at mode 0660 whatever the umask; a
//! stale one of a dead process replaced, a live one refused), then the pool started
//! (ledger, device, HTB), the signal handlers installed, the clock started, and only
//! then the "listening" line printed. Nothing is installed before a refusal that can be
//! known up front.
//!
//! Connections: HTTP/1.1 (hyper), TLS on TCP when `[tls]` is set. The request head
//! must arrive within [`HEADER_TIMEOUT`] (an idle keep-alive connection is closed after
//! as long), the TLS handshake too, the body within [`crate::http::BODY_TIMEOUT`]. At
//! most [`max_connections`] at once, below the process's file limit (raised to its hard
//! limit at start): a connection past it is answered 503 and closed at once, so the
//! service never runs out of descriptors for its ledger or the enforcer.
//!
//! Stop: SIGTERM or SIGINT stop accepting, let requests in flight finish for at most
//! [`GRACE`], stop the clock after its quantum, then drop the pool (the HTB tree goes
//! with it) and the socket: the whole stop takes under 5 s whatever the clients do.
//! SIGHUP reloads the token files and the TLS certificate and key (nothing else of the
//! file: the pool's fields need a restart).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::os::unix::fs::FileTypeExt;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use arc_swap::ArcSwap;
use fairshare_backends::{Backend, DeviceOptions};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::auth::Keys;
use crate::config::ServeConfig;
use crate::http::{self, App, Clock};
use crate::pool::{LivePool, SharedPool, StartOptions};
use crate::ServiceError;

/// How long a request's head (and a TLS handshake) may take to arrive, and how long a
/// keep-alive connection may stay idle.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long requests in flight may run after SIGTERM or SIGINT.
pub const GRACE: Duration = Duration::from_millis(2500);

/// The largest request head, in bytes.
pub const MAX_HEAD_BYTES: usize = 16 << 10;

/// File descriptors kept for the service itself (ledger, enforcer, device, runtime).
const RESERVED_FDS: u64 = 128;

/// The most connections at once, however many descriptors there are.
const MAX_CONNECTIONS: u64 = 4096;

/// How long one write to a client may wait for it to read: a reader that stops reading
/// is dropped, not kept with its answer in memory.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the API listens: a TCP address, or a Unix socket (`unix:PATH`), which a
/// controller in another network namespace can reach by its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix socket's path.
    Unix(PathBuf),
}

impl std::str::FromStr for Listen {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.strip_prefix("unix:") {
            Some("") => Err("unix: needs a path, e.g. unix:/run/fairshare.sock".into()),
            Some(path) => Ok(Listen::Unix(PathBuf::from(path))),
            None => s.parse().map(Listen::Tcp).map_err(|_| format!("`{s}` is not ADDRESS:PORT or unix:PATH")),
        }
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Tcp(a) => write!(f, "http://{a}"),
            Listen::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// `fairshare serve`'s options.
pub struct ServeOptions {
    /// The configuration file.
    pub config: PathBuf,
    /// Where to listen.
    pub listen: Listen,
    /// The ledger folder.
    pub state: Option<PathBuf>,
    /// The backend.
    pub backend: Backend,
    /// How the backend is used.
    pub device: DeviceOptions,
    /// The clock.
    pub clock: Clock,
    /// Serve beyond loopback without `[auth]` and `[tls]`.
    pub insecure: bool,
    /// Resume a ledger whose configuration differs from the file's, applying the file's.
    pub accept_config_changes: bool,
    /// The store this pool is a replica of (the controller's), if any.
    pub replica: Option<Box<dyn crate::replica::Replica>>,
}

/// Refuses a TCP listener reachable from other hosts without access control and TLS,
/// unless the operator said `--insecure`.
fn check_exposure(listen: &Listen, config: &ServeConfig, insecure: bool) -> Result<(), ServiceError> {
    let Listen::Tcp(addr) = listen else { return Ok(()) };
    let missing: Vec<&str> = [("[auth]", config.auth.is_none()), ("[tls]", config.tls.is_none())]
        .into_iter()
        .filter_map(|(what, absent)| absent.then_some(what))
        .collect();
    if addr.ip().is_loopback() || missing.is_empty() {
        return Ok(());
    }
    if insecure {
        eprintln!(
            "fairshare serve: warning: {addr} is reachable from other hosts without {} (--insecure)",
            missing.join(" and ")
        );
        return Ok(());
    }
    Err(ServiceError::Exposed(format!(
        "--listen {addr} is reachable from other hosts, and the configuration has no {}: add them (docs/serve.md#operations), \
         listen on loopback or a Unix socket, or pass --insecure to serve it anyway",
        missing.join(" and ")
    )))
}

/// A bound listener, before the runtime.
enum Bound {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener, PathBuf),
}

/// Removes the Unix socket this process bound, when dropped.
struct SocketFile(Option<PathBuf>);

impl Drop for SocketFile {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Binds `listen`. A Unix socket: a stale one (nobody accepts on it) is replaced, a
/// live one or a file that is not a socket refused; made with mode 0660.
fn bind(listen: &Listen) -> Result<(Bound, Listen), ServiceError> {
    match listen {
        Listen::Tcp(addr) => {
            let l = std::net::TcpListener::bind(addr)
                .map_err(|e| ServiceError::Listen { at: listen.to_string(), source: e })?;
            let bound = l.local_addr().map_err(|e| ServiceError::Listen { at: listen.to_string(), source: e })?;
            Ok((Bound::Tcp(l), Listen::Tcp(bound)))
        }
        Listen::Unix(path) => {
            let at = listen.to_string();
            if let Ok(meta) = std::fs::symlink_metadata(path) {
                if !meta.file_type().is_socket() {
                    return Err(ServiceError::Exposed(format!(
                        "{at}: the path exists and is not a socket; not replacing it"
                    )));
                }
                match std::os::unix::net::UnixStream::connect(path) {
                    Ok(_) => {
                        return Err(ServiceError::Exposed(format!(
                            "{at}: another process serves this socket; stop it or choose another path"
                        )))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                        eprintln!("fairshare serve: replacing the stale socket {} (nobody serves it)", path.display());
                        std::fs::remove_file(path).map_err(|e| ServiceError::Listen { at: at.clone(), source: e })?;
                    }
                    Err(e) => return Err(ServiceError::Listen { at, source: e }),
                }
            }
            // Made at 0660 whatever the umask: the umask is narrowed around the bind, so
            // the socket never exists with a wider mode (and no chmod by path follows,
            // which a symlink put in its place could redirect). Nothing else of the
            // process runs yet: the umask is the process's.
            let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o117));
            let bound = std::os::unix::net::UnixListener::bind(path);
            rustix::process::umask(old);
            let l = bound.map_err(|e| ServiceError::Listen { at, source: e })?;
            Ok((Bound::Unix(l, path.clone()), listen.clone()))
        }
    }
}

/// Raises the soft limit of open files to the hard one (as far as 1,048,576) and
/// returns how many connections fit below it.
pub fn max_connections() -> usize {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if let (Some(soft), Some(hard)) = (limit.current, limit.maximum) {
        let want = hard.min(1 << 20);
        if want > soft {
            limit.current = Some(want);
            let _ = setrlimit(Resource::Nofile, limit);
        }
    }
    let soft = getrlimit(Resource::Nofile).current.unwrap_or(1 << 20);
    usize::try_from(soft.saturating_sub(RESERVED_FDS).clamp(16, MAX_CONNECTIONS)).unwrap_or(16)
}

/// The signals the service acts on, registered before it says it listens.
struct Signals {
    term: Signal,
    int: Signal,
    hup: Signal,
}

enum Received {
    Stop(&'static str),
    Reload,
}

impl Signals {
    fn install() -> Result<Signals, ServiceError> {
        let on =
            |kind: SignalKind, what: &'static str| signal(kind).map_err(|source| ServiceError::Start { what, source });
        Ok(Signals {
            term: on(SignalKind::terminate(), "installing the handler of SIGTERM")?,
            int: on(SignalKind::interrupt(), "installing the handler of SIGINT")?,
            hup: on(SignalKind::hangup(), "installing the handler of SIGHUP")?,
        })
    }

    async fn next(&mut self) -> Received {
        tokio::select! {
            _ = self.term.recv() => Received::Stop("SIGTERM"),
            _ = self.int.recv() => Received::Stop("SIGINT"),
            _ = self.hup.recv() => Received::Reload,
        }
    }
}

/// What SIGHUP reloads: the tokens, and the certificate and key.
struct Reloadable {
    config_path: PathBuf,
    app: Arc<App>,
    tls: Option<SharedTls>,
}

impl Reloadable {
    async fn reload(&self) {
        let config = match ServeConfig::load(&self.config_path) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("fairshare serve: SIGHUP: the configuration is unreadable, nothing reloaded: {e}");
                return;
            }
        };
        // Made and swapped in under the pool's lock, as joins and leaves change them:
        // none of theirs is lost or brought back.
        let (app, file) = (Arc::clone(&self.app), config.clone());
        let reloaded = tokio::task::spawn_blocking(move || {
            let pool = app.pool.lock();
            let keys = Keys::load(&file, &pool.joined_tokens(), pool.members())?;
            if keys.enabled() != app.keys.load().enabled() {
                return Ok(false);
            }
            app.keys.store(Arc::new(keys));
            Ok::<bool, crate::config::ConfigError>(true)
        })
        .await;
        let mut done = Vec::new();
        match reloaded {
            Ok(Ok(true)) => done.push("the tokens"),
            Ok(Ok(false)) => eprintln!("fairshare serve: SIGHUP: [auth] cannot be added or removed without a restart"),
            Ok(Err(e)) => eprintln!("fairshare serve: SIGHUP: the tokens were not reloaded: {e}"),
            Err(e) => eprintln!("fairshare serve: SIGHUP: the tokens were not reloaded: {e}"),
        }
        if let (Some(swap), Some(t)) = (&self.tls, &config.tls) {
            match crate::tls::load(t) {
                Ok(c) => {
                    swap.store(c);
                    done.push("the TLS certificate and key");
                }
                Err(e) => eprintln!("fairshare serve: SIGHUP: TLS was not reloaded: {e}"),
            }
        }
        if !done.is_empty() {
            eprintln!("fairshare serve: SIGHUP: reloaded {}", done.join(" and "));
        }
    }
}

/// Runs the service until SIGINT or SIGTERM. `ready` is called with the bound address,
/// once the pool runs and the signal handlers are in place.
pub fn serve(options: ServeOptions, ready: impl FnOnce(&Listen)) -> Result<(), ServiceError> {
    let (config, tls) = load_checked_config(&options)?;
    let (bound, address) = bind(&options.listen)?;
    let _socket = SocketFile(match &bound {
        Bound::Unix(_, p) => Some(p.clone()),
        Bound::Tcp(_) => None,
    });
    let period = config.quantum;
    let start = StartOptions {
        backend: options.backend,
        device: options.device,
        state: options.state,
        accept_config_changes: options.accept_config_changes,
    };
    let replicated = options.replica.is_some();
    let pool = start_pool(&config, start, options.replica, &address, tls.is_some())?;
    let keys = Keys::load(&config, &pool.joined_tokens(), pool.members())?;
    let published = pool.published();
    let pool: SharedPool = Arc::new(parking_lot::FairMutex::new(pool));
    let app = Arc::new(App {
        pool: Arc::clone(&pool),
        changes: tokio::sync::Semaphore::new(http::CONCURRENT_CHANGES),
        published: Arc::clone(&published),
        keys: ArcSwap::from_pointee(keys),
        clock: options.clock,
    });
    let reloadable = Reloadable { config_path: options.config.clone(), app: Arc::clone(&app), tls: tls.clone() };
    let runtime = runtime()?;
    let (stop_clock, stopped) = mpsc::channel::<()>();
    let (stop_refresh, refresh_stopped) = mpsc::channel::<()>();
    // A replica under the manual clock takes the leader's commits every period (under
    // the wall clock its clock's ticks do).
    let refresh = if replicated && options.clock == Clock::Manual {
        Some(spawn_replica_refresh(Arc::clone(&pool), period, refresh_stopped)?)
    } else {
        None
    };
    let mut threads = Threads { stop_clock, stop_refresh, clock: None, refresh };
    let served = runtime.block_on(async {
        let mut signals = Signals::install()?;
        let listener = Listener::from_bound(bound, &address)?;
        if options.clock == Clock::Wall {
            threads.clock = Some(spawn_clock(Arc::clone(&pool), Arc::clone(&published), period, stopped)?);
        }
        ready(&address);
        accept_loop(listener, tls, http::router(app), &mut signals, &reloadable).await;
        Ok::<(), ServiceError>(())
    });
    threads.stop();
    drop(reloadable);
    runtime.shutdown_timeout(Duration::from_millis(500));
    // The pool goes last (its HTB tree with it), once no request holds it.
    drop_pool(pool);
    served
}

/// The runtime the connections run on.
fn runtime() -> Result<tokio::runtime::Runtime, ServiceError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| ServiceError::Start { what: "starting the runtime", source })
}

/// Drops the pool if nothing else holds it; a change still running keeps it to the
/// process's end (said on stderr).
fn drop_pool(pool: SharedPool) {
    match Arc::try_unwrap(pool) {
        Ok(p) => drop(p),
        Err(_) => {
            eprintln!("fairshare serve: a change was still running at exit; its pool is left to the process's end")
        }
    }
}

/// Reads the configuration and checks what can be refused before anything is
/// installed: the exposure rule, the TLS files (loaded for a TCP listener), the token
/// files.
fn load_checked_config(options: &ServeOptions) -> Result<(ServeConfig, Option<SharedTls>), ServiceError> {
    let config = ServeConfig::load(&options.config)?;
    check_exposure(&options.listen, &config, options.insecure)?;
    let tls = match (&config.tls, &options.listen) {
        (Some(t), Listen::Tcp(_)) => Some(Arc::new(ArcSwap::new(crate::tls::load(t)?))),
        _ => None,
    };
    // The token files are checked before anything is installed.
    let file_tenants: Vec<String> = config.tenants.iter().map(|t| t.name.clone()).collect();
    Keys::load(&config, &BTreeMap::new(), &file_tenants)?;
    Ok((config, tls))
}

/// The TLS configuration: SIGHUP swaps a new one in, each connection takes the one in place.
type SharedTls = Arc<ArcSwap<rustls::ServerConfig>>;

/// Starts the pool (ledger, device, HTB) and, for a replica, its replication, which
/// advertises the API at `address` (`https` with `tls`). Demands from agents are
/// refused outside a replica.
fn start_pool(
    config: &ServeConfig,
    start: StartOptions,
    replica: Option<Box<dyn crate::replica::Replica>>,
    address: &Listen,
    tls: bool,
) -> Result<LivePool, ServiceError> {
    let mut pool = LivePool::start(config.clone(), start)?;
    if config.demand == crate::config::DemandSource::Agents && replica.is_none() {
        return Err(ServiceError::Conflict(
            "demand.source = \"agents\": the hosts' agents report to a controller (fairshare controller), not to serve"
                .into(),
        ));
    }
    if let Some(r) = replica {
        pool.set_replica(r)?;
        let api = match (address, tls) {
            (Listen::Tcp(a), true) => format!("https://{a}"),
            _ => address.to_string(),
        };
        pool.start_replica(&api);
    }
    Ok(pool)
}

/// The service's threads beside the runtime: the wall clock, and a manual-clock
/// replica's refresh. Each stops when its sender is dropped.
struct Threads {
    stop_clock: mpsc::Sender<()>,
    stop_refresh: mpsc::Sender<()>,
    clock: Option<std::thread::JoinHandle<()>>,
    refresh: Option<std::thread::JoinHandle<()>>,
}

impl Threads {
    /// Tells the threads to stop and waits for them (the clock after its quantum).
    fn stop(self) {
        drop(self.stop_clock);
        drop(self.stop_refresh);
        for t in self.clock.into_iter().chain(self.refresh) {
            let _ = t.join();
        }
    }
}

/// Starts the thread that takes the leader's commits into a replica every `period`
/// until `stopped`'s sender is dropped.
fn spawn_replica_refresh(
    pool: SharedPool,
    period: Duration,
    stopped: mpsc::Receiver<()>,
) -> Result<std::thread::JoinHandle<()>, ServiceError> {
    std::thread::Builder::new()
        .name("fairshare-replica".into())
        .spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                let _ = pool.lock().refresh();
            }
        })
        .map_err(|source| ServiceError::Start { what: "starting the replica's thread", source })
}

/// Starts the wall clock's thread ([`crate::clock::run`]).
fn spawn_clock(
    pool: SharedPool,
    published: Arc<crate::publish::Published>,
    period: Duration,
    stopped: mpsc::Receiver<()>,
) -> Result<std::thread::JoinHandle<()>, ServiceError> {
    std::thread::Builder::new()
        .name("fairshare-clock".into())
        .spawn(move || crate::clock::run(pool, published, period, stopped))
        .map_err(|source| ServiceError::Start { what: "starting the clock's thread", source })
}

/// The listening socket.
enum Listener {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener),
}

/// An accepted connection.
enum Stream {
    Tcp(tokio::net::TcpStream),
    Unix(tokio::net::UnixStream),
}

impl Listener {
    /// The bound socket as the runtime's (called inside it).
    fn from_bound(bound: Bound, address: &Listen) -> Result<Listener, ServiceError> {
        let listening = |source| ServiceError::Listen { at: address.to_string(), source };
        Ok(match bound {
            Bound::Tcp(l) => {
                l.set_nonblocking(true).map_err(listening)?;
                Listener::Tcp(tokio::net::TcpListener::from_std(l).map_err(listening)?)
            }
            Bound::Unix(l, _) => {
                l.set_nonblocking(true).map_err(listening)?;
                Listener::Unix(tokio::net::UnixListener::from_std(l).map_err(listening)?)
            }
        })
    }

    async fn accept(&self) -> std::io::Result<Stream> {
        match self {
            Listener::Tcp(l) => l.accept().await.map(|(s, _)| Stream::Tcp(s)),
            Listener::Unix(l) => l.accept().await.map(|(s, _)| Stream::Unix(s)),
        }
    }
}

/// The answer to a connection past the limit, written without waiting, then closed.
fn busy() -> Vec<u8> {
    let body = "{\"error\": \"too many connections; try again in a moment\"}";
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Accepts connections until SIGTERM or SIGINT, then lets them finish for [`GRACE`].
async fn accept_loop(
    listener: Listener,
    tls: Option<SharedTls>,
    app: axum::Router,
    signals: &mut Signals,
    reloadable: &Reloadable,
) {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(max_connections()));
    let refusing = Arc::new(tokio::sync::Semaphore::new(REFUSING));
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(s) => s,
                Err(e) => {
                    // Out of descriptors (or a connection reset before it was taken):
                    // wait for one to be closed rather than spin.
                    if e.raw_os_error().is_some_and(|c| c == libc_emfile() || c == libc_enfile()) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    continue;
                }
            },
            received = signals.next() => match received {
                Received::Reload => {
                    reloadable.reload().await;
                    continue;
                }
                Received::Stop(name) => {
                    eprintln!("fairshare serve: {name}: stopping");
                    break;
                }
            },
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            // Plain connections are told why (a TLS one cannot be without a handshake),
            // by a few tasks at most: past them, a connection is just closed.
            if let (Ok(refusal), false) = (Arc::clone(&refusing).try_acquire_owned(), tls.is_some()) {
                tokio::spawn(refuse(stream, refusal));
            }
            continue;
        };
        let watcher = graceful.watcher();
        let (app, tls) = (app.clone(), tls.as_ref().map(|t| t.load_full()));
        tokio::spawn(async move {
            let _slot = slot;
            match (stream, tls) {
                (Stream::Tcp(s), Some(config)) => {
                    let acceptor = tokio_rustls::TlsAcceptor::from(config);
                    if let Ok(Ok(s)) = tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(s)).await {
                        connection(s, app, watcher).await;
                    }
                }
                (Stream::Tcp(s), None) => connection(s, app, watcher).await,
                (Stream::Unix(s), _) => connection(s, app, watcher).await,
            }
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(GRACE, graceful.shutdown()).await;
}

/// EMFILE and ENFILE, the errors of an accept with no descriptor left.
fn libc_emfile() -> i32 {
    rustix::io::Errno::MFILE.raw_os_error()
}

fn libc_enfile() -> i32 {
    rustix::io::Errno::NFILE.raw_os_error()
}

/// Connections past the limit told why at once, at most.
const REFUSING: usize = 32;

/// Answers a connection past the limit with 503 and closes it, having read what the
/// client sent meanwhile (at most 16 KiB, for at most a second: closing with unread
/// data would reset the connection and lose the answer).
async fn refuse(stream: Stream, _refusal: tokio::sync::OwnedSemaphorePermit) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    async fn answer<S: AsyncRead + AsyncWrite + Unpin>(mut s: S) {
        if s.write_all(&busy()).await.is_err() || s.shutdown().await.is_err() {
            return;
        }
        let mut buf = [0u8; 4096];
        let mut left = 16 << 10;
        while left > 0 {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left -= n.min(left),
            }
        }
    }
    let _ = match stream {
        Stream::Tcp(s) => tokio::time::timeout(Duration::from_secs(1), answer(s)).await,
        Stream::Unix(s) => tokio::time::timeout(Duration::from_secs(1), answer(s)).await,
    };
}

/// Serves HTTP/1.1 on one connection.
async fn connection<I>(io: I, app: axum::Router, watcher: hyper_util::server::graceful::Watcher)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut io = tokio_io_timeout::TimeoutStream::new(io);
    io.set_write_timeout(Some(WRITE_TIMEOUT));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT).max_buf_size(MAX_HEAD_BYTES);
    let conn = builder.serve_connection(TokioIo::new(Box::pin(io)), TowerToHyperService::new(app));
    let _ = watcher.watch(conn).await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn listen_addresses_parse() {
        assert_eq!("127.0.0.1:80".parse::<Listen>().unwrap(), Listen::Tcp("127.0.0.1:80".parse().unwrap()));
        assert_eq!("unix:/x.sock".parse::<Listen>().unwrap(), Listen::Unix("/x.sock".into()));
        assert!("unix:".parse::<Listen>().is_err());
        assert!("localhost".parse::<Listen>().unwrap_err().contains("ADDRESS:PORT"));
    }

    #[test]
    fn a_public_listener_needs_auth_and_tls_or_insecure() {
        let text = include_str!("../../examples/serve.toml");
        let config = ServeConfig::parse("x.toml", text).unwrap();
        let public: Listen = "0.0.0.0:9464".parse().unwrap();
        let e = check_exposure(&public, &config, false).unwrap_err().to_string();
        assert!(e.contains("0.0.0.0:9464") && e.contains("[auth] and [tls]") && e.contains("--insecure"), "{e}");
        assert!(check_exposure(&public, &config, true).is_ok());
        assert!(check_exposure(&"127.0.0.1:9464".parse().unwrap(), &config, false).is_ok());
        assert!(check_exposure(&"[::1]:9464".parse().unwrap(), &config, false).is_ok());
        assert!(check_exposure(&"unix:/x".parse().unwrap(), &config, false).is_ok());
    }

    /// (Under umask 000 in a process of its own: cli/tests/exposed.rs.)
    #[test]
    fn the_socket_is_0660_and_a_live_one_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let (live, _) = bind(&Listen::Unix(path.clone())).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o660);
        let e = bind(&Listen::Unix(path.clone())).err().unwrap().to_string();
        assert!(e.contains("another process serves this socket"), "{e}");
        drop(live);
        // Now stale: replaced.
        assert!(bind(&Listen::Unix(path.clone())).is_ok());
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "a file").unwrap();
        let e = bind(&Listen::Unix(path.clone())).err().unwrap().to_string();
        assert!(e.contains("not a socket"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a file");
    }
}
