//! Serving connections: the accept loop with its connection cap, the header, idle and body
//! timeouts, and graceful shutdown.
//!
//! - At most `max_connections` connections are served at once (default: derived from the
//!   process's file-descriptor limit, see [`default_max_connections`]). Past the cap, a few
//!   [`SPARE_CONNECTIONS`] still answer the health routes (`/healthz`, `/readyz`) so that an
//!   orchestrator's probes are never starved; any other request there gets 503 with
//!   `Retry-After`, and a connection beyond the spares is closed at once.
//! - A request's headers must arrive within the header timeout of its first byte (the first
//!   request of a connection: of the connection's start), and a kept-alive connection may sit idle
//!   between requests for the idle timeout. Neither applies while a response is being sent, so an
//!   event stream lives as long as it has to (its keep-alive comments flow).
//! - A JSON body must arrive within the body timeout (see [`BodyTimeout`], read by
//!   [`super::extract::ApiJson`]): a slow sender gets 408.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, HeaderValue, Request};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::error::ApiError;
use crate::config::ConnectionLimits;

/// Connections served past the cap, for the health routes only.
pub const SPARE_CONNECTIONS: usize = 32;
/// How long a spare connection may take to send its request.
const SPARE_HEADER_TIMEOUT: Duration = Duration::from_secs(2);
/// File descriptors kept back from the connection cap for everything else the process opens:
/// the database pool (added on top), LLM and tool connections, the listeners, logs.
const RESERVED_FDS: usize = 256;
/// The cap when the file-descriptor limit cannot be read.
const FALLBACK_FD_LIMIT: usize = 1024;

/// The time allowed to receive a request body, as a request extension for the extractors.
#[derive(Debug, Clone, Copy)]
pub struct BodyTimeout(pub Duration);

/// The connection cap that fits the process's open-file limit: the soft limit, less what the
/// database pool (`db_connections`), the spare connections and everything else need.
pub fn default_max_connections(db_connections: u32) -> usize {
    max_connections_within(open_files_limit().unwrap_or(FALLBACK_FD_LIMIT), db_connections)
}

/// The connection cap under a file-descriptor limit of `limit`.
fn max_connections_within(limit: usize, db_connections: u32) -> usize {
    let reserved = RESERVED_FDS + SPARE_CONNECTIONS + db_connections as usize;
    limit.saturating_sub(reserved).max(SPARE_CONNECTIONS)
}

/// The soft `RLIMIT_NOFILE`, read from `/proc/self/limits` (Linux).
fn open_files_limit() -> Option<usize> {
    parse_open_files(&std::fs::read_to_string("/proc/self/limits").ok()?)
}

fn parse_open_files(limits: &str) -> Option<usize> {
    let line = limits.lines().find(|line| line.starts_with("Max open files"))?;
    let soft = line.trim_start_matches("Max open files").split_whitespace().next()?;
    // "unlimited" does not parse: fall back.
    soft.parse().ok()
}

/// Serve `app` on `listener` (the cap derived with a pool of `db_connections` unless `limits`
/// set it) until `shutdown`; then stop accepting, let every connection finish
/// its requests (idle ones close at once) and return once all have closed.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    db_connections: u32,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let max_connections = limits.max_connections.unwrap_or_else(|| default_max_connections(db_connections));
    tracing::info!(max_connections, spares = SPARE_CONNECTIONS, "serving connections");
    let slots = Arc::new(Semaphore::new(max_connections));
    let spares = Arc::new(Semaphore::new(SPARE_CONNECTIONS));
    let graceful = GracefulShutdown::new();
    let mut warned_full = false;
    loop {
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, say: wait a little rather than spin.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let _ = stream.set_nodelay(true);
        if let Ok(slot) = slots.clone().try_acquire_owned() {
            warned_full = false;
            let connection =
                serve_connection(stream, app.clone(), limits.header_timeout, limits.idle_timeout, true);
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "connection closed on an error");
                }
                drop(slot);
            });
        } else if let Ok(spare) = spares.clone().try_acquire_owned() {
            if !warned_full {
                tracing::warn!(
                    max = max_connections,
                    "connection cap reached: only health routes are served on new connections"
                );
                warned_full = true;
            }
            let connection = serve_connection(
                stream,
                HealthOnly(app.clone()),
                SPARE_HEADER_TIMEOUT,
                SPARE_HEADER_TIMEOUT,
                false,
            );
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "spare connection closed on an error");
                }
                drop(spare);
            });
        } else {
            // Closing it at once frees the descriptor; the client sees a reset and may retry.
            drop(stream);
        }
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// One connection, HTTP/1.1 (or HTTP/2 with prior knowledge), with upgrades.
fn serve_connection<S>(
    stream: TcpStream,
    service: S,
    header_timeout: Duration,
    idle_timeout: Duration,
    keep_alive: bool,
) -> impl hyper_util::server::graceful::GracefulConnection<
    Output = Result<(), Box<dyn std::error::Error + Send + Sync>>,
>
where
    S: tower::Service<Request<Incoming>, Response = Response, Error = std::convert::Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let reads = Arc::new(AtomicU64::new(0));
    let timer =
        HeadTimer { reads: reads.clone(), header_timeout, idle_timeout, served: AtomicBool::new(false) };
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(timer).header_read_timeout(header_timeout).keep_alive(keep_alive);
    let io = TokioIo::new(CountedReads { inner: stream, reads });
    builder.serve_connection_with_upgrades(io, TowerToHyperService::new(service)).into_owned()
}

/// The app as served past the connection cap: the health routes only; anything else is a 503
/// and the connection closes.
#[derive(Clone)]
struct HealthOnly(Router);

impl tower::Service<Request<Incoming>> for HealthOnly {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Incoming>) -> Self::Future {
        let app = self.0.clone();
        Box::pin(async move {
            if matches!(request.uri().path(), "/healthz" | "/readyz") {
                return app.oneshot(request.map(Body::new)).await;
            }
            let mut response =
                ApiError::Unavailable("too many connections; retry later".into()).into_response();
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            Ok(response)
        })
    }
}

/// A connection's socket, counting the reads that brought bytes (the header timer's evidence
/// that a request has started).
struct CountedReads {
    inner: TcpStream,
    reads: Arc<AtomicU64>,
}

impl AsyncRead for CountedReads {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.reads.fetch_add(1, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for CountedReads {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// hyper's header-read timer, made to tell an idle kept-alive connection from a slow request:
/// hyper starts it whenever it waits for a request head. For a connection's first request it
/// runs for the header timeout; for later ones it runs for the idle timeout until a byte of the
/// next request arrives, then for the header timeout from that byte.
struct HeadTimer {
    reads: Arc<AtomicU64>,
    header_timeout: Duration,
    idle_timeout: Duration,
    /// Whether a head has been waited for before (so the next wait may be idle).
    served: AtomicBool,
}

impl hyper::rt::Timer for HeadTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(Plain(Box::pin(tokio::time::sleep(duration))))
    }

    fn sleep_until(&self, _deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        let now = tokio::time::Instant::now();
        let idle = self.served.swap(true, Ordering::Relaxed);
        let first = if idle { self.idle_timeout } else { self.header_timeout };
        Box::pin(HeadSleep {
            reads: self.reads.clone(),
            reads_at_start: self.reads.load(Ordering::Relaxed),
            waiting_idle: idle,
            header_timeout: self.header_timeout,
            sleep: Box::pin(tokio::time::sleep_until(now + first)),
        })
    }
}

/// A plain sleep (hyper asks for none on a server connection but the header timer's).
struct Plain(Pin<Box<tokio::time::Sleep>>);

impl Future for Plain {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl hyper::rt::Sleep for Plain {}

/// One wait for a request head (see [`HeadTimer`]).
struct HeadSleep {
    reads: Arc<AtomicU64>,
    reads_at_start: u64,
    /// Still waiting for the first byte of a later request: the idle timeout applies.
    waiting_idle: bool,
    header_timeout: Duration,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl Future for HeadSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // hyper polls this each time a read leaves the head incomplete, so the first byte of
        // the head is seen here as soon as it arrives.
        if self.waiting_idle && self.reads.load(Ordering::Relaxed) != self.reads_at_start {
            self.waiting_idle = false;
            let deadline = tokio::time::Instant::now() + self.header_timeout;
            self.sleep.as_mut().reset(deadline);
        }
        self.sleep.as_mut().poll(cx)
    }
}

impl hyper::rt::Sleep for HeadSleep {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_limit_is_read_from_proc() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max processes             127344               127344               processes \n\
                      Max open files            20000                524288               files     \n";
        assert_eq!(parse_open_files(limits), Some(20_000));
        let unlimited = "Max open files            unlimited            unlimited            files     \n";
        assert_eq!(parse_open_files(unlimited), None);
        assert!(open_files_limit().is_some(), "Linux has /proc/self/limits");
    }

    /// The cap leaves room for the pool, the spare health connections and a few hundred other
    /// descriptors, yet gives most of a large limit to connections; a bigger pool takes from it;
    /// a tiny limit still serves the spare connections' worth.
    #[test]
    fn the_connection_cap_leaves_the_pool_and_spares_their_descriptors() {
        for (limit, pool) in [(1024, 16), (20_000, 16), (20_000, 200), (1_048_576, 64)] {
            let cap = max_connections_within(limit, pool);
            let others = limit - cap - SPARE_CONNECTIONS - pool as usize;
            assert!((200..=280).contains(&others), "{limit}/{pool}: {cap} leaves {others} for the rest");
            assert!(cap > limit / 2, "{limit}/{pool}: only {cap}");
            assert!(max_connections_within(limit, pool + 10) + 10 == cap, "{limit}/{pool}");
        }
        assert_eq!(max_connections_within(100, 16), SPARE_CONNECTIONS);
        assert!(default_max_connections(16) >= SPARE_CONNECTIONS);
    }
}
