//! Reproducibility, isolation and fault injection of a trial's World, in memory and over
//! HTTP on 127.0.0.1.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawtest::serve::{Delay, serve_with};
use clawtest::services::Catalogue;
use clawtest::task::InjectionMode;
use clawtest::trajectory::FaultKind;
use clawtest::world::{FaultPlan, World, WorldOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn world(plan: FaultPlan) -> World {
    World::new(
        &Catalogue::builtin(),
        &["todo".into(), "gmail".into()],
        &json!({"tasks": [{"id": "t1", "title": "Plan", "status": "pending"}], "inbox": []}),
        &[],
        WorldOptions {
            faults: plan,
            ..WorldOptions::default()
        },
    )
    .unwrap()
}

/// A fixed script of calls, reads and writes on two services.
fn script(w: &mut World) -> Vec<u8> {
    for i in 0..40 {
        let (path, body) = match i % 4 {
            0 => ("/todo/tasks", json!({})),
            1 => ("/todo/tasks/create", json!({"title": format!("task {i}")})),
            2 => (
                "/todo/tasks/update",
                json!({"task_id": "t1", "status": "completed"}),
            ),
            _ => (
                "/gmail/send",
                json!({"to": "a@x.com", "subject": "s", "body": "b"}),
            ),
        };
        w.handle("POST", path, body.to_string().as_bytes());
    }
    serde_json::to_vec(w.audit()).unwrap()
}

#[test]
fn the_same_task_trial_and_seed_give_byte_identical_audits() {
    let plan = |trial| {
        FaultPlan::for_trial(
            "todo-001",
            trial,
            &settings(0.25, Some(9), InjectionMode::Uniform),
        )
    };
    let first = script(&mut world(plan(0)));
    let again = script(&mut world(plan(0)));
    assert_eq!(first, again);
    let other_trial = script(&mut world(plan(1)));
    assert_ne!(first, other_trial, "each trial has its own faults");
    let other_seed = FaultPlan::for_trial(
        "todo-001",
        0,
        &settings(0.25, Some(10), InjectionMode::Uniform),
    );
    assert_ne!(plan(0).seed, other_seed.seed);
    assert_ne!(
        plan(0).seed,
        FaultPlan::for_trial(
            "todo-002",
            0,
            &settings(0.25, Some(9), InjectionMode::Uniform)
        )
        .seed
    );
    assert_eq!(
        world(plan(0)).fault_plan(),
        &plan(0),
        "the plan is there for the trajectory"
    );
}

#[test]
fn with_rate_one_every_post_is_faulted_and_recorded_once() {
    let mut w = world(FaultPlan::for_trial(
        "t",
        0,
        &settings(1.0, None, InjectionMode::Uniform),
    ));
    for _ in 0..30 {
        w.handle("POST", "/todo/tasks/create", br#"{"title": "x"}"#);
    }
    w.handle("GET", "/todo/audit", b"");
    w.handle("GET", "/health", b"");
    let audit = w.audit();
    assert_eq!(
        audit.len(),
        30,
        "one entry per call; utility routes are never faulted nor recorded"
    );
    assert!(audit.iter().all(|e| e.fault.is_some()));
    assert_eq!(
        w.records("todo", "tasks").unwrap().len(),
        1 + audit
            .iter()
            .filter(|e| e.fault == Some(FaultKind::Slow))
            .count(),
        "only slow calls reach the handler"
    );
    for e in audit {
        match e.fault {
            Some(FaultKind::RateLimited) => assert_eq!(
                (e.status, e.response["retry_after_seconds"].clone()),
                (429, json!(2))
            ),
            Some(FaultKind::ServerError) => assert_eq!(
                (e.status, e.response["error"].clone()),
                (500, json!("internal_server_error"))
            ),
            Some(FaultKind::Slow) => {
                assert_eq!(e.status, 200);
                assert!((2000..=4000).contains(&e.delay_ms.unwrap()));
            }
            None => unreachable!(),
        }
    }
    let kinds: Vec<FaultKind> = audit.iter().filter_map(|e| e.fault).collect();
    for kind in [
        FaultKind::RateLimited,
        FaultKind::ServerError,
        FaultKind::Slow,
    ] {
        assert!(kinds.contains(&kind), "{kind:?} in the mix");
    }
    let injected = w.handle("GET", "/injected_errors", b"").body;
    assert_eq!(injected["total"], 30);
    let first = &injected["errors"][0];
    assert_eq!(first["endpoint"], "/todo/tasks/create");
    assert_eq!(
        first["timestamp"],
        json!(1_767_344_401.0),
        "unix seconds on the trial clock"
    );
    assert!(
        ["rate_limit", "server_error", "slow"].contains(&first["error_type"].as_str().unwrap())
    );
    let rate_limited = w.handle("POST", "/todo/tasks", b"{}");
    if rate_limited.status == 429 {
        assert!(
            rate_limited
                .headers
                .contains(&("retry-after".into(), "2".into()))
        );
    }
}

/// Lengths of the runs of consecutive faulted calls.
fn runs(w: &mut World, calls: usize) -> (usize, Vec<usize>) {
    for _ in 0..calls {
        w.handle("POST", "/todo/tasks", b"{}");
    }
    let mut runs = Vec::new();
    let mut current = 0;
    for e in w.audit() {
        if e.fault.is_some() {
            current += 1;
        } else if current > 0 {
            runs.push(current);
            current = 0;
        }
    }
    if current > 0 {
        runs.push(current);
    }
    (runs.iter().sum(), runs)
}

#[test]
fn burst_mode_produces_runs_at_the_same_overall_rate() {
    let calls = 4000;
    let (uniform_faults, uniform_runs) = runs(
        &mut world(FaultPlan::for_trial(
            "t",
            0,
            &settings(0.25, Some(1), InjectionMode::Uniform),
        )),
        calls,
    );
    let mut bursty = world(FaultPlan::for_trial(
        "t",
        0,
        &settings(0.25, Some(1), InjectionMode::Burst),
    ));
    let (burst_faults, burst_runs) = runs(&mut bursty, calls);
    let mean = |faults: usize, runs: &[usize]| faults as f64 / runs.len() as f64;
    let (u, b) = (
        mean(uniform_faults, &uniform_runs),
        mean(burst_faults, &burst_runs),
    );
    assert!(
        b > 2.5 && b > 2.0 * u,
        "burst runs average {b:.2} calls, uniform {u:.2}"
    );
    let rate = burst_faults as f64 / calls as f64;
    assert!((0.18..0.32).contains(&rate), "burst fault rate {rate}");
    // A burst repeats one kind, as a rate limiter does.
    let audit = bursty.audit();
    let same_kind = audit
        .windows(2)
        .filter(|p| p[0].fault.is_some() && p[1].fault.is_some())
        .all(|p| p[0].fault == p[1].fault);
    assert!(same_kind);
}

/// A Delay that records what it was asked to wait instead of sleeping.
#[derive(Default)]
struct Recorded(Mutex<Vec<Duration>>);

impl Delay for Recorded {
    fn wait(
        &self,
        duration: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        self.0.lock().unwrap().push(duration);
        Box::pin(async {})
    }
}

async fn post(addr: std::net::SocketAddr, path: &str, body: &str) -> (u16, Value) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let status = raw[9..12].parse().unwrap();
    let json = serde_json::from_str(raw.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    (status, json)
}

async fn start(
    world: World,
    delay: Arc<dyn Delay>,
) -> (
    std::net::SocketAddr,
    Arc<Mutex<World>>,
    tokio::sync::oneshot::Sender<()>,
) {
    let world = Arc::new(Mutex::new(world));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_with(
        listener,
        Arc::clone(&world),
        delay,
        None,
        async {
            let _ = stopped.await;
        },
    ));
    (addr, world, stop)
}

#[tokio::test]
async fn slow_faults_are_delayed_by_the_http_layer_and_recorded_once() {
    let recorded = Arc::new(Recorded::default());
    let mut plan = FaultPlan::for_trial("t", 0, &settings(1.0, None, InjectionMode::Uniform));
    plan.mode = InjectionMode::Burst;
    // Find a seed whose first burst is slow, so the test does not depend on luck.
    let plan = (0..64)
        .map(|seed| FaultPlan {
            seed,
            ..plan.clone()
        })
        .find(|p| {
            let mut w = world(p.clone());
            w.handle("POST", "/todo/tasks", b"{}").delay.is_some()
        })
        .unwrap();
    let (addr, shared, stop) = start(world(plan), recorded.clone()).await;
    let (status, body) = post(addr, "/todo/tasks", "{}").await;
    assert_eq!(
        (status, body["total"].clone()),
        (200, json!(1)),
        "a slow call still answers with real data"
    );
    let waited = recorded.0.lock().unwrap().clone();
    let audit = shared.lock().unwrap().audit().to_vec();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].fault, Some(FaultKind::Slow));
    assert_eq!(waited, [Duration::from_millis(audit[0].delay_ms.unwrap())]);
    let _ = stop.send(());
}

#[tokio::test]
async fn two_concurrent_trials_never_see_each_others_writes() {
    let delay: Arc<dyn Delay> = Arc::new(Recorded::default());
    let (a, world_a, stop_a) = start(world(FaultPlan::default()), Arc::clone(&delay)).await;
    let (b, world_b, stop_b) = start(world(FaultPlan::default()), delay).await;
    let writes = (0..20).map(|i| {
        let addr = if i % 2 == 0 { a } else { b };
        tokio::spawn(async move {
            post(
                addr,
                "/todo/tasks/create",
                &format!(
                    r#"{{"title": "from {}"}}"#,
                    if i % 2 == 0 { "a" } else { "b" }
                ),
            )
            .await
        })
    });
    for w in writes {
        assert_eq!(w.await.unwrap().0, 200);
    }
    let (_, list_a) = post(a, "/todo/tasks", "{}").await;
    let (_, list_b) = post(b, "/todo/tasks", "{}").await;
    let titles = |list: &Value| {
        list["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["title"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(list_a["total"], 11);
    assert!(titles(&list_a)[1..].iter().all(|t| t == "from a"));
    assert!(titles(&list_b)[1..].iter().all(|t| t == "from b"));
    assert!(
        world_a
            .lock()
            .unwrap()
            .audit()
            .iter()
            .all(|e| e.params.get("title").is_none_or(|t| t == "from a"))
    );
    assert_eq!(world_b.lock().unwrap().audit().len(), 11);
    let _ = stop_a.send(());
    let _ = stop_b.send(());
}

#[cfg(unix)]
#[tokio::test]
async fn a_world_is_served_on_a_unix_socket_too() {
    let folder = tempfile::tempdir().unwrap();
    let socket = folder.path().join("services.sock");
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    let shared = Arc::new(Mutex::new(world(FaultPlan::default())));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(clawtest::serve::serve_unix(
        listener,
        Arc::clone(&shared),
        async {
            let _ = stopped.await;
        },
    ));
    let mut stream = tokio::net::UnixStream::connect(&socket).await.unwrap();
    stream
        .write_all(b"POST /todo/tasks HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        .await
        .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert_eq!(shared.lock().unwrap().audit()[0].action, "list_tasks");
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}

#[test]
fn an_unknown_route_names_the_routes_the_service_has_and_is_audited() {
    use clawtest::services::Catalogue;
    use clawtest::world::{World, WorldOptions};
    let mut world = World::new(
        &Catalogue::builtin(),
        &["todo".to_string()],
        &serde_json::json!({}),
        &[],
        WorldOptions::default(),
    )
    .unwrap();
    let answer = world.handle("POST", "/todo/tasks/archive", b"{}");
    assert_eq!(answer.status, 404);
    let routes: Vec<&str> = answer.body["routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|route| route.as_str())
        .collect();
    assert!(routes.contains(&"POST /todo/tasks/update"), "{routes:?}");
    assert_eq!(
        answer.body["error"],
        "no route /todo/tasks/archive in service todo"
    );
    assert_eq!(world.audit().len(), 1);
    assert_eq!(world.audit()[0].status, 404);
}

/// Fault settings of `rate`, `seed` and `mode`, ClawEnvKit's mix and delays otherwise.
fn settings(rate: f64, seed: Option<u64>, mode: InjectionMode) -> clawtest::fault::FaultSettings {
    clawtest::fault::FaultSettings {
        rate,
        seed,
        mode,
        ..Default::default()
    }
}
