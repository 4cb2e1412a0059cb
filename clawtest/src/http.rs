//! The one HTTP/1.1 server loop of the crate (hyper): accepts connections on a listener until
//! shut down and hands each request, fully read, to a [`Handler`]. The gateway serves through
//! it; keeping the loop in one place keeps connection handling (and its shutdown) uniform.
//! A [`Listener`] is a loopback TCP port (process backend) or a Unix socket (docker backend,
//! where the socket is bind-mounted into the container); [`accept_loop`] serves either.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};

/// Where a server accepts connections.
#[derive(Debug)]
pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// One accepted connection, whatever the transport.
pub trait Connection: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Connection for T {}

impl Listener {
    /// Waits for the next connection.
    pub async fn accept(&self) -> std::io::Result<Box<dyn Connection>> {
        Ok(match self {
            Listener::Tcp(listener) => Box::new(listener.accept().await?.0),
            Listener::Unix(listener) => Box::new(listener.accept().await?.0),
        })
    }
}

impl From<TcpListener> for Listener {
    fn from(listener: TcpListener) -> Listener {
        Listener::Tcp(listener)
    }
}

/// Accepts connections on `listener` until `shutdown` completes, handing each to `serve` on
/// its own task. Connections in flight when it completes are dropped.
pub async fn accept_loop<F, Served>(
    listener: Listener,
    shutdown: impl Future<Output = ()> + Send,
    serve: F,
) -> std::io::Result<()>
where
    F: Fn(Box<dyn Connection>) -> Served,
    Served: Future<Output = ()> + Send + 'static,
{
    tokio::pin!(shutdown);
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => {
                connections.spawn(serve(accepted?));
            }
        }
    }
    connections.abort_all();
    Ok(())
}

/// A request, read whole.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A response to send.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// A JSON response.
    pub fn json(status: u16, value: &serde_json::Value) -> HttpResponse {
        HttpResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: value.to_string().into_bytes(),
        }
    }
}

/// The future a handler returns.
pub type Reply<'a> = Pin<Box<dyn Future<Output = HttpResponse> + Send + 'a>>;

/// Answers requests.
pub trait Handler: Send + Sync + 'static {
    fn handle(&self, request: HttpRequest) -> Reply<'_>;
}

/// Serves `handler` on `listener` until `shutdown` completes. Connections in flight when it
/// completes are dropped: a trial's servers stop only after its harness has exited.
pub async fn serve(
    listener: impl Into<Listener>,
    handler: Arc<dyn Handler>,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    accept_loop(listener.into(), shutdown, move |stream| {
        let handler = Arc::clone(&handler);
        async move {
            let service = service_fn(move |request: hyper::Request<Incoming>| {
                let handler = Arc::clone(&handler);
                async move { Ok::<_, hyper::Error>(respond(handler.as_ref(), request).await) }
            });
            // A client that hangs up mid-request is its own problem, not the server's.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        }
    })
    .await
}

async fn respond(
    handler: &dyn Handler,
    request: hyper::Request<Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes().to_vec(),
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

fn build(response: HttpResponse) -> hyper::Response<Full<Bytes>> {
    let mut builder = hyper::Response::builder().status(response.status);
    for (name, value) in &response.headers {
        builder = builder.header(name, value);
    }
    builder
        .body(Full::new(Bytes::from(response.body)))
        .unwrap_or_else(|_| {
            // Only reachable with a header name or status a handler made up; answer plainly.
            let mut fallback =
                hyper::Response::new(Full::new(Bytes::from_static(b"invalid response")));
            *fallback.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
            fallback
        })
}
