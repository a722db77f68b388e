//! Running the upper layers' work after a poll: their activities (every progress call, or
//! only on the slow path and on a new failure) and the handlers of their message classes,
//! each given its layer's capability. Messages of a class with no handler yet wait, bounded.

use crate::activity::Step;
use crate::error::Error;
use crate::Engine;

/// At most this many messages wait for a handler; beyond it they count as malformed.
pub(crate) const MAX_PARKED: usize = 4096;

impl Engine {
    pub(crate) fn run_slow_activities(&mut self) {
        self.extensions.slow_seen = self.core.failed.list.len();
        let mut acts = std::mem::take(&mut self.extensions.slow);
        acts.retain_mut(|a| a.run(self) == Step::Continue);
        acts.append(&mut self.extensions.slow);
        self.extensions.slow = acts;
    }

    pub(crate) fn run_activities(&mut self) -> usize {
        let mut acts = std::mem::take(&mut self.extensions.activities);
        let before = acts.len();
        acts.retain_mut(|a| a.run(self) == Step::Continue);
        let done = before - acts.len();
        // Activities spawned while advancing were pushed to the (empty) list meanwhile.
        acts.append(&mut self.extensions.activities);
        self.extensions.activities = acts;
        done
    }

    pub(crate) fn dispatch_ctrl(&mut self) -> usize {
        let mut inbox = std::mem::take(&mut self.core.ctrl_inbox);
        let n = inbox.len();
        for (peer, h, payload) in inbox.drain(..) {
            let i = h.class as usize;
            match self.extensions.handlers.get_mut(i).and_then(Option::take) {
                Some(mut handler) => {
                    handler(self.view::<crate::FtPort>(), peer, &h, &payload);
                    // Put it back unless the handler installed a replacement.
                    if self.extensions.handlers[i].is_none() {
                        self.extensions.handlers[i] = Some(handler);
                    }
                    self.core.recycle_buf(payload);
                }
                None if self.extensions.parked.len() < MAX_PARKED => {
                    self.extensions.parked.push((peer, h, payload))
                }
                None => {
                    self.core.stats.malformed += 1;
                    self.core.stats.last_malformed =
                        Some(Error::Malformed { peer, what: "message class without handler" });
                }
            }
        }
        // Keep the inbox's allocation unless a handler queued new messages meanwhile.
        if self.core.ctrl_inbox.is_empty() {
            self.core.ctrl_inbox = inbox;
        }
        n
    }
}
