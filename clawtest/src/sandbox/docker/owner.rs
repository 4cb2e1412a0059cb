//! Who owns a container: the host and the process that created it, written in its
//! [`super::OWNER_LABEL`], and whether that process is still alive (so `clean` spares the
//! containers of runs in progress).

/// This host's name (empty when it cannot be read).
fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it.
    let result = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len() - 1) };
    if result != 0 {
        return String::new();
    }
    let end = buffer.iter().position(|byte| *byte == 0).unwrap_or(0);
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

/// The value of [`super::OWNER_LABEL`] for containers this process creates.
pub(crate) fn owner() -> String {
    format!("{}/{}", host_name(), std::process::id())
}

/// True when `owner` is a clawtest process still alive on this host.
pub(crate) fn owner_alive(owner: &str) -> bool {
    let Some((host, process)) = owner.rsplit_once('/') else {
        return false;
    };
    let Ok(process) = process.parse::<i32>() else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    host == host_name() && process != 0 && unsafe { libc::kill(process, 0) } == 0
}
