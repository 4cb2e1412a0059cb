//! The one HTTP/1.1 server loop of the crate (hyper): accepts connections on a listener until
//! shut down and hands each request, fully read, to a [`Handler`]. The gateway serves through
//! it; keeping the loop in one place keeps connection handling (and its shutdown) uniform.
//! A [`Listener`] is a loopback TCP port (process backend) or a Unix socket (docker backend,
//! where the socket is bind-mounted into the container); the accept loop serves either.
//! A response body is either whole or a stream of chunks (server-sent events passed through
//! as they arrive).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http_body_util::BodyExt;
use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};

mod admission;

use admission::Admission;

/// 128 random bits in hex, from the kernel: what makes a trial's URLs unguessable (the
/// services' path, the gateway's token) and marks a trial's processes.
pub(crate) fn random_token() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No entropy call: still unique per process and moment, if guessable.
        let fallback = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
        return format!(
            "{:x}",
            <sha2::Sha256 as sha2::Digest>::digest(fallback.as_bytes())
        )[..32]
            .to_string();
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Where a server accepts connections.
#[derive(Debug)]
pub enum Listener {
    /// A TCP port (the process backend listens on loopback).
    Tcp(TcpListener),
    /// A Unix socket (the docker backend bind-mounts it into the container).
    Unix(UnixListener),
}

/// One accepted connection, whatever the transport.
pub(crate) trait Connection: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Connection for T {}

impl Listener {
    /// Waits for the next connection.
    pub(crate) async fn accept(&self) -> std::io::Result<Box<dyn Connection>> {
        Ok(match self {
            Listener::Tcp(listener) => {
                let (stream, _) = listener.accept().await?;
                // Small JSON answers: without this, Nagle's algorithm can hold one back.
                let _ = stream.set_nodelay(true);
                Box::new(stream)
            }
            Listener::Unix(listener) => Box::new(listener.accept().await?.0),
        })
    }

    /// The socket, detached from the runtime it was registered with.
    fn into_std(self) -> std::io::Result<StdListener> {
        Ok(match self {
            Listener::Tcp(listener) => StdListener::Tcp(listener.into_std()?),
            Listener::Unix(listener) => StdListener::Unix(listener.into_std()?),
        })
    }

    /// Registers a detached socket with the current runtime.
    fn from_std(listener: StdListener) -> std::io::Result<Listener> {
        Ok(match listener {
            StdListener::Tcp(listener) => {
                listener.set_nonblocking(true)?;
                Listener::Tcp(TcpListener::from_std(listener)?)
            }
            StdListener::Unix(listener) => {
                listener.set_nonblocking(true)?;
                Listener::Unix(UnixListener::from_std(listener)?)
            }
        })
    }
}

/// A [`Listener`] between two runtimes.
enum StdListener {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener),
}

impl From<TcpListener> for Listener {
    fn from(listener: TcpListener) -> Listener {
        Listener::Tcp(listener)
    }
}

/// Accepts connections on `listener` until `shutdown` completes, handing each to `serve` on
/// its own task. Connections in flight when it completes are dropped. A failed accept (out of
/// file descriptors: EMFILE, ENFILE; a connection reset before it was accepted) does not end
/// the loop: it waits, 10 ms doubling up to 1 s while the failures last, and accepts again.
/// At most [`MAX_CONNECTIONS`] are served at once (later ones wait in the kernel's backlog),
/// which bounds the answers held in memory for clients that do not read them; of those, a
/// flood of connections that have not sent a request with `token` (`admission`) is kept to a
/// few places, so it cannot starve the clients that have.
pub(crate) async fn accept_loop<F, Served>(
    listener: impl Accept,
    token: Option<String>,
    shutdown: impl Future<Output = ()> + Send,
    serve: F,
) -> std::io::Result<()>
where
    F: Fn(Box<dyn Connection>) -> Served,
    Served: Future<Output = ()> + Send + 'static,
{
    tokio::pin!(shutdown);
    let mut connections = tokio::task::JoinSet::new();
    let mut admission = Admission::new(token.as_deref());
    let mut backoff = ACCEPT_BACKOFF_FIRST;
    loop {
        if connections.len() >= MAX_CONNECTIONS {
            // Full: an unproven connection makes room; real clients wait for one another.
            admission.evict_oldest();
            tokio::select! {
                () = &mut shutdown => break,
                _ = connections.join_next() => continue,
            }
        }
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept_one() => match accepted {
                Ok(connection) => {
                    backoff = ACCEPT_BACKOFF_FIRST;
                    let (watched, proven) = admission.watch(connection);
                    let task = connections.spawn(serve(Box::new(watched)));
                    admission.admit(proven, task);
                    // The connection reads the request already waiting before the next
                    // accept (on a one-thread runtime it could not otherwise), so a client
                    // that sent it at once is proven before a flood could evict it.
                    tokio::task::yield_now().await;
                }
                Err(_) => {
                    // Nothing to print here (the library does not print); the trial goes on,
                    // and the harness sees refused or slow connections meanwhile.
                    tokio::select! {
                        () = &mut shutdown => break,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(ACCEPT_BACKOFF_LAST);
                }
            },
        }
        // Finished connections are forgotten as they go, so a long trial does not hoard them.
        while connections.try_join_next().is_some() {}
    }
    connections.abort_all();
    Ok(())
}

/// The most connections one listener serves at once.
pub(crate) const MAX_CONNECTIONS: usize = 256;
/// The first wait after a failed accept.
const ACCEPT_BACKOFF_FIRST: std::time::Duration = std::time::Duration::from_millis(10);
/// The longest wait between failed accepts.
const ACCEPT_BACKOFF_LAST: std::time::Duration = std::time::Duration::from_secs(1);

/// Something connections are accepted from: a [`Listener`] (tests give a fake).
pub(crate) trait Accept: Send {
    /// Waits for the next connection.
    fn accept_one(&self) -> impl Future<Output = std::io::Result<Box<dyn Connection>>> + Send;
}

impl Accept for Listener {
    fn accept_one(&self) -> impl Future<Output = std::io::Result<Box<dyn Connection>>> + Send {
        self.accept()
    }
}

/// [`accept_loop`] on one of the server threads (one a core, each a single-threaded
/// runtime, started once per process and shared by every server after): every connection of
/// `listener` is served on that one thread. For a server whose requests all take one lock and
/// come over many connections at once (`cargo clawtest serve` under load), this is faster and
/// steadier than spreading its connections over the shared runtime's workers: no contention
/// for the lock, no wake-ups from thread to thread (services benchmark, list at 16
/// connections: half the server CPU per request). A trial's services, a connection or two,
/// are served on the run's runtime instead (`run/trial/endpoints.rs`). The threads are shared,
/// not made per server. The loop ends when `shutdown` completes or when the
/// returned future is dropped; the connections in flight are then dropped, as
/// [`accept_loop`] drops them.
pub(crate) async fn accept_loop_on_server_thread<F, Served>(
    listener: Listener,
    token: Option<String>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    serve: F,
) -> std::io::Result<()>
where
    F: Fn(Box<dyn Connection>) -> Served + Send + 'static,
    Served: Future<Output = ()> + Send + 'static,
{
    let listener = listener.into_std()?;
    let (finished, result) = tokio::sync::oneshot::channel();
    server_thread()?.spawn(async move {
        let mut finished = finished;
        let served = async {
            // Registered with this thread's runtime, which serves it.
            let listener = Listener::from_std(listener)?;
            let abandoned = finished.closed();
            let stop = async {
                tokio::select! {
                    () = shutdown => {}
                    () = abandoned => {}
                }
            };
            accept_loop(listener, token, stop, serve).await
        }
        .await;
        let _ = finished.send(served);
    });
    result
        .await
        .unwrap_or_else(|_| Err(std::io::Error::other("the server thread ended abruptly")))
}

/// The next server thread's runtime, round robin (the threads are started at the first call).
fn server_thread() -> std::io::Result<tokio::runtime::Handle> {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static THREADS: OnceLock<Result<Vec<tokio::runtime::Handle>, String>> = OnceLock::new();
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let threads = THREADS
        .get_or_init(|| {
            let count = std::thread::available_parallelism().map_or(1, |count| count.get());
            (0..count)
                .map(|_| start_server_thread().map_err(|error| error.to_string()))
                .collect()
        })
        .as_ref()
        .map_err(|error| std::io::Error::other(format!("cannot start a server thread: {error}")))?;
    Ok(threads[NEXT.fetch_add(1, Ordering::Relaxed) % threads.len()].clone())
}

/// A thread running a single-threaded runtime for as long as the process lives.
fn start_server_thread() -> std::io::Result<tokio::runtime::Handle> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let handle = runtime.handle().clone();
    std::thread::Builder::new()
        .name("clawtest-server".into())
        .spawn(move || runtime.block_on(std::future::pending::<()>()))?;
    Ok(handle)
}

/// A request, read whole.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// The HTTP method as sent (`POST`).
    pub method: String,
    /// The URI's path, without the query string.
    pub path: String,
    /// Every header as (name, value), names lower case; a value that is not UTF-8 is read
    /// lossily.
    pub headers: Vec<(String, String)>,
    /// The whole body.
    pub body: Vec<u8>,
}

/// A response to send.
#[derive(Debug)]
pub struct HttpResponse {
    /// The HTTP status code.
    pub status: u16,
    /// Headers as (name, value), sent in this order.
    pub headers: Vec<(String, String)>,
    /// The body, whole or streamed.
    pub body: ResponseBody,
}

/// The body of a response: whole, or chunks sent as they are produced (the sender closing the
/// channel ends the body).
#[derive(Debug)]
pub enum ResponseBody {
    /// All of the body at once.
    Whole(Vec<u8>),
    /// Chunks sent as they arrive on the channel (server-sent events passed through).
    Chunks(tokio::sync::mpsc::Receiver<Bytes>),
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            ResponseBody::Whole(bytes) if bytes.is_empty() => Poll::Ready(None),
            ResponseBody::Whole(bytes) => {
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(std::mem::take(bytes))))))
            }
            ResponseBody::Chunks(receiver) => receiver
                .poll_recv(context)
                .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, ResponseBody::Whole(bytes) if bytes.is_empty())
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResponseBody::Whole(bytes) => SizeHint::with_exact(bytes.len() as u64),
            ResponseBody::Chunks(_) => SizeHint::default(),
        }
    }
}

impl HttpResponse {
    /// A JSON response.
    pub(crate) fn json(status: u16, value: &serde_json::Value) -> HttpResponse {
        HttpResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: ResponseBody::Whole(value.to_string().into_bytes()),
        }
    }
}

/// The future a handler returns.
pub type Reply<'a> = Pin<Box<dyn Future<Output = HttpResponse> + Send + 'a>>;

/// Answers requests.
pub trait Handler: Send + Sync + 'static {
    /// The response to one request; connections are served concurrently, so this may be
    /// called again before an earlier reply completes.
    fn handle(&self, request: HttpRequest) -> Reply<'_>;

    /// The largest request body this handler reads, in bytes, and the setting that changes
    /// it; a larger body is answered 413 without reading the rest (no limit by default).
    fn body_limit(&self) -> Option<(usize, &'static str)> {
        None
    }
}

/// Serves `handler` on `listener` until `shutdown` completes. Connections in flight when it
/// completes are dropped: a trial's servers stop only after its harness has exited.
pub async fn serve(
    listener: impl Into<Listener>,
    handler: Arc<dyn Handler>,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    serve_with_token(listener, None, handler, shutdown).await
}

/// [`serve`], keeping the connections whose first request holds `token` (a trial's URLs
/// carry it) from a flood of connections that do not (see `admission`).
pub async fn serve_with_token(
    listener: impl Into<Listener>,
    token: Option<String>,
    handler: Arc<dyn Handler>,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let listener: Listener = listener.into();
    accept_loop(listener, token, shutdown, move |stream| {
        serve_connection(stream, Arc::clone(&handler))
    })
    .await
}

/// How long a connection may take to send a request's headers, counted from when the server
/// starts waiting for them (the connection opened, or its previous answer sent). Without it,
/// a client that sends its headers a byte at a time (slowloris), or opens connections and
/// says nothing, holds one of the listener's [`MAX_CONNECTIONS`] for ever: 256 such
/// connections locked every other client out. A real client sends its headers at once; an
/// idle keep-alive connection is closed after it, as HTTP servers do, and clients open another.
pub(crate) const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves one HTTP/1.1 connection on any byte stream (a TCP connection, or a Unix socket
/// for a containerised harness). Connection errors end the connection and are not reported:
/// a client that hangs up mid-request is its own problem, not the server's.
pub(crate) async fn serve_connection<S>(stream: S, handler: Arc<dyn Handler>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    serve_connection_within(stream, handler, HEADER_TIMEOUT).await;
}

/// [`serve_connection`] with the headers' time limit given (tests give a short one).
async fn serve_connection_within<S>(
    stream: S,
    handler: Arc<dyn Handler>,
    header_timeout: std::time::Duration,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request: hyper::Request<Incoming>| {
        let handler = Arc::clone(&handler);
        async move { Ok::<_, hyper::Error>(respond(handler.as_ref(), request).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn respond(
    handler: &dyn Handler,
    request: hyper::Request<Incoming>,
) -> hyper::Response<ResponseBody> {
    let (parts, body) = request.into_parts();
    let (limit, setting) = handler.body_limit().unwrap_or((usize::MAX, ""));
    let body = match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes().to_vec(),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => {
            let mut response = HttpResponse::json(
                413,
                &serde_json::json!({"error": {"type": "request_too_large", "message": format!("the request body is over the limit of {limit} bytes ({setting})")}}),
            );
            response
                .headers
                .push(("x-should-retry".into(), "false".into()));
            return build(response);
        }
        Err(error) => {
            return build(HttpResponse::json(
                400,
                &serde_json::json!({"error": format!("could not read the request body: {error}")}),
            ));
        }
    };
    let request = HttpRequest {
        method: parts.method.as_str().to_string(),
        path: parts.uri.path().to_string(),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_string(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    };
    build(handler.handle(request).await)
}

fn build(response: HttpResponse) -> hyper::Response<ResponseBody> {
    let mut builder = hyper::Response::builder().status(response.status);
    for (name, value) in &response.headers {
        builder = builder.header(name, value);
    }
    builder.body(response.body).unwrap_or_else(|_| {
        // Only reachable with a header name or status a handler made up; answer plainly.
        let mut fallback = hyper::Response::new(ResponseBody::Whole(b"invalid response".to_vec()));
        *fallback.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
        fallback
    })
}

#[cfg(test)]
mod tests;
