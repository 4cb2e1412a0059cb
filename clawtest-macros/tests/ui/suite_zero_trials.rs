#[clawtest::suite("Cargo.toml", trials = 0)]
fn tasks() {}

fn main() {}
