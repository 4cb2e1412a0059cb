//! `cargo clawtest model`: the scripted model on a loopback port, telling its user where it
//! listens, how to point a suite at it, and one line per request: which turn of which script
//! answered, or why none could (the reason the agent also gets, as the provider's error).

use std::io::Write;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;

use super::ScriptedModel;
use crate::http::{Handler, HttpRequest, Reply};

/// The port `cargo clawtest model` listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 9300;

/// Why the scripted model could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ModelServeError {
    /// The port cannot be listened on (taken, or not allowed).
    #[error("could not listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port asked for (`--port`).
        port: u16,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The listening socket failed.
    #[error("the scripted model's server failed: {0}")]
    Server(#[source] std::io::Error),
}

/// Serves `model` on 127.0.0.1:`port` (0 = any free port) until `shutdown` completes,
/// writing the banner and a line per request to `out`.
pub async fn serve_scripts(
    model: ScriptedModel,
    source: &str,
    port: u16,
    out: impl Write + Send + 'static,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ModelServeError> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|source| ModelServeError::Bind { port, source })?;
    let address = listener.local_addr().map_err(ModelServeError::Server)?;
    let mut out = out;
    let _ = write!(
        out,
        "{}",
        banner(&model, source, &format!("http://{address}"))
    );
    let _ = out.flush();
    let handler = Arc::new(Logged {
        model,
        out: Mutex::new(Box::new(out)),
    });
    crate::http::serve(listener, handler, shutdown)
        .await
        .map_err(ModelServeError::Server)
}

/// What the user reads first: the URL, and the two lines of clawtest.toml that use it.
fn banner(model: &ScriptedModel, source: &str, url: &str) -> String {
    format!(
        "clawtest scripted model: {} script(s) from {source}, on {url}\n\
         \x20 chat completions and responses (OpenAI), messages (Anthropic); whole or streamed\n\
         \x20 record with it: put these lines in clawtest.toml, then run `cargo clawtest --mode record`\n\
         \x20   [llm.openai]\n\
         \x20   base_url = \"{url}\"\n\
         \x20 Ctrl-C stops it.\n",
        model.scripts()
    )
}

/// The model, logging each request it answers or refuses.
struct Logged {
    model: ScriptedModel,
    out: Mutex<Box<dyn Write + Send>>,
}

impl Handler for Logged {
    fn handle(&self, request: HttpRequest) -> Reply<'_> {
        Box::pin(async move {
            let (response, line) = match self.model.respond(&request.path, &request.body) {
                Ok((response, served)) => {
                    let streamed = if served.streamed { ", streamed" } else { "" };
                    let line = format!(
                        "{} {}: turn {} of {} of script {}{streamed}",
                        request.method, request.path, served.turn, served.turns, served.script
                    );
                    (response, line)
                }
                Err(refusal) => {
                    let line = format!(
                        "{} {}: refused ({}): {}",
                        request.method, request.path, refusal.status, refusal.message
                    );
                    (refusal.response(), line)
                }
            };
            let mut out = self
                .out
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
            response
        })
    }

    fn body_limit(&self) -> Option<(usize, &'static str)> {
        // A conversation is at most a few megabytes; a larger body is not a model request.
        Some((
            32 * 1024 * 1024,
            "the scripted model's request limit (32 MiB)",
        ))
    }
}
