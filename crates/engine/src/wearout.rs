//! The stonewall wear-out: where the workers of a phase meet when its time
//! limit strikes, so that each then goes on until it has done as many
//! items as the busiest worker did by then (IOR's
//! `-O stoneWallingWearOut=1`, mdtest's wear-out after `-W`).
//!
//! Every worker of this process arrives once with its item count (a
//! worker that never reached its loop — its setup failed — is marked as
//! arrived without one when it returns, so nobody waits for it). When all
//! have arrived, the goal is the largest count: set by the last worker to
//! arrive in a one-process run, or, across MPI ranks, by the driver's
//! main thread after it has agreed on the largest count of every rank
//! (one all-reduce per phase; see [`WearOut::ready`]). The waiting
//! workers then take the goal and go on. A stop or abort while they wait
//! releases them without one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

/// The meeting point of one phase's workers in this process.
#[derive(Debug)]
pub struct WearOut {
    /// The first worker index of this process.
    base: u32,
    /// Whether other ranks take part (the goal then comes from
    /// [`WearOut::set_goal`]).
    ranks: bool,
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Debug)]
struct State {
    /// Which local workers have arrived (or left).
    arrived: Vec<bool>,
    count: usize,
    /// The largest count posted.
    max: u64,
    /// The goal, once known.
    goal: Option<u64>,
    /// Released without a goal (stop or abort).
    released: bool,
}

impl WearOut {
    /// The meeting point of the `workers` workers of this process, the
    /// first being global worker `base`; `ranks` when other processes
    /// take part too.
    pub fn new(base: u32, workers: usize, ranks: bool) -> Self {
        WearOut {
            base,
            ranks,
            state: Mutex::new(State {
                arrived: vec![false; workers],
                count: 0,
                max: 0,
                goal: if workers == 0 && !ranks {
                    Some(0)
                } else {
                    None
                },
                released: false,
            }),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks global worker `w` as arrived with `count` items (`None`: it
    /// did no items of its own and wants no goal); the first arrival of
    /// a worker counts, later ones are ignored. Returns whether this was
    /// the last local arrival.
    fn mark(&self, st: &mut State, w: u32, count: Option<u64>) -> bool {
        let Some(slot) = w
            .checked_sub(self.base)
            .and_then(|i| st.arrived.get_mut(i as usize))
        else {
            return false;
        };
        if *slot {
            return false;
        }
        *slot = true;
        st.count += 1;
        if let Some(c) = count {
            st.max = st.max.max(c);
        }
        let last = st.count == st.arrived.len();
        if last && !self.ranks {
            st.goal = Some(st.max);
        }
        last
    }

    /// Worker `w` arrives with the `count` items it has done and waits
    /// for the goal; `None` when it was released without one (`stop` or
    /// `abort` raised while it waited), then it goes no further.
    pub fn arrive(&self, w: u32, count: u64, stop: &AtomicBool, abort: &AtomicBool) -> Option<u64> {
        let mut st = self.lock();
        if self.mark(&mut st, w, Some(count)) {
            self.cv.notify_all();
        }
        loop {
            if let Some(g) = st.goal {
                return Some(g);
            }
            if st.released {
                return None;
            }
            if stop.load(Ordering::Relaxed) || abort.load(Ordering::Relaxed) {
                return None;
            }
            // Woken by the goal, or every 10 ms to look at the flags.
            st = self
                .cv
                .wait_timeout(st, std::time::Duration::from_millis(10))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Worker `w` is done with the phase: if it never arrived (its setup
    /// failed, or it returned early), it counts as arrived with nothing,
    /// so the others are not left waiting for it.
    pub fn leave(&self, w: u32) {
        let mut st = self.lock();
        if self.mark(&mut st, w, None) {
            self.cv.notify_all();
        }
    }

    /// For the driver of a multi-rank phase: the largest local count,
    /// once every local worker arrived and before a goal is set; `None`
    /// otherwise. The driver then agrees on the largest count of all
    /// ranks and hands it to [`WearOut::set_goal`], once per phase.
    pub fn ready(&self) -> Option<u64> {
        let st = self.lock();
        (self.ranks && st.count == st.arrived.len() && st.goal.is_none() && !st.released)
            .then_some(st.max)
    }

    /// Sets the goal every waiting worker takes.
    pub fn set_goal(&self, goal: u64) {
        self.lock().goal = Some(goal);
        self.cv.notify_all();
    }

    /// Releases every waiting worker without a goal.
    pub fn release(&self) {
        self.lock().released = true;
        self.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_goal_is_the_largest_count_and_a_worker_that_left_is_not_waited_for() {
        let wo = Arc::new(WearOut::new(10, 3, false));
        let (stop, abort) = (AtomicBool::new(false), AtomicBool::new(false));
        let got: Vec<Option<u64>> = std::thread::scope(|s| {
            let h: Vec<_> = [(10u32, 5u64), (11, 9)]
                .into_iter()
                .map(|(w, c)| {
                    let (wo, stop, abort) = (&wo, &stop, &abort);
                    s.spawn(move || wo.arrive(w, c, stop, abort))
                })
                .collect();
            std::thread::sleep(std::time::Duration::from_millis(30));
            // Worker 12 never reached its loop.
            wo.leave(12);
            h.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(got, [Some(9), Some(9)]);
        // A second arrival of the same worker changes nothing.
        wo.leave(10);
        assert_eq!(wo.arrive(11, 100, &stop, &abort), Some(9));
    }

    #[test]
    fn across_ranks_the_driver_sets_the_goal_and_a_stop_releases_the_waiters() {
        let wo = WearOut::new(0, 1, true);
        let (stop, abort) = (AtomicBool::new(false), AtomicBool::new(false));
        assert_eq!(wo.ready(), None);
        std::thread::scope(|s| {
            let h = s.spawn(|| wo.arrive(0, 4, &stop, &abort));
            while wo.ready().is_none() {
                std::thread::yield_now();
            }
            assert_eq!(wo.ready(), Some(4));
            wo.set_goal(7);
            assert_eq!(h.join().unwrap(), Some(7));
        });
        assert_eq!(wo.ready(), None, "once per phase");

        let wo = WearOut::new(0, 2, true);
        std::thread::scope(|s| {
            let h = s.spawn(|| wo.arrive(0, 4, &stop, &abort));
            std::thread::sleep(std::time::Duration::from_millis(20));
            stop.store(true, Ordering::Relaxed);
            assert_eq!(h.join().unwrap(), None);
        });
    }
}
