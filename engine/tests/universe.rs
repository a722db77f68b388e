//! A universe that grows: two jobs (universe ranks 0,1 and 2,3) whose engines start knowing
//! only their own job, then grow, connect to the other job through a transport added at run
//! time, and communicate on a communicator spanning both; a transport whose peers all died is
//! retired and its slot reused. Over the in-process transport, with a watchdog.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weft_engine::*;
use weft_testkit::inproc::{join_all, net, InProc, Net};

fn cfg() -> EngineConfig {
    EngineConfig { slow_period: Duration::from_micros(50), ..Default::default() }
}

#[test]
fn two_jobs_join_and_talk() {
    let net = net(4, 64);
    // Rank 0 sets it once it checked that a half-dead bridge stays: rank 2 may then "die".
    let go2 = Arc::new(AtomicBool::new(false));
    let hs: Vec<_> = (0..4u32)
        .map(|me| {
            let (net, go2) = (net.clone(), go2.clone());
            std::thread::spawn(move || {
                let (mine, others): (Vec<u32>, Vec<u32>) =
                    if me < 2 { (vec![0, 1], vec![2, 3]) } else { (vec![2, 3], vec![0, 1]) };
                let mut e = if me < 2 {
                    Engine::new(me, 2, cfg())
                } else {
                    Engine::with_world(me, mine.clone(), 4, cfg()).unwrap()
                };
                let peer = *mine.iter().find(|&&p| p != me).unwrap();
                Setup::of(&mut e).add_transport(Box::new(InProc::new(me, &net)), &[peer]);
                // The job's own world works before the other job is known.
                let w = e.world();
                assert_eq!(e.comm(w).unwrap().size(), 2);
                let v = e.comm(w).unwrap();
                assert_eq!(v.world_rank(v.rank()).unwrap(), me);
                e.barrier(w).unwrap();
                Setup::of(&mut e).grow_universe(4);
                assert_eq!(Setup::of(&mut e).universe_size(), 4);
                let t =
                    Setup::of(&mut e).add_peer_transport(Box::new(InProc::new(me, &net)), &others).unwrap();
                let u = Contexts::of(&mut e).create_agreed(10, vec![0, 1, 2, 3]).unwrap();
                assert_eq!(e.comm(u).unwrap().rank(), me);
                // Every rank sends its rank to the next one around the union.
                let mut got = [0u8; 4];
                let (next, prev) = ((me + 1) % 4, (me + 3) % 4);
                let sbuf = me.to_le_bytes();
                // SAFETY: `got` and `sbuf` outlive the wait below and are not touched meanwhile.
                let r = unsafe { e.irecv(u, got.as_mut_ptr(), 4, prev as i32, 1).unwrap() };
                // SAFETY: as above.
                let s = unsafe { e.isend(u, sbuf.as_ptr(), 4, next, 1).unwrap() };
                e.wait_all(&[r, s]).unwrap();
                assert_eq!(u32::from_le_bytes(got), prev);
                e.barrier(u).unwrap();
                match me {
                    3 => *net.dead[3].lock().unwrap() = true,
                    2 => {
                        while !go2.load(Ordering::Acquire) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        *net.dead[2].lock().unwrap() = true;
                    }
                    0 => retire_and_reuse(&mut e, &net, t, &go2),
                    _ => {}
                }
            })
        })
        .collect();
    join_all(hs, Duration::from_secs(60));
}

/// At rank 0: the bridge to ranks 2 and 3 is retired once both died, not before; a message to
/// a retired peer reports its failure; the next transport takes the slot.
fn retire_and_reuse(e: &mut Engine, net: &Arc<Net>, t0: usize, go2: &AtomicBool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let failed = |e: &Engine, r: u32| e.failures().world_ranks().contains(&r);
    while !failed(e, 3) {
        assert!(Instant::now() < deadline, "rank 3's death is never seen");
        Setup::of(e).slow_path();
    }
    assert_eq!(Setup::of(e).retire_dead_transports(), 0, "rank 2 of the other job still lives");
    assert_eq!(Diagnostics::of(e).route_name(2), "inproc");
    go2.store(true, Ordering::Release);
    while !failed(e, 2) {
        assert!(Instant::now() < deadline, "rank 2's death is never seen");
        Setup::of(e).slow_path();
    }
    assert_eq!(Setup::of(e).retire_dead_transports(), 1);
    assert_eq!(Diagnostics::of(e).route_name(2), "none");
    let hdr = Header { class: transport::class::FIRST_FREE, ..Header::default() };
    assert!(matches!(FtPort::of(e).send_ctrl(2, hdr, &[]), Err(Error::ProcFailed { .. })));
    Setup::of(e).grow_universe(5);
    let t = Setup::of(e).add_peer_transport(Box::new(InProc::new(0, net)), &[1]).unwrap();
    assert_eq!(t, t0, "the retired slot is reused");
}

#[test]
fn bad_universe_input_is_refused() {
    assert!(matches!(Engine::with_world(5, vec![2, 3], 8, cfg()), Err(Error::InvalidArg(_))));
    assert!(matches!(Engine::with_world(2, vec![2, 9], 8, cfg()), Err(Error::InvalidArg(_))));
    let n = net(3, 4);
    let mut e = Engine::new(0, 2, cfg());
    assert!(
        Setup::of(&mut e).add_peer_transport(Box::new(InProc::new(0, &n)), &[2]).is_err(),
        "outside the universe"
    );
    assert!(Setup::of(&mut e).add_peer_transport(Box::new(InProc::new(0, &n)), &[0]).is_err(), "itself");
    Setup::of(&mut e).grow_universe(3);
    Setup::of(&mut e).grow_universe(1);
    assert_eq!(Setup::of(&mut e).universe_size(), 3, "never shrinks");
    assert!(Setup::of(&mut e).add_peer_transport(Box::new(InProc::new(0, &n)), &[2]).is_ok());
}
