//! The API keys the configuration names (`llm.*.api_key_env`, `judge.api_key_env`), taken out
//! of the process's environment once at start-up ([`take`]) and kept here, so that nothing
//! this process starts later inherits them and a harness on the process backend cannot read
//! them from `/proc/<clawtest>/environ`: the value is wiped in place in the environment block
//! the kernel shows there, and the process is made non-dumpable, which also closes that file
//! and `/proc/<clawtest>/mem` to other processes of the user (not to root's). [`var`] is how
//! the library reads a named variable that may be a key.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::{Config, Mode};

static TAKEN: OnceLock<HashMap<String, String>> = OnceLock::new();

/// The names of the variables holding keys in `config`.
pub fn key_variables(config: &Config) -> Vec<String> {
    [
        config
            .llm
            .openai
            .as_ref()
            .and_then(|provider| provider.api_key_env.clone()),
        config
            .llm
            .anthropic
            .as_ref()
            .and_then(|provider| provider.api_key_env.clone()),
        config.judge.api_key_env.clone(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The providers' usual key variables: named in `harness.env`, they are a key too, even when
/// the configuration reads another.
const PROVIDER_KEY_VARIABLES: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "TOGETHER_API_KEY",
];

/// One warning per `harness.env` name that is a provider's key variable (the configuration's
/// `api_key_env`s and the usual names): passing it hands the real key to the agent, which then
/// does not need the gateway to spend it, and `take` leaves it in clawtest's environment.
/// Allowed (someone may mean it), never silent.
pub fn harness_key_warnings(config: &Config) -> Vec<String> {
    let configured = key_variables(config);
    config
        .every_harness()
        .into_iter()
        .flat_map(|harness| &harness.env)
        .filter(|name| {
            configured.contains(name) || PROVIDER_KEY_VARIABLES.contains(&name.as_str())
        })
        .map(|name| {
            format!(
                "harness.env passes {name}, a model provider's key, to the agent: it gets the real key, not only the gateway that keeps it on the host (remove {name} from [harness] env unless the agent must hold the key)"
            )
        })
        .collect()
}

/// The key variables a run in `mode` reads: the judge's always (a judge cache miss asks the
/// judge in any mode), the providers' only in `live` and `record` mode (a replay answers from
/// cassettes, so their keys are not needed and not kept).
pub fn needed_variables(config: &Config, mode: Mode) -> Vec<String> {
    let mut needed: Vec<String> = config.judge.api_key_env.iter().cloned().collect();
    if mode != Mode::Replay {
        for name in key_variables(config) {
            if !needed.contains(&name) {
                needed.push(name);
            }
        }
    }
    needed
}

/// Reads the key variables of `config`, removes them from the environment (but those also
/// passed to the harness by name in `harness.env`: an explicit choice), keeps those a run in
/// `mode` needs ([`needed_variables`]) and overwrites the copies of the others, and makes the
/// process non-dumpable. Only the first call takes anything.
///
/// # Safety
///
/// No other thread may be running (it calls `std::env::remove_var`): call it from `main`
/// before any runtime or thread is started.
pub unsafe fn take(config: &Config, mode: Mode) {
    let mut taken = HashMap::new();
    let needed = needed_variables(config, mode);
    for name in key_variables(config) {
        if let Ok(value) = std::env::var(&name) {
            if needed.contains(&name) {
                taken.insert(name.clone(), value);
            } else {
                // Not needed: no copy stays in this process's memory for a reader of
                // /proc/<clawtest>/mem (root) to find.
                let mut bytes = value.into_bytes();
                bytes.fill(0);
                std::hint::black_box(&bytes);
            }
            if !config
                .every_harness()
                .iter()
                .any(|harness| harness.env.contains(&name))
            {
                // SAFETY: the caller promises that no other thread runs.
                unsafe {
                    wipe(&name);
                    std::env::remove_var(&name);
                }
            }
        }
    }
    let _ = TAKEN.set(taken);
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
}

unsafe extern "C" {
    /// The C library's environment: a null-terminated array of `NAME=value` strings, at
    /// start-up pointing into the block `/proc/<pid>/environ` shows.
    static mut environ: *mut *mut std::ffi::c_char;
}

/// Overwrites the value of every `name=…` entry of the environment with zero bytes, in place.
///
/// # Safety
///
/// No other thread may be reading or changing the environment.
unsafe fn wipe(name: &str) {
    let prefix = format!("{name}=");
    // SAFETY: `environ` is the C library's null-terminated array of NUL-terminated strings;
    // the caller guarantees nobody else touches it meanwhile; each write stays within the
    // string's own bytes.
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            let text = std::ffi::CStr::from_ptr(*entry).to_bytes();
            if text.starts_with(prefix.as_bytes()) {
                let value = (*entry).add(prefix.len());
                std::ptr::write_bytes(value, 0, text.len() - prefix.len());
            }
            entry = entry.add(1);
        }
    }
}

/// The value of variable `name`: a key taken at start-up, else the environment's.
pub(crate) fn var(name: &str) -> Option<String> {
    TAKEN
        .get()
        .and_then(|taken| taken.get(name).cloned())
        .or_else(|| std::env::var(name).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_keeps_only_the_judges_key() {
        let config = Config::from_text(
            "[llm.openai]\nbase_url = \"http://127.0.0.1:9\"\napi_key_env = \"MODEL_KEY\"\n[judge]\nprovider = \"openai\"\nmodel = \"m\"\napi_key_env = \"JUDGE_KEY\"\n",
            std::path::Path::new("clawtest.toml"),
            std::path::PathBuf::from("."),
        )
        .unwrap();
        assert_eq!(needed_variables(&config, Mode::Replay), ["JUDGE_KEY"]);
        assert_eq!(
            needed_variables(&config, Mode::Record),
            ["JUDGE_KEY", "MODEL_KEY"]
        );
    }
}
