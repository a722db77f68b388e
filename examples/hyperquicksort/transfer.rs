//! Moving key lists between members of a view: lengths first, then the lists, each phase with
//! every receive and send posted at once. On any error the view's communicator is revoked before the pending sends are reaped, so that
//! no member stays blocked on a peer that gave up.

use weft::{Comm, Weft};

/// Message kinds; a tag is `kind << 24 | slot`.
pub const PIVOT: i32 = 1;
pub const EXCHANGE: i32 = 2;
pub const CHECKPOINT: i32 = 3;
pub const MOVE_PRIMARY: i32 = 4;
pub const MOVE_BACKUP: i32 = 5;

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

/// The communicator rank of world rank `w` in a view (members are in communicator rank
/// order).
pub fn rank_in(members: &[u32], w: u32) -> u32 {
    members.binary_search(&w).expect("transfer only between members of the view") as u32
}

/// Send every `outs` list and receive every `ins` list (in `ins` order). Lengths go first, in
/// their own messages (same tag), so that every receive is posted with its final size: a posted
/// receive is interrupted by a revoke, a probe for a message that never comes is not.
pub fn transfer(
    w: &Weft,
    comm: &Comm,
    members: &[u32],
    outs: &[Out],
    ins: &[In],
) -> weft::Result<Vec<Vec<u64>>> {
    let lens_out: Vec<[u64; 1]> = outs.iter().map(|o| [o.keys.len() as u64]).collect();
    let mut lens_in = vec![[0u64; 1]; ins.len()];
    let r = w.scope(|s| {
        let mut reqs = Vec::with_capacity(outs.len() + ins.len());
        for (i, l) in ins.iter().zip(lens_in.iter_mut()) {
            reqs.push(comm.irecv(s, bytemuck::cast_slice_mut(l), rank_in(members, i.src) as i32, i.tag)?);
        }
        for (o, l) in outs.iter().zip(&lens_out) {
            reqs.push(comm.isend(s, bytemuck::cast_slice(l), rank_in(members, o.dst), o.tag)?);
        }
        weft::wait_all(&mut reqs)
    });
    if let Err(e) = r {
        let _ = comm.revoke();
        return Err(e);
    }
    let mut got: Vec<Vec<u64>> = lens_in.iter().map(|l| vec![0u64; l[0] as usize]).collect();
    let r = w.scope(|s| {
        let mut reqs = Vec::with_capacity(outs.len() + ins.len());
        for (i, keys) in ins.iter().zip(got.iter_mut()) {
            reqs.push(comm.irecv(
                s,
                bytemuck::cast_slice_mut(keys),
                rank_in(members, i.src) as i32,
                i.tag,
            )?);
        }
        for o in outs {
            reqs.push(comm.isend(s, bytemuck::cast_slice(o.keys), rank_in(members, o.dst), o.tag)?);
        }
        weft::wait_all(&mut reqs)
    });
    if let Err(e) = r {
        let _ = comm.revoke();
        return Err(e);
    }
    Ok(got)
}
