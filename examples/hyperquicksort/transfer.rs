//! Moving key lists between members of a view: lengths first, then the lists, each phase with
//! every receive and send posted at once. A failure either revokes the view's communicator (so
//! that no member stays blocked on a peer that gave up) or is remembered while the step runs to
//! its end, as the view says.

use weft::{Request, Weft};

use crate::view::View;

/// Message kinds; a tag is `kind << 24 | slot`.
pub const PIVOT: i32 = 1;
pub const EXCHANGE: i32 = 2;
pub const CHECKPOINT: i32 = 3;
pub const MOVE_PRIMARY: i32 = 4;
pub const MOVE_BACKUP: i32 = 5;
pub const VERIFY: i32 = 6;

pub fn tag(kind: i32, slot: u32) -> i32 {
    (kind << 24) | slot as i32
}

/// A list to send to a member (world rank).
pub struct Out<'a> {
    pub dst: u32,
    pub tag: i32,
    pub keys: &'a [u64],
}

/// A list expected from a member (world rank).
pub struct In {
    pub src: u32,
    pub tag: i32,
}

/// Send every `outs` list and receive every `ins` list (in `ins` order). Lengths go first, in
/// their own messages (same tag), so that every receive is posted with its final size: a posted
/// receive is interrupted by a revoke, a probe for a message that never comes is not. A list
/// that did not arrive is empty when the view carries on after a fault ([`crate::view::OnFault::Finish`]).
pub fn transfer(w: &Weft, view: &View, outs: &[Out], ins: &[In]) -> weft::Result<Vec<Vec<u64>>> {
    let comm = &view.comm;
    let lens_out: Vec<[u64; 1]> = outs.iter().map(|o| [o.keys.len() as u64]).collect();
    let mut lens_in = vec![[0u64; 1]; ins.len()];
    let r = w.scope(|s| {
        let mut posted = Posted::default();
        for (i, l) in ins.iter().zip(lens_in.iter_mut()) {
            posted.add(comm.irecv(s, bytemuck::cast_slice_mut(l), view.rank_of(i.src) as i32, i.tag));
        }
        for (o, l) in outs.iter().zip(&lens_out) {
            posted.add(comm.isend(s, bytemuck::cast_slice(l), view.rank_of(o.dst), o.tag));
        }
        posted.wait()
    });
    if let Err(e) = r {
        view.fault(e)?;
    }
    // After a fault (Finish), a length that did not arrive reads 0; a length from a live peer
    // is right whatever else failed, because every request completes before wait_all returns.
    let mut got: Vec<Vec<u64>> = lens_in.iter().map(|l| vec![0u64; l[0] as usize]).collect();
    let r = w.scope(|s| {
        let mut posted = Posted::default();
        for (i, keys) in ins.iter().zip(got.iter_mut()) {
            posted.add(comm.irecv(s, bytemuck::cast_slice_mut(keys), view.rank_of(i.src) as i32, i.tag));
        }
        for o in outs {
            posted.add(comm.isend(s, bytemuck::cast_slice(o.keys), view.rank_of(o.dst), o.tag));
        }
        posted.wait()
    });
    if let Err(e) = r {
        // Lists from failed peers may be partial; the step fails at its end anyway.
        view.fault(e)?;
    }
    Ok(got)
}

/// The requests of one phase. A post can fail at once (a receive from a peer already known
/// failed): the error is kept and the remaining posts still go out, so that live peers get
/// everything they wait for.
#[derive(Default)]
struct Posted<'s> {
    reqs: Vec<Request<'s>>,
    first_error: Option<weft::Error>,
}

impl<'s> Posted<'s> {
    fn add(&mut self, r: weft::Result<Request<'s>>) {
        match r {
            Ok(q) => self.reqs.push(q),
            Err(e) => {
                self.first_error.get_or_insert(e);
            }
        }
    }

    fn wait(mut self) -> weft::Result<()> {
        let r = weft::wait_all(&mut self.reqs).map(|_| ());
        match self.first_error {
            Some(e) => Err(e),
            None => r,
        }
    }
}
