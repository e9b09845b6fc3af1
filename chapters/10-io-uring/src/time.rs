//! Time for tasks: [`sleep`] and [`timeout`]. Chapters 4 to 9 kept a heap of timers and
//! told the wait how long it might sleep; here a sleep is one more operation in the ring
//! (`IORING_OP_TIMEOUT`): the kernel keeps the timers, and a timer's completion wakes the
//! task that set it. A sleep dropped early is cancelled, as every operation is.

use std::cell::Cell;
use std::future::Future;
use std::time::Duration;

use crate::proactor::submit;
use crate::race::{race, Winner};
use crate::ring::{__kernel_timespec, io_uring_sqe, IORING_OP_TIMEOUT};
use crate::sync::OnDrop;

thread_local! {
    static PENDING: Cell<u64> = const { Cell::new(0) };
}

// ANCHOR: sleep
/// Ready once `duration` has passed.
pub async fn sleep(duration: Duration) {
    if duration.is_zero() {
        return; // (`--fs-delay-ms 0`: no timer in the ring)
    }
    PENDING.set(PENDING.get() + 1);
    let _counted = OnDrop(|| PENDING.set(PENDING.get() - 1)); // however it ends
                                                              // SAFETY: the entry points into the timespec the operation owns.
    let timer = unsafe {
        submit(__kernel_timespec::from(duration), |ts| {
            io_uring_sqe::new(IORING_OP_TIMEOUT, -1, (&raw const *ts).cast(), 1)
        })
    };
    let _ = timer.await; // -ETIME: the time has passed
}
// ANCHOR_END: sleep

// ANCHOR: timeout
/// `future` did not finish in time.
#[derive(Debug)]
pub struct Elapsed;

/// Runs `future`, but gives up on it after `duration`: `Err(Elapsed)`, and `future` is
/// dropped, which stops whatever it was doing (closes its socket, cancels its operations).
pub async fn timeout<F: Future>(duration: Duration, future: F) -> Result<F::Output, Elapsed> {
    match race(future, sleep(duration)).await {
        Winner::First(output) => Ok(output),
        Winner::Second(()) => Err(Elapsed),
    }
}
// ANCHOR_END: timeout

/// How many sleeps are in the ring (for `/stats`).
pub fn pending() -> u64 {
    PENDING.get()
}
