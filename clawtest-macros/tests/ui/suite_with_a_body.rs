#[clawtest::suite("Cargo.toml")]
fn tasks() {
    println!("never runs");
}

fn main() {}
