//! Handle tables: how an MPI handle value names a library object, and how a freed, forged or
//! wrong-kind handle is told apart from a live one.
//!
//! The standard ABI makes every handle pointer-sized and gives the predefined ones small fixed
//! values (all below `0x1000`). Objects the application creates get values of the form
//! `generation << 32 | (slot + 1) << 12 | MAGIC << 4 | kind`: never a predefined value, never
//! 0, and checked on every use: the kind nibble, the magic byte, the slot and the slot's
//! current generation must all match. A handle kept after its object was freed names the
//! same slot with an older generation and is rejected, as is a random pointer.

/// What a handle names; the low nibble of every created handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Comm = 1,
    Group,
    Datatype,
    Request,
    Op,
    Errhandler,
    Info,
    Message,
}

const MAGIC: usize = 0xA5;
const SLOT_BITS: u32 = 20;

/// Objects of one kind, addressed by handle.
pub(crate) struct Table<T> {
    kind: Kind,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

impl<T> Table<T> {
    pub(crate) fn new(kind: Kind) -> Table<T> {
        Table { kind, slots: Vec::new(), free: Vec::new() }
    }

    /// Store `value`; its new handle.
    pub(crate) fn insert(&mut self, value: T) -> usize {
        let slot = match self.free.pop() {
            Some(s) => s as usize,
            None => {
                assert!(self.slots.len() < (1 << SLOT_BITS) - 1, "handle table full");
                self.slots.push(Slot { generation: 0, value: None });
                self.slots.len() - 1
            }
        };
        let s = &mut self.slots[slot];
        s.generation = s.generation.wrapping_add(1).max(1);
        s.value = Some(value);
        encode(self.kind, slot, s.generation)
    }

    /// The object `h` names, if it is live and of this table's kind.
    #[inline]
    pub(crate) fn get(&self, h: usize) -> Option<&T> {
        let (slot, generation) = decode(self.kind, h)?;
        let s = self.slots.get(slot)?;
        if s.generation != generation {
            return None;
        }
        s.value.as_ref()
    }

    /// The object `h` names, mutably.
    #[inline]
    pub(crate) fn get_mut(&mut self, h: usize) -> Option<&mut T> {
        let (slot, generation) = decode(self.kind, h)?;
        let s = self.slots.get_mut(slot)?;
        if s.generation != generation {
            return None;
        }
        s.value.as_mut()
    }

    /// [`Table::remove`] dropping the object in place (nothing moves out); false if `h` names
    /// nothing live.
    #[inline]
    pub(crate) fn discard(&mut self, h: usize) -> bool {
        let Some((slot, generation)) = decode(self.kind, h) else {
            return false;
        };
        match self.slots.get_mut(slot) {
            Some(s) if s.generation == generation && s.value.is_some() => {
                s.value = None;
                self.free.push(slot as u32);
                true
            }
            _ => false,
        }
    }

    /// Remove the object `h` names; its handle (and every copy of it) is dead from now on.
    pub(crate) fn remove(&mut self, h: usize) -> Option<T> {
        let (slot, generation) = decode(self.kind, h)?;
        let s = self.slots.get_mut(slot)?;
        if s.generation != generation {
            return None;
        }
        let v = s.value.take()?;
        self.free.push(slot as u32);
        Some(v)
    }
}

#[inline]
fn encode(kind: Kind, slot: usize, generation: u32) -> usize {
    ((generation as usize) << 32) | ((slot + 1) << 12) | (MAGIC << 4) | kind as usize
}

#[inline]
fn decode(kind: Kind, h: usize) -> Option<(usize, u32)> {
    if h & 0xF != kind as usize || (h >> 4) & 0xFF != MAGIC {
        return None;
    }
    let slot = (h >> 12) & ((1 << SLOT_BITS) - 1);
    if slot == 0 {
        return None;
    }
    Some((slot - 1, (h >> 32) as u32))
}

/// True if `h` has the shape of a created handle of `kind` (used to tell "freed" from "not a
/// handle of this kind at all" in error messages).
pub(crate) fn looks_like(kind: Kind, h: usize) -> bool {
    decode(kind, h).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_forged_and_wrong_kind_handles_are_rejected() {
        let mut t = Table::new(Kind::Comm);
        let a = t.insert(1);
        assert!(a > 0xFFF, "created handles never collide with predefined ones");
        assert_eq!(t.get(a), Some(&1));
        assert_eq!(t.remove(a), Some(1));
        assert_eq!(t.get(a), None, "freed");
        assert!(!t.discard(a), "a freed handle discards nothing");
        let d = t.insert(3);
        assert!(t.discard(d));
        assert_eq!(t.get(d), None, "discarded");
        assert!(!t.discard(d), "only once");
        let b = t.insert(2);
        assert_ne!(a, b, "a reused slot gets a new generation");
        assert_eq!(t.get(a), None);
        assert_eq!(t.get(b), Some(&2));
        let mut g: Table<i32> = Table::new(Kind::Group);
        assert_eq!(g.get(b), None, "a communicator handle is not a group");
        assert_eq!(g.remove(0x7ffd_1234_5678), None);
        assert_eq!(t.get(0x101), None, "predefined values are not table entries");
        assert_eq!(t.get(usize::MAX), None);
    }
}
