clawtest::main!();
