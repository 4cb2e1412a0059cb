//! Who owns a container or a scratch folder: the host and the process that created it,
//! written in its [`super::docker::OWNER_LABEL`] or its owner marker (`scratch`), and whether
//! that process is still alive (so `clean` spares what runs in progress hold).

/// This host's name (uname's node name, what gethostname reads).
fn host_name() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// The value of [`super::docker::OWNER_LABEL`] (and of the owner marker) for what this
/// process creates.
pub(crate) fn owner() -> String {
    format!("{}/{}", host_name(), std::process::id())
}

/// True when `owner` is a clawtest process still alive on this host.
pub(crate) fn owner_alive(owner: &str) -> bool {
    let Some((host, process)) = owner.rsplit_once('/') else {
        return false;
    };
    let Some(process) = process
        .parse::<i32>()
        .ok()
        .filter(|process| *process > 0)
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    // Signal 0 only checks that the process exists.
    host == host_name() && rustix::process::test_kill_process(process).is_ok()
}
