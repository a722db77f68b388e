//! Where every slot's committed list lives, and how it moves when the view changes. A
//! committed list is held twice: by its holder (the slot's owner when it was committed) and
//! by a backup (that owner's buddy), in memory. A new view moves each list to the slot's new
//! owner and a copy to the new owner's buddy, taking it from the holder if it is a member,
//! else from the backup if it is one, else from whichever of the two is still alive (a process
//! that left the view for being slow still has its lists). A list is lost only when its holder
//! and its backup both crashed before the next commit; the sort then stops with [`Lost`].

use std::collections::BTreeMap;
use std::rc::Rc;

use weft::Weft;

use crate::hypercube::{buddy, is_member, owners};
use crate::transfer::{tag, transfer, In, Out, MOVE_BACKUP, MOVE_PRIMARY};
use crate::view::View;

pub type List = Rc<Vec<u64>>;

/// The lists this member keeps.
#[derive(Default)]
pub struct Store {
    /// Slots this member owns: their lists.
    pub primary: BTreeMap<u32, List>,
    /// Checkpoint copies of slots owned by the member before this one in the view.
    pub backup: BTreeMap<u32, List>,
}

/// Which members keep each slot's committed list.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Placement {
    /// Before the first commit: every list is regenerated from the seed by its owner.
    Initial,
    Held {
        holder: Vec<u32>,
        backup: Vec<Option<u32>>,
    },
}

/// A slot's lists were on members that all left before a commit.
#[derive(Debug)]
pub struct Lost {
    pub slot: u32,
    pub holder: u32,
    pub backup: Option<u32>,
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "slot {}'s list is lost: its holder {} and its backup {:?} both were lost before a commit",
            self.slot, self.holder, self.backup
        )
    }
}

/// The placement a view asks for: owners by Algorithm 4, backups on the owners' buddies
/// (none when checkpoints are off).
pub fn wanted(dim: u32, view: &[u32], copies: bool) -> Placement {
    let holder = owners(dim, view).expect("a view has at least one member");
    let backup = holder.iter().map(|&h| buddy(h, view).filter(|_| copies)).collect();
    Placement::Held { holder, backup }
}

/// A planned move of the committed lists to the placement `view` wants.
pub struct Move {
    pub to: Placement,
    /// (member sending, member receiving, slot, as primary?)
    sends: Vec<(u32, u32, u32, bool)>,
}

/// Plan the move of `from` to the placement of `view`; `None` when nothing moves. `alive`
/// (sorted) are the processes every member agrees are alive (at least the view).
pub fn plan(
    dim: u32,
    from: &Placement,
    view: &[u32],
    alive: &[u32],
    copies: bool,
) -> Result<Option<Move>, Lost> {
    let Placement::Held { holder, backup } = from else {
        return Ok(None);
    };
    let to = wanted(dim, view, copies);
    if &to == from {
        return Ok(None);
    }
    let Placement::Held { holder: nh, backup: nb } = &to else { unreachable!() };
    let mut sends = Vec::new();
    for slot in 0..holder.len() {
        let (h, b) = (holder[slot], backup[slot]);
        let in_view = |x: &u32| is_member(view, *x);
        let living = |x: &u32| is_member(alive, *x);
        let src = [Some(h).filter(in_view), b.filter(in_view), Some(h).filter(living), b.filter(living)]
            .into_iter()
            .flatten()
            .next()
            .ok_or(Lost { slot: slot as u32, holder: h, backup: b })?;
        if nh[slot] != h && nh[slot] != src {
            sends.push((src, nh[slot], slot as u32, true));
        }
        if let Some(x) = nb[slot] {
            if Some(x) != b && x != h && x != src {
                sends.push((src, x, slot as u32, false));
            }
        }
    }
    Ok(Some(Move { to, sends }))
}

impl Move {
    /// Run the move at member `me`: returns its new store (the old one stays intact for a
    /// retry if the step is not committed).
    pub fn run(&self, w: &Weft, view: &View, me: u32, old: &Store) -> weft::Result<Store> {
        let Placement::Held { holder: nh, backup: nb } = &self.to else { unreachable!() };
        // A list this member has for `slot`, as holder or as backup.
        let local = |slot: u32| old.primary.get(&slot).or_else(|| old.backup.get(&slot)).cloned();
        let kind = |p: bool| if p { MOVE_PRIMARY } else { MOVE_BACKUP };
        let held: Vec<(u32, List)> = self
            .sends
            .iter()
            .filter(|s| s.0 == me)
            .map(|s| (s.2, local(s.2).expect("sender holds the list")))
            .collect();
        let outs: Vec<Out> = self
            .sends
            .iter()
            .filter(|s| s.0 == me)
            .zip(&held)
            .map(|(s, (_, l))| Out { dst: s.1, tag: tag(kind(s.3), s.2), keys: l })
            .collect();
        let ins_of: Vec<&(u32, u32, u32, bool)> = self.sends.iter().filter(|s| s.1 == me).collect();
        let ins: Vec<In> = ins_of.iter().map(|s| In { src: s.0, tag: tag(kind(s.3), s.2) }).collect();
        let got = transfer(w, view, &outs, &ins)?;
        let mut recv: BTreeMap<(u32, bool), List> = BTreeMap::new();
        for (s, keys) in ins_of.iter().zip(got) {
            recv.insert((s.2, s.3), Rc::new(keys));
        }
        let mut new = Store::default();
        for slot in 0..nh.len() as u32 {
            if nh[slot as usize] == me {
                let l = recv.remove(&(slot, true)).or_else(|| local(slot)).expect("planned");
                new.primary.insert(slot, l);
            }
            if nb[slot as usize] == Some(me) {
                let l = recv.remove(&(slot, false)).or_else(|| local(slot)).expect("planned");
                new.backup.insert(slot, l);
            }
        }
        view.outcome(Ok(new))
    }
}
