//! The in-process Rust harness: the user's `async fn(Env) -> Result<String, E>` runs inside the
//! test process instead of as a command. [`Env`] is what the agent sees of its trial (prompt,
//! tools, a tool client that goes through the audited services over HTTP, the gateway URL);
//! [`RustHarness`] is the type-erased function; `InProcessSandbox` is the [`crate::sandbox`]
//! backend that calls it, so a trial is run and graded exactly as with an external agent.

mod client;
mod env;
mod in_process;

use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub(crate) use client::send;
pub use client::{HttpError, JsonResponse};
pub use env::{Env, ToolClient, ToolDefinition, ToolError, ToolResult};
pub(crate) use in_process::InProcessSandbox;

/// The future a harness returns once erased: the final answer, or why there is none.
pub type HarnessFuture = Pin<Box<dyn Future<Output = Result<String, String>> + Send>>;

/// A Rust agent usable as a harness: any `Fn(Env) -> impl Future<Output = Result<String, E>>`
/// where `E: Display` (an `async fn agent(env: Env) -> Result<String, E>` is one).
#[derive(Clone)]
pub struct RustHarness {
    name: &'static str,
    function: Arc<dyn Fn(Env) -> HarnessFuture + Send + Sync>,
}

impl RustHarness {
    /// Wraps `function`, shown as `name` in messages.
    pub fn new<F, Fut, E>(name: &'static str, function: F) -> RustHarness
    where
        F: Fn(Env) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, E>> + Send + 'static,
        E: Display + 'static,
    {
        RustHarness {
            name,
            function: Arc::new(move |env| {
                let running = function(env);
                Box::pin(async move { running.await.map_err(|error| error.to_string()) })
            }),
        }
    }

    /// The function's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Starts the agent on `env`.
    pub fn call(&self, env: Env) -> HarnessFuture {
        (self.function)(env)
    }
}

impl std::fmt::Debug for RustHarness {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("RustHarness")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
