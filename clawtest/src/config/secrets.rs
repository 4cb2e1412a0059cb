//! The API keys the configuration names (`llm.*.api_key_env`, `judge.api_key_env`), taken out
//! of the process's environment once at start-up ([`take`]) and kept here, so that nothing
//! this process starts later inherits them and a harness on the process backend cannot read
//! them from `/proc/<clawtest>/environ`: the value is wiped in place in the environment block
//! the kernel shows there, and the process is made non-dumpable, which also closes that file
//! and `/proc/<clawtest>/mem` to other processes of the user (not to root's). [`var`] is how
//! the library reads a named variable that may be a key.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::Config;

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

/// Reads the key variables of `config`, removes them from the environment (but those also
/// passed to the harness by name in `harness.env`: an explicit choice), and makes the process
/// non-dumpable. Only the first call takes anything.
///
/// # Safety
///
/// No other thread may be running (it calls `std::env::remove_var`): call it from `main`
/// before any runtime or thread is started.
pub unsafe fn take(config: &Config) {
    let mut taken = HashMap::new();
    for name in key_variables(config) {
        if let Ok(value) = std::env::var(&name) {
            taken.insert(name.clone(), value);
            if !config.harness.env.contains(&name) {
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
