//! The server loop on real sockets and fakes: failed accepts, slow or silent clients, a flood
//! beside a trial's own client, a server on its own thread.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Echo;

impl Handler for Echo {
    fn handle(&self, request: HttpRequest) -> Reply<'_> {
        Box::pin(async move {
            HttpResponse::json(
                200,
                &serde_json::json!({"path": request.path, "length": request.body.len()}),
            )
        })
    }
}

/// Fails its first accepts as a process out of file descriptors does, then hands out
/// one connection, then none.
struct Exhausted {
    failures: std::sync::Mutex<u32>,
    connection: std::sync::Mutex<Option<tokio::io::DuplexStream>>,
}

impl Accept for Exhausted {
    fn accept_one(&self) -> impl Future<Output = std::io::Result<Box<dyn Connection>>> + Send {
        let failing = {
            let mut failures = self.failures.lock().unwrap();
            *failures = failures.saturating_sub(1);
            *failures > 0
        };
        let connection = if failing {
            None
        } else {
            self.connection.lock().unwrap().take()
        };
        async move {
            if failing {
                return Err(std::io::Error::from(rustix::io::Errno::MFILE));
            }
            match connection {
                Some(connection) => Ok(Box::new(connection) as Box<dyn Connection>),
                None => std::future::pending().await,
            }
        }
    }
}

#[tokio::test]
async fn failed_accepts_do_not_stop_the_listener() {
    let (client, server) = tokio::io::duplex(1024);
    let listener = Exhausted {
        failures: std::sync::Mutex::new(4),
        connection: std::sync::Mutex::new(Some(server)),
    };
    let (served, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let looping = tokio::spawn(accept_loop(
        listener,
        None,
        async {
            let _ = stopped.await;
        },
        move |_connection| {
            let _ = served.send(());
            async {}
        },
    ));
    // Without the backoff, the first EMFILE ended the loop and this never arrives.
    seen.recv()
        .await
        .expect("the connection after the failures is served");
    drop(client);
    let _ = stop.send(());
    looping.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_handler_is_served_on_a_unix_socket() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("gateway.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        serve_connection(stream, Arc::new(Echo)).await;
    });
    let mut stream = tokio::net::UnixStream::connect(&path).await.unwrap();
    stream
        .write_all(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        .await
        .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 200 OK\r\n"), "{raw}");
    assert!(
        raw.ends_with(r#"{"path":"/v1/messages","length":2}"#),
        "{raw}"
    );
    server.await.unwrap();
}

#[tokio::test]
async fn a_client_that_sends_its_headers_slowly_or_not_at_all_is_let_go() {
    for partial in [&b"POST /x HTTP/1.1\r\nHost: x\r\nX-Slow: a"[..], &b""[..]] {
        let (mut client, server) = tokio::io::duplex(1024);
        let serving = tokio::spawn(serve_connection_within(
            server,
            Arc::new(Echo),
            std::time::Duration::from_millis(50),
        ));
        client.write_all(partial).await.unwrap();
        // The server ends the connection by itself; without a header timeout this read
        // waited for ever (the bound only keeps a failure from hanging the test run).
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            client.read_to_end(&mut rest),
        )
        .await;
        assert!(closed.is_ok(), "the connection is still open");
        serving.await.unwrap();
    }
}

#[tokio::test]
async fn a_flood_without_the_token_does_not_starve_a_client_with_it() {
    // A trial's listener on its own thread, its header timeout an hour: without the
    // admission, what the flood holds it holds for the whole test.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(accept_loop_on_server_thread(
        listener.into(),
        Some("trial-token".into()),
        async {
            let _ = stopped.await;
        },
        |stream| {
            serve_connection_within(stream, Arc::new(Echo), std::time::Duration::from_secs(3600))
        },
    ));
    // Another trial's agent: more connections than the listener has places, some saying
    // nothing, some a whole request without the token, none reading an answer.
    let mut flood = Vec::new();
    for index in 0..MAX_CONNECTIONS + 44 {
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        if index % 2 == 0 {
            stream
                .write_all(b"GET /guess HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
        }
        flood.push(stream);
    }
    // The trial's own agent, its request with the token, is answered (the bound only
    // keeps a failure from hanging the test run).
    for _ in 0..3 {
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream
            .write_all(
                b"POST /trial-token/x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .await
            .unwrap();
        let mut raw = String::new();
        let answered = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            stream.read_to_string(&mut raw),
        )
        .await;
        assert!(answered.is_ok(), "starved by the flood");
        assert!(raw.contains(r#""path":"/trial-token/x""#), "{raw}");
    }
    let _ = stop.send(());
    server.await.unwrap().unwrap();
    drop(flood);
}

async fn echo_once(address: std::net::SocketAddr) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    stream
        .write_all(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .await?;
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await?;
    Ok(raw)
}

/// Connects until the listener refuses: the server thread has let go of it.
async fn refused(address: std::net::SocketAddr) -> bool {
    for _ in 0..500 {
        if tokio::net::TcpStream::connect(address).await.is_err() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn a_server_on_a_server_thread_serves_and_stops_on_shutdown_or_when_dropped() {
    for drop_it in [false, true] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(accept_loop_on_server_thread(
            listener.into(),
            None,
            async {
                let _ = stopped.await;
            },
            |stream| serve_connection(stream, Arc::new(Echo)),
        ));
        let raw = echo_once(address).await.unwrap();
        assert!(raw.ends_with(r#"{"path":"/x","length":0}"#), "{raw}");
        if drop_it {
            server.abort();
            let _ = server.await;
        } else {
            stop.send(()).unwrap();
            server.await.unwrap().unwrap();
        }
        assert!(
            refused(address).await,
            "still listening (dropped: {drop_it})"
        );
    }
}
