#[clawtest::harness]
async fn agent(env: clawtest::Env, turns: u32) -> Result<String, String> {
    Ok(format!("{} {turns}", env.prompt()))
}

fn main() {}
