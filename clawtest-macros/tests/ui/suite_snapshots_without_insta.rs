#[clawtest::suite("Cargo.toml", snapshots = true)]
fn tasks() {}

fn main() {}
