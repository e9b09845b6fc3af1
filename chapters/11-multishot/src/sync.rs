//! Cooperative tools for tasks to wait on each other, gevent's and asyncio's classics, each
//! used by the server for a real purpose:
//!
//! - [`Flag`]: once set, it stays set; tasks wait until it is. The graceful shutdown:
//!   every idle connection waits on it along with its read. (asyncio calls it an `Event`.)
//! - [`Semaphore`]: at most N holders at once; the others wait their turn, first come first
//!   served. At most `--upstream-limit` fetches from the upstream at once.
//!
//! New in chapter 9: the semaphore is the whole server's, shared by every loop, so it is
//! an `Arc<Mutex<..>>` where chapter 8 had an `Rc<RefCell<..>>`. A permit given back on
//! one loop wakes a task of another: its waker rings that loop's self-pipe. The flag
//! stays single-threaded: each loop has its own (`main.rs`). Each
//! waiting future has one place in a [`Line`], however often it is polled, and gives it up
//! when it is dropped (its task ended, or it lost a race), so nobody waits for a task that
//! has gone. A line is fair: whoever came first is served first. And nobody is woken while
//! a `RefCell` is borrowed: a waker may run any code, and code that came back here would
//! find it borrowed, and panic. So each wakes after it lets go.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

// ANCHOR: line
/// The tasks waiting for something, by place number: places are handed out in the order
/// the tasks came, so the first key is the first in line.
#[derive(Default)]
struct Line {
    waiting: BTreeMap<u64, Waker>,
    next: u64,
}

impl Line {
    /// Takes a place for a future (`place` is its number, once it has one), or refreshes
    /// the waker of the place it has.
    fn join(&mut self, place: &Cell<Option<u64>>, cx: &mut Context) {
        match place.get().and_then(|at| self.waiting.get_mut(&at)) {
            Some(waker) => waker.clone_from(cx.waker()),
            None => {
                place.set(Some(self.next));
                self.waiting.insert(self.next, cx.waker().clone());
                self.next += 1;
            }
        }
    }

    /// May `place` be served now? Only the first in line, or anyone if nobody waits.
    fn may_go(&self, place: &Cell<Option<u64>>) -> bool {
        self.waiting.first_key_value().is_none_or(|(first, _)| Some(*first) == place.get())
    }

    /// Gives up `place` (served, or gone). Returns whether it was first in line.
    fn remove(&mut self, place: &Cell<Option<u64>>) -> bool {
        let Some(at) = place.take() else { return false };
        let was_first = self.waiting.first_key_value().is_some_and(|(first, _)| *first == at);
        self.waiting.remove(&at);
        was_first
    }

    /// Leaves the line. If it was first and there is `more` to hand out (it was woken for
    /// it, then dropped, say), whoever is first now may go: returns their waker, to wake.
    fn leave(&mut self, place: &Cell<Option<u64>>, more: bool) -> Option<Waker> {
        if self.remove(place) && more {
            self.first()
        } else {
            None
        }
    }

    /// The waker of whoever is first in line.
    fn first(&self) -> Option<Waker> {
        self.waiting.first_key_value().map(|(_, waker)| waker.clone())
    }
}

/// Runs a closure when dropped: how a waiting future gives up its place in line, whether
/// it was served or dropped halfway (and how a client's task counts itself closed).
pub struct OnDrop<F: FnMut()>(pub F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}
// ANCHOR_END: line

// ANCHOR: flag
/// A flag that tasks can wait for. Cloning gives another handle to the same flag.
#[derive(Clone, Default)]
pub struct Flag(Rc<RefCell<(bool, Line)>>);

impl Flag {
    /// Sets it, and wakes every task waiting for it.
    pub fn set(&self) {
        let waiting = {
            let mut flag = self.0.borrow_mut();
            flag.0 = true;
            std::mem::take(&mut flag.1.waiting)
        };
        waiting.into_values().for_each(Waker::wake);
    }

    pub fn is_set(&self) -> bool {
        self.0.borrow().0
    }

    /// Ready once the flag is set.
    pub async fn wait(&self) {
        let place = Cell::new(None);
        // Nobody waits for a place in this line: all are woken at once, when it is set.
        let _leave = OnDrop(|| {
            self.0.borrow_mut().1.remove(&place);
        });
        poll_fn(|cx| {
            let mut flag = self.0.borrow_mut();
            if flag.0 {
                return Poll::Ready(());
            }
            flag.1.join(&place, cx);
            Poll::Pending
        })
        .await
    }
}
// ANCHOR_END: flag

// ANCHOR: semaphore
/// At most `permits` holders at once; the others wait, first come first served.
#[derive(Clone)]
pub struct Semaphore(Arc<Mutex<(usize, Line)>>);

/// A permit: held until dropped.
pub struct Permit(Semaphore);

impl Semaphore {
    pub fn new(permits: usize) -> Semaphore {
        Semaphore(Arc::new(Mutex::new((permits, Line::default()))))
    }

    /// No code runs under the lock but ours, which does not panic: go on regardless.
    fn lock(&self) -> MutexGuard<'_, (usize, Line)> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A permit, once one is free and everyone who asked before has had theirs.
    pub async fn acquire(&self) -> Permit {
        let place = Cell::new(None);
        let _leave = OnDrop(|| {
            let next = {
                let (permits, line) = &mut *self.lock();
                line.leave(&place, *permits > 0)
            };
            if let Some(waker) = next {
                waker.wake();
            }
        });
        poll_fn(|cx| {
            let mut semaphore = self.lock();
            if semaphore.0 > 0 && semaphore.1.may_go(&place) {
                semaphore.0 -= 1;
                return Poll::Ready(());
            }
            semaphore.1.join(&place, cx);
            Poll::Pending
        })
        .await;
        Permit(self.clone())
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let next = {
            let mut semaphore = self.0.lock();
            semaphore.0 += 1;
            semaphore.1.first()
        };
        if let Some(waker) = next {
            waker.wake(); // after the lock is let go, as after a borrow
        }
    }
}
// ANCHOR_END: semaphore
