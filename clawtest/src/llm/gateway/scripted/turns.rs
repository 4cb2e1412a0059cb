//! Which turn of a script answers a conversation: the model turns already in it, and, for a
//! script with `retry_on`, which of them failed and are to be asked again. The model turns
//! are assistant messages (chat completions, messages) or runs of consecutive model items
//! (`function_call`, `reasoning`, assistant messages) in a responses `input`; a turn's results
//! are what follows it up to the next one (tool messages, `tool_result` blocks,
//! `function_call_output` items).

use serde_json::Value;

use super::Format;

/// How many times in a row a failed turn is asked again before the script moves on: a
/// model that reads an error retries, but not forever (the services may fail again).
pub(super) const MAX_REPEATS: usize = 3;

/// Where a conversation stands: the model turns it holds, and the script's turn to answer it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Position {
    /// The model turns already in the conversation (each answer's ids are numbered by it).
    pub(super) model_turns: usize,
    /// The script's turn that answers: `model_turns` less the repeated turns.
    pub(super) script_turn: usize,
}

/// The position of `request`'s conversation. A model turn whose results contain one of the
/// `retry_on` texts failed: the next answer repeats its script turn (at most
/// [`MAX_REPEATS`] times in a row), as a model would call a tool again after an error.
pub(super) fn position(format: Format, request: &Value, retry_on: &[String]) -> Position {
    let results = match format {
        Format::Responses => responses_results(&request["input"]),
        Format::ChatCompletions | Format::Messages => message_results(&request["messages"]),
    };
    let mut script_turn = 0;
    let mut repeats = 0;
    for result in &results {
        let failed = retry_on.iter().any(|text| result.contains(text.as_str()));
        if failed && repeats < MAX_REPEATS {
            repeats += 1;
        } else {
            script_turn += 1;
            repeats = 0;
        }
    }
    Position {
        model_turns: results.len(),
        script_turn,
    }
}

/// Per assistant message, the JSON text of the messages after it up to the next one (tool
/// messages; an Anthropic user message of `tool_result` blocks).
fn message_results(messages: &Value) -> Vec<String> {
    let mut results: Vec<String> = Vec::new();
    for message in messages.as_array().into_iter().flatten() {
        if message["role"] == "assistant" {
            results.push(String::new());
        } else if let Some(last) = results.last_mut() {
            last.push_str(&message["content"].to_string());
        }
    }
    results
}

/// Per run of model items in a responses `input`, the JSON text of the items after it up to
/// the next run (`function_call_output` items).
fn responses_results(input: &Value) -> Vec<String> {
    let by_model = |item: &Value| {
        item["role"] == "assistant"
            || matches!(item["type"].as_str(), Some("function_call" | "reasoning"))
    };
    let mut results: Vec<String> = Vec::new();
    let mut previous = false;
    for item in input.as_array().into_iter().flatten() {
        let current = by_model(item);
        if current && !previous {
            results.push(String::new());
        } else if !current && let Some(last) = results.last_mut() {
            last.push_str(&item.to_string());
        }
        previous = current;
    }
    results
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn retry_on() -> Vec<String> {
        vec!["rate_limit_exceeded".into()]
    }

    fn chat(tool_results: &[&str]) -> Value {
        let mut messages = vec![json!({"role": "user", "content": "go"})];
        for result in tool_results {
            messages.push(json!({"role": "assistant", "content": null}));
            messages.push(json!({"role": "tool", "content": result}));
        }
        json!({ "messages": messages })
    }

    #[test]
    fn without_retry_on_every_model_turn_moves_the_script_on() {
        let request = chat(&[r#"{"error":"rate_limit_exceeded"}"#, "[]"]);
        let position = position(Format::ChatCompletions, &request, &[]);
        assert_eq!(
            position,
            Position {
                model_turns: 2,
                script_turn: 2
            }
        );
    }

    #[test]
    fn a_failed_turn_is_asked_again() {
        let request = chat(&["[]", r#"{"error":"rate_limit_exceeded"}"#]);
        let position = position(Format::ChatCompletions, &request, &retry_on());
        assert_eq!(
            position,
            Position {
                model_turns: 2,
                script_turn: 1
            }
        );
        // The repeat succeeded: the script moves on.
        let request = chat(&["[]", r#"{"error":"rate_limit_exceeded"}"#, "ok"]);
        assert_eq!(
            super::position(Format::ChatCompletions, &request, &retry_on()).script_turn,
            2
        );
    }

    #[test]
    fn a_turn_that_keeps_failing_is_given_up_after_the_repeats() {
        let failed = r#"{"error":"rate_limit_exceeded"}"#;
        let request = chat(&[failed; MAX_REPEATS]);
        assert_eq!(
            position(Format::ChatCompletions, &request, &retry_on()).script_turn,
            0
        );
        let request = chat(&[failed; MAX_REPEATS + 1]);
        assert_eq!(
            position(Format::ChatCompletions, &request, &retry_on()).script_turn,
            1
        );
    }

    #[test]
    fn responses_results_are_the_function_call_outputs_after_a_run_of_model_items() {
        let request = json!({"input": [
            {"role": "user", "content": "go"},
            {"type": "reasoning", "summary": []},
            {"type": "function_call", "call_id": "c", "name": "list_tasks", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "{\"error\": \"rate_limit_exceeded\"}"},
        ]});
        assert_eq!(
            position(Format::Responses, &request, &retry_on()),
            Position {
                model_turns: 1,
                script_turn: 0
            }
        );
        assert_eq!(position(Format::Responses, &request, &[]).script_turn, 1);
    }

    #[test]
    fn anthropic_tool_results_are_read_from_the_user_message_after_the_turn() {
        let request = json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "list_tasks", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": true, "content": "{\"error\":\"rate_limit_exceeded\"}"}]},
        ]});
        assert_eq!(
            position(Format::Messages, &request, &retry_on()).script_turn,
            0
        );
    }
}
