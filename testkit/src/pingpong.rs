//! The 8-byte ping-pong between two re-executed children, one body for every [`Transport`]:
//! the shared-memory crate's test and benchmark and the libfabric crate's test run it on their
//! own transport. It prints, it does not assert: the figure means something only in a release
//! build on an idle machine.
//!
//! [`run`] starts the two children (role `pingpong`) and returns rank 0's line; each child
//! calls [`child`] with a constructor of its connected transport.

use std::path::Path;
use std::time::{Duration, Instant};

use weft_engine::transport::{Header, Transport};

use crate::traffic::barrier;
use crate::{pin, put_file, wait_all, ChildEnv, Harness};

/// Round trips per timed window.
const WINDOW: usize = 1000;

/// A child's side: pin rank r to core r (before the transport allocates its memory), build
/// the transport with `connect`, run a warm-up of `iters / 10` round trips, then `iters`
/// round trips in windows of 1000; rank 0 writes the one-way latency (ns: mean, median and
/// best window) to `dir/lat`.
pub fn child<T: Transport>(h: &Harness, c: &ChildEnv, connect: impl FnOnce(&ChildEnv) -> T) {
    let iters: usize = String::from_utf8(h.get_file(&c.dir, "iters")).unwrap().trim().parse().unwrap();
    let pinned = pin(c.rank as usize);
    let mut t = connect(c);
    barrier(h, c, &mut t, "pp-ready", 2);
    let other = 1 - c.rank;
    let payload = [7u8; 8];
    let mut sink = |_: u32, _: &Header, p: &[u8]| debug_assert_eq!(p.len(), 8);
    let mut run = |t: &mut T, n: usize| -> Duration {
        let start = Instant::now();
        let mut hd = Header { class: 1, len: 8, ..Header::default() };
        for i in 0..n {
            hd.tag = i as i32;
            if c.rank == 0 {
                while !t.try_send(other, &hd, &payload).unwrap() {}
                while t.poll(1, &mut sink) == 0 {}
            } else {
                while t.poll(1, &mut sink) == 0 {}
                while !t.try_send(other, &hd, &payload).unwrap() {}
            }
        }
        start.elapsed()
    };
    run(&mut t, (iters / 10).max(1));
    // The mean is what a user sees; the median and best window show the transport's own cost
    // when other processes share the cores.
    let win = WINDOW.min(iters.max(1));
    let mut wins: Vec<f64> =
        (0..(iters / win).max(1)).map(|_| run(&mut t, win).as_nanos() as f64 / (2 * win) as f64).collect();
    if c.rank == 0 {
        let mean = wins.iter().sum::<f64>() / wins.len() as f64;
        wins.sort_by(f64::total_cmp);
        let line = format!(
            "mean {mean:.1} median {:.1} best {:.1} ({} windows of {win}, {})",
            wins[wins.len() / 2],
            wins[0],
            wins.len(),
            if pinned { "pinned" } else { "unpinned" }
        );
        put_file(&c.dir, "lat", line.as_bytes());
    }
    barrier(h, c, &mut t, "pp-done", 2);
}

/// The parent's side: two children running role `pingpong` (`args` go to the re-executed
/// binary; `prepare` may write files they read into the scratch directory), killed after
/// `limit`. Returns rank 0's line.
pub fn run(h: &Harness, args: &[&str], iters: usize, limit: Duration, prepare: impl FnOnce(&Path)) -> String {
    let dir = h.scratch_dir("pp");
    std::fs::write(dir.join("iters"), iters.to_string()).unwrap();
    prepare(&dir);
    let mut ch = h.spawn("pingpong", 2, &dir, args, limit);
    wait_all(&mut ch, &[]);
    let line = String::from_utf8(std::fs::read(dir.join("lat")).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    line
}
