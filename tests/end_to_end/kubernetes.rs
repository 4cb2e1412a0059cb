//! The Kubernetes templates (templates/kubernetes), checked offline: their structure (an
//! Indexed Job of cells × shards completions, the volume both Jobs share, pods that run as no
//! root), and their scripts run under `sh` with a stand-in `cargo-clawtest` that records its
//! arguments: every completion index runs one (cell, shard) and together they run each once;
//! an index past the last cell refuses to run; a pod with results exits 0 (the merge decides),
//! one without fails (Kubernetes retries it); the merge passes every shard's results.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::repository;

fn documents(name: &str) -> Vec<Value> {
    let text =
        std::fs::read_to_string(repository().join("templates/kubernetes").join(name)).unwrap();
    serde_saphyr::from_multiple(&text).expect("the template is YAML")
}

fn job(documents: &[Value]) -> &Value {
    documents
        .iter()
        .find(|document| document["kind"] == "Job")
        .expect("a Job")
}

fn container(job: &Value) -> &Value {
    &job["spec"]["template"]["spec"]["containers"][0]
}

fn environment(container: &Value, name: &str) -> String {
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|variable| variable["name"] == name)
        .and_then(|variable| variable["value"].as_str())
        .unwrap_or_else(|| panic!("no {name} in {container}"))
        .to_string()
}

/// Runs a container's script in `folder` with a stand-in `cargo-clawtest` first on the PATH
/// that appends its arguments to `calls.txt` and, unless `NO_RESULTS` is set, writes the
/// `--json` file it is given.
fn run_script(container: &Value, folder: &Path, variables: &[(&str, String)]) -> (i32, String) {
    let bin = folder.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let stand_in = bin.join("cargo-clawtest");
    std::fs::write(
        &stand_in,
        "#!/bin/sh\necho \"$*\" >> \"$CALLS\"\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = --json ] && [ -z \"${NO_RESULTS:-}\" ]; then echo '{}' > \"$2\"; fi\n  shift\ndone\nexit 100\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(container["command"], serde_json::json!(["/bin/sh", "-c"]));
    let script = container["args"][0].as_str().unwrap();
    let mut command = Command::new("/bin/sh");
    command
        .args(["-c", script])
        .current_dir(folder)
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .env("CALLS", folder.join("calls.txt"))
        .env("RESULTS", folder.join("results"));
    for variable in container["env"].as_array().unwrap() {
        let name = variable["name"].as_str().unwrap();
        if name != "RESULTS" {
            command.env(name, variable["value"].as_str().unwrap());
        }
    }
    for (name, value) in variables {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_shards_job_is_indexed_over_cells_times_shards_and_shares_its_volume() {
    let shards = documents("shards.yaml");
    let merge = documents("merge.yaml");
    let claim = shards
        .iter()
        .find(|document| document["kind"] == "PersistentVolumeClaim")
        .expect("a volume claim");
    assert_eq!(claim["spec"]["accessModes"][0], "ReadWriteMany");
    let name = claim["metadata"]["name"].as_str().unwrap();
    for job in [job(&shards), job(&merge)] {
        assert_eq!(job["apiVersion"], "batch/v1");
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
        assert_eq!(pod["automountServiceAccountToken"], false);
        assert_eq!(
            pod["volumes"][0]["persistentVolumeClaim"]["claimName"], name,
            "both Jobs use the claim"
        );
        let container = container(job);
        assert_eq!(
            container["volumeMounts"][0]["mountPath"],
            environment(container, "RESULTS").as_str()
        );
    }
    let shards_job = job(&shards);
    let spec = &shards_job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let container = container(shards_job);
    let cells = environment(container, "CELLS").split_whitespace().count();
    let count: u64 = environment(container, "SHARDS").parse().unwrap();
    assert_eq!(spec["completions"].as_u64().unwrap(), cells as u64 * count);
    assert!(spec["parallelism"].as_u64().unwrap() <= spec["completions"].as_u64().unwrap());
}

#[test]
fn each_completion_index_runs_one_cell_and_shard_and_the_merge_takes_them_all() {
    let shards = documents("shards.yaml");
    let shard = container(job(&shards));
    let completions = job(&shards)["spec"]["completions"].as_u64().unwrap();
    let folder = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(folder.path().join("results")).unwrap();
    for index in 0..completions {
        let (code, stderr) = run_script(
            shard,
            folder.path(),
            &[("JOB_COMPLETION_INDEX", index.to_string())],
        );
        // The stand-in exits 100 (failing tasks) after writing results: the pod succeeds.
        assert_eq!(code, 0, "index {index}: {stderr}");
    }
    let calls = std::fs::read_to_string(folder.path().join("calls.txt")).unwrap();
    let runs: BTreeSet<(String, String)> = calls
        .lines()
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let after = |flag: &str| {
                words[words.iter().position(|word| *word == flag).unwrap() + 1].to_string()
            };
            (after("--cell"), after("--partition"))
        })
        .collect();
    let cells: Vec<String> = environment(shard, "CELLS")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let expected: BTreeSet<(String, String)> = cells
        .iter()
        .flat_map(|cell| {
            ["hash:1/2", "hash:2/2"]
                .into_iter()
                .map(move |shard| (cell.clone(), shard.to_string()))
        })
        .collect();
    assert_eq!(runs, expected);
    assert_eq!(calls.lines().count() as u64, completions, "each once");

    // Past the last cell: refused, with the count to set.
    let (code, stderr) = run_script(
        shard,
        folder.path(),
        &[("JOB_COMPLETION_INDEX", completions.to_string())],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains(&format!("set completions to {completions}")),
        "{stderr}"
    );
    // No results written: the pod fails, so that Kubernetes retries it.
    let (code, stderr) = run_script(
        shard,
        folder.path(),
        &[
            ("JOB_COMPLETION_INDEX", "0".into()),
            ("NO_RESULTS", "1".into()),
        ],
    );
    assert_eq!(code, 100, "{stderr}");
    assert!(stderr.contains("without writing"), "{stderr}");

    // Its earlier results were removed first: they must not pass for this attempt's.
    assert!(
        !folder
            .path()
            .join("results/shard-bare_right-tool-1-of-2.json")
            .exists()
    );
    let (code, stderr) = run_script(
        shard,
        folder.path(),
        &[("JOB_COMPLETION_INDEX", "0".into())],
    );
    assert_eq!(code, 0, "the retry: {stderr}");

    // The merge passes every shard's results and exits with the run's code.
    std::fs::remove_file(folder.path().join("calls.txt")).unwrap();
    let merge = documents("merge.yaml");
    let (code, stderr) = run_script(container(job(&merge)), folder.path(), &[]);
    assert_eq!(code, 100, "{stderr}");
    let calls = std::fs::read_to_string(folder.path().join("calls.txt")).unwrap();
    let merged = calls.lines().next().unwrap();
    assert!(merged.starts_with("clawtest merge "), "{merged}");
    assert_eq!(
        merged.matches("/shard-").count() as u64,
        completions,
        "{merged}"
    );
    let report = calls.lines().nth(1).expect("the HTML report");
    assert!(report.starts_with("clawtest report "), "{report}");
}
