//! `validate --feasibility`: a task is feasible when its oracle, played against a fresh
//! World with no harness and no model, passes the real grader with every call answered
//! without an error; when every keyword an output check requires is somewhere an agent can
//! see it; and when it discriminates: an agent that does nothing, one that also calls a
//! forbidden tool, and one that also says a forbidden word all fail. Each reason it is not
//! is an [`Infeasible`] at the line of the component (or safety check) concerned.
//!
//! The judge is not asked: an `llm_judge` rubric counts as met by an answer the author wrote
//! and as missed by a derived or empty one. `exit_code` and `pytest_pass` commands run in a
//! scratch workspace with the task's and the oracle's files (`commands.rs`), where the
//! caller's [`Commands`] say (`sandbox::commands`: on the host, in a container, or not at
//! all: then each command's component is a reason, with what to do).

use serde_json::Value;

use super::derive::Gap;
use super::grounding::Ungrounded;
use super::{Cause, Plan, PlannedCall, failure, plan, trajectory};
use crate::grade::{self, Grade, JudgeAnswer, JudgeAnswers};
use crate::sandbox::commands::Commands;
use crate::services::Catalogue;
use crate::task::{Check, OutputSource, Position, Problem, SafetyCheck, Task};
use crate::world::{World, WorldOptions};

/// Why a task cannot be passed, or cannot be told from doing nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct Infeasible {
    /// The field concerned (`scoring_components[1]`, `safety_checks[0]`, `oracle`).
    pub field: String,
    /// Its line in the task file.
    pub line: Option<u64>,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub help: Option<String>,
}

/// The outcome of checking one task.
#[derive(Debug, Clone)]
pub struct Feasibility {
    /// Every reason found; none when the task is feasible.
    pub problems: Vec<Infeasible>,
    /// The oracle's plan, when it could be made.
    pub plan: Option<Plan>,
    /// The oracle's grade, when it could be played.
    pub grade: Option<Grade>,
}

impl Feasibility {
    /// No reason was found.
    pub fn is_feasible(&self) -> bool {
        self.problems.is_empty()
    }
}

impl Infeasible {
    /// As a validation problem, placed at the first word of its line in `source`.
    pub(crate) fn into_problem(self, source: &str) -> Problem {
        let position = self.line.map(|line| {
            let text = source
                .lines()
                .nth(usize::try_from(line).unwrap_or(0).saturating_sub(1));
            let indent = text.map_or(0, |text| {
                text.chars().take_while(|c| c.is_whitespace()).count()
            });
            Position {
                line,
                column: indent as u64 + 1,
                span: None,
            }
        });
        let problem = Problem::new(self.field, self.message, position);
        match self.help {
            Some(help) => problem.with_help(help),
            None => problem,
        }
    }
}

impl From<Ungrounded> for Infeasible {
    fn from(ungrounded: Ungrounded) -> Self {
        Infeasible {
            field: ungrounded.field,
            line: ungrounded.line,
            message: ungrounded.message,
            help: Some(ungrounded.help),
        }
    }
}

impl From<Gap> for Infeasible {
    fn from(gap: Gap) -> Self {
        Infeasible {
            field: gap.field,
            line: gap.line,
            message: gap.message,
            help: Some(gap.help),
        }
    }
}

/// Checks `task` (its services looked up in `catalogue`, `threshold` the suite's pass
/// threshold where the task sets none), its commands run where `commands` says.
pub fn check(
    task: &Task,
    catalogue: &Catalogue,
    threshold: f64,
    commands: &Commands,
) -> Feasibility {
    let threshold = task.pass_threshold.unwrap_or(threshold);
    let extended;
    let catalogue = if task.local_services.is_empty() {
        catalogue
    } else {
        match task.catalogue(catalogue) {
            Ok(with_local) => {
                extended = with_local;
                &extended
            }
            Err(error) => {
                return Feasibility::unplayable(vec![whole(
                    task,
                    format!("the task's own services cannot be served: {error}"),
                    "fix `services:`",
                )]);
            }
        }
    };
    let checker = Checker {
        task,
        catalogue,
        threshold,
        commands,
    };
    let mut world = match checker.fresh() {
        Ok(world) => world,
        Err(error) => {
            return Feasibility::unplayable(vec![whole(
                task,
                format!("the task's services cannot be built: {error}"),
                "fix `fixtures:` or the services the task uses",
            )]);
        }
    };
    let plan = match plan(task, &world, catalogue) {
        Ok(plan) => plan,
        Err(gaps) => {
            return Feasibility::unplayable(gaps.into_iter().map(Infeasible::from).collect());
        }
    };
    if let Some(refusal) = commands.refusal() {
        let refused = refused_commands(task, refusal);
        if !refused.is_empty() {
            return Feasibility {
                problems: refused,
                plan: Some(plan),
                grade: None,
            };
        }
    }
    let (grade, mut problems) = checker.play_oracle(&mut world, &plan);
    problems.extend(checker.discriminations(&world, &plan));
    Feasibility {
        problems,
        plan: Some(plan),
        grade: Some(grade),
    }
}

impl Feasibility {
    /// The oracle could not even be planned or played.
    fn unplayable(problems: Vec<Infeasible>) -> Self {
        Feasibility {
            problems,
            plan: None,
            grade: None,
        }
    }
}

/// A reason that concerns the whole task, at its `task_id`.
fn whole(task: &Task, message: String, help: &str) -> Infeasible {
    Infeasible {
        field: "task_id".into(),
        line: Some(task.line),
        message,
        help: Some(help.to_owned()),
    }
}

/// An agent that must fail: what it does beyond (or instead of) the oracle, and where a pass
/// would be reported.
struct MustFail<'a> {
    label: String,
    field: String,
    line: Option<u64>,
    calls: &'a [&'a PlannedCall],
    answer: &'a str,
    help: &'a str,
}

/// A safety check's violation scores 0, which a `pass_threshold` of 0 still passes.
const RAISE_THRESHOLD: &str =
    "a safety violation scores 0, which passes only a `pass_threshold` of 0: raise it";

/// One task's check: the task, its catalogue (its own services included) and its threshold.
struct Checker<'a> {
    task: &'a Task,
    catalogue: &'a Catalogue,
    threshold: f64,
    commands: &'a Commands,
}

impl Checker<'_> {
    /// A World as a trial starts it.
    fn fresh(&self) -> Result<World, crate::world::WorldError> {
        let task = self.task;
        World::new(
            self.catalogue,
            &task.services,
            &task.seed_fixtures(),
            &task.tool_bindings(),
            WorldOptions::default(),
        )
    }

    /// Plays the oracle on `world` and grades it: its grade, and every reason it is short (a
    /// call answered with an error, a component missed, a keyword nowhere to be seen).
    fn play_oracle(&self, world: &mut World, plan: &Plan) -> (Grade, Vec<Infeasible>) {
        let task = self.task;
        let mut problems = Vec::new();
        for call in &plan.calls {
            let answer = world.handle(call.method.name(), &call.endpoint, &call.body());
            if let Some(why) = failure(answer.status, &answer.body) {
                problems.push(failed_call(task, call, &why));
            }
        }
        let audit = world.audit().to_vec();
        let mut oracle = trajectory(task, audit, &plan.answer, &plan.files);
        match super::commands::run(task, &plan.files, self.commands) {
            Ok(runs) => oracle.commands = runs,
            Err(message) => problems.push(whole(
                task,
                format!("the task's commands could not be run: {message}"),
                "check that the task's files can be read",
            )),
        }
        let judged = judge_answers(task, plan.answer_written && !plan.answer.trim().is_empty());
        let grade = grade::grade(task, &oracle, &judged, self.threshold);
        if !grade.passed {
            problems.extend(short_of_threshold(task, plan, &grade));
        }
        problems.extend(
            super::grounding::ungrounded(task, self.catalogue, &oracle, &plan.files)
                .into_iter()
                .map(Infeasible::from),
        );
        (grade, problems)
    }

    /// What must fail: nothing done; a forbidden call more; a forbidden word more. `world` is
    /// the one the oracle played on (a forbidden call's arguments come from its records).
    fn discriminations(&self, world: &World, plan: &Plan) -> Vec<Infeasible> {
        let task = self.task;
        let mut problems = Vec::new();
        problems.extend(self.must_fail(plan, MustFail {
            label: "an agent that does nothing and answers nothing".into(),
            field: "scoring_components".into(),
            line: task
                .components
                .first()
                .and_then(|component| component.line)
                .or(Some(task.line)),
            calls: &[],
            answer: "",
            help: "add a component that only doing the task can earn (an audit check of the action the prompt asks for)",
        }));
        let with_oracle: Vec<&PlannedCall> = plan.calls.iter().collect();
        for (index, safety) in task.safety.iter().enumerate() {
            let field = format!("safety_checks[{index}]");
            match &safety.check {
                SafetyCheck::ToolNotCalled { tool_name, .. } => {
                    let Some(forbidden) = forbidden_call(task, self.catalogue, world, tool_name)
                    else {
                        continue;
                    };
                    let mut calls = with_oracle.clone();
                    calls.push(&forbidden);
                    problems.extend(self.must_fail(
                        plan,
                        MustFail {
                            label: format!("an agent that also calls `{tool_name}`"),
                            field,
                            line: safety.line,
                            calls: &calls,
                            answer: &plan.answer,
                            help: RAISE_THRESHOLD,
                        },
                    ));
                }
                SafetyCheck::KeywordsNotInOutput { keywords, .. } => {
                    let Some(word) = keywords.first() else {
                        continue;
                    };
                    let answer = format!("{} {word}", plan.answer);
                    problems.extend(self.must_fail(
                        plan,
                        MustFail {
                            label: format!("an agent that also says `{word}`"),
                            field,
                            line: safety.line,
                            calls: &with_oracle,
                            answer: &answer,
                            help: RAISE_THRESHOLD,
                        },
                    ));
                }
            }
        }
        problems
    }

    /// Plays `agent` on a fresh World: the reason to report when it passes.
    fn must_fail(&self, plan: &Plan, agent: MustFail<'_>) -> Option<Infeasible> {
        let task = self.task;
        let mut world = self.fresh().ok()?;
        for call in agent.calls {
            world.handle(call.method.name(), &call.endpoint, &call.body());
        }
        let files = if agent.calls.is_empty() {
            &[][..]
        } else {
            &plan.files
        };
        let mut trajectory = trajectory(task, world.audit().to_vec(), agent.answer, files);
        trajectory.commands = super::commands::run(task, files, self.commands).unwrap_or_default();
        let answers = judge_answers(task, !agent.calls.is_empty() && plan.answer_written);
        let grade = grade::grade(task, &trajectory, &answers, self.threshold);
        grade.passed.then(|| Infeasible {
            field: agent.field,
            line: agent.line,
            message: format!(
                "{} still passes (final score {:.3} ≥ {})",
                agent.label, grade.final_score, self.threshold
            ),
            help: Some(agent.help.to_owned()),
        })
    }
}

/// Each command check of `task`, at its component's line, as not run for `refusal`.
fn refused_commands(task: &Task, refusal: &crate::sandbox::commands::Refusal) -> Vec<Infeasible> {
    task.components
        .iter()
        .enumerate()
        .filter(|(_, component)| crate::grade::commands::command_of(&component.check).is_some())
        .map(|(index, component)| Infeasible {
            field: format!("scoring_components[{index}]"),
            line: component.line,
            message: format!(
                "the command of `{}` cannot be proven: {refusal}",
                component.name
            ),
            help: Some(refusal.advice().to_owned()),
        })
        .collect()
}

/// The judge's stand-in: every rubric met (`met`) or missed.
fn judge_answers(task: &Task, met: bool) -> JudgeAnswers {
    task.components
        .iter()
        .filter(|component| matches!(component.check, Check::LlmJudge { .. }))
        .map(|component| {
            let answer = if met {
                JudgeAnswer {
                    score: 1.0,
                    reasoning: "taken as met by the oracle's written answer".into(),
                }
            } else {
                JudgeAnswer {
                    score: 0.0,
                    reasoning: "not asked: no written answer to meet the rubric".into(),
                }
            };
            (component.name.clone(), answer)
        })
        .collect()
}

/// A call of the oracle's that the service answered with an error.
fn failed_call(task: &Task, call: &PlannedCall, why: &str) -> Infeasible {
    let arguments = Value::Object(call.arguments.clone());
    let (field, line, help) = match call.cause {
        Cause::Component(index) => (
            format!("scoring_components[{index}]"),
            task.components[index].line,
            format!(
                "`{}` needs this call to succeed: every id it names must be in `fixtures` (or write the calls in `oracle:`)",
                task.components[index].name
            ),
        ),
        Cause::Written(line) => (
            "oracle.calls".into(),
            line,
            "fix the call, or the fixtures it relies on".into(),
        ),
    };
    Infeasible {
        field,
        line,
        message: format!(
            "the oracle's call `{}` {arguments} is answered with an error: {why}",
            call.tool
        ),
        help: Some(help),
    }
}

/// The components that kept the oracle below the threshold, each at its line.
fn short_of_threshold(task: &Task, plan: &Plan, grade: &Grade) -> Vec<Infeasible> {
    let mut problems: Vec<Infeasible> = grade
        .components
        .iter()
        .zip(&task.components)
        .enumerate()
        .filter(|(_, (score, _))| score.score < 1.0)
        .map(|(index, (score, component))| {
            let help = match &component.check {
                Check::LlmJudge { .. } if !plan.answer_written => format!(
                    "write `oracle: {{answer: ...}}` that meets this rubric: it is worth {}, and no answer can be derived for it",
                    component.weight
                ),
                Check::ExitCode { .. } | Check::PytestPass { .. } => {
                    "the command ran in a workspace with the task's `files` and the oracle's: write in `oracle: {files: [...]}` what makes it pass".into()
                }
                Check::KeywordsPresent { source: OutputSource::Other(_), .. } => {
                    "only `in: agent_output` is read; any other source is empty text (as in ClawEnvKit)".into()
                }
                _ => "write the solution in `oracle:` (its calls, answer and files), or fix the check".into(),
            };
            Infeasible {
                field: format!("scoring_components[{index}]"),
                line: component.line,
                message: format!(
                    "the oracle's final score is {:.3}, under the pass threshold {}: `{}` scores {:.2} ({})",
                    grade.final_score, grade.threshold, component.name, score.score, score.reason
                ),
                help: Some(help),
            }
        })
        .collect();
    for violation in &grade.violations {
        problems.push(Infeasible {
            field: "safety_checks".into(),
            line: task.safety.first().and_then(|safety| safety.line),
            message: format!("the oracle violates a safety check: {violation}"),
            help: Some("a check requires what a safety check forbids: make them agree".into()),
        });
    }
    if problems.is_empty() {
        problems.push(Infeasible {
            field: "scoring_components".into(),
            line: Some(task.line),
            message: format!(
                "the oracle's final score is {:.3}, under the pass threshold {}",
                grade.final_score, grade.threshold
            ),
            help: None,
        });
    }
    problems
}

/// A call of the forbidden action, with its required fields filled; None when no route of
/// the task's services records that action (nothing can call it).
fn forbidden_call(
    task: &Task,
    catalogue: &Catalogue,
    world: &World,
    action: &str,
) -> Option<PlannedCall> {
    let forbidden = crate::task::Task {
        components: vec![crate::task::Component {
            name: "forbidden".into(),
            weight: 1.0,
            check: Check::AuditActionExists {
                service: task
                    .services
                    .iter()
                    .find(|service| {
                        catalogue.get(service).is_some_and(|description| {
                            description
                                .routes()
                                .iter()
                                .any(|route| route.action == action)
                        }) || task
                            .tools
                            .iter()
                            .any(|tool| &tool.service == *service && tool.name == action)
                    })?
                    .clone(),
                action: action.to_owned(),
                field_match: Default::default(),
            },
            line: None,
        }],
        oracle: None,
        ..task.clone()
    };
    plan(&forbidden, world, catalogue)
        .ok()
        .and_then(|plan| plan.calls.into_iter().next())
}
