//! Serves the scripted model server on a loopback address, to drive a harness by hand or to
//! record a cassette without a real model:
//!
//! ```text
//! cargo run -p clawtest --features testing --example scripted-model -- SCRIPT.yaml|FOLDER [127.0.0.1:9201]
//! ```
//!
//! Then point `[llm.openai] base_url` (or `[llm.anthropic]`) at `http://127.0.0.1:9201` and run
//! with `--mode record`. A script is `turns:` of `tool_calls: [{name, arguments}]` or
//! `text: ...`; a folder holds one script per task, each with `prompt_contains:` (a phrase of
//! its task's prompt); see `clawtest::llm::gateway::scripted` for the turn rule.

// An example is a binary that tells its user what it serves: the library's no-printing lints are not for it.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;
use std::sync::Arc;

use clawtest::llm::gateway::scripted::ScriptedModel;

fn main() -> ExitCode {
    let mut arguments = std::env::args().skip(1);
    let Some(script_path) = arguments.next() else {
        eprintln!("usage: scripted-model SCRIPT.yaml|FOLDER [ADDRESS (default 127.0.0.1:9201)]");
        return ExitCode::from(2);
    };
    let address = arguments.next().unwrap_or_else(|| "127.0.0.1:9201".into());
    let model = match ScriptedModel::load(std::path::Path::new(&script_path)) {
        Ok(model) => model,
        Err(message) => {
            eprintln!("scripted-model: {message}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("scripted-model: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(&address).await {
            Ok(listener) => listener,
            Err(error) => {
                eprintln!("scripted-model: cannot listen on {address}: {error}");
                return ExitCode::FAILURE;
            }
        };
        eprintln!(
            "scripted-model: serving {} script(s) on http://{address} (Ctrl-C stops)",
            model.scripts()
        );
        let model = Arc::new(model);
        let stopped = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        match clawtest::http::serve(listener, model, stopped).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("scripted-model: {error}");
                ExitCode::FAILURE
            }
        }
    })
}
