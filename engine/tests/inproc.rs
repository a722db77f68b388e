//! Engine tests over an in-process transport: N engines in N threads exchanging messages
//! through mutex-protected queues. Covers matching, ordering, rendezvous, flow control,
//! communicator creation, bad input and failure completion without any real transport.

use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use weft_engine::*;
use weft_testkit::inproc::{join_all, net, Net};

fn engine(me: u32, n: u32, net: &Arc<Net>) -> Engine {
    let cfg = EngineConfig { slow_period: Duration::from_micros(50), ..Default::default() };
    weft_testkit::inproc::engine(me, n, net, cfg)
}

/// Run `f(rank, engine)` in `n` threads with a watchdog: a hang fails the test.
fn run<F>(n: u32, cap: usize, f: F)
where
    F: Fn(u32, &mut Engine, &Arc<Net>) + Send + Sync + 'static,
{
    run_split(n, cap, usize::MAX, f)
}

/// As [`run`], on transports that split rendezvous of at least `split_limit` bytes.
fn run_split<F>(n: u32, cap: usize, split_limit: usize, f: F)
where
    F: Fn(u32, &mut Engine, &Arc<Net>) + Send + Sync + 'static,
{
    let net = net(n, cap);
    net.split_limit.store(split_limit, std::sync::atomic::Ordering::Relaxed);
    let f = Arc::new(f);
    let hs: Vec<_> = (0..n)
        .map(|r| {
            let (net, f) = (net.clone(), f.clone());
            std::thread::spawn(move || {
                let mut e = engine(r, n, &net);
                f(r, &mut e, &net);
                // Like a process's finalize: flush queued control messages (a FIN may still
                // wait for space in the peer's inbox). A rank that "died" does not.
                if !*net.dead[r as usize].lock().unwrap() {
                    Setup::of(&mut e).finalize();
                }
            })
        })
        .collect();
    join_all(hs, Duration::from_secs(60));
}

#[test]
fn eager_and_rendezvous_ring() {
    run(4, 8, |me, e, _| {
        let w = e.world();
        for &len in &[0usize, 1, 255, 256, 257, 4096, 1 << 20] {
            let sbuf: Vec<u8> = (0..len).map(|i| (i as u32 * 7 + me) as u8).collect();
            let mut rbuf = vec![0u8; len];
            let from = (me + 3) % 4;
            // SAFETY: rbuf holds len bytes and is not touched until wait_all below completes r.
            let r = unsafe { e.irecv(w, rbuf.as_mut_ptr(), len, from as i32, 5).unwrap() };
            // SAFETY: sbuf holds len bytes and lives, unwritten, until wait_all completes s.
            let s = unsafe { e.isend(w, sbuf.as_ptr(), len, (me + 1) % 4, 5).unwrap() };
            let st = e.wait_all(&[r, s]).unwrap();
            assert_eq!((st[0].source, st[0].tag, st[0].count), (from, 5, len));
            assert!(rbuf.iter().enumerate().all(|(i, &b)| b == (i as u32 * 7 + from) as u8), "len {len}");
        }
        e.barrier(w).unwrap();
    });
}

#[test]
fn flow_control_keeps_order() {
    // Inbox capacity 2: most sends queue in the engine and must still arrive in order.
    run(2, 2, |me, e, _| {
        let w = e.world();
        if me == 0 {
            let bufs: Vec<[u8; 4]> = (0..200u32).map(|i| i.to_le_bytes()).collect();
            let ids: Vec<_> =
                // SAFETY: each b is 4 bytes of bufs, which is not written and outlives wait_all.
                bufs.iter().map(|b| unsafe { e.isend(w, b.as_ptr(), 4, 1, 3).unwrap() }).collect();
            e.wait_all(&ids).unwrap();
        } else {
            for i in 0..200u32 {
                let mut b = [0u8; 4];
                e.recv(w, &mut b, 0, 3).unwrap();
                assert_eq!(u32::from_le_bytes(b), i);
            }
        }
    });
}

#[test]
fn wildcards_probe_and_truncation() {
    run(3, 64, |me, e, _| {
        let w = e.world();
        if me != 0 {
            e.send(w, &[me as u8; 10], 0, 50).unwrap();
            e.send(w, &[9u8; 300], 0, 100).unwrap();
        } else {
            let mut seen = Vec::new();
            for _ in 0..2 {
                let st = e.probe(w, ANY_SOURCE, 50).unwrap();
                let mut b = vec![0u8; st.count];
                let got = e.recv(w, &mut b, st.source as i32, st.tag).unwrap();
                assert_eq!(got, st);
                assert!(b.iter().all(|&x| x == got.source as u8));
                seen.push(got.source);
            }
            seen.sort();
            assert_eq!(seen, vec![1, 2]);
            // Truncation: a 300-byte message into 100 bytes is an error, and the engine
            // keeps working afterwards.
            let mut small = [0u8; 100];
            let err = e.recv(w, &mut small, 1, 100).unwrap_err();
            assert!(matches!(err, Error::Truncated { incoming: 300, capacity: 100, .. }), "{err}");
            let mut b = [0u8; 300];
            assert_eq!(e.recv(w, &mut b, 2, 100).unwrap().count, 300);
            assert!(e.iprobe(w, ANY_SOURCE, ANY_TAG).unwrap().is_none());
        }
        e.barrier(w).unwrap();
    });
}

#[test]
fn bad_input_is_typed_and_harmless() {
    run(2, 64, |me, e, _| {
        let w = e.world();
        assert!(matches!(e.send(w, b"x", 7, 0), Err(Error::InvalidRank { rank: 7, size: 2 })));
        assert!(matches!(e.send(w, b"x", 1, -5), Err(Error::InvalidTag(-5))));
        assert!(matches!(e.send(w, b"x", 1, ANY_TAG), Err(Error::InvalidTag(_))));
        let mut b = [0u8; 1];
        assert!(matches!(e.recv(w, &mut b, 9, 0), Err(Error::InvalidRank { .. })));
        assert!(matches!(e.recv(w, &mut b, -2, 0), Err(Error::InvalidRank { .. })));
        // SAFETY: a NULL buffer is rejected before any access (the point of this check).
        assert!(matches!(unsafe { e.isend(w, std::ptr::null(), 4, 1, 0) }, Err(Error::InvalidArg(_))));
        assert!(matches!(e.wait(ReqId::from_raw(12345)), Err(Error::InvalidRequest)));
        let d = Communicators::of(e).dup(w).unwrap();
        Communicators::of(e).free(d).unwrap();
        assert!(matches!(e.send(d, b"x", 1 - me, 0), Err(Error::InvalidComm)));
        assert!(matches!(Communicators::of(e).free(d), Err(Error::InvalidComm)));
        assert!(Communicators::of(e).free(w).is_err());
        // Still usable.
        if me == 0 {
            e.send(w, b"ok", 1, 1).unwrap();
        } else {
            let mut b = [0u8; 2];
            e.recv(w, &mut b, 0, 1).unwrap();
            assert_eq!(&b, b"ok");
        }
    });
}

#[test]
fn dup_and_split_isolate_traffic() {
    run(5, 64, |me, e, _| {
        let w = e.world();
        let d = Communicators::of(e).dup(w).unwrap();
        let s = Communicators::of(e).split(w, (me % 2) as i32, -(me as i32)).unwrap().unwrap();
        let (sr, ss) = (e.comm(s).unwrap().rank(), e.comm(s).unwrap().size());
        assert_eq!(ss, if me % 2 == 0 { 3 } else { 2 });
        // key = -rank: the split ranks are reversed.
        let members: Vec<u32> = (0..5).filter(|r| r % 2 == me % 2).rev().collect();
        assert_eq!(members[sr as usize], me);
        // Same tag on world, dup and split: each message lands on its own communicator.
        let peer = (sr + 1) % ss;
        let from = (sr + ss - 1) % ss;
        e.send(s, &[1], peer, 0).unwrap();
        let wpeer = (me + 1) % 5;
        e.send(d, &[2], wpeer, 0).unwrap();
        e.send(w, &[3], wpeer, 0).unwrap();
        let mut b = [0u8];
        e.recv(w, &mut b, ANY_SOURCE, 0).unwrap();
        assert_eq!(b[0], 3);
        e.recv(d, &mut b, ANY_SOURCE, 0).unwrap();
        assert_eq!(b[0], 2);
        let st = e.recv(s, &mut b, ANY_SOURCE, 0).unwrap();
        assert_eq!((b[0], st.source), (1, from));
        assert!(matches!(Communicators::of(e).split(w, -7, 0), Err(Error::InvalidArg(_))));
        let none = Communicators::of(e).split(w, if me == 0 { UNDEFINED } else { 1 }, 0).unwrap();
        assert_eq!(none.is_none(), me == 0);
        e.barrier(w).unwrap();
    });
}

#[test]
fn failure_completes_pending_operations() {
    run(3, 64, |me, e, net| {
        let w = e.world();
        match me {
            2 => {
                // Send one message, then "die".
                e.send(w, b"last words", 0, 1).unwrap();
                std::thread::sleep(Duration::from_millis(20));
                *net.dead[2].lock().unwrap() = true;
            }
            0 => {
                let mut b = [0u8; 32];
                let mut big = vec![0u8; 1 << 16];
                // SAFETY: big is not touched again; its request completes (with ProcFailed)
                // at the wait below.
                let spec = unsafe { e.irecv(w, big.as_mut_ptr(), big.len(), 2, 9).unwrap() };
                // SAFETY: b (32 bytes) is read only after the last wait completes wild.
                let wild = unsafe { e.irecv(w, b.as_mut_ptr(), 32, ANY_SOURCE, 77).unwrap() };
                let t0 = Instant::now();
                let err = e.wait(spec).unwrap_err();
                assert_eq!(err, Error::ProcFailed { ranks: vec![2] });
                assert!(t0.elapsed() < Duration::from_secs(5));
                assert_eq!(e.wait(wild).unwrap_err(), Error::ProcFailedPending);
                assert_eq!(e.comm(w).unwrap().failed(), vec![2]);
                // Data sent before the death is still delivered.
                let mut lw = [0u8; 10];
                e.recv(w, &mut lw, 2, 1).unwrap();
                assert_eq!(&lw, b"last words");
                assert!(matches!(e.send(w, b"x", 2, 0), Err(Error::ProcFailed { .. })));
                assert_eq!(Communicators::of(e).ack_failed(w).unwrap(), 1);
                e.send(w, b"rd", 1, 5).unwrap();
                e.wait(wild).unwrap();
                assert_eq!(&b[..2], b"go");
            }
            _ => {
                let mut b = [0u8; 2];
                e.recv(w, &mut b, 0, 5).unwrap();
                e.send(w, b"go", 0, 77).unwrap();
            }
        }
    });
}

/// Split rendezvous: above the transport's split limit the receiver reads the head and the
/// sender writes the tail; every byte arrives, sizes around the page-rounded split included,
/// and messages below the limit or towards a receiver with its own sends pending to that peer
/// are read whole.
#[test]
fn split_rendezvous_moves_every_byte() {
    let sizes = [8192usize, 8193, 12_289, 100_000, 1 << 20];
    run_split(2, 64, 8192, move |r, e, _| {
        let w = e.world();
        let pat = |len: usize, i: usize| (i * 131 + len) as u8;
        if r == 0 {
            for &len in &sizes {
                let data: Vec<u8> = (0..len).map(|i| pat(len, i)).collect();
                e.send(w, &data, 1, 3).unwrap();
            }
            assert_eq!(Diagnostics::of(e).stats().split_rndv, 0, "the sender received nothing");
        } else {
            for &len in &sizes {
                let mut b = vec![0u8; len];
                let st = e.recv(w, &mut b, 0, 3).unwrap();
                assert_eq!(st.count, len);
                assert!(b.iter().enumerate().all(|(i, &x)| x == pat(len, i)), "{len} bytes differ");
            }
            assert_eq!(Diagnostics::of(e).stats().split_rndv, sizes.len() as u64);
        }
        e.barrier(w).unwrap();
    });
}

/// Traffic both ways: a receiver with rendezvous sends of its own pending to the peer reads
/// whole, until the peer's FINs show it has read all of them. Rank 0 reads all of rank 1's
/// messages while rank 1 does not progress; rank 1 then takes a poll's worth of rank 0's RTSs,
/// finds the FINs waiting behind them at its first decision, and splits the whole window.
#[test]
fn a_peer_done_reading_takes_the_split_of_the_rest() {
    const WIN: usize = 64;
    const LEN: usize = 16_384;
    let rank0_read = Arc::new(std::sync::atomic::AtomicBool::new(false));
    run_split(2, 4 * WIN, 8192, move |r, e, _| {
        use std::sync::atomic::Ordering;
        let w = e.world();
        let peer = 1 - r;
        let content = |src: u32, k: usize| -> Vec<u8> {
            (0..LEN).map(|i| (i * 7 + k * 13) as u8 ^ src as u8).collect()
        };
        let sbufs: Vec<Vec<u8>> = (0..WIN).map(|k| content(r, k)).collect();
        let mut rbuf = vec![0u8; LEN * WIN];
        let recvs: Vec<ReqId> = rbuf
            .chunks_mut(LEN)
            // SAFETY: each chunk holds LEN bytes and is read only after wait_all below.
            .map(|c| unsafe { e.irecv(w, c.as_mut_ptr(), LEN, peer as i32, 4).unwrap() })
            .collect();
        let sends: Vec<ReqId> = sbufs
            .iter()
            // SAFETY: the buffers live, unwritten, until wait_all below completes the sends.
            .map(|b| unsafe { e.isend(w, b.as_ptr(), LEN, peer, 4).unwrap() })
            .collect();
        if r == 0 {
            e.wait_all(&recvs).unwrap();
            rank0_read.store(true, Ordering::Release);
            e.wait_all(&sends).unwrap();
            assert_eq!(
                Diagnostics::of(e).stats().split_rndv,
                0,
                "rank 0 read while rank 1 had its sends pending"
            );
        } else {
            while !rank0_read.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            e.wait_all(&recvs).unwrap();
            e.wait_all(&sends).unwrap();
            let st = Diagnostics::of(e).stats();
            assert_eq!(st.split_rndv, WIN as u64, "rank 1 splits the window once rank 0 is done");
            assert_eq!(st.split_late, 1, "decided at the first receive, after polling the FINs");
        }
        for (k, c) in rbuf.chunks(LEN).enumerate() {
            assert!(c == content(peer, k).as_slice(), "rank {r}: message {k} differs");
        }
        e.barrier(w).unwrap();
    });
}

/// A sender that dies after its RTS, with the receiver's CTS unanswered: the split receive
/// ends with `ProcFailed` (no hang waiting for the tail).
#[test]
fn a_dead_sender_fails_its_split_receive() {
    run_split(2, 64, 8192, |r, e, net| {
        let w = e.world();
        if r == 0 {
            // Leaked: the receiver may read it after this rank "died".
            let data: &'static [u8] = vec![7u8; 1 << 16].leak();
            // SAFETY: `data` lives for the rest of the process.
            let _req = unsafe { e.isend(w, data.as_ptr(), data.len(), 1, 4).unwrap() };
            *net.dead[0].lock().unwrap() = true;
        } else {
            let mut b = vec![0u8; 1 << 16];
            let err = e.recv(w, &mut b, 0, 4).unwrap_err();
            assert_eq!(err, Error::ProcFailed { ranks: vec![0] });
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// Non-overtaking: with one sender, every receive (specific tag or wildcard) must get
    /// exactly the first not-yet-received message it accepts, in send order — checked against
    /// a model of the queue. Sizes cross the eager limit, so eager and rendezvous mix.
    #[test]
    fn non_overtaking(msgs in proptest::collection::vec((0i32..3, 0usize..600), 1..60),
                      picks in proptest::collection::vec((any::<bool>(), 0usize..64), 60)) {
        let msgs = Arc::new(msgs);
        let picks = Arc::new(picks);
        run(2, 4, move |me, e, _| {
            let w = e.world();
            if me == 0 {
                let bufs: Vec<Vec<u8>> = msgs.iter().enumerate().map(|(i, &(_, len))| {
                    let mut v = vec![0u8; len.max(4)];
                    v[..4].copy_from_slice(&(i as u32).to_le_bytes());
                    v
                }).collect();
                let ids: Vec<_> = msgs.iter().zip(&bufs)
                    // SAFETY: each b lives in bufs, unwritten, until wait_all completes the sends.
                    .map(|(&(tag, _), b)| unsafe { e.isend(w, b.as_ptr(), b.len(), 1, tag).unwrap() })
                    .collect();
                e.wait_all(&ids).unwrap();
            } else {
                let mut remaining: Vec<(u32, i32)> = msgs.iter().enumerate().map(|(i, &(t, _))| (i as u32, t)).collect();
                let mut b = vec![0u8; 1024];
                for &(wild, k) in picks.iter().take(msgs.len()) {
                    let tag = if wild { ANY_TAG } else { remaining[k % remaining.len()].1 };
                    let pos = remaining.iter().position(|&(_, t)| tag == ANY_TAG || t == tag).unwrap();
                    let (want_seq, want_tag) = remaining.remove(pos);
                    // SAFETY: b is read only after test reports the request complete (a stuck
                    // receive panics, and nothing progresses the engine after that).
                    let id = unsafe { e.irecv(w, b.as_mut_ptr(), b.len(), 0, tag).unwrap() };
                    let t0 = Instant::now();
                    let st = loop {
                        if let Some(st) = e.test(id).unwrap() {
                            break st;
                        }
                        if t0.elapsed() > Duration::from_secs(5) {
                            panic!("receive for tag {tag} (want seq {want_seq}) stuck:\n{}", Diagnostics::of(e).debug_state());
                        }
                    };
                    let seq = u32::from_le_bytes(b[..4].try_into().unwrap());
                    assert_eq!((seq, st.tag), (want_seq, want_tag), "receive for tag {tag} overtaken");
                }
            }
        });
    }
}

/// An activity that forwards a token around the ring through the internal context and
/// completes a generic request — the shape of a non-blocking collective.
struct RingToken {
    comm: CommId,
    req: ReqId,
    buf: Box<[u8; 4]>,
    stage: u8,
    /// The step in flight: its request, or `None` for a receive matched at once.
    inner: Option<Option<ReqId>>,
}

/// A receive on the internal context as a request, or `None` if it matched at once.
fn posted(r: Result<RecvStart>) -> Result<Option<ReqId>> {
    r.map(|s| match s {
        RecvStart::Pending(id) => Some(id),
        RecvStart::Done(_) => None,
    })
}

impl Activity<CollPort> for RingToken {
    fn advance(&mut self, e: &mut CollPort) -> Step {
        let (me, n) = (e.comm(self.comm).unwrap().rank(), e.comm(self.comm).unwrap().size());
        loop {
            match self.stage {
                0 => {
                    let id = if me == 0 {
                        // SAFETY: self.buf is boxed (a stable address) and owned by this
                        // activity, which leaves it alone until take_result reports the request.
                        unsafe {
                            e.isend_coll(self.comm, self.buf.as_ptr(), 4, 1 % n, FIRST_COLL_TAG).map(Some)
                        }
                    } else {
                        // SAFETY: as above: the boxed self.buf is untouched until completion.
                        posted(unsafe {
                            e.irecv_coll_opt(
                                self.comm,
                                self.buf.as_mut_ptr(),
                                4,
                                (me - 1) as i32,
                                FIRST_COLL_TAG,
                            )
                        })
                    };
                    self.inner = Some(id.unwrap());
                    self.stage = 1;
                }
                1 => match self.inner.unwrap().map_or(Ok(Some(Status::default())), |id| e.take_result(id)) {
                    Ok(None) => return Step::Continue,
                    Err(err) => {
                        e.complete_request(self.req, Err(err));
                        return Step::Done;
                    }
                    Ok(Some(_)) => {
                        let id = if me == 0 {
                            // SAFETY: the previous request on self.buf has completed; the boxed
                            // buffer is untouched until take_result reports this one.
                            posted(unsafe {
                                e.irecv_coll_opt(
                                    self.comm,
                                    self.buf.as_mut_ptr(),
                                    4,
                                    (n - 1) as i32,
                                    FIRST_COLL_TAG,
                                )
                            })
                        } else {
                            self.buf[0] += 1;
                            // SAFETY: the receive into self.buf has completed; the boxed buffer
                            // is not written until take_result reports this send.
                            unsafe {
                                e.isend_coll(self.comm, self.buf.as_ptr(), 4, (me + 1) % n, FIRST_COLL_TAG)
                                    .map(Some)
                            }
                        };
                        self.inner = Some(id.unwrap());
                        self.stage = 2;
                    }
                },
                _ => match self.inner.unwrap().map_or(Ok(Some(Status::default())), |id| e.take_result(id)) {
                    Ok(None) => return Step::Continue,
                    res => {
                        let st = res.map(|_| Status { source: 0, tag: 0, count: self.buf[0] as usize });
                        e.complete_request(self.req, st);
                        return Step::Done;
                    }
                },
            }
        }
    }
}

#[test]
fn activities_and_generic_requests() {
    run(3, 8, |_me, e, _| {
        let w = e.world();
        let req = CollPort::of(e).new_request(w).unwrap();
        CollPort::of(e).spawn(RingToken { comm: w, req, buf: Box::new([0; 4]), stage: 0, inner: None });
        // A user receive on the same tag must not see internal traffic.
        let st = e.wait(req).unwrap();
        if e.comm(w).unwrap().rank() == 0 {
            assert_eq!(st.count, 2, "token incremented by ranks 1 and 2");
        }
        assert!(e.iprobe(w, ANY_SOURCE, ANY_TAG).unwrap().is_none());
        e.barrier(w).unwrap();
    });
}

#[test]
fn class_handlers_and_revoke() {
    use std::cell::Cell;
    use std::rc::Rc;
    run(2, 8, |me, e, _| {
        let w = e.world();
        let d = Communicators::of(e).dup(w).unwrap();
        let got = Rc::new(Cell::new(0u64));
        let g = got.clone();
        FtPort::of(e)
            .set_handler(
                40,
                Box::new(move |e, peer, h, p| {
                    // A revoke notice: revoke the communicator named by ctx locally.
                    g.set(h.len + p.len() as u64 + peer as u64 * 1000);
                    let _ = e.revoke_local(CommId::from_raw(u64::from_le_bytes(p.try_into().unwrap())));
                }),
            )
            .unwrap();
        assert!(FtPort::of(e).set_handler(3, Box::new(|_, _, _, _| {})).is_err());
        let mut b = [0u8; 4];
        // SAFETY: b is not touched; the request completes (Revoked) at the wait below.
        let pending = unsafe { e.irecv(d, b.as_mut_ptr(), 4, 1 - me as i32, 0).unwrap() };
        if me == 0 {
            let hdr = Header { class: 40, len: 7, ..Header::default() };
            // The peer's handle for its dup is not ours in general, but both processes
            // created the same sequence of communicators here, so the raw handle matches.
            FtPort::of(e).send_ctrl(1, hdr, &d.to_raw().to_le_bytes()).unwrap();
            FtPort::of(e).revoke_local(d).unwrap();
        }
        assert_eq!(e.wait(pending).unwrap_err(), Error::Revoked);
        assert!(e.comm(d).unwrap().is_revoked());
        assert_eq!(e.send(d, b"x", 1 - me, 0).unwrap_err(), Error::Revoked);
        if me == 1 {
            assert_eq!(got.get(), 7 + 8);
        }
        // World is untouched.
        e.barrier(w).unwrap();
    });
}

#[test]
fn group_error_scope_reports_any_member_failure() {
    run(3, 16, |me, e, net| {
        let w = e.world();
        let d = Communicators::of(e).dup(w).unwrap();
        Communicators::of(e).set_error_scope(d, ErrScope::Group).unwrap();
        e.barrier(w).unwrap();
        if me == 2 {
            *net.dead[2].lock().unwrap() = true;
            return;
        }
        // Rank 0 and 1 wait on each other on `d`; rank 2's death must still end the wait.
        let mut b = [0u8; 1];
        // (If the death is already known, posting the receive reports it at once.)
        // SAFETY: b is used again only after the request completed (wait) or was never made.
        let err = match unsafe { e.irecv(d, b.as_mut_ptr(), 1, 1 - me as i32, 5) } {
            Ok(r) => e.wait(r).unwrap_err(),
            Err(err) => err,
        };
        assert_eq!(err, Error::ProcFailed { ranks: vec![2] });
        // Until acknowledged, new operations on `d` fail too; world (local scope) does not.
        assert!(matches!(e.send(d, b"x", 1 - me, 0), Err(Error::ProcFailed { .. })));
        Communicators::of(e).ack_failed(d).unwrap();
        e.send(d, &[me as u8], 1 - me, 6).unwrap();
        e.recv(d, &mut b, (1 - me) as i32, 6).unwrap();
        assert_eq!(b[0], (1 - me) as u8);
    });
}

#[test]
fn receive_matched_at_post_completes_without_request() {
    run(2, 8, |me, e, _| {
        let w = e.world();
        if me == 0 {
            let m = [7u8; 8];
            for _ in 0..2 {
                // SAFETY: m is never written; an eager send (asserted) keeps no pointer to it.
                assert!(unsafe { FtPort::of(e).isend_coll_opt(w, m.as_ptr(), 8, 1, 3).unwrap() }.is_none());
            }
            let big = [1u8; 64];
            // SAFETY: as above; big outlives the call and is never written.
            assert!(unsafe { FtPort::of(e).isend_coll_opt(w, big.as_ptr(), 64, 1, 4).unwrap() }.is_none());
        } else {
            // Wait until both messages of tag 3 are here (unexpected), then post.
            let t = Instant::now();
            while Diagnostics::of(e).stats().unexpected < 3 {
                e.progress();
                assert!(t.elapsed() < Duration::from_secs(10), "messages never arrived");
            }
            let mut b = [0u8; 8];
            // SAFETY: b is read only in the Done arm, when the receive has completed.
            match unsafe { FtPort::of(e).irecv_coll_opt(w, b.as_mut_ptr(), 8, 0, 3).unwrap() } {
                RecvStart::Done(st) => assert_eq!((st.source, st.count, b), (0, 8, [7u8; 8])),
                RecvStart::Pending(_) => panic!("a message already here must complete at post"),
            }
            // Truncation is reported at post, not hidden.
            let mut small = [0u8; 16];
            assert!(matches!(
                // SAFETY: truncation fails the post, so no request keeps a pointer to small.
                unsafe { FtPort::of(e).irecv_coll_opt(w, small.as_mut_ptr(), 16, 0, 4) },
                Err(Error::Truncated { .. })
            ));
            // Nothing of tag 5 has arrived: a request to wait for.
            let mut c = [0u8; 8];
            // SAFETY: c is read only after wait completes the pending request.
            match unsafe { FtPort::of(e).irecv_coll_opt(w, c.as_mut_ptr(), 8, 0, 5).unwrap() } {
                RecvStart::Pending(id) => {
                    e.barrier(w).unwrap();
                    let st = e.wait(id).unwrap();
                    assert_eq!((st.count, c), (8, [9u8; 8]));
                }
                RecvStart::Done(_) => panic!("nothing of tag 5 was sent yet"),
            }
            // The second message of tag 3 is still queued, intact.
            let mut d = [0u8; 8];
            assert!(matches!(
                // SAFETY: the message is already here: the receive completes at post (asserted).
                unsafe { FtPort::of(e).irecv_coll_opt(w, d.as_mut_ptr(), 8, 0, 3).unwrap() },
                RecvStart::Done(_)
            ));
            assert_eq!(d, [7u8; 8]);
            return;
        }
        e.barrier(w).unwrap();
        let m = [9u8; 8];
        // SAFETY: m is never written; an eager send (asserted) keeps no pointer to it.
        assert!(unsafe { FtPort::of(e).isend_coll_opt(w, m.as_ptr(), 8, 1, 5).unwrap() }.is_none());
    });
}

#[test]
fn synchronous_send_completes_only_after_the_match() {
    run(2, 8, |me, e, _| {
        let w = e.world();
        for &len in &[0usize, 8, 1 << 16] {
            if me == 0 {
                let sbuf = vec![7u8; len];
                // SAFETY: sbuf lives, unwritten, until the wait below completes s.
                let s = unsafe { e.issend(w, sbuf.as_ptr(), len, 1, 3).unwrap() };
                // Rank 1 posts its receive only after our go-ahead: until then s must pend.
                let t0 = Instant::now();
                while t0.elapsed() < Duration::from_millis(50) {
                    assert!(e.test(s).unwrap().is_none(), "ssend of {len} completed before the match");
                }
                e.send(w, &[], 1, 4).unwrap();
                assert_eq!(e.wait(s).unwrap().count, len);
                // To itself: the matching receive completes both.
                // SAFETY: as above.
                let s = unsafe { e.issend(w, sbuf.as_ptr(), len, 0, 5).unwrap() };
                assert!(e.test(s).unwrap().is_none());
                let mut rbuf = vec![0u8; len];
                assert_eq!(e.recv(w, &mut rbuf, 0, 5).unwrap().count, len);
                assert_eq!(rbuf, sbuf);
                e.wait(s).unwrap();
            } else {
                e.recv(w, &mut [], 0, 4).unwrap();
                let mut rbuf = vec![0u8; len];
                assert_eq!(e.recv(w, &mut rbuf, 0, 3).unwrap().count, len);
                assert!(rbuf.iter().all(|&b| b == 7));
            }
        }
    });
}

#[test]
fn matched_probe_takes_the_message_out_of_matching() {
    run(2, 8, |me, e, _| {
        let w = e.world();
        for &len in &[4usize, 1 << 16] {
            if me == 0 {
                let (a, b) = (vec![1u8; len], vec![2u8; len]);
                // SAFETY: a and b live, unwritten, until wait_all completes both sends (the
                // receiver takes them in the opposite order, so they must both be in flight).
                let s = unsafe {
                    [e.isend(w, a.as_ptr(), len, 1, 9).unwrap(), e.isend(w, b.as_ptr(), len, 1, 9).unwrap()]
                };
                e.wait_all(&s).unwrap();
            } else {
                let m = loop {
                    if let Some(m) = e.improbe(w, 0, 9).unwrap() {
                        break m;
                    }
                };
                assert_eq!((m.status().source, m.status().tag, m.status().count), (0, 9, len));
                // A plain receive now gets the second message, not the probed one.
                let mut second = vec![0u8; len];
                e.recv(w, &mut second, 0, 9).unwrap();
                assert!(second.iter().all(|&b| b == 2));
                let mut first = vec![0u8; len];
                // SAFETY: `first` is not touched until the wait completes the request.
                let r = unsafe { e.imrecv(m, first.as_mut_ptr(), len).unwrap() };
                assert_eq!(e.wait(r).unwrap().count, len);
                assert!(first.iter().all(|&b| b == 1));
                assert!(e.improbe(w, 0, 9).unwrap().is_none());
            }
            e.barrier(w).unwrap();
        }
    });
}

#[test]
fn blocking_probe_ends_on_revoke_and_on_failure() {
    run(3, 16, |me, e, net| {
        let w = e.world();
        let d = Communicators::of(e).dup(w).unwrap();
        // A revoke notice (class 41) names a communicator to revoke locally.
        FtPort::of(e)
            .set_handler(
                41,
                Box::new(|e, _, _, p| {
                    let _ = e.revoke_local(CommId::from_raw(u64::from_le_bytes(p.try_into().unwrap())));
                }),
            )
            .unwrap();
        e.barrier(w).unwrap();
        match me {
            0 => {
                // Nothing is ever sent on `d`: only the revoke (a control message rank 1
                // handles by revoking locally) can end this probe.
                assert_eq!(e.probe(d, 1, 3).unwrap_err(), Error::Revoked);
                assert_eq!(e.probe(d, ANY_SOURCE, 3).unwrap_err(), Error::Revoked);
                assert_eq!(e.iprobe(d, 1, 3).unwrap_err(), Error::Revoked);
                e.barrier(w).unwrap();
                // Rank 2 dies without sending: a probe for it, and a wildcard probe while
                // its failure is not acknowledged, end with ProcFailed.
                assert_eq!(e.probe(w, 2, 4).unwrap_err(), Error::ProcFailed { ranks: vec![2] });
                assert_eq!(e.probe(w, ANY_SOURCE, 4).unwrap_err(), Error::ProcFailed { ranks: vec![2] });
                assert_eq!(e.iprobe(w, ANY_SOURCE, 4).unwrap_err(), Error::ProcFailedPending);
                assert_eq!(Communicators::of(e).ack_failed(w).unwrap(), 1);
                e.send(w, b"go", 1, 5).unwrap();
                // Acknowledged: a wildcard probe waits for a live sender again.
                let st = e.probe(w, ANY_SOURCE, 4).unwrap();
                assert_eq!((st.source, st.count), (1, 2));
                let mut b = [0u8; 2];
                e.recv(w, &mut b, 1, 4).unwrap();
                assert_eq!(&b, b"ok");
            }
            1 => {
                std::thread::sleep(Duration::from_millis(50));
                let hdr = Header { class: 41, len: 8, ..Header::default() };
                // Both processes created the same communicators in the same order, so the
                // raw handle of `d` is the same on rank 0.
                FtPort::of(e).send_ctrl(0, hdr, &d.to_raw().to_le_bytes()).unwrap();
                FtPort::of(e).revoke_local(d).unwrap();
                e.barrier(w).unwrap();
                // Sent only once rank 0 acknowledged rank 2's failure, so that its wildcard
                // probes before that cannot find it.
                let mut b = [0u8; 2];
                e.recv(w, &mut b, 0, 5).unwrap();
                e.send(w, b"ok", 0, 4).unwrap();
            }
            _ => {
                e.barrier(w).unwrap();
                *net.dead[2].lock().unwrap() = true;
            }
        }
    });
}
