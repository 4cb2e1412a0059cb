//! Model access, in one place: every model call of a run — a trial's harness's, the closed
//! loop's simulated user's, the judge's, generation's — goes through a [`gateway::Gateway`],
//! so it is replayed or forwarded, recorded, priced and charged to the run's budget by the
//! same code. Inside, imports run one way: [`money`] (leaf) ← [`gateway`] (the endpoint: routes,
//! upstreams, replay, cassettes, the call log, prices and the budget) ← [`client`] (the one
//! chat client, asking a gateway in-process), [`access`] ([`ModelAccess`]: where a run's
//! answers come from and what they may cost) ← [`answers`] ([`AnswerSource`]: one task's or
//! one generation's answers, decided once).

pub mod access;
pub(crate) mod answers;
pub(crate) mod client;
pub mod gateway;
pub mod money;

pub(crate) use access::ModelAccess;
pub(crate) use answers::AnswerSource;
pub use money::Money;
