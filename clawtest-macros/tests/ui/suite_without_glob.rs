#[clawtest::suite(trials = 3)]
fn tasks() {}

fn main() {}
