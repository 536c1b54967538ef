//! Handlers: plain async functions whose arguments are extractors
//! (STYLE.md, axum).

use std::any::TypeId;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::extract::{CallContext, FromCall};
use crate::outcome::{IntoOutcome, Outcome};

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// An async function usable as a tool, prompt, resource or completion
/// handler. Implemented for `async fn`s of up to eight extractor
/// arguments whose return type implements [`IntoOutcome`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Tern handler",
    note = "a handler is an async fn whose arguments implement FromCall and whose return type implements IntoOutcome"
)]
pub trait Handler<Args>: Clone + Send + Sync + 'static {
    /// Runs the handler for one request.
    fn call(&self, cx: CallContext) -> BoxFuture<Outcome>;
    /// The tool input schema its extractors imply (from `Args<T>`), if any.
    fn input_schema(&self) -> Option<Value>;
    /// The application state types its extractors read (`State<S>`).
    fn states(&self) -> Vec<(TypeId, &'static str)> {
        Vec::new()
    }
}

macro_rules! impl_handler {
    ($($t:ident),*) => {
        impl<F, Fut, R, $($t,)*> Handler<($($t,)*)> for F
        where
            F: Fn($($t,)*) -> Fut + Clone + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            R: IntoOutcome,
            $($t: FromCall + Send + 'static,)*
        {
            #[allow(non_snake_case, unused_variables, reason = "macro-generated extractor slots")]
            fn call(&self, cx: CallContext) -> BoxFuture<Outcome> {
                $(
                    let $t = match $t::from_call(&cx) {
                        Ok(v) => v,
                        Err(rejection) => return Box::pin(std::future::ready(rejection)),
                    };
                )*
                let fut = (self)($($t,)*);
                Box::pin(async move { fut.await.into_outcome() })
            }

            fn input_schema(&self) -> Option<Value> {
                None$(.or_else($t::input_schema))*
            }

            fn states(&self) -> Vec<(TypeId, &'static str)> {
                #[allow(unused_mut, reason = "a handler without extractors has none")]
                let mut states = Vec::new();
                $(states.extend($t::state_type());)*
                states
            }
        }
    };
}

impl_handler!();
impl_handler!(T1);
impl_handler!(T1, T2);
impl_handler!(T1, T2, T3);
impl_handler!(T1, T2, T3, T4);
impl_handler!(T1, T2, T3, T4, T5);
impl_handler!(T1, T2, T3, T4, T5, T6);
impl_handler!(T1, T2, T3, T4, T5, T6, T7);
impl_handler!(T1, T2, T3, T4, T5, T6, T7, T8);

pub(crate) trait ErasedHandler: Send + Sync {
    fn call(&self, cx: CallContext) -> BoxFuture<Outcome>;
    fn states(&self) -> Vec<(TypeId, &'static str)>;
}

struct Erased<H, A>(H, PhantomData<fn() -> A>);

impl<H: Handler<A>, A: 'static> ErasedHandler for Erased<H, A> {
    fn call(&self, cx: CallContext) -> BoxFuture<Outcome> {
        self.0.call(cx)
    }

    fn states(&self) -> Vec<(TypeId, &'static str)> {
        self.0.states()
    }
}

pub(crate) fn erase<H: Handler<A>, A: 'static>(h: H) -> Arc<dyn ErasedHandler> {
    Arc::new(Erased(h, PhantomData))
}
