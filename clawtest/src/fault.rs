//! The words of fault injection that configuration, tasks, cassettes, the world and the
//! reports all use: a fault's [`FaultKind`], how faults fall ([`InjectionMode`]), the kinds'
//! [`FaultMix`], and [`FaultSettings`], the whole setting a task's trials are injected with
//! (the suite's `[faults]`, a run's `--error-rate`, a task's `error_injection`, in that order
//! of precedence, resolved by the run). Leaf data: it imports nothing of the crate.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Answered 429 with `Retry-After: 2`, without reaching the service.
    RateLimited,
    /// Answered 500, without reaching the service.
    ServerError,
    /// Served normally, with the answer held back by the entry's `delay_ms`.
    Slow,
}

impl FaultKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [FaultKind; 3] = [
        FaultKind::RateLimited,
        FaultKind::ServerError,
        FaultKind::Slow,
    ];

    /// The kind's name in `clawtest.toml`, results and reports (`rate_limited`).
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::RateLimited => "rate_limited",
            FaultKind::ServerError => "server_error",
            FaultKind::Slow => "slow",
        }
    }

    /// The kind a name stands for.
    pub fn from_name(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// What the kind looks like to an agent, for people (`429 rate limited`).
    pub fn label(self) -> &'static str {
        match self {
            FaultKind::RateLimited => "429 rate limited",
            FaultKind::ServerError => "500 server error",
            FaultKind::Slow => "slow answer",
        }
    }

    /// Whether the agent sees an error it must recover from (429, 500). A slow call is
    /// answered, late: there is nothing to recover from, so it is counted but never gated.
    pub fn is_error(self) -> bool {
        !matches!(self, FaultKind::Slow)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// How injected faults are spread over requests: `[faults] mode`, a task's
/// `error_injection.mode`, and the mode of the world's fault plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InjectionMode {
    /// Each request independently (ClawEnvKit's behaviour).
    #[default]
    Uniform,
    /// Runs of consecutive faults, as real rate limits come: a two-state chain whose fault
    /// state lasts the world's `BURST_LENGTH` requests on average and repeats one fault kind,
    /// with the long-run fraction of faulted requests still the rate.
    Burst,
}

impl InjectionMode {
    /// The mode's name as written (`uniform`, `burst`).
    pub fn name(self) -> &'static str {
        match self {
            InjectionMode::Uniform => "uniform",
            InjectionMode::Burst => "burst",
        }
    }
}

/// The share of each kind among injected faults: `[faults.mix]`, weights that need not sum
/// to 1 (ClawEnvKit's `random.choices` weights: 0.35, 0.35, 0.30).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultMix {
    /// The weight of 429 answers.
    #[serde(default)]
    pub rate_limited: f64,
    /// The weight of 500 answers.
    #[serde(default)]
    pub server_error: f64,
    /// The weight of slow answers.
    #[serde(default)]
    pub slow: f64,
}

impl Default for FaultMix {
    /// ClawEnvKit's mix.
    fn default() -> FaultMix {
        FaultMix {
            rate_limited: 0.35,
            server_error: 0.35,
            slow: 0.30,
        }
    }
}

impl FaultMix {
    /// The weights, in [`FaultKind::ALL`]'s order.
    pub fn weights(&self) -> [(FaultKind, f64); 3] {
        [
            (FaultKind::RateLimited, self.rate_limited),
            (FaultKind::ServerError, self.server_error),
            (FaultKind::Slow, self.slow),
        ]
    }

    /// The kind a uniform draw in [0, 1) falls on (the last kind with a weight when rounding
    /// leaves the draw past the end). A mix without weight falls on 429.
    pub fn kind(&self, draw: f64) -> FaultKind {
        let total: f64 = self.weights().iter().map(|(_, weight)| weight).sum();
        let mut point = draw * total;
        let mut last = FaultKind::RateLimited;
        for (kind, weight) in self.weights() {
            if weight <= 0.0 {
                continue;
            }
            if point < weight {
                return kind;
            }
            point -= weight;
            last = kind;
        }
        last
    }
}

/// ClawEnvKit's fault rate (`ERROR_RATE=0.25` in its runners): the default of `[faults]
/// rate` and of an `error_injection` block that names no rate.
pub const DEFAULT_RATE: f64 = 0.25;

/// ClawEnvKit's slow answers: held back 2 to 4 seconds.
pub const DEFAULT_SLOW_MS: [u64; 2] = [2000, 4000];

/// The faults a task's trials are injected with. Each trial's own plan (its seed) is derived
/// from these, the task id and the trial number, so the same settings inject the same faults
/// in every run; cassettes record them, so a replay under other settings can say so.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSettings {
    /// The probability that one POST to a service gets a fault, 0..=1.
    #[serde(default = "default_rate")]
    pub rate: f64,
    /// Uniform or in bursts.
    #[serde(default)]
    pub mode: InjectionMode,
    /// Mixed into every trial's seed; absent is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The share of each kind.
    #[serde(default)]
    pub mix: FaultMix,
    /// The range a slow answer's delay is drawn from, in milliseconds.
    #[serde(default = "default_slow_ms")]
    pub slow_ms: [u64; 2],
}

fn default_rate() -> f64 {
    DEFAULT_RATE
}

fn default_slow_ms() -> [u64; 2] {
    DEFAULT_SLOW_MS
}

impl Default for FaultSettings {
    /// ClawEnvKit's: 25 % of calls, uniform, its mix and its 2–4 s slow answers.
    fn default() -> FaultSettings {
        FaultSettings {
            rate: DEFAULT_RATE,
            mode: InjectionMode::Uniform,
            seed: None,
            mix: FaultMix::default(),
            slow_ms: DEFAULT_SLOW_MS,
        }
    }
}

impl FaultSettings {
    /// No faults at all.
    pub fn off() -> FaultSettings {
        FaultSettings {
            rate: 0.0,
            ..FaultSettings::default()
        }
    }

    /// The settings in one line, as divergences and reports name them:
    /// `rate 0.25, uniform, seed 0, mix 429 0.35 / 500 0.35 / slow 0.3`.
    pub fn describe(&self) -> String {
        if self.rate <= 0.0 {
            return "no faults (rate 0)".into();
        }
        format!(
            "rate {}, {}, seed {}, mix 429 {} / 500 {} / slow {}",
            self.rate,
            self.mode.name(),
            self.seed.unwrap_or(0),
            self.mix.rate_limited,
            self.mix.server_error,
            self.mix.slow
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_mix_falls_as_clawenvkit_weights_it() {
        let mix = FaultMix::default();
        assert_eq!(mix.kind(0.0), FaultKind::RateLimited);
        assert_eq!(mix.kind(0.349), FaultKind::RateLimited);
        assert_eq!(mix.kind(0.351), FaultKind::ServerError);
        assert_eq!(mix.kind(0.699), FaultKind::ServerError);
        assert_eq!(mix.kind(0.701), FaultKind::Slow);
        assert_eq!(mix.kind(0.999_999), FaultKind::Slow);
    }

    #[test]
    fn a_kind_without_weight_is_never_drawn() {
        let mix = FaultMix {
            rate_limited: 0.0,
            server_error: 1.0,
            slow: 0.0,
        };
        for draw in [0.0, 0.3, 0.6, 0.999] {
            assert_eq!(mix.kind(draw), FaultKind::ServerError);
        }
    }
}
