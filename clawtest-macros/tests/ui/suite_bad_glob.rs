#[clawtest::suite("tasks/[*.yaml")]
fn tasks() {}

fn main() {}
