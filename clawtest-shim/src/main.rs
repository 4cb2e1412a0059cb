//! clawtest-shim: the helper that will run inside the docker sandbox, forwarding the
//! loopback ports of the sandbox contract to Unix sockets. The docker backend fills it in.

fn main() {
    eprintln!("clawtest-shim: the docker backend is not built yet; this binary does nothing");
    std::process::exit(2);
}
