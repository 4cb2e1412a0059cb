#[clawtest::suite("Cargo.toml", retries = 2)]
fn tasks() {}

fn main() {}
