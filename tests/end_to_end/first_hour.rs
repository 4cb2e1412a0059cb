//! A new user's first hour, played end to end with the installed binary only: `init` in an
//! empty folder, their own Python agent (a virtual environment's interpreter and a script
//! path relative to the suite), `cargo clawtest model` in the background serving the scripts
//! `init` wrote, `--mode record`, then a replay with `--snapshots` and `--html` (failing, and
//! saying so, only because the snapshots are new), the snapshots accepted, a green replay; and
//! the workflow `init` wrote, parsed, installing the tool with a command that exists.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::support::repository;

/// A tool-calling agent on Python's standard library only (a team's would use the openai
/// SDK): the sandbox contract's variables, chat completions, the tools of tools.json.
const AGENT: &str = r#"import json, os, urllib.error, urllib.request

def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={
        "content-type": "application/json",
        "authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", ""),
    })
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return {"error": error.code, "body": error.read().decode()}

def main():
    with open(os.environ["CLAWTEST_TOOLS_FILE"]) as file:
        entries = json.load(file)
    tools = [{"type": "function", "function": entry["function"]} for entry in entries]
    routes = {entry["name"]: entry["endpoint"] for entry in entries}
    services = os.environ["CLAWTEST_SERVICES_URL"].rstrip("/")
    base = os.environ["OPENAI_BASE_URL"].rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    messages = [{"role": "user", "content": os.environ["CLAWTEST_PROMPT"]}]
    for _ in range(10):
        reply = post(base + "/chat/completions", {"model": "gpt-4o-mini", "messages": messages, "tools": tools})
        message = reply["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        if not calls:
            print(message.get("content") or "")
            return
        messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls})
        for call in calls:
            arguments = json.loads(call["function"]["arguments"] or "{}")
            result = post(services + routes[call["function"]["name"]], arguments)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
    print("I ran out of turns.")

main()
"#;

/// `cargo clawtest ARGUMENTS` in `folder`, with nothing of the test's own environment that
/// changes what a run does (GitHub Actions, insta's mode, a backend).
fn clawtest(folder: &Path, arguments: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-clawtest"));
    command
        .arg("clawtest")
        .args(arguments)
        .current_dir(folder)
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("CLAWTEST_BACKEND")
        .env_remove("CI")
        .env("INSTA_UPDATE", "new");
    command
}

fn run(folder: &Path, arguments: &[&str]) -> (i32, String, String) {
    let output = clawtest(folder, arguments)
        .output()
        .expect("cargo-clawtest runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `cargo clawtest model` in the background, killed when dropped.
struct Model {
    child: Child,
    url: String,
    log: std::sync::mpsc::Receiver<String>,
}

impl Model {
    fn start(folder: &Path) -> Model {
        let mut child = clawtest(
            folder,
            &["model", "--script", "model-scripts", "--port", "0"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("cargo clawtest model starts");
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        // The banner names the URL before anything is served: read up to it.
        let url = loop {
            let line = lines
                .next()
                .expect("the model prints its URL before it ends")
                .expect("readable output");
            if let Some(url) = line
                .split(" on ")
                .nth(1)
                .filter(|_| line.contains("scripted model:"))
            {
                break url.trim().to_string();
            }
        };
        let (sender, log) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Model { child, url, log }
    }
}

impl Model {
    /// Stops the model and returns every line it logged.
    fn stop(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The reader ends with the model's output, so this is the whole log.
        std::mem::replace(&mut self.log, std::sync::mpsc::channel().1)
            .iter()
            .collect()
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_new_user_gets_from_init_to_a_recorded_suite_and_a_green_job_with_the_binary_alone() {
    let repository_folder = tempfile::tempdir().unwrap();
    let folder = repository_folder.path();
    let (code, stdout, stderr) = run(folder, &["init"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(folder.join("model-scripts/todo-review.yaml").is_file());
    let readme = std::fs::read_to_string(folder.join("tasks/README.md")).unwrap();
    assert!(
        readme.contains("cargo clawtest model --script model-scripts"),
        "the suite's README has the recording recipe"
    );

    // Their own agent: a script at the top of the repository, run by a virtual environment's
    // interpreter, both named relative to the suite folder.
    std::fs::write(folder.join("agent.py"), AGENT).unwrap();
    let venv = Command::new("python3")
        .args(["-m", "venv", "--without-pip", ".venv"])
        .current_dir(folder)
        .status()
        .expect("python3 is installed (the first hour's agent is a Python one)");
    assert!(venv.success());
    let config_path = folder.join("clawtest.toml");
    let config = std::fs::read_to_string(&config_path).unwrap();
    let example = "command = [\"cargo-clawtest\", \"example-agent\"]";
    assert!(config.contains(example), "{config}");
    let config = config.replace(example, "command = [\".venv/bin/python\", \"agent.py\"]");
    // Cassettes recorded from the agent's own requests replace the hand-written ones.
    std::fs::remove_dir_all(folder.join("cassettes")).unwrap();

    // Record against the scripted model, as the README says.
    let model = Model::start(folder);
    std::fs::write(
        &config_path,
        format!("{config}\n[llm.openai]\nbase_url = \"{}\"\n", model.url),
    )
    .unwrap();
    let (code, stdout, stderr) = run(folder, &["--mode", "record", "--jobs", "2"]);
    assert_eq!(code, 0, "record: {stdout}{stderr}");
    for task in ["todo-review", "offsite-reply"] {
        assert!(
            folder.join(format!("cassettes/{task}.yaml")).is_file(),
            "{task}"
        );
    }
    let served = model.stop();
    assert!(
        served
            .iter()
            .any(|line| line.ends_with("turn 1 of 2 of script todo-review")),
        "the model logs each answer: {served:#?}"
    );

    // Replay, with snapshots and the HTML report: everything passes, the snapshots are new,
    // and the run says that this is why it failed.
    let (code, stdout, stderr) = run(
        folder,
        &[
            "--snapshots",
            "--html",
            "report",
            "--junit",
            "junit.xml",
            "--jobs",
            "2",
        ],
    );
    assert_eq!(code, 100, "{stdout}{stderr}");
    assert!(
        stdout.contains("2 new snapshot(s)"),
        "the status names the new snapshots: {stdout}"
    );
    let html = std::fs::read_to_string(folder.join("report/index.html")).unwrap();
    assert!(
        html.contains("2 new snapshot(s)"),
        "the HTML report says why"
    );
    for task in ["todo-review", "offsite-reply"] {
        let pending = folder.join(format!("snapshots/{task}.snap.new"));
        std::fs::rename(&pending, pending.with_extension("")).unwrap();
    }
    let (code, stdout, stderr) = run(folder, &["--snapshots", "--html", "report", "--jobs", "2"]);
    assert_eq!(code, 0, "accepted snapshots replay green: {stdout}{stderr}");

    // The workflow installs the tool with a command that exists: cargo install from git at a
    // commit, of a package this repository has, with the binary `cargo clawtest` runs.
    let workflow: serde_json::Value = serde_saphyr::from_str(
        &std::fs::read_to_string(folder.join(".github/workflows/clawtest.yml")).unwrap(),
    )
    .expect("the workflow is YAML");
    let install = workflow["jobs"]["clawtest"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|step| step["run"].as_str())
        .find(|run| run.starts_with("cargo install"))
        .expect("an install step")
        .to_string();
    let words: Vec<&str> = install.split_whitespace().collect();
    let help = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["install", "--help"])
        .output()
        .expect("cargo runs");
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in words.iter().filter(|word| word.starts_with("--")) {
        assert!(
            help.contains(flag),
            "`cargo install` has no {flag}: {install}"
        );
    }
    let package = words.last().unwrap();
    let manifest = std::fs::read_to_string(repository().join(package).join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!("name = \"{package}\"")) && manifest.contains("[[bin]]"),
        "{package} is a package of this repository with a binary"
    );
    assert!(
        Path::new(env!("CARGO_BIN_EXE_cargo-clawtest")).ends_with(package),
        "the installed binary is the one `cargo clawtest` runs"
    );
}
