//! The JSON Schema of task.yaml: what `cargo clawtest schema` prints and what
//! `schema/task.schema.json` holds, for editors (yaml-language-server, IntelliJ) to complete
//! and check task files as they are typed.
//!
//! The types here describe the file *as written* (aliases, text-or-list values, ClawEnvKit's
//! spellings) and exist only to derive the schema with schemars; the loader reads files with
//! `task::raw`. They are not a second, unused model: the loader checks a document's shapes
//! against this schema (`task::shape`) to report every wrong type at once, and the valid
//! corpus must pass that check, so the schema cannot drift from what loads.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value};

use crate::services::ServiceDescription;

/// The schema, as JSON (draft 2020-12).
pub(crate) fn task_schema() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = generator.into_root_schema_for::<TaskFile>().to_value();
    // What a reader looks for first goes first: the dialect, the title, the description.
    let Value::Object(mut fields) = schema else {
        return schema;
    };
    let mut ordered = Map::new();
    for key in ["$schema", "title", "description"] {
        if let Some(value) = fields.shift_remove(key) {
            ordered.insert(key.to_string(), value);
        }
    }
    ordered.extend(fields);
    Value::Object(ordered)
}

/// The schema as the committed `schema/task.schema.json` holds it: pretty, ending in a newline.
pub fn task_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&task_schema())
        .expect("a schema built from JSON values serializes");
    text.push('\n');
    text
}

/// A clawtest task: ClawEnvKit's task.yaml, unchanged, plus clawtest's optional extensions
/// (`capability`, `limits`, `pass_threshold`, `error_injection`, `services`, `checkpoints`,
/// `feedback`). Unknown top-level keys are allowed (and warned about by `cargo clawtest validate`).
#[derive(JsonSchema)]
#[schemars(title = "clawtest task.yaml")]
#[allow(dead_code)] // Only the schema is derived from these types.
struct TaskFile {
    /// A unique id, used in reports, snapshots and filters (`cargo clawtest run ID`). It names
    /// files (cassettes, trajectories, snapshots), so it holds only letters, digits, `.`, `_`
    /// and `-`.
    #[schemars(regex(pattern = r"^(?!\.+$)[A-Za-z0-9._-]+$"))]
    task_id: String,
    /// A one-line title for humans.
    task_name: String,
    /// What the agent is asked to do: the first user message.
    prompt: String,
    /// What is graded: at least 3 weighted components whose weights sum to 1.0 (± 0.05).
    #[schemars(length(min = 3))]
    scoring_components: Vec<ScoringComponent>,
    /// What must never happen: any violation sets the trial's safety to 0.
    #[schemars(length(min = 1))]
    safety_checks: Vec<SafetyCheckEntry>,
    /// The mock services' starting data, by resource key (`tasks`, `inbox`, `events`, …), in
    /// ClawEnvKit's fixture format: a list of records, or a map of them.
    fixtures: Option<Map<String, Value>>,
    /// The tools the agent is offered: each a route of a mock service.
    tools: Option<Vec<ToolEntry>>,
    /// Files copied from the task's folder into the workspace before the agent starts.
    files: Option<Vec<FileEntry>>,
    /// How a good agent would do it: text, or a list of `{step, action}` maps (Auto-ClawEval).
    reference_solution: Option<ReferenceSolution>,
    /// A free-form category, used to break results down.
    category: Option<String>,
    /// `easy`, `medium` or `hard` (others are warned about).
    difficulty: Option<String>,
    /// The Claw-Eval task this one was generated from.
    claw_eval_id: Option<String>,
    /// clawtest: the capability this task measures, used to break results down.
    capability: Option<String>,
    /// clawtest: per-trial limits.
    limits: Option<LimitsEntry>,
    /// clawtest: the final score a trial needs to pass (overrides the suite's, 0..=1).
    #[schemars(range(min = 0.0, max = 1.0))]
    pass_threshold: Option<f64>,
    /// clawtest: faults the mock services inject into this task's trials.
    error_injection: Option<ErrorInjectionEntry>,
    /// clawtest: names of catalogue services the task uses, or task-local service definitions.
    services: Option<Vec<ServiceEntry>>,
    /// clawtest (closed loop): intermediate goals checked while the agent works.
    checkpoints: Option<Vec<CheckpointEntry>>,
    /// clawtest (closed loop): how the simulated user answers between rounds.
    feedback: Option<FeedbackEntry>,
    /// clawtest: a correct solution, played by `validate --feasibility` and `run --oracle`; each
    /// part left out is derived from the checks.
    oracle: Option<OracleEntry>,
}

/// One weighted, graded component.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct ScoringComponent {
    /// Unique within the task; shown in reports and snapshots.
    name: String,
    /// The share of the completion score (0..=1); all weights sum to 1.0.
    #[schemars(range(min = 0.0, max = 1.0))]
    weight: f64,
    check: CheckEntry,
}

/// Text where ClawEnvKit compares as text: numbers and booleans are read as their text.
struct Text;

impl JsonSchema for Text {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Text".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Text (numbers and booleans are read as their text).",
            "type": ["string", "number", "boolean"]
        })
    }
}

/// Keywords: a list of text, or one text.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Keywords {
    List(Vec<Text>),
    One(String),
}

/// One step of an `audit_sequence`: an action name, or an action with fields to match.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum SequenceStep {
    Action(Text),
    Matched {
        action: Text,
        field_match: Option<Map<String, Value>>,
    },
}

/// A scoring check: one of the 15 check types, chosen by `type`.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(dead_code)]
enum CheckEntry {
    /// The audit log has a call of `action` on `service` (whose params match `field_match`).
    AuditActionExists {
        service: Text,
        action: Text,
        field_match: Option<Map<String, Value>>,
    },
    /// A call of `action` has `field` equal to `value`.
    AuditFieldEquals {
        service: Text,
        action: Text,
        field: Text,
        value: Value,
    },
    /// A call of `action` has `field` containing `contains` (alias: `value`).
    AuditFieldContains {
        service: Text,
        action: Text,
        field: Text,
        contains: Option<Text>,
        value: Option<Text>,
    },
    /// At least `count` (alias: `min_count`) calls of `action`.
    AuditCountGte {
        service: Text,
        action: Text,
        count: Option<i64>,
        min_count: Option<i64>,
    },
    /// Exactly `count` (alias: `expected_count`) calls of `action`.
    AuditCountEquals {
        service: Text,
        action: Text,
        count: Option<i64>,
        expected_count: Option<i64>,
    },
    /// The `actions` were called in this order (other calls may come between).
    AuditSequence {
        service: Text,
        actions: Vec<SequenceStep>,
    },
    /// The agent's output contains every keyword (case-insensitive).
    KeywordsPresent {
        keywords: Keywords,
        /// Only `agent_output` can be read.
        #[serde(rename = "in")]
        source: Option<String>,
    },
    /// The agent's output contains none of the keywords (case-insensitive).
    KeywordsAbsent {
        keywords: Keywords,
        /// Only `agent_output` can be read.
        #[serde(rename = "in")]
        source: Option<String>,
    },
    /// The agent's output matches the regular expression (Rust syntax, case-insensitive).
    PatternMatch { pattern: String },
    /// The agent's output is at least `min_length` (alias: `length`) characters long.
    MinLength {
        min_length: Option<i64>,
        length: Option<i64>,
    },
    /// A file exists in the workspace after the run.
    FileExists { path: Text },
    /// A workspace file's SHA-256 digest (64 hexadecimal digits).
    FileHashEquals { path: Text, hash: String },
    /// A shell command, run where the agent ran, exits with `expected_exit` (default 0).
    ExitCode {
        cmd: Text,
        expected_exit: Option<i64>,
    },
    /// pytest passes on `test_file`, where the agent ran.
    PytestPass {
        test_file: Text,
        pytest_args: Option<Text>,
    },
    /// A model grades the trajectory against the rubric (at most 0.55 of the weight with
    /// tools, 0.65 without).
    LlmJudge { rubric: String },
}

/// A safety check, chosen by `type`.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(dead_code)]
enum SafetyCheckEntry {
    /// The tool must never be called.
    ToolNotCalled {
        tool_name: Text,
        reason: Option<String>,
    },
    /// None of the keywords may appear in the agent's output.
    KeywordsNotInOutput {
        keywords: Keywords,
        reason: Option<String>,
    },
}

/// A tool the agent is offered: a route of a mock service.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct ToolEntry {
    /// The tool's name, as the agent sees it and the audit log records it.
    name: String,
    /// The mock service (`todo`, `gmail`, `calendar`, …).
    service: String,
    /// The route, e.g. `/todo/tasks/update`.
    endpoint: String,
    /// The route's method; `POST` when left out.
    method: Option<crate::method::Method>,
    description: Option<String>,
}

/// A file copied into the workspace.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct FileEntry {
    /// Relative to the task's folder, and inside it.
    source: String,
    /// Under `/workspace/`.
    target: String,
}

/// `reference_solution`: text, or a list of steps.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum ReferenceSolution {
    Text(String),
    Steps(Vec<Value>),
}

/// Per-trial limits.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct LimitsEntry {
    /// Seconds before the harness is stopped (default 300).
    #[schemars(range(min = 0.0))]
    timeout_seconds: Option<f64>,
    /// Model turns allowed (default 20).
    #[schemars(range(min = 1))]
    max_turns: Option<u32>,
}

/// The task's own fault settings: what it names overrides the suite's `[faults]` (by default
/// 25 % of calls fail: 429, 500 or slow).
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ErrorInjectionEntry {
    /// The probability that a request is answered with a fault (default: the suite's
    /// `[faults] rate`, 0.25); 0 opts the task out.
    #[schemars(range(min = 0.0, max = 1.0))]
    rate: Option<f64>,
    /// Mixed into every trial's seed (default: the suite's `[faults] seed`).
    seed: Option<u64>,
    mode: Option<InjectionMode>,
    /// Why the task changes the suite's faults; `validate` warns about `rate: 0` without one.
    reason: Option<String>,
}

/// How faults are spread over requests.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum InjectionMode {
    /// Each request independently (ClawEnvKit's behaviour).
    Uniform,
    /// In runs, as real rate limits come.
    Burst,
}

/// Who writes a closed loop's follow-ups.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum SimulatorKind {
    /// Deterministic: the fixed messages, else the missing checkpoints' names.
    Template,
    /// A model through the gateway, recorded and replayed.
    Llm,
}

/// What of the supervisor's decision reaches the simulated user.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum Barrier {
    /// The verdict, attempt state, recoverable and score only (default for `llm`).
    Strict,
    /// Those and each missed checkpoint's public feedback (default for `template`).
    Guided,
}

/// A catalogue service's name, or a task-local service definition.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum ServiceEntry {
    Name(String),
    Definition(ServiceDescription),
}

/// A closed-loop checkpoint.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct CheckpointEntry {
    /// Public: reports show it, and the template simulator says it.
    name: String,
    /// Hidden: any scoring check type, or an `llm_judge` rubric.
    check: CheckEntry,
    /// The share of the round's score (every checkpoint or none; none shares 1 equally).
    #[schemars(range(min = 0.0, max = 1.0))]
    weight: Option<f64>,
    /// Hidden: a reference answer given to the judge of an `llm_judge` rubric.
    reference: Option<String>,
    /// Named to the simulated user from this round on (graded in every round).
    #[schemars(range(min = 1))]
    after_turn: Option<u32>,
    /// What the simulated user says when the checkpoint is not met.
    feedback: Option<String>,
    /// Hidden: while it is not met (from its round on), the round scores at most this.
    #[schemars(range(min = 0.0, max = 1.0))]
    cap: Option<f64>,
    /// Hidden: a round that misses it fails (no later round can mend it).
    unrecoverable: Option<bool>,
}

/// A correct solution of the task.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct OracleEntry {
    /// The tool calls, in order.
    calls: Option<Vec<OracleCallEntry>>,
    /// The final answer.
    answer: Option<String>,
    /// Files the solution leaves in the workspace.
    files: Option<Vec<OracleFileEntry>>,
}

/// One tool call of the oracle.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct OracleCallEntry {
    /// One of the task's tools.
    tool: String,
    /// The request body.
    arguments: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A file the oracle writes.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct OracleFileEntry {
    /// Under /workspace.
    path: String,
    /// The file's text.
    content: String,
}

/// The simulated user between rounds.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct FeedbackEntry {
    /// The most rounds in all, the first included (default 3, at most 20).
    #[schemars(range(min = 1, max = 20))]
    max_rounds: Option<u32>,
    /// Who writes the follow-ups (default `template`).
    simulator: Option<SimulatorKind>,
    /// What of the supervisor's decision the simulator is given (default: `strict` for
    /// `llm`, `guided` for `template`).
    barrier: Option<Barrier>,
    /// Fixed follow-up messages, sent in order (template simulator).
    messages: Option<Vec<String>>,
    /// The simulated user the llm simulator plays.
    persona: Option<String>,
    /// The model the llm simulator asks.
    model: Option<String>,
    /// Each round's time limit (default `limits.timeout_seconds`).
    round_timeout_seconds: Option<f64>,
    /// The harness's time over all rounds.
    total_timeout_seconds: Option<f64>,
    /// Who decides each round (default `deterministic`: the checkpoints).
    supervisor: Option<SupervisorKind>,
    /// The model the model supervisor asks.
    supervisor_model: Option<String>,
    /// Hidden: the model supervisor's evaluation spec, or the name of a YAML file beside the
    /// task holding it.
    evaluation: Option<EvaluationEntry>,
}

/// Who decides a closed loop's rounds.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum SupervisorKind {
    /// The checkpoints, graded by clawtest (reproducible without a model).
    Deterministic,
    /// A model reading the hidden evaluation spec, through the gateway.
    Model,
}

/// The evaluation spec, or the file beside the task that holds it.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum EvaluationEntry {
    File(String),
    Spec(Box<EvaluationSpec>),
}

/// UniClawBench's eval_rule.md as YAML (docs/closed-loop.md, "The model supervisor").
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct EvaluationSpec {
    /// §1 What the supervisor cares about most.
    philosophy: Option<String>,
    /// §2 The public task in the supervisor's terms, and what completes it.
    contract: String,
    /// §3 Which source to use, how to resolve ambiguity.
    sources: Option<String>,
    /// §4 The hidden values the evidence is checked against (text, or structured values).
    ground_truth: serde_json::Value,
    /// §5 Weighted rubric lines summing to 1.
    checkpoints: Vec<RubricEntry>,
    /// §6 Caps that bind while their check is not met.
    score_caps: Option<Vec<ScoreCapEntry>>,
    /// §6 The least score (after caps) a pass needs (default: the task's pass threshold).
    #[schemars(range(min = 0.0, max = 1.0))]
    pass_at: Option<f64>,
    /// §7 Continue vs fail guidance.
    continue_vs_fail: Option<GuidanceEntry>,
    /// §8 Hidden reference assets, in words.
    references: Option<String>,
    /// §9 Values that may change between the capture and the run.
    dynamic_content: Option<String>,
    /// Task-specific instructions to the supervisor.
    instructions: Option<String>,
}

/// One weighted rubric line.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct RubricEntry {
    name: String,
    #[schemars(range(min = 0.0, max = 1.0))]
    weight: f64,
    /// What satisfies it.
    criterion: String,
}

/// A score cap: while `check` is not met, the round scores at most `cap`.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ScoreCapEntry {
    name: String,
    #[schemars(range(min = 0.0, max = 1.0))]
    cap: f64,
    /// The failure mode, in words.
    when: String,
    check: CheckEntry,
}

/// Continue vs fail guidance.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct GuidanceEntry {
    /// Where another round can help.
    #[serde(rename = "continue")]
    continue_when: Option<Vec<String>>,
    /// Where it cannot.
    fail: Option<Vec<String>>,
    /// A score (after caps) below it fails the round.
    #[schemars(range(min = 0.0, max = 1.0))]
    fail_below: Option<f64>,
    /// Outcomes no later round mends: while the check is not met, the round fails.
    unrecoverable: Option<Vec<UnrecoverableEntry>>,
}

/// An unrecoverable outcome.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct UnrecoverableEntry {
    name: String,
    /// The outcome, in words.
    when: String,
    check: CheckEntry,
}
