//! Two small future combinators, so the crate needs no runtime features
//! beyond tokio's `sync` and `time`.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;

use crate::{CancelToken, Error};

/// Runs `fut` until it finishes or `cancel` fires (MRTR-C-A3: cancel at any
/// point). Dropping `fut` is how the request in flight is abandoned.
///
/// `fut` goes to the heap before anything else holds it. What is given here
/// is often a whole flow, and an `async fn` keeps a slot for its argument
/// and for every place the argument moves to: written as one, this made each
/// caller's future several times the flow's size (8 KiB for one round of
/// `tools/call`), all of it copied whenever the future moved.
pub(crate) fn cancellable<'a, T: 'a>(
    cancel: Option<&'a CancelToken>,
    fut: impl Future<Output = Result<T, Error>> + Send + 'a,
) -> impl Future<Output = Result<T, Error>> + Send + 'a {
    let mut fut = Box::pin(fut);
    async move {
        let Some(cancel) = cancel else {
            return fut.await;
        };
        if cancel.is_cancelled() {
            return Err(Error::cancelled());
        }
        let mut stop = pin!(cancel.cancelled());
        poll_fn(|cx| {
            if stop.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(Error::cancelled()));
            }
            fut.as_mut().poll(cx)
        })
        .await
    }
}

/// Runs `fut`, turning a panic inside it into `Err` with the panic's text,
/// so a buggy input provider ends its call, never the caller's task.
pub(crate) async fn catch_panic<T>(fut: impl Future<Output = T>) -> Result<T, String> {
    let mut fut = pin!(fut);
    poll_fn(|cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned()))),
        }
    })
    .await
}

/// Polls every future until all are done; results in input order. Used to
/// fulfil the entries of one round concurrently (at most 16).
pub(crate) async fn join_all<F: Future>(futs: Vec<F>) -> Vec<F::Output> {
    let mut futs: Vec<_> = futs.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futs.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut pending = false;
        for (f, slot) in futs.iter_mut().zip(out.iter_mut()) {
            if slot.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *slot = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}
