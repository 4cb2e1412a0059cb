#[clawtest::harness]
fn agent(env: clawtest::Env) -> Result<String, String> {
    Ok(env.prompt().to_string())
}

fn main() {}
