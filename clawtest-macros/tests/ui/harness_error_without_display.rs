struct Opaque;

#[clawtest::harness]
async fn agent(_env: clawtest::Env) -> Result<String, Opaque> {
    Err(Opaque)
}

fn main() {}
