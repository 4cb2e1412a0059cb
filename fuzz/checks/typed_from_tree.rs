//! The fuzz check of `task::tree`: the typed form of a task read through its located tree must
//! equal the typed form read directly from the text, locations included, and whatever a
//! direct parse reads the tree must read too. The loader parses each file once and reads the
//! typed form from the tree; this keeps that equal to what a second parse would give.
//!
//! The tree may read what a direct parse refuses: a map key that is null (`~: 1`, or `{a: 1,:
//! 2}`) is the text "null" in the tree, as PyYAML and then JSON make it in ClawEnvKit, where
//! serde-saphyr refuses to read it as a field name. Validation then judges the task.
//!
//! The check, shared by the fuzz target (`fuzz/fuzz_targets/typed_from_tree.rs`) and by
//! `clawtest/tests/fuzz_seeds.rs`, which runs every committed seed through it on each test run.

/// Panics when `data` breaks a property above; returns quietly otherwise.
pub(crate) fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some((direct, through_tree)) = clawtest::task::typed_both_ways(text) else {
        return;
    };
    match (&direct, &through_tree) {
        (Ok(direct), Ok(through_tree)) => assert_eq!(through_tree, direct),
        (Err(_), _) => {}
        (Ok(_), Err(_)) => panic!("direct: {direct:?}\nthrough the tree: {through_tree:?}"),
    }
}
