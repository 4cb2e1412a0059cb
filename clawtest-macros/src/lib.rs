//! Attribute macros for clawtest: `#[clawtest::suite]` and `#[clawtest::harness]` land here.
