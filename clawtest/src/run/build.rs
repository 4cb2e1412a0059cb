//! `[harness] build`: the configured build command, run once before any trial.

use std::path::Path;

use tokio_util::sync::CancellationToken;

/// Runs the configured `harness.build` command once, in `root`, before any trial. Its output
/// goes to this process's stderr so the user sees a build as it happens. It runs in its own
/// process group, which is killed at `timeout` (an error) or when the run is interrupted
/// (then this returns, and the run stops with every trial interrupted).
pub(crate) async fn build_harness(
    command: &[String],
    root: &Path,
    timeout: std::time::Duration,
    interrupt: &CancellationToken,
) -> Result<(), String> {
    let Some((program, arguments)) = command.split_first() else {
        return Ok(());
    };
    let mut build = tokio::process::Command::new(program);
    build
        .args(arguments)
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::inherit())
        .stderr(std::process::Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true);
    crate::sandbox::spawn::die_with_parent(&mut build);
    let mut child = build.spawn().map_err(|error| {
        format!(
            "the harness build command `{}` could not be started: {error}",
            command.join(" ")
        )
    })?;
    let group = child.id();
    let status = tokio::select! {
        status = child.wait() => status.map_err(|error| error.to_string())?,
        () = tokio::time::sleep(timeout) => {
            crate::sandbox::process::kill_group(group);
            let _ = child.wait().await;
            return Err(format!(
                "the harness build command `{}` did not finish within {} s (harness.build_timeout_seconds)",
                command.join(" "),
                timeout.as_secs()
            ));
        }
        () = interrupt.cancelled() => {
            crate::sandbox::process::kill_group(group);
            let _ = child.wait().await;
            return Ok(());
        }
    };
    crate::sandbox::process::kill_group(group);
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "the harness build command `{}` failed ({status})",
            command.join(" ")
        ))
    }
}
