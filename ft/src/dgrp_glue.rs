//! Glue of the DGRP diagnosis: drives [`crate::dgrp::Dgrp`] from the progress engine.
//!
//! - Nothing is installed until [`DgrpGlue::start`]: no handler, no activity, so the diagnosis
//!   costs the data path nothing while it is off (the default).
//! - On start: a handler for the `DGRP` message class (decode — malformed payloads are
//!   counted and dropped — then the state machine) and one **activity** advanced by every
//!   progress call (no thread of its own): it feeds new entries of the engine's failure table
//!   to the state machine as crashes and ticks it. Every progress call, not the engine's
//!   slow path: the slow path runs once in 64 progress calls, and an application that calls
//!   weft once per chunk of computation (a sort ticking every million keys) then ticked the
//!   diagnosis only every second or so — tests went out late and the state machine took the
//!   gaps for its own stalls. Each tick is a clock read and a look at the tests in flight;
//!   it costs only while the diagnosis is on. After [`DgrpGlue::stop`] the activity ends at
//!   its next advance and the handler drops what still arrives.
//! - The **round barrier** is one blocking agreement ([`Ft::agree_value`]) on the internal
//!   communicator given at start (a private duplicate of the world, so its agreements never
//!   interleave with the application's): every live process contributes, all apply the same
//!   decision.
//!
//! Ranks of the state machine are world ranks.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use weft_engine::{Activity, CommId, Common, Error, FtPort, Header, Result, Step};

use crate::dgrp::{Action, Dgrp, Msg, Options, Stats};
use crate::{class, Ft};

/// What [`DgrpGlue::counters`] reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DgrpCounters {
    /// Event counter of every world rank as known here (even: recommended, odd: not).
    pub events: Vec<u32>,
    /// The state machine's counters.
    pub stats: Stats,
    /// Undecodable diagnosis messages dropped.
    pub malformed: u64,
}

struct Run {
    d: Dgrp,
    comm: CommId,
    seen_failures: usize,
}

struct State {
    run: Option<Run>,
    /// Incremented by every start: an activity of an earlier run ends itself.
    generation: u64,
    handler: bool,
    clock: Instant,
    buf: Vec<u8>,
    malformed: u64,
}

/// Handle on the DGRP diagnosis of one process (cheap to clone).
#[derive(Clone)]
pub struct DgrpGlue {
    st: Rc<RefCell<State>>,
}

impl Default for DgrpGlue {
    fn default() -> DgrpGlue {
        DgrpGlue::new()
    }
}

struct Driver {
    st: Rc<RefCell<State>>,
    generation: u64,
}

impl Activity<FtPort> for Driver {
    fn advance(&mut self, e: &mut FtPort) -> Step {
        let mut g = self.st.borrow_mut();
        if g.generation != self.generation || g.run.is_none() {
            return Step::Done;
        }
        g.advance(e);
        Step::Continue
    }
}

fn not_started() -> Error {
    Error::InvalidArg("dgrp: the diagnosis is not started".into())
}

impl DgrpGlue {
    /// Off: nothing installed on any engine.
    pub fn new() -> DgrpGlue {
        DgrpGlue {
            st: Rc::new(RefCell::new(State {
                run: None,
                generation: 0,
                handler: false,
                clock: Instant::now(),
                buf: Vec::with_capacity(64),
                malformed: 0,
            })),
        }
    }

    /// Start the diagnosis of this process with `opts`; `comm` is the internal communicator
    /// of the round barriers (every world process, in world order).
    pub fn start(&self, e: &mut FtPort, comm: CommId, opts: Options) -> Result<()> {
        let mut g = self.st.borrow_mut();
        if g.run.is_some() {
            return Err(Error::InvalidArg("dgrp: the diagnosis is already started".into()));
        }
        let world = e.comm(e.world())?;
        let (n, me) = (world.size(), world.world_rank(world.rank())?);
        if e.comm(comm)?.size() != n {
            return Err(Error::InvalidArg("dgrp: the internal communicator must span the world".into()));
        }
        let now = g.now();
        let mut d = Dgrp::new(n, me, opts, now).map_err(|m| Error::InvalidArg(format!("dgrp: {m}")))?;
        for &w in e.failures().world_ranks() {
            d.on_failure(w);
        }
        g.run = Some(Run { d, comm, seen_failures: e.failures().count() });
        g.generation += 1;
        if !g.handler {
            let st = self.st.clone();
            e.set_handler(
                class::DGRP,
                Box::new(move |e: &mut FtPort, peer: u32, _h: &Header, p: &[u8]| {
                    st.borrow_mut().on_message(e, peer, p)
                }),
            )?;
            g.handler = true;
        }
        e.spawn(Driver { st: self.st.clone(), generation: g.generation });
        Ok(())
    }

    /// Stop the diagnosis here; returns the internal communicator, which the caller frees.
    pub fn stop(&self) -> Result<CommId> {
        self.st.borrow_mut().run.take().map(|r| r.comm).ok_or_else(not_started)
    }

    /// True while the diagnosis runs.
    pub fn is_on(&self) -> bool {
        self.st.borrow().run.is_some()
    }

    /// This process's current view (world ranks, sorted).
    pub fn view(&self) -> Result<Vec<u32>> {
        self.st.borrow().run.as_ref().map(|r| r.d.current_view()).ok_or_else(not_started)
    }

    /// Counters.
    pub fn counters(&self) -> Result<DgrpCounters> {
        let g = self.st.borrow();
        let r = g.run.as_ref().ok_or_else(not_started)?;
        Ok(DgrpCounters { events: r.d.counters(), stats: r.d.stats().clone(), malformed: g.malformed })
    }

    /// The round barrier: an agreement among every live process on the internal
    /// communicator; returns the view every process returns from this barrier.
    pub fn round_barrier(&self, e: &mut FtPort, ft: &Ft) -> Result<Vec<u32>> {
        let (comm, v) = {
            let g = self.st.borrow();
            let r = g.run.as_ref().ok_or_else(not_started)?;
            (r.comm, r.d.barrier_contribution())
        };
        // No borrow is held while the agreement progresses: the handler and the activity
        // keep testing and answering tests meanwhile.
        let decided = ft.agree_value(e, comm, v)?;
        let mut g = self.st.borrow_mut();
        let r = g.run.as_mut().ok_or_else(not_started)?;
        Ok(r.d.apply_barrier(&decided))
    }
}

impl State {
    fn now(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }

    fn advance(&mut self, e: &mut FtPort) {
        let now = self.now();
        let State { run, buf, .. } = self;
        let Some(r) = run.as_mut() else { return };
        let fc = e.failures().count();
        if fc != r.seen_failures {
            for &w in &e.failures().world_ranks()[r.seen_failures.min(fc)..] {
                r.d.on_failure(w);
            }
            r.seen_failures = fc;
        }
        let acts = r.d.tick(now);
        send_all(e, buf, acts);
    }

    fn on_message(&mut self, e: &mut FtPort, peer: u32, p: &[u8]) {
        let now = self.now();
        let msg = match Msg::decode(p) {
            Ok(m) => m,
            Err(_) => {
                self.malformed += 1;
                return;
            }
        };
        let State { run, buf, .. } = self;
        let Some(r) = run.as_mut() else { return };
        if e.failures().world_ranks().contains(&peer) {
            return;
        }
        let acts = r.d.on_msg(peer, msg, now);
        send_all(e, buf, acts);
    }
}

fn send_all(e: &mut FtPort, buf: &mut Vec<u8>, acts: Vec<Action>) {
    for Action::Send { to, msg } in acts {
        buf.clear();
        msg.encode_into(buf);
        let h = Header {
            class: class::DGRP,
            flags: 0,
            reserved: 0,
            ctx: 0,
            src: 0,
            tag: 0,
            len: buf.len() as u64,
        };
        // A failed destination is fine to skip: the state machine learns of the failure.
        let _ = e.send_ctrl(to, h, buf);
    }
}
