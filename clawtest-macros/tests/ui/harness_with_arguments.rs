#[clawtest::harness(trials = 3)]
async fn agent(env: clawtest::Env) -> Result<String, String> {
    Ok(env.prompt().to_string())
}

fn main() {}
