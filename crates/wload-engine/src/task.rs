//! Tasks owned by whoever spawned them: [`Owned`] aborts its task when it
//! is dropped, so a task cannot outlive the scope that needs it, whichever
//! way that scope ends (a return, an error, a panic, or its own future
//! being dropped when a run is stopped). Every task the engine spawns for
//! a bounded job goes through it: a run's watchers (Ctrl-C, thresholds,
//! the VU trace), a scenario's stop timer and ramp controller, a request
//! spawned from a VU.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::task::{JoinError, JoinHandle};

/// A spawned task, aborted when this handle is dropped. Awaiting it gives
/// the task's output, or the `JoinError` of a panic or an abort.
pub struct Owned<T>(JoinHandle<T>);

impl<T: Send + 'static> Owned<T> {
    /// Spawn `task` on the current runtime.
    pub fn spawn(task: impl Future<Output = T> + Send + 'static) -> Owned<T> {
        Owned(tokio::spawn(task))
    }
}

impl<T> Future for Owned<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
