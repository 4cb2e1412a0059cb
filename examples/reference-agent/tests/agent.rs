//! End-to-end runs of the built binary against a scripted model server and a mock tool service.

mod support;

use serde_json::{Value, json};
use support::{
    MockServer, Reply, Run, TempDir, final_reply, run_agent, run_agent_with_arguments,
    tool_calls_reply,
};

/// Both shapes in one file: the OpenAI `function` object plus ClawEnvKit's execution keys.
const TOOLS: &str = r#"[
  {"type": "function",
   "function": {"name": "list_tasks", "description": "List tasks by status.",
                "parameters": {"type": "object", "properties": {"status": {"type": "string"}}}},
   "name": "list_tasks", "description": "List tasks by status.",
   "endpoint": "/todo/tasks", "method": "POST",
   "parameters": {"type": "object", "properties": {"status": {"type": "string"}}},
   "required": []},
  {"name": "delete_task", "description": "Delete a task.", "endpoint": "/todo/delete", "method": "delete",
   "parameters": {"id": {"type": "integer"}}, "required": ["id"]}
]"#;

/// Runs the agent with the given model and service servers and extra variables.
fn run_with(
    directory: &TempDir,
    model: &MockServer,
    services: &MockServer,
    extra: &[(&str, &str)],
) -> Run {
    let tools = directory.write("tools.json", TOOLS);
    let model_url = format!("{}/v1", model.url);
    let mut text = vec![
        ("CLAWTEST_PROMPT", "List my open tasks."),
        ("OPENAI_BASE_URL", model_url.as_str()),
        ("CLAWTEST_SERVICES_URL", services.url.as_str()),
    ];
    text.extend_from_slice(extra);
    run_agent(&[("EVAL_TOOLS_FILE", &tools)], &text)
}

fn tool_services() -> MockServer {
    MockServer::start(|request| match request.path.as_str() {
        "/todo/tasks" => Reply::new(200, r#"{"tasks":[{"id":1,"title":"Write report"}]}"#),
        _ => Reply::new(500, r#"{"error":"database unavailable"}"#),
    })
}

#[test]
fn two_turn_run_calls_the_tool_and_prints_the_final_answer() {
    let directory = TempDir::new();
    let model = MockServer::scripted(vec![
        tool_calls_reply(&[("call_1", "list_tasks", r#"{"status":"open"}"#)]),
        final_reply("You have one open task: Write report."),
    ]);
    let services = tool_services();
    let run = run_with(
        &directory,
        &model,
        &services,
        &[
            ("OPENAI_API_KEY", "sk-test"),
            ("CLAWTEST_MODEL", "test-model"),
        ],
    );

    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "You have one open task: Write report.\n");
    assert!(
        run.stderr
            .contains(r#"turn 1: calling list_tasks {"status":"open"}"#),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("turn 2: final answer (37 chars)"),
        "{}",
        run.stderr
    );

    // The service received exactly the tool call.
    let service_requests = services.requests();
    assert_eq!(service_requests.len(), 1);
    let call = &service_requests[0];
    assert_eq!(call.method, "POST");
    assert_eq!(call.path, "/todo/tasks");
    assert_eq!(call.header("content-type"), Some("application/json"));
    assert_eq!(call.json(), json!({"status": "open"}));

    // The first model request: exact top-level shape, OpenAI-only tool definitions.
    let model_requests = model.requests();
    assert_eq!(model_requests.len(), 2);
    let first = &model_requests[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(first.header("authorization"), Some("Bearer sk-test"));
    let first = first.json();
    let keys: Vec<&str> = first
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["model", "messages", "tools", "temperature"]);
    assert_eq!(first["model"], "test-model");
    assert_eq!(first["temperature"], 0);
    assert_eq!(first["messages"][0]["role"], "system");
    assert_eq!(
        first["messages"][1],
        json!({"role": "user", "content": "List my open tasks."})
    );
    assert_eq!(first["messages"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        first["tools"],
        json!([
            {"type": "function", "function": {"name": "list_tasks", "description": "List tasks by status.",
             "parameters": {"type": "object", "properties": {"status": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "delete_task", "description": "Delete a task.",
             "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}}
        ])
    );

    // The second model request carries the assistant tool call and its result.
    let second = model_requests[1].json();
    let messages = second["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 4);
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "list_tasks", "arguments": "{\"status\":\"open\"}"}}
        ]})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_1",
               "content": r#"{"tasks":[{"id":1,"title":"Write report"}]}"#})
    );
}

#[test]
fn non_2xx_tool_response_is_fed_back_with_the_status_prefix() {
    let directory = TempDir::new();
    let model = MockServer::scripted(vec![
        tool_calls_reply(&[
            ("call_a", "delete_task", r#"{"id":1}"#),
            ("call_b", "delete_task", "not json"),
        ]),
        final_reply("The service failed."),
    ]);
    let services = tool_services();
    // Retries off: each failing call is made once and its answer goes to the model.
    let run = run_with(&directory, &model, &services, &[("AGENT_RETRIES", "0")]);

    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let service_requests = services.requests();
    assert_eq!(service_requests.len(), 2);
    assert_eq!(service_requests[0].method, "DELETE");
    assert_eq!(service_requests[0].path, "/todo/delete");
    assert_eq!(service_requests[0].json(), json!({"id": 1}));
    // Invalid arguments are replaced by {} and the model is told so.
    assert_eq!(service_requests[1].json(), json!({}));

    let model_requests = model.requests();
    // No key configured: no Authorization header at all.
    assert_eq!(model_requests[0].header("authorization"), None);
    let second = model_requests[1].json();
    let messages = second["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 5);
    assert_eq!(messages[3]["tool_call_id"], "call_a");
    assert_eq!(
        messages[3]["content"],
        r#"HTTP 500: {"error":"database unavailable"}"#
    );
    assert_eq!(messages[4]["tool_call_id"], "call_b");
    let content = messages[4]["content"].as_str().expect("content");
    assert!(content.contains("not valid JSON"), "{content}");
    assert!(
        content.ends_with(r#"HTTP 500: {"error":"database unavailable"}"#),
        "{content}"
    );
}

#[test]
fn unreachable_service_and_unknown_tool_become_error_results() {
    let directory = TempDir::new();
    let model = MockServer::scripted(vec![
        tool_calls_reply(&[
            ("call_x", "list_tasks", "{}"),
            ("call_y", "launch_rockets", "{}"),
        ]),
        final_reply("done"),
    ]);
    // Port 1 on loopback: nothing listens there, so the connection is refused.
    let unreachable = "http://127.0.0.1:1";
    let tools = directory.write("tools.json", TOOLS);
    let model_url = format!("{}/v1", model.url);
    let run = run_agent(
        &[("CLAWTEST_TOOLS_FILE", &tools)],
        &[
            ("CLAWTEST_PROMPT", "Try."),
            ("OPENAI_BASE_URL", &model_url),
            ("CLAWTEST_SERVICES_URL", unreachable),
        ],
    );

    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let second = model.requests()[1].json();
    let failed = second["messages"][3]["content"].as_str().expect("content");
    assert!(
        failed.starts_with("error: POST http://127.0.0.1:1/todo/tasks"),
        "{failed}"
    );
    let unknown = second["messages"][4]["content"].as_str().expect("content");
    assert!(
        unknown.starts_with(r#"error: unknown tool "launch_rockets""#),
        "{unknown}"
    );
}

#[test]
fn max_turns_without_a_final_answer_exits_3() {
    let directory = TempDir::new();
    let model = MockServer::scripted(vec![tool_calls_reply(&[("call_loop", "list_tasks", "{}")])]);
    let services = tool_services();
    let run = run_with(&directory, &model, &services, &[("AGENT_MAX_TURNS", "2")]);

    assert_eq!(run.code, Some(3), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("2 turns"), "{}", run.stderr);
    assert_eq!(model.requests().len(), 2);
    assert_eq!(services.requests().len(), 2);
}

#[test]
fn model_http_error_exits_1_with_status_and_body() {
    let directory = TempDir::new();
    let model = MockServer::scripted(vec![Reply::new(
        502,
        r#"{"error":{"message":"upstream gateway down"}}"#,
    )]);
    let services = tool_services();
    let run = run_with(&directory, &model, &services, &[]);

    assert_eq!(run.code, Some(1), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("502"), "{}", run.stderr);
    assert!(
        run.stderr.contains("upstream gateway down"),
        "{}",
        run.stderr
    );
    assert!(services.requests().is_empty());
}

#[test]
fn unreadable_model_response_exits_1() {
    let directory = TempDir::new();
    let model = MockServer::scripted(vec![Reply::new(200, "<html>not a completion</html>")]);
    let services = tool_services();
    let run = run_with(&directory, &model, &services, &[]);

    assert_eq!(run.code, Some(1), "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains("<html>not a completion</html>"),
        "{}",
        run.stderr
    );
}

#[test]
fn missing_tools_file_exits_2_naming_the_path() {
    let directory = TempDir::new();
    let missing = directory.join("no-such-tools.json");
    let run = run_agent(
        &[("EVAL_TOOLS_FILE", &missing)],
        &[("CLAWTEST_PROMPT", "Hi.")],
    );

    assert_eq!(run.code, Some(2), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains(&missing.display().to_string()),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("EVAL_TOOLS_FILE"), "{}", run.stderr);
}

#[test]
fn invalid_tools_file_and_missing_prompt_exit_2() {
    let directory = TempDir::new();
    let tools = directory.write("tools.json", r#"{"not": "an array"}"#);
    let run = run_agent(
        &[("CLAWTEST_TOOLS_FILE", &tools)],
        &[("CLAWTEST_PROMPT", "Hi.")],
    );
    assert_eq!(run.code, Some(2), "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains(&tools.display().to_string()),
        "{}",
        run.stderr
    );

    let missing_prompt = directory.join("prompt.md");
    let run = run_agent(&[("CLAWTEST_PROMPT_FILE", &missing_prompt)], &[]);
    assert_eq!(run.code, Some(2), "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains(&missing_prompt.display().to_string()),
        "{}",
        run.stderr
    );
}

#[test]
fn prompt_file_is_read_and_tools_can_be_empty() {
    let directory = TempDir::new();
    let prompt = directory.write("prompt.md", "Say hello.\n");
    let tools = directory.write("tools.json", "[]");
    let model = MockServer::scripted(vec![final_reply("hello")]);
    let model_url = format!("{}/v1/", model.url);
    let run = run_agent(
        &[
            ("CLAWTEST_PROMPT_FILE", &prompt),
            ("CLAWTEST_TOOLS_FILE", &tools),
        ],
        &[
            ("OPENAI_BASE_URL", &model_url),
            ("OPENAI_MODEL", "fallback-model"),
        ],
    );

    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "hello\n");
    let request = model.requests()[0].clone();
    assert_eq!(request.path, "/v1/chat/completions");
    let body: Value = request.json();
    assert_eq!(body["model"], "fallback-model");
    assert_eq!(body["messages"][1]["content"], "Say hello.\n");
    assert!(body.get("tools").is_none(), "{body}");
}

/// A service that answers 429, then 500, then the task list, to each call in turn.
fn flaky_services() -> MockServer {
    MockServer::scripted(vec![
        Reply::new(429, r#"{"error":"rate_limit_exceeded"}"#),
        Reply::new(500, r#"{"error":"internal_server_error"}"#),
        Reply::new(200, r#"{"tasks":[{"id":1,"title":"Write report"}]}"#),
    ])
}

/// The tool result the model got in its second request.
fn first_tool_result(model: &MockServer) -> Value {
    model.requests()[1].json()["messages"][3]["content"].clone()
}

#[test]
fn a_rate_limited_then_failing_tool_call_is_retried_and_the_model_sees_the_answer() {
    let directory = TempDir::new();
    let model = MockServer::scripted(vec![
        tool_calls_reply(&[("call_1", "list_tasks", r#"{"status":"open"}"#)]),
        final_reply("One open task."),
    ]);
    let services = flaky_services();
    let run = run_with(&directory, &model, &services, &[]);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(services.requests().len(), 3, "one call and two retries");
    assert_eq!(
        first_tool_result(&model),
        r#"{"tasks":[{"id":1,"title":"Write report"}]}"#
    );
    assert!(
        run.stderr.contains("answered HTTP 429: retry 1 of 3"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_no_retries_flag_hands_the_first_error_to_the_model() {
    let directory = TempDir::new();
    let model = MockServer::scripted(vec![
        tool_calls_reply(&[("call_1", "list_tasks", r#"{"status":"open"}"#)]),
        final_reply("The service is rate limited."),
    ]);
    let services = flaky_services();
    let tools = directory.write("tools.json", TOOLS);
    let model_url = format!("{}/v1", model.url);
    let run = run_agent_with_arguments(
        &[("EVAL_TOOLS_FILE", &tools)],
        &[
            ("CLAWTEST_PROMPT", "List my open tasks."),
            ("OPENAI_BASE_URL", model_url.as_str()),
            ("CLAWTEST_SERVICES_URL", services.url.as_str()),
        ],
        &["--no-retries"],
    );
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(services.requests().len(), 1);
    assert_eq!(
        first_tool_result(&model),
        r#"HTTP 429: {"error":"rate_limit_exceeded"}"#
    );
}

#[test]
fn an_unknown_argument_is_refused_by_name() {
    let run = run_agent_with_arguments(&[], &[("CLAWTEST_PROMPT", "x")], &["--retries"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("\"--retries\""), "{}", run.stderr);
}
