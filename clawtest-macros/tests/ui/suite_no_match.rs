#[clawtest::suite("no-such-folder/**/*.yaml")]
fn tasks() {}

fn main() {}
