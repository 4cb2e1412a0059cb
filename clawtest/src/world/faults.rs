//! The error injector: the plan a trial's faults follow ([`FaultPlan`]: rate, seed, mode, mix,
//! seeded per task and trial from the task's [`FaultSettings`]) and the injector's running state, which draws each POST's fault
//! (uniform or in bursts) from a splitmix64 generator, so a trial's faults depend only on its
//! plan and the order of its calls.

use serde::{Deserialize, Serialize};

use crate::fault::{FaultKind, FaultMix, FaultSettings, InjectionMode};

/// The error injector's plan: each POST to a service route is a fault with probability
/// `rate`, of a kind drawn from `mix` (by default ClawEnvKit's: 35 % rate limit 429 with
/// `Retry-After`, 35 % server error 500, 30 % slow), drawn from a generator seeded with `seed`, so a trial's faults depend
/// only on the plan and the order of calls. `Slow` calls run normally; the HTTP layer
/// delays the answer by the drawn `delay_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultPlan {
    /// The probability that one POST gets a fault, 0..=1 (`error_injection.rate`).
    pub rate: f64,
    /// The generator's seed; [`FaultPlan::for_trial`] derives it from the task id, the
    /// trial and the task's `error_injection.seed`.
    pub seed: u64,
    /// Whether faults fall independently or in bursts (`error_injection.mode`).
    pub mode: InjectionMode,
    /// The share of each fault kind.
    pub mix: FaultMix,
    /// The range a slow call's delay is drawn from, in milliseconds (ClawEnvKit: 2–4 s).
    pub slow_ms: (u64, u64),
}

impl Default for FaultPlan {
    /// No faults.
    fn default() -> Self {
        FaultPlan {
            rate: 0.0,
            seed: 0,
            mode: InjectionMode::Uniform,
            mix: FaultMix::default(),
            slow_ms: (2000, 4000),
        }
    }
}

/// The mean length of a burst of faults.
const BURST_LENGTH: f64 = 4.0;

impl FaultPlan {
    /// The plan of trial `trial` of task `task_id` under `settings`: the seed is a stable
    /// hash of the task id and trial index mixed with the settings' `seed` (0 when none), so
    /// every trial of a task has its own faults and rerunning a trial repeats them exactly.
    pub fn for_trial(task_id: &str, trial: u32, settings: &FaultSettings) -> FaultPlan {
        let FaultSettings {
            rate,
            mode,
            seed,
            mix,
            slow_ms,
        } = *settings;
        let task_hash = task_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let mixed = task_hash ^ splitmix(u64::from(trial)) ^ splitmix(!seed.unwrap_or(0));
        FaultPlan {
            rate: if rate.is_finite() {
                rate.clamp(0.0, 1.0)
            } else {
                0.0
            },
            seed: splitmix(mixed),
            mode,
            mix,
            slow_ms: (slow_ms[0], slow_ms[1]),
        }
    }
}

/// One splitmix64 step from `x` (a good 64-bit mixer).
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The injector's running state: the generator and, in burst mode, the current burst.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Injector {
    rng: u64,
    burst: Option<FaultKind>,
}

impl Injector {
    pub(super) fn new(plan: &FaultPlan) -> Self {
        Injector {
            rng: plan.seed,
            burst: None,
        }
    }

    /// A uniform draw in [0, 1).
    fn next(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        (splitmix(self.rng.wrapping_sub(0x9E37_79B9_7F4A_7C15)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn kind(&mut self, plan: &FaultPlan) -> FaultKind {
        let draw = self.next();
        plan.mix.kind(draw)
    }

    pub(super) fn draw(&mut self, plan: &FaultPlan) -> Option<FaultKind> {
        if plan.rate <= 0.0 {
            return None;
        }
        match plan.mode {
            InjectionMode::Uniform => (self.next() < plan.rate).then(|| self.kind(plan)),
            InjectionMode::Burst => {
                let stay = if plan.rate >= 1.0 {
                    true
                } else {
                    // Stationary fault fraction enter / (enter + exit) = rate.
                    let exit = (1.0 / BURST_LENGTH).min((1.0 - plan.rate) / plan.rate);
                    let enter = plan.rate * exit / (1.0 - plan.rate);
                    let draw = self.next();
                    if self.burst.is_some() {
                        draw >= exit
                    } else {
                        draw < enter
                    }
                };
                match (stay, self.burst) {
                    (true, Some(kind)) => Some(kind),
                    (true, None) => {
                        let kind = self.kind(plan);
                        self.burst = Some(kind);
                        Some(kind)
                    }
                    (false, _) => {
                        self.burst = None;
                        None
                    }
                }
            }
        }
    }

    /// A slow call's delay, in milliseconds.
    pub(super) fn delay_ms(&mut self, plan: &FaultPlan) -> u64 {
        let (low, high) = (
            plan.slow_ms.0.min(plan.slow_ms.1),
            plan.slow_ms.0.max(plan.slow_ms.1),
        );
        low + ((high - low) as f64 * self.next()) as u64
    }
}
