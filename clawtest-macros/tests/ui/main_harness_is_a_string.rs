clawtest::main!(harness = "agent");
