//! What the transport asks of whatever signs it in, so that the sign-in
//! (the OAuth client, `crate::oauth`) stands apart from moving messages.

use http::{HeaderMap, HeaderValue, StatusCode};
use tern_client::{BoxFuture, Error};

use crate::oauth::Attempts;

/// A credential source the transport consults around every `POST` (DIGEST
/// §8): before it, for the `Authorization` header, and after a `401` or
/// `403`, to decide whether the same message goes again.
pub(crate) trait Authorizer: Send + Sync + std::fmt::Debug {
    /// Gets the credential for `endpoint` ready before a request: loads a
    /// kept one, refreshes one about to expire. Failing here is not an
    /// error: the request goes without, and its refusal comes to
    /// [`answer`](Authorizer::answer).
    fn ready<'a>(&'a self, endpoint: &'a str) -> BoxFuture<'a, ()>;

    /// The `Authorization` value to send, if any.
    fn current(&self) -> Option<HeaderValue>;

    /// Answers a `401` or `403` from `endpoint` (its status and headers,
    /// which carry the challenge): `true` once a new credential is held and
    /// the same message should go again, `false` when the refusal stands.
    /// `attempts` is one message's, kept across its refusals, so that the
    /// sign-ins and refreshes one message causes stay bounded.
    fn answer<'a>(
        &'a self,
        endpoint: &'a str,
        status: StatusCode,
        headers: &'a HeaderMap,
        attempts: &'a mut Attempts,
    ) -> BoxFuture<'a, Result<bool, Error>>;

    /// The time spent so far in the person's hands (a browser sign-in),
    /// which the client's request timeout does not count.
    fn person_time(&self) -> std::time::Duration;
}
