//! Ping-pong latency of the shared-memory transport between two processes pinned to cores 0
//! and 1, 8-byte payload: `cargo bench -p weft-shm --bench pingpong`.

#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    if let Some(c) = common::child_env() {
        common::pingpong_child(&c);
        return;
    }
    for _ in 0..3 {
        let line = common::run_pingpong(&[], 100_000);
        println!("shm ping-pong, 8-byte payload, 100k iterations: one-way latency (ns) {line}");
    }
}
