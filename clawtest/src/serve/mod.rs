//! The HTTP face of a trial: serves a [`World`]'s service routes, and the trial's MCP
//! server under `/mcp`, over HTTP/1.1 (hyper). Every service request goes to
//! [`World::handle_serialized`], whose JSON text is both the answer and the audit's copy;
//! [`standalone`] is `cargo clawtest serve`, one task's world on a port of its own.
//!
//! All services of a trial share one listener, as ClawEnvKit's port 9100 does: a TCP port
//! ([`serve`]) or a Unix socket ([`serve_unix`], for the docker backend); the connection
//! handler is generic over the stream. The listener and all its connections run on a
//! thread of their own (every request takes the world's lock). A slow fault's delay goes
//! through the [`Delay`] seam, so tests can record delays instead of sleeping.

pub mod standalone;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;

use crate::surfaces::mcp::McpServer;
use crate::world::{SerializedResponse, ServiceResponse, World};

/// The largest request body accepted; tool calls are small JSON objects.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// Waits before a slow fault is answered.
pub trait Delay: Send + Sync + 'static {
    /// A future that completes after `duration` (or, in a test, records it and completes).
    fn wait(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// The real delay: a tokio timer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sleep;

impl Delay for Sleep {
    fn wait(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// Accepts connections on `listener` until `shutdown` completes, serving `world`.
/// Connections in flight when it completes are dropped. The listener is served on one
/// thread (`crate::http::accept_loop_on_server_thread`): every request takes the world's
/// lock, so one thread serves them best.
pub async fn serve(
    listener: TcpListener,
    world: Arc<Mutex<World>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, world, Arc::new(Sleep), None, shutdown).await
}

/// [`serve`], with paths under `/mcp` answered by the trial's MCP server (surfaces/mcp.rs).
pub async fn serve_with_mcp(
    listener: TcpListener,
    world: Arc<Mutex<World>>,
    mcp: Option<Arc<McpServer>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, world, Arc::new(Sleep), mcp, shutdown).await
}

/// [`serve`] with an explicit [`Delay`] and MCP server.
pub async fn serve_with(
    listener: TcpListener,
    world: Arc<Mutex<World>>,
    delay: Arc<dyn Delay>,
    mcp: Option<Arc<McpServer>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    crate::http::accept_loop_on_server_thread(listener.into(), None, shutdown, move |stream| {
        serve_connection_full(
            stream,
            Arc::clone(&world),
            Arc::clone(&delay),
            mcp.clone(),
            None,
        )
    })
    .await
}

/// [`serve`] on a Unix socket.
#[cfg(unix)]
pub async fn serve_unix(
    listener: tokio::net::UnixListener,
    world: Arc<Mutex<World>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let delay: Arc<dyn Delay> = Arc::new(Sleep);
    crate::http::accept_loop_on_server_thread(
        crate::http::Listener::Unix(listener),
        None,
        shutdown,
        move |stream| {
            serve_connection_full(stream, Arc::clone(&world), Arc::clone(&delay), None, None)
        },
    )
    .await
}

/// Serves one HTTP/1.1 connection on any byte stream (a trial's socket in the container's
/// folder, say), with `/mcp` answered by `mcp`. Connection errors (a client that hangs up
/// mid-request) end the connection and are not reported.
pub async fn serve_connection_with_mcp<S>(
    stream: S,
    world: Arc<Mutex<World>>,
    mcp: Option<Arc<McpServer>>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    serve_connection_full(stream, world, Arc::new(Sleep), mcp, None).await;
}

/// [`serve_connection_with_mcp`] behind a path prefix (`/t/<token>`, a trial's random token):
/// only requests under it are answered, with the prefix removed; any other path is a 404, so
/// a process that does not know the token cannot drive the trial's services.
pub(crate) async fn serve_connection_behind<S>(
    stream: S,
    world: Arc<Mutex<World>>,
    mcp: Option<Arc<McpServer>>,
    prefix: Arc<str>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    serve_connection_full(stream, world, Arc::new(Sleep), mcp, Some(prefix)).await;
}

async fn serve_connection_full<S>(
    stream: S,
    world: Arc<Mutex<World>>,
    delay: Arc<dyn Delay>,
    mcp: Option<Arc<McpServer>>,
    prefix: Option<Arc<str>>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let (world, delay, mcp) = (Arc::clone(&world), Arc::clone(&delay), mcp.clone());
        let prefix = prefix.clone();
        async move {
            Ok::<_, Infallible>(
                answer(
                    req,
                    &world,
                    delay.as_ref(),
                    mcp.as_deref(),
                    prefix.as_deref(),
                )
                .await,
            )
        }
    });
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn answer(
    req: Request<Incoming>,
    world: &Mutex<World>,
    delay: &dyn Delay,
    mcp: Option<&McpServer>,
    prefix: Option<&str>,
) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let method = parts.method.as_str();
    let mut path = parts.uri.path();
    if let Some(prefix) = prefix {
        match path.strip_prefix(prefix) {
            Some("") => path = "/",
            Some(rest) if rest.starts_with('/') => path = rest,
            _ => {
                return to_http(ServiceResponse {
                    status: 404,
                    body: serde_json::json!({"detail": "Not Found"}),
                    headers: vec![],
                    delay: None,
                });
            }
        }
    }
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return to_http(ServiceResponse {
                status: 413,
                body: serde_json::json!({"detail": "Request body too large or unreadable"}),
                headers: vec![],
                delay: None,
            });
        }
    };
    if let Some(mcp) = mcp
        && (path == "/mcp" || path.starts_with("/mcp/"))
    {
        return to_http(mcp.answer(method, &body, world));
    }
    // A poisoned lock still holds a usable world: handle() never leaves it half-updated.
    let response = {
        let mut world = world.lock().unwrap_or_else(|e| e.into_inner());
        world.handle_serialized(method, path, &body)
    };
    // The call is already in the audit; only the answer waits (the lock is released).
    if let Some(duration) = response.delay {
        delay.wait(duration).await;
    }
    serialized_to_http(response)
}

fn to_http(resp: ServiceResponse) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(&resp.body).unwrap_or_else(|_| b"null".to_vec());
    serialized_to_http(SerializedResponse {
        status: resp.status,
        body: Bytes::from(body),
        headers: resp.headers,
        delay: resp.delay,
    })
}

fn serialized_to_http(resp: SerializedResponse) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(resp.body));
    *response.status_mut() =
        StatusCode::from_u16(resp.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    for (name, value) in &resp.headers {
        // The World's own headers (`retry-after`, `allow`): always valid.
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            hyper::header::HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::Catalogue;
    use crate::world::WorldOptions;
    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_real_http_request_reaches_the_world_and_the_audit() {
        let fixtures =
            serde_json::json!({"tasks": [{"id": "t1", "title": "Plan", "status": "pending"}]});
        let world = World::new(
            &Catalogue::builtin(),
            &["todo".into()],
            &fixtures,
            &[],
            WorldOptions::default(),
        )
        .unwrap();
        let world = Arc::new(Mutex::new(world));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, Arc::clone(&world), async {
            let _ = stopped.await;
        }));

        let body = r#"{"title":"Ship it","priority":"high"}"#;
        let request = format!(
            "POST /todo/tasks/create HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = String::new();
        stream.read_to_string(&mut raw).await.unwrap();

        assert!(raw.starts_with("HTTP/1.1 200 OK\r\n"), "{raw}");
        assert!(
            raw.to_ascii_lowercase()
                .contains("content-type: application/json"),
            "{raw}"
        );
        let json: serde_json::Value =
            serde_json::from_str(raw.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(json["status"], "created");
        assert_eq!(json["task"]["task_id"], "todo_002");
        {
            let w = world.lock().unwrap();
            assert_eq!(w.audit().len(), 1);
            assert_eq!(w.audit()[0].action, "create_task");
            assert_eq!(w.audit()[0].status, 200);
        }
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn behind_a_token_only_paths_under_it_are_answered() {
        let world = World::new(
            &Catalogue::builtin(),
            &["todo".into()],
            &json!({"tasks": []}),
            &[],
            WorldOptions::default(),
        )
        .unwrap();
        let world = Arc::new(Mutex::new(world));
        let ask = |path: &'static str| {
            let world = Arc::clone(&world);
            async move {
                let (mut client, server) = tokio::io::duplex(1 << 16);
                let serving = tokio::spawn(serve_connection_behind(
                    server,
                    world,
                    None,
                    Arc::from("/t/0123abcd"),
                ));
                let request = format!(
                    "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
                );
                client.write_all(request.as_bytes()).await.unwrap();
                let mut raw = String::new();
                client.read_to_string(&mut raw).await.unwrap();
                serving.await.unwrap();
                raw
            }
        };
        for outside in [
            "/todo/tasks",
            "/t/0123abcdX/todo/tasks",
            "/t/other/todo/tasks",
        ] {
            let raw = ask(outside).await;
            assert!(raw.starts_with("HTTP/1.1 404"), "{outside}: {raw}");
        }
        let raw = ask("/t/0123abcd/todo/tasks").await;
        assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
        assert_eq!(
            world.lock().unwrap().audit().len(),
            1,
            "only the call under the token"
        );
    }

    /// Posts one JSON-RPC message to `/mcp` over real HTTP.
    async fn post(url: &str, message: Value) -> (u16, Value) {
        use http_body_util::{BodyExt, Full};
        use hyper::body::Bytes;
        use hyper_util::client::legacy::Client;
        use hyper_util::client::legacy::connect::HttpConnector;
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(hyper_util::rt::TokioExecutor::new()).build(HttpConnector::new());
        let request = hyper::Request::post(format!("{url}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from(message.to_string())))
            .unwrap();
        let response = client.request(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    #[tokio::test]
    async fn an_mcp_client_on_the_services_listener_lists_and_calls_once_audited() {
        let world = std::sync::Arc::new(crate::surfaces::mcp::tests::world());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(serve_with_mcp(
            listener,
            std::sync::Arc::clone(&world),
            Some(std::sync::Arc::new(crate::surfaces::mcp::tests::server())),
            async {
                let _ = stopped.await;
            },
        ));
        let (status, init) = post(&url, json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})).await;
        assert_eq!(
            (status, init["result"]["serverInfo"]["name"].as_str()),
            (200, Some("clawtest"))
        );
        let (status, _) = post(
            &url,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        assert_eq!(status, 202);
        let (_, listed) = post(
            &url,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
        assert_eq!(listed["result"]["tools"].as_array().map(Vec::len), Some(1));
        let (_, called) = post(&url, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_tasks", "arguments": {"status": "pending"}}})).await;
        assert_eq!(called["id"], 2);
        assert_eq!(called["result"]["isError"], false);
        stop.send(()).unwrap();
        served.await.unwrap().unwrap();
        let world = world.lock().unwrap();
        assert_eq!(world.audit().len(), 1, "{:?}", world.audit());
        assert_eq!(world.audit()[0].action, "list_tasks");
    }
}
