//! A small OpenAI-compatible tool-calling agent that knows only the sandbox contract: a prompt, a
//! tools file whose entries say which HTTP endpoint executes them, a services URL and a
//! chat-completions endpoint, all given through environment variables (see [`config`]).

pub mod agent;
pub mod config;
pub mod model;
pub mod tools;
