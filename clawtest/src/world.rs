//! Per-trial state: the stores of every service a task uses and the audit log.
