//! One harness run on a trial's running World and gateway: the sandbox started with the
//! trial's launch, the trial stopped at the gateway's first failure or the run's interrupt,
//! and what happened collected into a [`Trajectory`] (or the outcome that ends the trial: an
//! interruption, an infrastructure error, a crash). A task runs it once; a closed loop once
//! per round, through [`crate::closed_loop::Harness`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::closed_loop::Step;
use crate::config::FollowUp;
use crate::config::{FinalAnswer, Mode};
use crate::grade::commands::PlannedCommand;
use crate::llm::client::{Chat, Message};
use crate::llm::gateway::{Gateway, GatewayFailure};
use crate::report::events::TrialOutcome;
use crate::run::plan::Provisions;
use crate::sandbox::session::{self, NextRound, SessionControl};
use crate::sandbox::{Finished, Launch, OUTPUT_FILE, RoundSetup, Running, SandboxError};
use crate::task::Task;
use crate::trajectory::{CommandRun, HarnessExit, OutputOrigin, RobustnessRule, Trajectory};
use crate::world::World;

/// How much of the harness's stderr a trajectory keeps.
const STDERR_TAIL: usize = 4000;
/// How much of the harness's stderr an error message shows.
const STDERR_IN_MESSAGE: usize = 2000;
/// How much of a check command's output a trajectory keeps.
const COMMAND_OUTPUT_TAIL: usize = 2000;

/// One trial's harness on its running World and gateway: run once, or round after round by
/// the closed loop.
pub(super) struct TrialHarness<'a> {
    pub(super) task: &'a Task,
    pub(super) provisions: &'a Provisions,
    pub(super) gateway: &'a Gateway,
    pub(super) world: &'a Arc<Mutex<World>>,
    pub(super) planned: &'a [PlannedCommand],
    pub(super) interrupt: CancellationToken,
    /// The launch of the first round; a later round changes its prompt and round only.
    pub(super) launch: Launch,
    /// The harness's kept session while it runs (`[harness] follow_up = "session"`).
    pub(super) session: Option<LiveSession<'a>>,
}

/// A harness that keeps its session across rounds, running.
pub(super) struct LiveSession<'a> {
    /// The sandbox's run of it, polled while a round is awaited (in a mutex only so that the
    /// trial harness stays `Sync`: it is only ever reached through `&mut`).
    running: Mutex<Running<'a>>,
    /// The trial's end of the session's link.
    control: SessionControl,
    /// Stops the trial at the gateway's first failure while the session runs.
    relay: tokio::task::JoinHandle<()>,
}

impl TrialHarness<'_> {
    /// Runs the harness once with `launch` and collects what happened, or the outcome that
    /// ends the trial (interrupted, an infrastructure error, a crash).
    pub(super) async fn run_once(&self, launch: Launch) -> Result<Trajectory, TrialOutcome> {
        let (trial_interrupt, relay) = self.relay();
        let finished = self.provisions.sandbox.run(launch, trial_interrupt).await;
        relay.abort();
        let finished = self.settled(finished).await?;
        self.collected(finished).await
    }

    /// What happened in a harness run that finished (or a kept session's answered round),
    /// once the gateway's calls have settled, or the outcome that ends the trial (its disk
    /// cap, the gateway's failure, a crash, no answer file).
    async fn collected(&self, finished: Finished) -> Result<Trajectory, TrialOutcome> {
        self.gateway.settle().await;
        let stderr = finished.stderr.clone();
        let disk_full = finished.disk_full;
        let (trajectory, audit_note) = self.trajectory(finished);
        // Stopped at its disk cap: what it left is cut short, and says nothing of the agent's
        // answer (the cap's note is in its `limits_reached` too).
        if let Some(full) = disk_full {
            return Err(TrialOutcome::Error {
                message: full.to_string(),
                trajectory: Some(Box::new(trajectory)),
            });
        }
        // A model call the cassette could not answer means the trial did not see the model it
        // was meant to: grading it would judge the gateway, not the agent.
        if self.gateway.failure().is_some() {
            let mode = self.provisions.models.mode;
            return Err(gateway_error(self.gateway, mode, Some(trajectory)));
        }
        // An audit with calls missing could hide a forbidden one: not graded (the numbers are
        // in the trial's `limits_reached`, shown under it).
        if audit_note.is_some() {
            return Err(TrialOutcome::Error {
                message: "the harness called the services past the audit's caps, and a call left out could hide a forbidden one: not graded".into(),
                trajectory: Some(Box::new(trajectory)),
            });
        }
        // A crash is not an answer: grading it would score an empty output (issue #17).
        let success_exit_codes = &self.provisions.harness.success_exit_codes;
        if let Some(problem) = harness_problem(&trajectory.exit, success_exit_codes) {
            return Err(TrialOutcome::Error {
                message: format!(
                    "the harness {problem}{}{}",
                    model_refusal(&trajectory.model_calls),
                    stderr_end(&stderr)
                ),
                trajectory: Some(Box::new(trajectory)),
            });
        }
        // Its standard output is not its answer: grading that log would judge the wrong text.
        if self.provisions.harness.answer == FinalAnswer::File
            && trajectory.output_source != OutputOrigin::AgentOutputFile
        {
            return Err(TrialOutcome::Error {
                message: format!(
                    "the harness wrote no {OUTPUT_FILE} in its workspace, and harness.answer = \"file\" grades only that file"
                ),
                trajectory: Some(Box::new(trajectory)),
            });
        }
        Ok(trajectory)
    }

    /// A token that stops the trial at the run's interrupt (it is the run's child) and at the
    /// gateway's first failure, with the task that cancels it then.
    fn relay(&self) -> (CancellationToken, tokio::task::JoinHandle<()>) {
        let trial_interrupt = self.interrupt.child_token();
        let (stop_trial, mut failed) = (trial_interrupt.clone(), self.gateway.failed());
        let relay = tokio::spawn(async move {
            if failed.wait_for(|failed| *failed).await.is_ok() {
                stop_trial.cancel();
            }
        });
        (trial_interrupt, relay)
    }

    /// The sandbox's run once the gateway has settled; a run that did not finish is the
    /// trial's outcome.
    async fn settled(
        &self,
        finished: Result<Finished, SandboxError>,
    ) -> Result<Finished, TrialOutcome> {
        let gateway = self.gateway;
        gateway.settle().await;
        match finished {
            Ok(finished) => Ok(finished),
            Err(SandboxError::Interrupted)
                if !self.interrupt.is_cancelled() && gateway.failure().is_some() =>
            {
                Err(gateway_error(gateway, self.provisions.models.mode, None))
            }
            Err(SandboxError::Interrupted) => Err(TrialOutcome::Interrupted),
            Err(error) => Err(TrialOutcome::Error {
                message: error.to_string(),
                trajectory: None,
            }),
        }
    }

    /// What happened in one run: the World's audit, the gateway's calls, the output, the
    /// workspace, the checks; and the audit's note when it reached its caps.
    fn trajectory(&self, finished: Finished) -> (Trajectory, Option<String>) {
        let (audit, audit_note) = self
            .world
            .lock()
            .map(|world| (world.audit().to_vec(), world.audit_cap_note()))
            .unwrap_or_default();
        let mut limits_reached = finished.limits_reached;
        limits_reached.extend(audit_note.clone());
        let (output, output_source) = match finished.output_file {
            Some(text) => (text, OutputOrigin::AgentOutputFile),
            None => (finished.stdout.clone(), OutputOrigin::Stdout),
        };
        let commands = self
            .planned
            .iter()
            .zip(&finished.checks)
            .map(|(planned, outcome)| CommandRun {
                command: planned.command.clone(),
                exit_code: outcome.exit_code,
                timed_out: outcome.timed_out,
                output_tail: tail(
                    &format!("{}{}", outcome.stdout, outcome.stderr),
                    COMMAND_OUTPUT_TAIL,
                ),
            })
            .collect();
        let trajectory = Trajectory {
            task_id: self.task.id.clone(),
            trial: self.launch.trial,
            audit,
            model_calls: self.gateway.calls(),
            output: output.trim().to_string(),
            output_source,
            stderr_tail: tail(&finished.stderr, STDERR_TAIL),
            workspace: finished.workspace,
            exit: finished.exit,
            commands,
            limits_reached,
            duration: finished.duration,
            robustness_rule: RobustnessRule::InjectedFaults,
            rounds: None,
        };
        (trajectory, audit_note)
    }
}

impl<'a> TrialHarness<'a> {
    /// The launch of `round`, asked with `message` (the prompt stays in round 1), within
    /// `timeout`.
    fn round_launch(&self, round: RoundSetup, message: String, timeout: Duration) -> Launch {
        let mut launch = self.launch.clone();
        if round.number > 1 {
            launch.prompt = message;
        }
        launch.timeout = timeout;
        launch.setup.round = Some(round);
        launch
    }

    /// Round `round` of a harness that keeps its session: the message handed to the running
    /// session (the session started when none runs: round 1, or a harness that exited), then
    /// the round as it answered it, or as it ended. A follow-up never answered within its
    /// limit is the trial's error.
    async fn session_round(
        &mut self,
        mut round: RoundSetup,
        message: String,
        timeout: Duration,
    ) -> Result<Trajectory, TrialOutcome> {
        let number = round.number;
        let handed = match &self.session {
            Some(live) => live.control.send(Some(NextRound {
                number,
                message: message.clone(),
                timeout,
            })),
            None => false,
        };
        if !handed {
            self.end_session().await;
            let (link, control) = session::link(self.session_lifetime());
            round.session = Some(link);
            let launch = self.round_launch(round, message, timeout);
            let (trial_interrupt, relay) = self.relay();
            self.session = Some(LiveSession {
                running: Mutex::new(self.provisions.sandbox.run(launch, trial_interrupt)),
                control,
                relay,
            });
        }
        let Some(live) = self.session.as_mut() else {
            unreachable!("a session was started above");
        };
        let answered = tokio::select! {
            biased;
            answered = live.control.answered.recv() => answered,
            ended = running(&mut live.running) => {
                live.relay.abort();
                self.session = None;
                let finished = self.settled(ended).await?;
                if handed && finished.exit.timed_out {
                    return Err(unanswered(number, timeout, self.collected(finished).await));
                }
                return self.collected(finished).await;
            }
        };
        match answered {
            Some(finished) => self.collected(finished).await,
            // The backend let go of the link: its run has ended.
            None => {
                let Some(live) = self.session.take() else {
                    unreachable!("the session is running");
                };
                live.relay.abort();
                let ended = unlocked(live.running).await;
                let finished = self.settled(ended).await?;
                self.collected(finished).await
            }
        }
    }

    /// Ends the kept session, if one runs: the harness is told the end and the sandbox's run
    /// awaited (it ends the harness and everything it started).
    pub(super) async fn end_session(&mut self) {
        if let Some(live) = self.session.take() {
            live.control.send(None);
            let _ = unlocked(live.running).await;
            live.relay.abort();
            self.gateway.settle().await;
        }
    }

    /// The kept session's time over all its rounds: the loop's total limit.
    fn session_lifetime(&self) -> Duration {
        let feedback = crate::closed_loop::feedback(self.task);
        let round = feedback.round_timeout.unwrap_or(self.task.limits.timeout);
        feedback
            .total_timeout
            .unwrap_or_else(|| round.saturating_mul(feedback.max_rounds))
    }
}

/// The sandbox's run in its mutex, to poll.
fn running<'r, 'a>(running: &'r mut Mutex<Running<'a>>) -> &'r mut Running<'a> {
    running
        .get_mut()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The sandbox's run out of its mutex.
fn unlocked(running: Mutex<Running<'_>>) -> Running<'_> {
    running
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The trial's error when a kept session's harness did not answer round `number`'s follow-up
/// within `timeout` (with the round as it was left, if it could be collected).
fn unanswered(
    number: u32,
    timeout: Duration,
    collected: Result<Trajectory, TrialOutcome>,
) -> TrialOutcome {
    let trajectory = match collected {
        Ok(trajectory) => Some(Box::new(trajectory)),
        Err(TrialOutcome::Error { trajectory, .. }) => trajectory,
        Err(_) => None,
    };
    TrialOutcome::Error {
        message: format!(
            "the harness keeps its session (harness.follow_up = \"session\") but did not answer round {number} within its limit of {} s: after reading the follow-up in $CLAWTEST_SESSION_DIR/{} it must write its answer to $CLAWTEST_SESSION_DIR/{} (docs/closed-loop.md, \"One session across rounds\")",
            timeout.as_secs_f64(),
            session::prompt_file(number),
            session::answer_file(number),
        ),
        trajectory,
    }
}

impl crate::closed_loop::Harness for TrialHarness<'_> {
    type Error = TrialOutcome;

    fn run_round(
        &mut self,
        round: RoundSetup,
        message: String,
        timeout: Duration,
    ) -> Step<'_, Result<Trajectory, TrialOutcome>> {
        if self.provisions.harness.follow_up == FollowUp::Session {
            return Box::pin(self.session_round(round, message, timeout));
        }
        let launch = self.round_launch(round, message, timeout);
        Box::pin(async move { self.run_once(launch).await })
    }

    fn ask_model(
        &mut self,
        chat: Chat,
        conversation: Vec<Message>,
    ) -> Step<'_, Result<crate::closed_loop::ModelReply, TrialOutcome>> {
        Box::pin(async move {
            let reply = chat.reply(self.gateway, &conversation).await;
            match self.gateway.failure() {
                Some(_) => Err(gateway_error(
                    self.gateway,
                    self.provisions.models.mode,
                    None,
                )),
                None => Ok(reply),
            }
        })
    }

    fn workspace_text(&self, path: &str) -> Option<String> {
        // The MCP server's file reader: beneath the workspace (no link leads out), regular
        // files only, cut at its bound.
        crate::surfaces::workspace_files::WorkspaceFiles::new(self.launch.folder.join("workspace"))
            .call("read_file", &serde_json::json!({ "path": path }))
            .ok()
    }

    fn budget_exhausted(&self) -> bool {
        self.provisions.models.budget.exhausted()
    }

    fn begin_round(&self, number: u32) {
        self.gateway.begin_round(number);
    }
}

/// The trial after the gateway's first failure: not run when the run's cost limit cut it
/// short (not a verdict on the agent), else an infrastructure error.
pub(super) fn gateway_error(
    gateway: &Gateway,
    mode: Mode,
    trajectory: Option<Trajectory>,
) -> TrialOutcome {
    match gateway.failure() {
        Some(failure) if failure.is_budget_reached() => TrialOutcome::NotRun {
            reason: failure.to_string(),
        },
        failure => TrialOutcome::Error {
            message: format!(
                "model gateway ({}): {}{}",
                mode.name(),
                failure
                    .as_ref()
                    .map(|failure| failure.to_string())
                    .unwrap_or_default(),
                failure.as_ref().map(record_hint).unwrap_or_default()
            ),
            trajectory: trajectory.map(Box::new),
        },
    }
}

/// The command that fixes a replay the cassette cannot answer (none, or one that no longer
/// fits the agent or the task), as the end of the trial's error; nothing for other failures.
fn record_hint(failure: &GatewayFailure) -> String {
    if !failure.needs_recording() {
        return String::new();
    }
    let what = if failure.has_no_cassette() {
        "record it"
    } else {
        "if the agent or the task changed on purpose, record it again"
    };
    format!(
        "; {what}: `cargo clawtest --mode record {}`, or every task whose cassette no longer answers it: `cargo clawtest --mode record-missing` (against your provider, or against `cargo clawtest model --script …` without a key)",
        failure.task_id
    )
}

/// What was wrong with how the harness ended, if anything: an exit code not listed in
/// `harness.success_exit_codes`, or a signal. A harness killed at the time limit is graded
/// (what it did until then counts), so it is not a problem here.
fn harness_problem(exit: &HarnessExit, success_exit_codes: &[i32]) -> Option<String> {
    if exit.timed_out {
        return None;
    }
    match exit.code {
        Some(code) if success_exit_codes.contains(&code) => None,
        Some(code) => Some(format!(
            "exited with code {code} (harness.success_exit_codes is {success_exit_codes:?})"
        )),
        None => Some(match exit.signal {
            Some(signal) => format!("was killed by signal {signal}"),
            None => "was killed by a signal".into(),
        }),
    }
}

/// The model's last refusal, for the error of a harness that then failed: in live and record
/// mode the provider's (or the scripted model's) 4xx answer reaches only the agent, whose
/// traceback hides it; said here, the cause is in the trial's error.
fn model_refusal(calls: &[crate::trajectory::ModelCall]) -> String {
    const SHOWN: usize = 400;
    let Some(call) = calls.iter().rev().find(|call| call.status >= 400) else {
        return String::new();
    };
    let message = call.response["error"]["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| call.response.to_string());
    let shown: String = message.chars().take(SHOWN).collect();
    let cut = if shown.len() < message.len() {
        "…"
    } else {
        ""
    };
    format!(
        "; the model answered {} to call {}: {shown}{cut}",
        call.status, call.index
    )
}

/// The end of the harness's stderr, for an error message: its last lines, indented.
fn stderr_end(stderr: &str) -> String {
    const LINES: usize = 20;
    let end = tail(stderr.trim_end(), STDERR_IN_MESSAGE);
    if end.trim().is_empty() {
        return "; its stderr was empty".into();
    }
    let lines: Vec<&str> = end.lines().collect();
    let shown = &lines[lines.len().saturating_sub(LINES)..];
    format!(
        "; the end of its stderr:\n{}",
        shown
            .iter()
            .map(|line| format!("      {line}"))
            .collect::<Vec<_>>()
            .join("\n")
    )
}

fn tail(text: &str, limit: usize) -> String {
    let count = text.chars().count();
    if count <= limit {
        text.to_string()
    } else {
        text.chars().skip(count - limit).collect()
    }
}
