#[clawtest::harness]
async fn agent(env: clawtest::Env) -> String {
    env.prompt().to_string()
}

fn main() {}
