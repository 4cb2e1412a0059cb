//! One trial's trajectory as a timeline: the prompt, each model call (its answer and the tool
//! calls it asked for), each tool call with the audit entries that served it (an injected
//! fault marked, and whether a later call recovered from it), the check commands, the final
//! answer and the workspace files.
//!
//! The trajectory keeps model calls and audit entries apart, without a common clock, so tool
//! calls are paired with audit entries by name, in order: a tool call takes the next entry of
//! its action; an entry no tool call names (an agent's own retry, an agent that calls services
//! directly, a streamed answer whose tool calls are not parsed) still shows, where it falls.

use std::fmt::Write as _;

use serde_json::Value;

use super::escape_limited;
use crate::escape;
use crate::trajectory::{AuditEntry, FaultKind, ModelCall, Trajectory};

/// Timeline items shown before the rest is folded into pages of the same size.
const PAGE: usize = 50;

/// Appends the trial's timeline, folded, to `page`.
pub(super) fn render(page: &mut String, trajectory: &Trajectory) {
    let items = items(trajectory);
    let _ = write!(
        page,
        "<details class=\"trajectory\" open><summary>Trajectory: {} model calls, {} audit entries, \
         {} faults injected, harness {} after {} ms</summary>",
        trajectory.model_calls.len(),
        trajectory.audit.len(),
        trajectory
            .audit
            .iter()
            .filter(|entry| entry.fault.is_some())
            .count(),
        escape::html(&trajectory.exit.describe()),
        trajectory.duration.as_millis()
    );
    let mut pages = items.chunks(PAGE);
    if let Some(first) = pages.next() {
        page.push_str("<ol class=\"timeline\">");
        first.iter().for_each(|item| page.push_str(item));
        page.push_str("</ol>");
    }
    for (index, rest) in pages.enumerate() {
        let start = (index + 1) * PAGE + 1;
        let _ = write!(
            page,
            "<details class=\"page\"><summary>items {start}–{} of {}</summary><ol class=\"timeline\">",
            start + rest.len() - 1,
            items.len()
        );
        rest.iter().for_each(|item| page.push_str(item));
        page.push_str("</ol></details>");
    }
    workspace(page, trajectory);
    if !trajectory.stderr_tail.is_empty() {
        let _ = write!(
            page,
            "<details><summary>harness stderr (end)</summary><pre>{}</pre></details>",
            escape_limited(&trajectory.stderr_tail)
        );
    }
    page.push_str("</details>");
}

/// Every item of the timeline, in order, as HTML.
fn items(trajectory: &Trajectory) -> Vec<String> {
    let mut items = Vec::new();
    // The prompt is the harness's: a simulated user's or a judge's call asks another model.
    if let Some(first) = trajectory
        .model_calls
        .iter()
        .find(|call| call.speaker.is_harness())
    {
        items.push(prompt(first));
    }
    let audit = &trajectory.audit;
    let mut cursor = 0;
    for call in &trajectory.model_calls {
        let requested = tool_calls(&call.response);
        items.push(model_call(call, &requested));
        for (name, arguments) in requested {
            let Some(found) = (cursor..audit.len()).find(|&at| audit[at].action == name) else {
                items.push(tool_call(&name, &arguments, None, audit));
                continue;
            };
            for entry in &audit[cursor..found] {
                items.push(unmatched(entry, audit));
            }
            items.push(tool_call(&name, &arguments, Some(&audit[found]), audit));
            cursor = found + 1;
        }
    }
    for entry in &audit[cursor.min(audit.len())..] {
        items.push(unmatched(entry, audit));
    }
    for command in &trajectory.commands {
        items.push(format!(
            "<li class=\"command\"><b>check command</b> <code>{}</code> → {}<pre>{}</pre></li>",
            escape::html(&command.command),
            match (command.timed_out, command.exit_code) {
                (true, _) => "timed out".to_string(),
                (false, Some(code)) => format!("exit code {code}"),
                (false, None) => "killed or not started".to_string(),
            },
            escape_limited(&command.output_tail)
        ));
    }
    items.push(format!(
        "<li class=\"answer\"><b>final answer</b> <span class=\"muted\">({})</span><pre>{}</pre></li>",
        match trajectory.output_source {
            crate::trajectory::OutputOrigin::Stdout => "the harness's stdout",
            crate::trajectory::OutputOrigin::AgentOutputFile => "agent_output.txt",
        },
        escape_limited(&trajectory.output)
    ));
    items
}

/// The first call's system and user messages: what the agent was asked.
fn prompt(call: &ModelCall) -> String {
    let mut text = String::new();
    if let Some(system) = call.request.get("system") {
        let _ = writeln!(text, "[system] {}", content_text(system));
    }
    for message in call
        .request
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if matches!(role, "system" | "user" | "developer") {
            let content = message.get("content").map(content_text).unwrap_or_default();
            let _ = writeln!(text, "[{role}] {content}");
        }
    }
    format!(
        "<li class=\"prompt\"><b>prompt</b><pre>{}</pre></li>",
        escape_limited(text.trim_end())
    )
}

/// A message's content as text: a string, or the text parts of a list of parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The tool calls an answer asks for, as (name, arguments text): OpenAI's `tool_calls` or
/// Anthropic's `tool_use` blocks.
fn tool_calls(response: &Value) -> Vec<(String, String)> {
    let mut calls = Vec::new();
    let openai = response
        .pointer("/choices/0/message/tool_calls")
        .and_then(Value::as_array);
    for call in openai.into_iter().flatten() {
        let function = call.get("function").unwrap_or(&Value::Null);
        calls.push((
            function
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            match function.get("arguments") {
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            },
        ));
    }
    let anthropic = response.get("content").and_then(Value::as_array);
    for block in anthropic.into_iter().flatten() {
        if block.get("type").and_then(Value::as_str) == Some("tool_use") {
            calls.push((
                block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                block.get("input").map(Value::to_string).unwrap_or_default(),
            ));
        }
    }
    calls
}

/// The assistant's words in an answer (OpenAI's message content, Anthropic's text blocks).
fn answer_text(response: &Value) -> String {
    if let Some(content) = response.pointer("/choices/0/message/content") {
        return content_text(content);
    }
    response
        .get("content")
        .map(content_text)
        .unwrap_or_default()
}

fn model_call(call: &ModelCall, requested: &[(String, String)]) -> String {
    let mut item = format!(
        "<li class=\"model\"><b>model call {}</b>{} <code>{}</code> → {} · {} in / {} out tokens{}",
        call.index + 1,
        match call.speaker {
            crate::trajectory::Speaker::Harness => String::new(),
            speaker => format!(" <span class=\"muted\">by {}</span>", speaker.described()),
        },
        escape::html(&call.path),
        call.status,
        call.input_tokens,
        call.output_tokens,
        call.cost_usd
            .map(|cost| format!(" · {}", crate::llm::money::dollars(cost)))
            .unwrap_or_default()
    );
    if !call.retried.is_empty() {
        let _ = write!(item, " · upstream retried after {:?}", call.retried);
    }
    let words = answer_text(&call.response);
    if !words.trim().is_empty() {
        let _ = write!(item, "<pre>{}</pre>", escape_limited(&words));
    }
    if !requested.is_empty() {
        let names: Vec<String> = requested
            .iter()
            .map(|(name, _)| escape::html(name))
            .collect();
        let _ = write!(item, "<div>asks for: {}</div>", names.join(", "));
    }
    folded(&mut item, "request", &call.request);
    match &call.events {
        Some(events) => {
            let _ = write!(
                item,
                "<details><summary>streamed answer ({} events)</summary><pre>{}</pre></details>",
                events.len(),
                escape_limited(&events.join("\n"))
            );
        }
        None => folded(&mut item, "answer", &call.response),
    }
    item.push_str("</li>");
    item
}

/// A JSON value, pretty, folded under `title`.
fn folded(item: &mut String, title: &str, value: &Value) {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    let _ = write!(
        item,
        "<details><summary>{title}</summary><pre>{}</pre></details>",
        escape_limited(&text)
    );
}

fn tool_call(
    name: &str,
    arguments: &str,
    served: Option<&AuditEntry>,
    audit: &[AuditEntry],
) -> String {
    let faulted = served.is_some_and(|entry| entry.fault.is_some());
    let mut item = format!(
        "<li class=\"tool{}\"><b>tool call</b> <code>{}</code>({})",
        if faulted { " fault" } else { "" },
        escape::html(name),
        escape_limited(arguments)
    );
    match served {
        Some(entry) => audit_entry(&mut item, entry, audit),
        None => item.push_str(" <span class=\"muted\">no service call recorded</span>"),
    }
    item.push_str("</li>");
    item
}

fn unmatched(entry: &AuditEntry, audit: &[AuditEntry]) -> String {
    let mut item = format!(
        "<li class=\"tool{}\"><b>service call</b> <span class=\"muted\">(no tool call names it)</span>",
        if entry.fault.is_some() { " fault" } else { "" }
    );
    audit_entry(&mut item, entry, audit);
    item.push_str("</li>");
    item
}

/// One audit entry: `#3 todo.create_task POST /todo/tasks → 429`, its fault and recovery, and
/// its parameters and answer, folded.
fn audit_entry(item: &mut String, entry: &AuditEntry, audit: &[AuditEntry]) {
    let _ = write!(
        item,
        "<div class=\"audit\">audit #{seq} <code>{service}.{action}</code> {endpoint} → {status}",
        seq = entry.seq,
        service = escape::html(&entry.service),
        action = escape::html(&entry.action),
        endpoint = escape::html(&entry.endpoint),
        status = entry.status,
    );
    if let Some(fault) = entry.fault {
        let what = match fault {
            FaultKind::RateLimited => "rate_limited (429)".to_string(),
            FaultKind::ServerError => "server_error (500)".to_string(),
            FaultKind::Slow => format!("slow ({} ms)", entry.delay_ms.unwrap_or(0)),
        };
        let _ = write!(
            item,
            " <span class=\"badge fail\">injected fault: {what}</span>"
        );
        if fault != FaultKind::Slow {
            match recovery(entry, audit) {
                Some(seq) => {
                    let _ = write!(
                        item,
                        " <span class=\"badge pass\">recovered by #{seq}</span>"
                    );
                }
                None => item.push_str(" <span class=\"badge fail\">not recovered</span>"),
            }
        }
    }
    let params = serde_json::to_string_pretty(&entry.params).unwrap_or_default();
    let response = serde_json::to_string_pretty(&*entry.response).unwrap_or_default();
    let _ = write!(
        item,
        "<details><summary>parameters and answer</summary><pre>{}</pre><pre>{}</pre></details></div>",
        escape_limited(&params),
        escape_limited(&response)
    );
}

/// The later successful call of the same service action that recovered from a faulted one.
fn recovery(faulted: &AuditEntry, audit: &[AuditEntry]) -> Option<u64> {
    audit
        .iter()
        .find(|entry| {
            entry.seq > faulted.seq
                && entry.service == faulted.service
                && entry.action == faulted.action
                && entry.reached_service()
                && entry.status < 400
        })
        .map(|entry| entry.seq)
}

fn workspace(page: &mut String, trajectory: &Trajectory) {
    if trajectory.workspace.is_empty() {
        return;
    }
    let _ = write!(
        page,
        "<details><summary>workspace files ({})</summary><table><tr><th>path</th><th>bytes</th><th>sha256</th></tr>",
        trajectory.workspace.len()
    );
    for (path, file) in &trajectory.workspace {
        let _ = write!(
            page,
            "<tr><td><code>{}</code></td><td class=\"number\">{}</td><td><code>{}</code></td></tr>",
            escape::html(path),
            file.size,
            escape::html(&file.sha256)
        );
    }
    page.push_str("</table></details>");
}
