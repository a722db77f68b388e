//! The failure-free blocking agreement over the communicator's data path: with at most
//! [`FAST_DIRECT_MAX`] members and no failed member known, every member sends its flag to
//! every other one as an eager message on the communicator's internal context (as a small
//! collective does) and receives theirs in the caller — no control message, no handler, no
//! ERA instance. This is the direct exchange of the agreement's fast path (`agree/fast.rs`)
//! on another carrier: each message is its sender's own contribution (its flag, with no
//! failed and no acknowledged ranks), and the member decides on the merge of all of them.
//!
//! **Conversion.** When the exchange cannot finish here — a receive fails (a member died, the
//! communicator was revoked or a failure makes its error scope fail the receive), a new
//! failure is recorded (anywhere), a message of a later agreement arrives,
//! or a message of this agreement's ERA instance arrives (another member runs it on the
//! control path) — the member cancels its receives and starts the ERA instance with the same
//! contribution, after feeding it the contributions it received as `Msg::Fast` messages of
//! the direct exchange. Its contribution then also goes out on the control path; a receiver
//! that already had it on the data path drops the duplicate (the schedule takes one message
//! per member). From there on the instance runs as any other, so every invariant of
//! `agree.rs` holds as it does for the control path.
//!
//! **Decisions are kept.** A member that decided here logs its last [`KEEP_DECIDED`] such
//! agreements (its flag and the flags it received). A later ERA message for one of them
//! rebuilds the instance from the log as a member decided on the fast path
//! ([`crate::agree::Era::restore_fast_decision`]), whatever failures it knows by then: it
//! answers the members that fell back with its decision (a member that decided on the fast
//! path never sends `Up`, so no tree root completes without it), and it sends its
//! contribution on the control path to the others, for a member that converted before its
//! data-path message arrived and still runs the fast path.
//!
//! Wire format (16 bytes, little endian): sequence number, communicator epoch, flag.

use weft_engine::{CommId, Common, Error, FtPort, RecvStart, ReqId, Result, FIRST_EXT_TAG};

use super::{Ft, Glue, Local, KEEP_DECIDED};
use crate::agree::{Action, Msg, Value, FAST_DIRECT as DIRECT, FAST_DIRECT_MAX};
use crate::glue::AgreePath;

/// Tag of the agreement's data-path messages on the internal context.
const TAG: i32 = FIRST_EXT_TAG;
/// Payload length.
const LEN: usize = 16;
/// Largest membership that runs on the data path (the direct exchange's).
const MAX: usize = FAST_DIRECT_MAX as usize;

/// One agreement decided on the data path.
#[derive(Clone, Copy, Default)]
struct Record {
    seq: u32,
    /// This member's flag and the flags received, by member rank (this member's slot unused).
    mine: u64,
    got: [u64; MAX],
    valid: bool,
}

/// Per communicator: the data-path agreements decided here and messages that came early.
#[derive(Default)]
pub(super) struct DataLog {
    /// Decided agreements at `seq % KEEP_DECIDED` (allocated by the first decision).
    decided: Vec<Record>,
    /// Messages of a later agreement: (member, sequence number, flag).
    early: Vec<(u32, u32, u64)>,
}

impl DataLog {
    fn record(&self, seq: u32) -> Option<&Record> {
        self.decided.get(seq as usize % KEEP_DECIDED).filter(|r| r.valid && r.seq == seq)
    }
}

/// The agreement this member runs on the data path (reserved by [`Glue::data_begin`]).
#[derive(Clone, Copy)]
pub(super) struct Exchange {
    ctx: u32,
    seq: u32,
    epoch: u32,
    n: usize,
    me: usize,
    /// Failures known (anywhere) at the start: a new one makes the exchange convert.
    failures: usize,
}

/// What a completed receive held.
enum Arrival {
    /// This agreement's contribution.
    Flag(u64),
    /// A message of an earlier agreement (left over from a conversion): receive again.
    Stale,
    /// A contribution to a later agreement.
    Later(u32, u64),
}

fn encode(seq: u32, epoch: u32, flag: u64) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    b[..4].copy_from_slice(&seq.to_le_bytes());
    b[4..8].copy_from_slice(&epoch.to_le_bytes());
    b[8..].copy_from_slice(&flag.to_le_bytes());
    b
}

fn classify(x: &Exchange, b: &[u8; LEN], count: usize) -> Arrival {
    let seq = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let epoch = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    let mut f = [0u8; 8];
    f.copy_from_slice(&b[8..]);
    let flag = u64::from_le_bytes(f);
    // A message of another size or epoch is nobody's contribution here (a communicator whose
    // context id this one reuses); like an earlier agreement's, it is skipped.
    if count != LEN || epoch != x.epoch || seq < x.seq {
        Arrival::Stale
    } else if seq == x.seq {
        Arrival::Flag(flag)
    } else {
        Arrival::Later(seq, flag)
    }
}

/// A contribution as the direct exchange's schedule takes it.
fn contribution(flag: u64) -> Value {
    Value::new(flag, 0, &[], &[])
}

impl Glue {
    /// If the next agreement on `ctx` can run on the data path, reserve its sequence number.
    pub(super) fn data_begin(&mut self, e: &FtPort, ctx: u32) -> Option<Exchange> {
        if self.opts.agree != AgreePath::Fast {
            return None;
        }
        let info = self.comms.get_mut(&ctx)?;
        let n = info.world_of.len();
        let failures = e.failures().count();
        if !(2..=MAX).contains(&n)
            || (failures != 0 && info.world_of.iter().any(|&w| e.failures().contains(w)))
            || self.insts.contains_key(&(ctx, info.next_seq))
            || e.comm(info.id).map(|v| v.is_revoked()).unwrap_or(true)
        {
            return None;
        }
        let x = Exchange { ctx, seq: info.next_seq, epoch: info.epoch, n, me: info.rank as usize, failures };
        info.next_seq += 1;
        self.data_inflight = Some((ctx, x.seq));
        Some(x)
    }

    /// True if an ERA message for agreement `seq` of `ctx` (below `next_seq`, without an
    /// instance) belongs to a data-path agreement: the one in progress (its instance is
    /// created, and the caller converts), or one decided here (its instance is rebuilt from the
    /// log, see the module documentation).
    pub(super) fn data_known(&mut self, e: &mut FtPort, ctx: u32, seq: u32) -> bool {
        if self.data_inflight == Some((ctx, seq)) {
            return true;
        }
        let Some(rec) = self.comms.get(&ctx).and_then(|i| i.data.record(seq)).copied() else {
            return false;
        };
        let me = self.comms[&ctx].rank;
        let n = self.comms[&ctx].world_of.len() as u32;
        let decision = rec.got.iter().take(n as usize).fold(rec.mine, |a, &f| a & f);
        let built = self.drive(e, ctx, seq, true, |inst, out| {
            inst.era.restore_fast_decision(contribution(decision));
            // A member that converted may wait on its own fast path for this member's
            // contribution (its data-path receive was cancelled before the message came).
            for to in (0..n).filter(|&r| r != me && !inst.era.is_failed(r)) {
                out.push(Action::Send { to, msg: Msg::Fast { step: DIRECT, v: contribution(rec.mine) } });
            }
        });
        if built {
            if let Some(info) = self.comms.get_mut(&ctx) {
                info.kept.push_back(seq);
            }
        }
        built
    }

    /// The exchange completed: log it and count the decision.
    fn data_decided(&mut self, x: &Exchange, mine: u64, got: &[Option<u64>; MAX]) {
        self.data_inflight = None;
        self.stats.decided += 1;
        self.stats.decided_fast += 1;
        self.stats.decided_data += 1;
        let Some(info) = self.comms.get_mut(&x.ctx) else { return };
        if info.data.decided.is_empty() {
            info.data.decided = vec![Record::default(); KEEP_DECIDED];
        }
        let mut rec = Record { seq: x.seq, mine, got: [0; MAX], valid: true };
        for (g, r) in got.iter().zip(rec.got.iter_mut()) {
            *r = g.unwrap_or(u64::MAX);
        }
        info.data.decided[x.seq as usize % KEEP_DECIDED] = rec;
    }

    /// Convert to the ERA instance (see the module documentation); false if the communicator
    /// is gone.
    fn data_convert(&mut self, e: &mut FtPort, x: &Exchange, mine: u64, got: &[Option<u64>; MAX]) -> bool {
        self.data_inflight = None;
        self.stats.converted_data += 1;
        let ok = self.drive(e, x.ctx, x.seq, true, |inst, out| {
            inst.local = Some(Local::Blocking);
            for (r, g) in got.iter().enumerate().take(x.n) {
                if let (Some(f), true) = (g, r != x.me) {
                    inst.era.on_msg_into(r as u32, Msg::Fast { step: DIRECT, v: contribution(*f) }, out);
                }
            }
            inst.era.start_view_into(contribution(mine), out);
        });
        self.housekeep(e, x.ctx);
        ok
    }

    /// Keep a contribution to a later agreement for when this member gets there.
    fn data_early(&mut self, x: &Exchange, from: usize, seq: u32, flag: u64) {
        if let Some(info) = self.comms.get_mut(&x.ctx) {
            info.data.early.push((from as u32, seq, flag));
        }
    }

    /// Take the early contributions to `x` (and drop those of earlier agreements).
    fn data_take_early(&mut self, x: &Exchange, got: &mut [Option<u64>; MAX]) {
        let Some(info) = self.comms.get_mut(&x.ctx) else { return };
        info.data.early.retain(|&(r, seq, f)| {
            if seq == x.seq && (r as usize) < x.n {
                got[r as usize] = Some(f);
            }
            seq > x.seq
        });
    }
}

/// The receiving side of one exchange, by member rank. Not moved while a receive is
/// pending (its buffer is the receive's).
struct Slots {
    bufs: [[u8; LEN]; MAX],
    /// Contributions received (this member's own included).
    got: [Option<u64>; MAX],
    /// Receives posted and not completed.
    pend: [Option<ReqId>; MAX],
}

impl Slots {
    fn all_in(&self, n: usize) -> bool {
        self.got.iter().take(n).all(Option::is_some)
    }
}

impl Ft {
    /// Run agreement `x` (reserved by [`Glue::data_begin`]) on the data path with contribution
    /// `flag`: `Ok(Some(and))` if it decided here, `Ok(None)` if it converted to its ERA
    /// instance (the decision then comes through [`Ft::wait_blocked`]).
    pub(super) fn data_agree(
        &self,
        e: &mut FtPort,
        c: CommId,
        x: Exchange,
        flag: u64,
    ) -> Result<Option<u64>> {
        let msg = encode(x.seq, x.epoch, flag);
        let mut sends: [Option<ReqId>; MAX] = [None; MAX];
        let mut s = Slots { bufs: [[0u8; LEN]; MAX], got: [None; MAX], pend: [None; MAX] };
        let mut convert = false;
        s.got[x.me] = Some(flag);
        for r in (0..x.n).filter(|&r| r != x.me) {
            // SAFETY: `msg` outlives every send that returns a request: they are waited for
            // below before this function returns.
            match unsafe { e.isend_coll_opt(c, msg.as_ptr(), LEN, r as u32, TAG) } {
                Ok(id) => sends[r] = id,
                Err(_) => convert = true,
            }
        }
        self.st.borrow_mut().data_take_early(&x, &mut s.got);
        for r in 0..x.n {
            if !convert && s.got[r].is_none() {
                convert = !self.data_post(e, c, &x, &mut s, r);
            }
        }
        let mut spins = 0;
        while !convert {
            for r in 0..x.n {
                let Some(id) = s.pend[r] else { continue };
                match e.take_result(id) {
                    Ok(None) => {}
                    Ok(Some(st)) => {
                        s.pend[r] = None;
                        convert |= !self.data_arrived(e, c, &x, &mut s, r, st.count);
                    }
                    Err(_) => {
                        s.pend[r] = None;
                        convert = true;
                    }
                }
            }
            if s.all_in(x.n) {
                break;
            }
            convert = convert
                || e.failures().count() != x.failures
                || self.st.borrow().insts.contains_key(&(x.ctx, x.seq))
                || e.comm(c).map(|v| v.is_revoked()).unwrap_or(true);
            if !convert {
                e.idle_wait(&mut spins);
            }
        }
        let res = if convert {
            for r in 0..x.n {
                let Some(id) = s.pend[r] else { continue };
                // Done meanwhile: its message counts as received (an error: not received).
                if matches!(e.cancel(id), Ok(false)) {
                    if let Ok(Some(st)) = e.take_result(id) {
                        match classify(&x, &s.bufs[r], st.count) {
                            Arrival::Flag(f) => s.got[r] = Some(f),
                            Arrival::Later(seq, f) => self.st.borrow_mut().data_early(&x, r, seq, f),
                            Arrival::Stale => {}
                        }
                    }
                }
            }
            if self.st.borrow_mut().data_convert(e, &x, flag, &s.got) {
                Ok(None)
            } else {
                Err(Error::InvalidComm)
            }
        } else {
            self.st.borrow_mut().data_decided(&x, flag, &s.got);
            Ok(Some(s.got.iter().take(x.n).fold(u64::MAX, |a, g| a & g.unwrap_or(u64::MAX))))
        };
        for id in sends.into_iter().flatten() {
            // A send to a member that died fails; the agreement handles that failure.
            let _ = e.wait(id);
        }
        res
    }

    /// Receive member `r`'s contribution: into `s.got` if it is there, else a pending receive
    /// in `s.pend`. False if the exchange must convert (a failed receive, a later agreement's
    /// message).
    fn data_post(&self, e: &mut FtPort, c: CommId, x: &Exchange, s: &mut Slots, r: usize) -> bool {
        // SAFETY: the buffer outlives the receive: `s` does not move, and a pending receive is
        // completed or cancelled by `data_agree` before it returns.
        match unsafe { e.irecv_coll_opt(c, s.bufs[r].as_mut_ptr(), LEN, r as i32, TAG) } {
            Ok(RecvStart::Pending(id)) => {
                s.pend[r] = Some(id);
                true
            }
            Ok(RecvStart::Done(st)) => self.data_arrived(e, c, x, s, r, st.count),
            Err(_) => false,
        }
    }

    /// Member `r`'s receive completed with `count` bytes in its buffer (see
    /// [`Ft::data_post`]).
    fn data_arrived(
        &self,
        e: &mut FtPort,
        c: CommId,
        x: &Exchange,
        s: &mut Slots,
        r: usize,
        count: usize,
    ) -> bool {
        match classify(x, &s.bufs[r], count) {
            Arrival::Flag(f) => {
                s.got[r] = Some(f);
                true
            }
            Arrival::Stale => self.data_post(e, c, x, s, r),
            Arrival::Later(seq, f) => {
                self.st.borrow_mut().data_early(x, r, seq, f);
                false
            }
        }
    }
}
