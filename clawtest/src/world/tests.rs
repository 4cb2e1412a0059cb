//! The world request by request: fixtures in every accepted shape, ClawEnvKit's answers and
//! records, what is audited and what is not, reproducible faults, and text answers equal to
//! value answers.

use serde_json::json;

use super::*;

fn world(services: &[&str], fixtures: Value, tools: &[ToolBinding]) -> World {
    let services: Vec<String> = services.iter().map(|s| s.to_string()).collect();
    World::new(
        &Catalogue::builtin(),
        &services,
        &fixtures,
        tools,
        WorldOptions::default(),
    )
    .expect("world builds")
}

fn post(w: &mut World, path: &str, body: Value) -> ServiceResponse {
    w.handle("POST", path, body.to_string().as_bytes())
}

fn todo_fixtures() -> Value {
    json!({"tasks": [
        {"id": "t1", "title": "Write report", "status": "pending", "priority": "high"},
        {"task_id": "t2", "title": "Book flights", "status": "completed", "priority": "low"},
    ]})
}

#[test]
fn todo_fixtures_load_in_every_accepted_shape_and_copy_id() {
    let records = todo_fixtures()["tasks"].clone();
    for fixtures in [
        todo_fixtures(),
        json!({"tasks": {"tasks": records}}),
        json!({"todo": records}),
        json!({"tasks": {"meta": "ignored", "items": records}}),
        records.clone(),
    ] {
        let w = world(&["todo"], fixtures.clone(), &[]);
        let tasks = w.records("todo", "tasks").unwrap();
        assert_eq!(tasks.len(), 2, "{fixtures}");
        assert_eq!(tasks[0]["task_id"], "t1", "id copied into task_id");
        assert_eq!(tasks[1]["task_id"], "t2");
    }
}

#[test]
fn list_tasks_filters_by_status_and_records_model_dump_params() {
    let mut w = world(&["todo"], todo_fixtures(), &[]);
    let all = w.handle("POST", "/todo/tasks", b"");
    assert_eq!(all.status, 200);
    assert_eq!(all.body["total"], 2);
    assert_eq!(all.body["tasks"][0]["title"], "Write report");
    let done = post(
        &mut w,
        "/todo/tasks",
        json!({"status": "completed", "extra": 1}),
    );
    assert_eq!(done.body["total"], 1);
    assert_eq!(done.body["tasks"][0]["task_id"], "t2");
    assert_eq!(w.audit()[0].params, json!({"status": "all"}));
    assert_eq!(w.audit()[1].params, json!({"status": "completed"}));
    assert_eq!(w.audit()[1].action, "list_tasks");
}

#[test]
fn create_task_matches_clawenvkit_record_and_ids_are_len_plus_one() {
    let mut w = world(&["todo"], todo_fixtures(), &[]);
    let created = post(&mut w, "/todo/tasks/create", json!({"title": "Call Bob"}));
    assert_eq!(
        created.body,
        json!({"status": "created", "task": {
            "task_id": "todo_003", "title": "Call Bob", "description": "", "status": "pending",
            "priority": "medium", "due_date": null, "tags": [],
            "created_at": "2026-01-02T09:00:01+00:00",
        }})
    );
    assert_eq!(
        w.audit()[0].params,
        json!({"title": "Call Bob", "description": null, "priority": "medium", "due_date": null})
    );
    // ClawEnvKit's id is len+1, so a delete makes the next id repeat: deterministic.
    post(&mut w, "/todo/tasks/delete", json!({"task_id": "t1"}));
    let again = post(
        &mut w,
        "/todo/tasks/create",
        json!({"title": "x", "priority": "low"}),
    );
    assert_eq!(again.body["task"]["task_id"], "todo_003");
    assert_eq!(again.body["task"]["priority"], "low");
}

#[test]
fn update_and_delete_change_the_store_and_side_lists() {
    let mut w = world(&["todo"], todo_fixtures(), &[]);
    let upd = post(
        &mut w,
        "/todo/tasks/update",
        json!({"task_id": "t1", "status": "completed", "tags": ["q1"]}),
    );
    assert_eq!(upd.body["status"], "updated");
    assert_eq!(upd.body["task"]["status"], "completed");
    assert_eq!(
        upd.body["task"]["priority"], "high",
        "null fields are left alone"
    );
    assert_eq!(upd.body["task"]["tags"], json!(["q1"]));
    let missing = post(&mut w, "/todo/tasks/update", json!({"task_id": "nope"}));
    assert_eq!(
        (missing.status, missing.body.clone()),
        (200, json!({"error": "Task nope not found"}))
    );
    let del = post(&mut w, "/todo/tasks/delete", json!({"task_id": "t2"}));
    assert_eq!(del.body["status"], "deleted");
    assert_eq!(del.body["task"]["title"], "Book flights");
    let list = post(&mut w, "/todo/tasks", json!({}));
    assert_eq!(list.body["total"], 1);
    let audit = w.handle("GET", "/todo/audit", b"");
    assert_eq!(audit.body["calls"].as_array().unwrap().len(), 4);
    assert_eq!(audit.body["calls"][0]["endpoint"], "/todo/tasks/update");
    assert_eq!(
        audit.body["calls"][0]["timestamp"],
        "2026-01-02T09:00:01+00:00"
    );
    assert_eq!(audit.body["deleted"][0]["task_id"], "t2");
    assert_eq!(audit.body["updated_tasks"].as_array().unwrap().len(), 1);
    assert_eq!(w.audit().len(), 4, "utility routes are not recorded");
}

fn inbox() -> Value {
    json!({"inbox": [
        {"id": "m1", "from": "a@x.com", "subject": "Newest", "date": "2026-02-27T10:00:00Z"},
        {"id": "m2", "from": "b@x.com", "subject": "Three days older", "date": "2026-02-24T10:00:00Z"},
        {"id": "m3", "from": "c@x.com", "subject": "Ten days older", "date": "2026-02-17T10:00:00+00:00"},
    ]})
}

#[test]
fn gmail_keeps_fixture_dates_and_lists_every_email() {
    // ClawEnvKit HEAD: fixture dates are the task's ground truth (no shifting), and the
    // list ignores days_back.
    let mut w = world(&["gmail"], inbox(), &[]);
    let emails = w.records("gmail", "emails").unwrap();
    assert_eq!(emails[0]["date"], "2026-02-27T10:00:00Z");
    assert_eq!(emails[2]["date"], "2026-02-17T10:00:00+00:00");
    let list = w.handle("POST", "/gmail/messages", b"{}");
    assert_eq!(list.body["total"], 3, "days_back does not filter");
    assert_eq!(
        w.audit()[0].params,
        json!({"days_back": 7, "max_results": 20})
    );
    let wide = post(
        &mut w,
        "/gmail/messages",
        json!({"days_back": "1", "max_results": 2}),
    );
    assert_eq!(wide.body["total"], 2, "max_results cuts the list");
    let python_slice = post(
        &mut w,
        "/gmail/messages",
        json!({"days_back": 30, "max_results": -1}),
    );
    assert_eq!(python_slice.body["total"], 2);
    let got = post(&mut w, "/gmail/messages/get", json!({"message_id": "m2"}));
    assert_eq!(got.body["subject"], "Three days older");
    let missing = post(&mut w, "/gmail/messages/get", json!({"message_id": "zz"}));
    assert_eq!(missing.body, json!({"error": "Message zz not found"}));
}

#[test]
fn gmail_send_and_draft_append_to_outboxes() {
    let mut w = world(&["gmail"], inbox(), &[]);
    let sent = post(
        &mut w,
        "/gmail/send",
        json!({"to": "bob@x.com", "subject": "Hi", "body": "Hello"}),
    );
    assert_eq!(
        sent.body,
        json!({"status": "sent", "message": {
            "to": "bob@x.com", "subject": "Hi", "body": "Hello",
            "timestamp": "2026-01-02T09:00:01+00:00",
        }})
    );
    let draft = post(
        &mut w,
        "/gmail/drafts/save",
        json!({"to": "a@x.com", "subject": "Re", "body": "Later", "reply_to_message_id": "m1"}),
    );
    assert_eq!(draft.body["status"], "draft_saved");
    assert_eq!(draft.body["draft"]["reply_to_message_id"], "m1");
    let audit = w.handle("GET", "/gmail/audit", b"");
    assert_eq!(audit.body["sent_messages"][0]["to"], "bob@x.com");
    assert_eq!(audit.body["drafts"][0]["subject"], "Re");
    assert_eq!(w.audit()[0].action, "send_email");
    assert_eq!(w.audit()[1].action, "create_draft");
}

#[test]
fn audit_uses_bound_tool_names_and_is_sequenced_on_the_clock() {
    let tools = [ToolBinding {
        name: "mark_done".into(),
        service: "todo".into(),
        endpoint: "/todo/tasks/update".into(),
        method: crate::method::Method::Post,
    }];
    let mut w = world(
        &["todo", "gmail"],
        json!({"tasks": [], "inbox": []}),
        &tools,
    );
    post(&mut w, "/todo/tasks/update", json!({"task_id": "t1"}));
    post(&mut w, "/todo/tasks", json!({}));
    post(
        &mut w,
        "/gmail/send",
        json!({"to": "a", "subject": "s", "body": "b"}),
    );
    let a = w.audit();
    assert_eq!(
        a.iter()
            .map(|e| (e.seq, e.action.as_str(), e.service.as_str()))
            .collect::<Vec<_>>(),
        [
            (1, "mark_done", "todo"),
            (2, "list_tasks", "todo"),
            (3, "send_email", "gmail")
        ]
    );
    assert_eq!(a[2].at, "2026-01-02T09:00:03Z");
    assert_eq!(a[0].fault, None);
}

#[test]
fn rejected_and_unknown_requests_are_recorded_like_fastapi_answers_them() {
    let mut w = world(&["todo"], todo_fixtures(), &[]);
    let missing = post(&mut w, "/todo/tasks/create", json!({"priority": "high"}));
    assert_eq!(missing.status, 422);
    assert_eq!(missing.body["detail"][0]["type"], "missing");
    assert_eq!(missing.body["detail"][0]["loc"], json!(["body", "title"]));
    let wrong_type = post(
        &mut w,
        "/todo/tasks/update",
        json!({"task_id": 5, "tags": ["a", 1]}),
    );
    assert_eq!(wrong_type.status, 422);
    let locs: Vec<&Value> = wrong_type.body["detail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["loc"])
        .collect();
    assert_eq!(
        locs,
        [&json!(["body", "task_id"]), &json!(["body", "tags", 1])]
    );
    let bad_json = w.handle("POST", "/todo/tasks/create", b"{\"title\": ");
    assert_eq!(bad_json.status, 422);
    assert_eq!(bad_json.body["detail"][0]["type"], "json_invalid");
    let no_body = w.handle("POST", "/todo/tasks/delete", b"");
    assert_eq!(no_body.status, 422);
    let unknown = post(&mut w, "/todo/tasks/archive", json!({}));
    assert_eq!(
        (unknown.status, &unknown.body["detail"]),
        (404, &json!("Not Found"))
    );
    let get = w.handle("GET", "/todo/tasks", b"");
    assert_eq!(get.status, 405);
    let elsewhere = post(&mut w, "/gmail/send", json!({}));
    assert_eq!(elsewhere.status, 404, "gmail is not part of this task");
    w.handle("GET", "/health", b"");
    w.handle("GET", "/audit", b"");
    let statuses: Vec<(u16, &str)> = w
        .audit()
        .iter()
        .map(|e| (e.status, e.action.as_str()))
        .collect();
    assert_eq!(
        statuses,
        [
            (422, "create_task"),
            (422, "update_task"),
            (422, "create_task"),
            (422, "delete_task"),
            (404, "/todo/tasks/archive"),
            (405, "list_tasks"),
        ]
    );
    assert_eq!(
        w.audit()[0].params,
        json!({"priority": "high"}),
        "rejected: body as received"
    );
}

#[test]
fn reset_restores_fixtures_and_clears_the_audit() {
    let mut w = world(&["todo"], todo_fixtures(), &[]);
    let before = w.records("todo", "tasks").unwrap().to_vec();
    post(&mut w, "/todo/tasks/delete", json!({"task_id": "t1"}));
    post(&mut w, "/todo/tasks/create", json!({"title": "n"}));
    w.reset();
    assert_eq!(w.records("todo", "tasks").unwrap(), before.as_slice());
    assert!(w.audit().is_empty());
    post(&mut w, "/todo/tasks", json!({}));
    assert_eq!(w.audit()[0].seq, 1);
    // Over HTTP, /reset does the same and is itself not recorded.
    let r = w.handle("POST", "/reset", b"");
    assert_eq!(r.body, json!({"status": "reset"}));
    assert!(w.audit().is_empty());
}

#[test]
fn fixture_routing_concatenates_and_falls_back_to_unclaimed_keys() {
    let w = world(
        &["gmail", "todo"],
        json!({"inbox": [{"id": "a", "date": "2026-01-01T00:00:00Z"}], "drafts": [{"id": "b"}], "tasks": [{"id": "t"}]}),
        &[],
    );
    assert_eq!(w.records("gmail", "emails").unwrap().len(), 2);
    assert_eq!(w.records("todo", "tasks").unwrap().len(), 1);
    // An odd key name still seeds a single-service task (ClawEnvKit's fixtures.json fallback).
    let w = world(&["todo"], json!({"todos": [{"id": "t"}]}), &[]);
    assert_eq!(w.records("todo", "tasks").unwrap()[0]["task_id"], "t");
    // …but a key claimed by another service never does.
    let w = world(&["gmail", "todo"], json!({"inbox": [{"id": "a"}]}), &[]);
    assert_eq!(w.records("todo", "tasks").unwrap().len(), 0);
}

#[test]
fn wrong_fixture_shapes_and_unknown_services_are_errors_that_say_where() {
    let services = vec!["todo".to_string()];
    let build = |f: Value| {
        World::new(
            &Catalogue::builtin(),
            &services,
            &f,
            &[],
            WorldOptions::default(),
        )
    };
    let err = build(json!({"tasks": {"a": 1, "b": 2}})).unwrap_err();
    assert!(
        matches!(&err, WorldError::FixtureShape { key, service, .. } if key == "tasks" && service == "todo")
    );
    assert!(err.to_string().contains("fixture `tasks`"), "{err}");
    let err = build(json!({"tasks": [{"id": 1}, "oops"]})).unwrap_err();
    assert!(
        matches!(&err, WorldError::FixtureRecord { key, index: 1, .. } if key == "tasks"),
        "{err}"
    );
    assert!(matches!(
        build(json!("x")),
        Err(WorldError::FixturesShape { .. })
    ));
    let err = World::new(
        &Catalogue::builtin(),
        &["slack".to_string()],
        &Value::Null,
        &[],
        WorldOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("unknown service `slack`"), "{err}");
}

#[test]
fn seeded_faults_are_reproducible_and_audited() {
    let options = WorldOptions {
        faults: FaultPlan {
            rate: 0.5,
            seed: 7,
            ..FaultPlan::default()
        },
        ..WorldOptions::default()
    };
    let run = || {
        let mut w = World::new(
            &Catalogue::builtin(),
            &["todo".into()],
            &todo_fixtures(),
            &[],
            options.clone(),
        )
        .unwrap();
        for _ in 0..20 {
            post(&mut w, "/todo/tasks", json!({}));
        }
        w.audit().to_vec()
    };
    let (a, b) = (run(), run());
    assert_eq!(a, b);
    assert!(a.iter().any(|e| e.status == 429 || e.status == 500));
    assert!(a.iter().all(|e| e.fault.is_some() || e.status == 200));
}

/// A body for `route` that sets every parameter: strings are the id of the first
/// record of any collection (so gets, updates and deletes find something).
fn full_body(route: &crate::services::RouteDescription, id: &str) -> Value {
    use crate::services::ParamType;
    let value = |ty: ParamType| match ty {
        ParamType::String => json!(id),
        ParamType::Integer => json!(30),
        ParamType::Number => json!(2.5),
        ParamType::Boolean => json!(true),
        ParamType::Array => json!([id]),
        ParamType::Object => json!({"k": id}),
    };
    Value::Object(
        route
            .parameters
            .iter()
            .map(|p| (p.name.clone(), value(p.ty)))
            .collect(),
    )
}

#[test]
fn answers_written_as_text_equal_the_answers_as_values_serialized() {
    let catalogue = Catalogue::builtin();
    let fixtures = json!({
        "tasks": todo_fixtures()["tasks"].clone(),
        "inbox": inbox()["inbox"].clone(),
    });
    let mut answered = Vec::new();
    for service in catalogue.names() {
        let services = [service];
        let mut by_value = world(&services, fixtures.clone(), &[]);
        let mut by_text = by_value.clone();
        let id = by_value.services[0]
            .current
            .values()
            .flatten()
            .find_map(|r| r.as_object()?.values().find_map(Value::as_str))
            .unwrap_or("x")
            .to_owned();
        let routes = by_value.services[0].desc.routes().to_vec();
        // Each route twice with every parameter set (the second after the first has
        // changed the store), then with an empty object and no body at all.
        for route in &routes {
            let full = full_body(route, &id).to_string();
            for body in [full.as_str(), full.as_str(), "{}", ""] {
                let value = by_value.handle(route.method.name(), &route.endpoint, body.as_bytes());
                let text = by_text.handle_serialized(
                    route.method.name(),
                    &route.endpoint,
                    body.as_bytes(),
                );
                assert_eq!(
                    (text.status, String::from_utf8_lossy(&text.body)),
                    (value.status, value.body.to_string().into()),
                    "{} {} with {body}",
                    route.method,
                    route.endpoint
                );
                assert_eq!((&text.headers, text.delay), (&value.headers, value.delay));
            }
        }
        assert_eq!(by_text.audit(), by_value.audit(), "{service}");
        if by_value.audit().iter().any(|e| e.status == 200) {
            answered.push(service);
        }
    }
    // The comparison covers real answers, not only validation errors.
    assert!(answered.len() >= 15, "answered with 200: {answered:?}");
}

#[test]
fn world_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<World>();
}

#[test]
fn the_audit_and_its_answers_are_capped_and_say_so() {
    let options = WorldOptions {
        audit_entries: 3,
        audit_answer_bytes: 400,
        ..WorldOptions::default()
    };
    let mut w = World::new(
        &Catalogue::builtin(),
        &["todo".to_string()],
        &todo_fixtures(),
        &[],
        options,
    )
    .unwrap();
    let observed = w.subscribe();
    assert_eq!(w.audit_cap_note(), None);
    for _ in 0..5 {
        let answered = post(&mut w, "/todo/tasks", json!({}));
        assert_eq!(
            answered.status, 200,
            "past the cap calls are still answered"
        );
    }
    assert_eq!(w.audit().len(), 3);
    let note = w.audit_cap_note().expect("the cap bit");
    // A subscriber (`serve`'s log) hears the three entries, then once that the cap bit.
    let heard: Vec<super::Observed> = observed.try_iter().collect();
    assert_eq!(heard.len(), 4, "{heard:?}");
    assert!(
        matches!(&heard[3], super::Observed::CapReached(first) if first.contains("1 call(s) answered but not recorded past 3 entries")),
        "{heard:?}"
    );
    // Emptied by /reset, the audit fills again, and the subscriber is told again.
    w.handle("POST", "/reset", b"");
    for _ in 0..4 {
        post(&mut w, "/todo/tasks", json!({}));
    }
    let heard: Vec<super::Observed> = observed.try_iter().collect();
    assert!(
        matches!(heard.last(), Some(super::Observed::CapReached(_))),
        "{heard:?}"
    );
    assert!(
        note.contains("2 call(s) answered but not recorded past 3 entries"),
        "{note}"
    );
    let answer = w.handle("GET", "/audit", b"");
    assert_eq!(answer.body["total"], 3);
    assert_eq!(answer.body["truncated"], true);
    let kept = answer.body["entries"].as_array().unwrap().len();
    assert!(kept < 3, "{kept} entries in a 400-byte answer");
}

/// Before: `updated_tasks` (and every `log_to` side list) gained a record per call past the
/// audit's caps, so a harness updating in a loop grew the host's memory without end (and
/// the services slowed down allocating it).
#[test]
fn a_side_list_keeps_no_entry_for_a_call_past_the_audit_s_caps() {
    let options = WorldOptions {
        audit_entries: 3,
        ..WorldOptions::default()
    };
    let mut w = World::new(
        &Catalogue::builtin(),
        &["todo".to_string()],
        &todo_fixtures(),
        &[],
        options,
    )
    .unwrap();
    for priority in ["low", "medium", "high", "low", "medium"] {
        let answered = post(
            &mut w,
            "/todo/tasks/update",
            json!({"task_id": "t1", "priority": priority}),
        );
        assert_eq!(answered.body["status"], "updated", "still answered");
        let text = w.handle_serialized(
            "POST",
            "/todo/tasks/update",
            json!({"task_id": "t2", "priority": priority})
                .to_string()
                .as_bytes(),
        );
        assert_eq!(text.status, 200);
    }
    assert_eq!(w.audit().len(), 3);
    // The three recorded updates' entries, and the state of every call.
    assert_eq!(
        w.records("todo", "updated_tasks").map(<[Value]>::len),
        Some(3)
    );
    assert_eq!(w.records("todo", "tasks").unwrap()[0]["priority"], "medium");
    assert_eq!(w.records("todo", "tasks").unwrap()[1]["priority"], "medium");
    // Deleting a task past the caps still deletes it, and keeps nothing in `deleted`.
    post(&mut w, "/todo/tasks/delete", json!({"task_id": "t2"}));
    assert_eq!(w.records("todo", "tasks").map(<[Value]>::len), Some(1));
    assert_eq!(w.records("todo", "deleted").map(<[Value]>::len), Some(0));
}
