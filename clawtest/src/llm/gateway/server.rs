//! One trial's gateway: the [`Gateway`] a harness's model calls reach, in one of its modes
//! (answered from the trial's recorded interactions in `replay.rs`, or from the real
//! provider in `forward.rs`), the failures it can report ([`GatewayFailure`]) and what it
//! keeps of each call ([`ModelCall`], logged in `call_log.rs`). It remembers the first
//! failure so the executor can turn the trial into an infrastructure error that says
//! exactly what went wrong, and refuses every call once the run's budget is spent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use super::call_log::{CallLog, not_served, refuse};
use super::cassette::{self, Interaction, TrialRecording};
use super::failure::{FailureKind, GatewayFailure};
use super::matching::Matcher;
use super::placeholders::TrialValues;
use super::routes::{Route, RouteKind};
use super::stale::{StaleLog, StaleTrial};
use super::upstream::Upstream;
use super::usage::{Budget, Prices};
use crate::http::{Handler, HttpRequest, HttpResponse, Reply};
use crate::trajectory::{ModelCall, Speaker};

/// How long a trial's end waits for a stream the harness abandoned to finish recording.
const SETTLE_LIMIT: Duration = Duration::from_secs(10);

/// Why a replaying gateway has nothing to answer with; told at the first model call, so a
/// harness that never calls the model needs no cassette.
#[derive(Debug, Clone)]
pub(super) enum Gap {
    /// The cassette records fewer trials than this one's number.
    NoTrial { recorded: usize },
    /// The task has no cassette (the message says where it was looked for).
    NoCassette { message: String },
}

/// Where answers come from.
#[derive(Clone)]
pub(super) enum Source {
    Replay {
        script: Result<Script, Gap>,
        /// `record-missing`: the provider the trial turns to, recording, from the first call
        /// the script cannot answer.
        fallback: Option<Arc<Upstream>>,
    },
    Upstream {
        upstream: Arc<Upstream>,
        record: bool,
    },
}

/// One trial's recorded calls, read from its task's cassette where it is: the task's trials,
/// and the copy of a trial's gateway its server holds, share the one cassette (a copy per
/// trial was a hundredth of a trial's CPU).
#[derive(Clone)]
pub(super) struct Script {
    cassette: Arc<cassette::Cassette>,
    trial: usize,
}

impl std::ops::Deref for Script {
    type Target = [Interaction];

    fn deref(&self) -> &[Interaction] {
        &self.cassette.trials[self.trial].interactions
    }
}

/// The gateway of one trial.
#[derive(Clone)]
pub(crate) struct Gateway {
    pub(super) task_id: String,
    pub(super) trial: u32,
    pub(super) source: Source,
    pub(super) prices: Arc<Prices>,
    pub(super) budget: Arc<Budget>,
    pub(super) rules: Arc<Rules>,
    pub(super) values: Arc<TrialValues>,
    /// The first path segment every request must start with (the trial's random token),
    /// when the gateway is reachable by other processes than the trial's harness.
    pub(super) token: Option<String>,
    /// Where a replay notes that the cassette no longer answers the trial.
    pub(super) stale: Arc<StaleLog>,
    /// `[judge]`'s own provider, when it names one (or why it cannot be asked): the judge's
    /// calls that are forwarded go there instead of to the trial's provider.
    judge_upstream: Option<Result<Arc<Upstream>, String>>,
    log: Arc<Mutex<CallLog>>,
}

/// The run-wide rules of every trial's gateway: matching, and the limits on what it reads.
#[derive(Debug)]
pub(crate) struct Rules {
    pub(super) matcher: Matcher,
    /// The largest request body read (bytes).
    pub(crate) max_request_bytes: usize,
    /// The largest answer recorded or logged (bytes).
    pub(super) max_answer_bytes: usize,
}

impl Default for Rules {
    fn default() -> Rules {
        let llm = crate::config::LlmConfig::default();
        Rules {
            matcher: Matcher::default(),
            max_request_bytes: llm.max_request_bytes,
            max_answer_bytes: llm.max_answer_bytes,
        }
    }
}

impl Rules {
    /// The default rules, built once per process: a gateway starts with them (until
    /// [`Gateway::with_rules`]), and compiling their regexes for every trial's gateway cost
    /// more than the trial's calls.
    pub(crate) fn built_in() -> Arc<Rules> {
        static BUILT_IN: std::sync::LazyLock<Arc<Rules>> =
            std::sync::LazyLock::new(|| Arc::new(Rules::default()));
        Arc::clone(&BUILT_IN)
    }

    /// The rules `[llm]` describes; an error names the `[llm.replay]` field that is wrong.
    pub(crate) fn from_config(llm: &crate::config::LlmConfig) -> Result<Rules, String> {
        Ok(Rules {
            matcher: Matcher::new(&llm.replay)?,
            max_request_bytes: llm.max_request_bytes,
            max_answer_bytes: llm.max_answer_bytes,
        })
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Gateway")
            .field("task_id", &self.task_id)
            .field("trial", &self.trial)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway replaying `trial` of `cassette`.
    pub(crate) fn replay(cassette: &Arc<cassette::Cassette>, trial: u32) -> Gateway {
        let script = match cassette.trials.get(trial as usize) {
            Some(_) => Ok(Script {
                cassette: Arc::clone(cassette),
                trial: trial as usize,
            }),
            None => Err(Gap::NoTrial {
                recorded: cassette.trials.len(),
            }),
        };
        Gateway::with_source(
            &cassette.task_id,
            trial,
            Source::Replay {
                script,
                fallback: None,
            },
        )
    }

    /// A replaying gateway without a cassette: it fails the trial at its first model call,
    /// with `message` (why there is no cassette).
    pub(crate) fn replay_without_cassette(task_id: &str, trial: u32, message: &str) -> Gateway {
        Gateway::with_source(
            task_id,
            trial,
            Source::Replay {
                script: Err(Gap::NoCassette {
                    message: message.into(),
                }),
                fallback: None,
            },
        )
    }

    /// A gateway forwarding to the real provider; with `record`, it also keeps every exchange
    /// for the cassette ([`Gateway::recording`]).
    pub(crate) fn upstream(
        task_id: &str,
        trial: u32,
        upstream: Arc<Upstream>,
        record: bool,
    ) -> Gateway {
        Gateway::with_source(task_id, trial, Source::Upstream { upstream, record })
    }

    fn with_source(task_id: &str, trial: u32, source: Source) -> Gateway {
        Gateway {
            task_id: task_id.into(),
            trial,
            source,
            prices: Arc::default(),
            budget: Arc::new(Budget::new(None)),
            rules: Rules::built_in(),
            values: Arc::default(),
            token: None,
            stale: Arc::default(),
            judge_upstream: None,
            log: Arc::default(),
        }
    }

    /// Prices the calls and charges them to the run's budget.
    pub(crate) fn with_costs(mut self, prices: Arc<Prices>, budget: Arc<Budget>) -> Gateway {
        self.prices = prices;
        self.budget = budget;
        self
    }

    /// Matches and limits calls by the run's rules.
    pub(crate) fn with_rules(mut self, rules: Arc<Rules>) -> Gateway {
        self.rules = rules;
        self
    }

    /// The trial's own values (URLs, folders), written to cassettes as placeholders.
    pub(crate) fn with_values(mut self, values: TrialValues) -> Gateway {
        self.values = Arc::new(values);
        self
    }

    /// `record-missing`: a replaying gateway turns to `upstream` (recording) from the first
    /// call its cassette cannot answer, instead of failing the trial.
    pub(crate) fn with_fallback(mut self, upstream: Arc<Upstream>) -> Gateway {
        if let Source::Replay { fallback, .. } = &mut self.source {
            *fallback = Some(upstream);
        }
        self
    }

    /// Notes the trials whose cassette no longer answers them in `stale`.
    pub(crate) fn with_stale(mut self, stale: Arc<StaleLog>) -> Gateway {
        self.stale = stale;
        self
    }

    /// Forwards the judge's calls to `upstream` (`[judge]`'s provider) instead of the trial's;
    /// when it cannot be had, a judge's call that would be forwarded fails with why.
    pub(crate) fn with_judge_upstream(
        mut self,
        upstream: Result<Arc<Upstream>, String>,
    ) -> Gateway {
        self.judge_upstream = Some(upstream);
        self
    }

    /// Whether the trial's recording holds any call of `speaker` (false unless replaying).
    pub(crate) fn records(&self, speaker: Speaker) -> bool {
        match &self.source {
            Source::Replay {
                script: Ok(script), ..
            } => script
                .iter()
                .any(|interaction| interaction.speaker == speaker),
            _ => false,
        }
    }

    /// The provider a forwarded call of `route` goes to: `[judge]`'s for the judge's, when it
    /// names one (or why it cannot be asked), else `trial`'s (the trial's own).
    fn upstream_of(&self, route: &Route, trial: &Arc<Upstream>) -> Result<Arc<Upstream>, String> {
        match (&self.judge_upstream, route.speaker) {
            (Some(judge), Speaker::Judge) => judge.clone(),
            _ => Ok(Arc::clone(trial)),
        }
    }

    /// Call `call` of `route`, refused: its provider cannot be asked (`message` says why).
    fn unreachable(
        &self,
        call: usize,
        route: &Route,
        request: &HttpRequest,
        message: String,
    ) -> HttpResponse {
        let failure = self.failure_at(call, FailureKind::Upstream { message });
        let body = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        refuse(&mut self.lock(), call, route, body, failure)
    }

    /// Answers only requests whose path starts with `/<token>`.
    pub(crate) fn with_token(mut self, token: String) -> Gateway {
        self.token = Some(token);
        self
    }

    /// Every call answered or refused so far, in call order.
    pub(crate) fn calls(&self) -> Vec<ModelCall> {
        self.lock().calls()
    }

    /// Brings `calls`, taken from this gateway before, up to date: left as it is when no call
    /// was made since (calls are only ever added), so a trial's calls, their conversations
    /// with them, are not copied again for nothing.
    pub(crate) fn update_calls(&self, calls: &mut Vec<ModelCall>) {
        let log = self.lock();
        if log.call_count() != calls.len() {
            *calls = log.calls();
        }
    }

    /// Starts round `number` of a closed loop: its calls are recorded with that round, and
    /// replayed from that round's interactions only.
    pub(crate) fn begin_round(&self, number: u32) {
        self.lock().begin_round(number);
    }

    /// The first failure, if any call could not be answered.
    pub(crate) fn failure(&self) -> Option<GatewayFailure> {
        self.lock().failure().cloned()
    }

    /// Becomes true at the first failure: the trial should stop there.
    pub(crate) fn failed(&self) -> watch::Receiver<bool> {
        self.lock().failed()
    }

    /// The exchanges of this trial, in call order, for the cassette (empty unless recording).
    pub(crate) fn recording(&self) -> TrialRecording {
        self.lock().recording()
    }

    /// After a trial that ended without a failure: notes it stale when it made fewer calls
    /// than its recording holds (the calls it skipped would never be replayed). True when
    /// the trial is stale, for whatever reason.
    pub(crate) fn check_complete(&self) -> bool {
        if let Source::Replay {
            script: Ok(script), ..
        } = &self.source
        {
            let made = self.lock().answered_from_cassette();
            if made < script.len() && !self.lock().switched() {
                self.stale.note(
                    &self.task_id,
                    StaleTrial {
                        trial: self.trial,
                        call: made,
                        reason: format!(
                            "the trial made {made} model call(s) and the cassette records {}",
                            script.len()
                        ),
                        diff: None,
                    },
                );
            }
        }
        self.stale.contains(&self.task_id, self.trial)
    }

    /// Waits for streams still being read from upstream (a harness that hung up mid-stream
    /// leaves one), at most a few seconds each, so that the log and the recording are whole.
    pub(crate) async fn settle(&self) {
        let streams = self.lock().take_streams();
        for stream in streams {
            let _ = tokio::time::timeout(SETTLE_LIMIT, stream).await;
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, CallLog> {
        // A poisoned lock only means another request panicked; the log itself is still whole.
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `kind` of failure at call `call` of this gateway's trial.
    pub(super) fn failure_at(&self, call: usize, kind: FailureKind) -> GatewayFailure {
        GatewayFailure {
            task_id: self.task_id.clone(),
            trial: self.trial,
            call,
            kind,
        }
    }

    /// True when the calls are made to a provider, so they spend money (a replay spends none;
    /// `record-missing`'s does once it turned to the provider).
    pub(super) fn spends(&self, log: &CallLog) -> bool {
        matches!(self.source, Source::Upstream { .. }) || log.switched()
    }

    /// Answers a model call, in whichever mode the gateway is.
    pub(crate) async fn respond(&self, route: Route, request: HttpRequest) -> HttpResponse {
        // Once the run's money is spent, no further call is made, even inside a running trial;
        // a replayed call spends nothing and is still answered.
        let spends = self.spends(&self.lock());
        if spends && self.budget.exhausted() {
            let mut log = self.lock();
            let call = log.next_call();
            let failure = self.failure_at(
                call,
                FailureKind::BudgetReached {
                    spent: crate::llm::money::dollars(self.budget.spent().usd()),
                    limit: self.budget.limit().unwrap_or_default().to_string(),
                },
            );
            let request_body = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            return refuse(&mut log, call, &route, request_body, failure);
        }
        match &self.source {
            Source::Replay { fallback: None, .. } => self.replay_response(&route, &request),
            Source::Replay {
                fallback: Some(upstream),
                ..
            } => match self.replay_or_miss(&route, &request) {
                Ok(response) => response,
                Err(call) => match self.upstream_of(&route, upstream) {
                    Ok(upstream) => {
                        self.forward_call(upstream, true, route, request, call)
                            .await
                    }
                    Err(message) => self.unreachable(call, &route, &request, message),
                },
            },
            Source::Upstream { upstream, record } => match self.upstream_of(&route, upstream) {
                Ok(upstream) => self.forward(upstream, *record, route, request).await,
                Err(message) => {
                    let call = self.lock().next_call();
                    self.unreachable(call, &route, &request, message)
                }
            },
        }
    }
}

impl Handler for Gateway {
    fn handle(&self, request: HttpRequest) -> Reply<'_> {
        Box::pin(async move {
            let path = match &self.token {
                None => Some(request.path.as_str()),
                Some(token) => request
                    .path
                    .strip_prefix('/')
                    .and_then(|path| path.strip_prefix(token.as_str()))
                    .filter(|rest| rest.starts_with('/')),
            };
            let route = match path.map(|path| Route::of(&request.method, path, &request.headers)) {
                Some(Ok(route)) => route,
                Some(Err(message)) => return not_served(404, &message),
                None => {
                    return not_served(
                        404,
                        "this path is not under the trial's gateway URL (use OPENAI_BASE_URL or ANTHROPIC_BASE_URL as given)",
                    );
                }
            };
            match route.kind {
                RouteKind::Models => self.models(route, request).await,
                RouteKind::Call => self.respond(route, request).await,
            }
        })
    }

    fn body_limit(&self) -> Option<(usize, &'static str)> {
        Some((self.rules.max_request_bytes, "llm.max_request_bytes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::gateway::cassette::{Cassette, RecordedRequest, RecordedResponse};
    use serde_json::json;

    fn cassette() -> Cassette {
        let interaction = |content: &str, answer: &str| Interaction {
            request: RecordedRequest {
                path: "/v1/chat/completions".into(),
                body: json!({"messages": [{"role": "user", "content": content}]}),
                whole: false,
            },
            response: RecordedResponse {
                status: 200,
                body: json!({"choices": [{"message": {"role": "assistant", "content": answer}}], "usage": {"prompt_tokens": 10, "completion_tokens": 3}}),
                events: None,
                retried: Vec::new(),
            },
            round: None,
            speaker: crate::trajectory::Speaker::Harness,
        };
        Cassette {
            version: 1,
            task_id: "t".into(),
            faults: None,
            trials: vec![TrialRecording {
                interactions: vec![interaction("hello", "hi")],
            }],
        }
    }

    fn ask(content: &str) -> Vec<u8> {
        json!({"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": content}]}).to_string().into_bytes()
    }

    #[test]
    fn calls_are_answered_in_order_and_counted() {
        let gateway = Gateway::replay(&Arc::new(cassette()), 0);
        let (status, body) = gateway.answer("/v1/chat/completions", &ask("hello"));
        assert_eq!(status, 200);
        assert_eq!(body["choices"][0]["message"]["content"], "hi");
        assert_eq!(gateway.calls()[0].input_tokens, 10);
        assert_eq!(gateway.failure(), None);
        let (status, _) = gateway.answer("/v1/chat/completions", &ask("again"));
        assert_eq!(status, 400);
        assert!(matches!(
            gateway.failure(),
            Some(GatewayFailure {
                call: 1,
                kind: FailureKind::Exhausted {
                    number: 1,
                    recorded: 1,
                    ..
                },
                ..
            })
        ));
    }

    #[test]
    fn a_different_request_is_a_divergence_naming_the_difference() {
        let gateway = Gateway::replay(&Arc::new(cassette()), 0);
        gateway.answer("/v1/chat/completions", &ask("goodbye"));
        let failure = gateway.failure().unwrap();
        assert_eq!(
            failure.to_string(),
            "task `t` trial 0 call 0: request diverges from the cassette: body.messages[-1].content differs at character 0 (line 1): recorded \"⟦hello\", got \"⟦goodbye\" (⟦ marks the first difference)"
        );
        // The trial stops at the first divergence: a later call that would match is refused.
        let (status, body) = gateway.answer("/v1/chat/completions", &ask("hello"));
        assert_eq!(status, 400);
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("call 0"),
            "{body}"
        );
        assert!(*gateway.failed().borrow());
    }

    #[test]
    fn a_missing_cassette_fails_the_first_call_only_when_there_is_one() {
        let gateway = Gateway::replay_without_cassette("t", 0, "no cassette for task `t`");
        assert_eq!(gateway.failure(), None);
        let (status, _) = gateway.answer("/v1/messages", &ask("hello"));
        assert_eq!(status, 400);
        assert!(matches!(
            gateway.failure(),
            Some(GatewayFailure {
                call: 0,
                kind: FailureKind::NoCassette { .. },
                ..
            })
        ));
    }

    #[test]
    fn the_trials_own_values_are_matched_as_placeholders_and_put_back() {
        let mut recorded = cassette();
        recorded.trials[0].interactions[0].request.body = json!({"messages": [{"role": "user", "content": "files in {{trial_folder}}/workspace, tools at {{services_url}}"}]});
        recorded.trials[0].interactions[0].response.body = json!({"choices": [{"message": {"role": "assistant", "content": "read {{trial_folder}}/workspace/a.txt"}}]});
        let values = TrialValues::default()
            .with_url("services_url", "http://127.0.0.1:4444")
            .with_folder(std::path::Path::new("/tmp/clawtest-trial-Zz9"));
        let gateway = Gateway::replay(&Arc::new(recorded), 0).with_values(values);
        let (status, body) = gateway.answer(
            "/v1/chat/completions",
            &ask("files in /tmp/clawtest-trial-Zz9/workspace, tools at http://127.0.0.1:4444"),
        );
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body["choices"][0]["message"]["content"],
            "read /tmp/clawtest-trial-Zz9/workspace/a.txt"
        );
    }

    #[test]
    fn a_trial_without_recording_fails_every_call() {
        let gateway = Gateway::replay(&Arc::new(cassette()), 2);
        gateway.answer("/v1/chat/completions", &ask("hello"));
        assert!(matches!(
            gateway.failure(),
            Some(GatewayFailure {
                trial: 2,
                kind: FailureKind::NoTrial { recorded: 1 },
                ..
            })
        ));
    }

    #[test]
    fn a_replay_under_a_limit_needs_no_price_since_it_spends_nothing() {
        let gateway = Gateway::replay(&Arc::new(cassette()), 0)
            .with_costs(Arc::default(), Arc::new(Budget::new(Some(1.0))));
        let (status, _) = gateway.answer("/v1/chat/completions", &ask("hello"));
        assert_eq!((status, gateway.failure()), (200, None));
    }

    #[test]
    fn replayed_calls_count_their_recorded_cost_but_spend_nothing() {
        let prices = Prices(std::collections::BTreeMap::from([(
            "m".to_string(),
            crate::config::Price {
                input_per_million: 1_000_000.0,
                output_per_million: 0.0,
            },
        )]));
        let budget = Arc::new(Budget::new(Some(5.0)));
        let gateway = Gateway::replay(&Arc::new(cassette()), 0)
            .with_costs(Arc::new(prices), Arc::clone(&budget));
        gateway.answer("/v1/chat/completions", &ask("hello"));
        assert_eq!(gateway.calls()[0].cost_usd, Some(10.0));
        assert_eq!((budget.cost().usd(), budget.spent().usd()), (10.0, 0.0));
        // Recorded calls costing twice the limit do not reach it: the next replays too.
        assert!(!budget.exhausted());
        assert_eq!(gateway.failure(), None);
    }
}
