//! The terminal input provider: answers a server's questions from an
//! answers file, from `--yes`, or by asking the person in the terminal
//! (DIGEST §5), and declares exactly what the person enabled (META-A1).
//!
//! The order for each question: the `--answers` entry for its key, then
//! `--yes`, then the terminal. Without any of them a question fails at once
//! with a clear message instead of waiting for input that cannot come.
//! Everything a question shows (who asks, the key, the message, the URL)
//! is the server's text, shown through [`safe`](crate::safe).

mod answers;
mod sampling;

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use tern::client::{BoxFuture, InputContext, InputKinds, InputProvider, Refusal};
use tern::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestFormParams,
    ElicitRequestUrlParams, ElicitResult, ListRootsResult, Root,
};

pub(crate) use self::answers::Answers;
pub(crate) use self::sampling::{DEFAULT_MAX_TOKENS, Sampler};
use crate::form::{self, Stop};
use crate::safe;
use crate::ui::{bold, dim, warn};
use crate::url;

/// The message when a question needs a person and there is no terminal.
pub(crate) const NO_TERMINAL: &str = "the server asks a question and there is no terminal to ask it in: run in a terminal, or pass --answers FILE or --yes";

/// Why a question ended when the person pressed Ctrl-C.
pub(crate) const INTERRUPTED: &str = "interrupted";

/// Everything the provider needs, resolved from the flags.
#[derive(Debug)]
pub(crate) struct Settings {
    /// What is declared (META-A1).
    pub(crate) kinds: InputKinds,
    /// Scripted answers.
    pub(crate) answers: Option<Answers>,
    /// `--yes`.
    pub(crate) yes: bool,
    /// Whether the person can be asked in this terminal.
    pub(crate) interactive: bool,
    /// The sampling backend.
    pub(crate) sampler: Option<Sampler>,
    /// The roots to share when the person allows it (ROOT-C2): the --root
    /// directories, else the current directory.
    pub(crate) roots: Vec<Root>,
    /// Whether --root was given: consent to share those roots without a
    /// terminal.
    pub(crate) roots_chosen: bool,
    /// `--max-tokens`: the ceiling on a sampling request's `maxTokens`.
    pub(crate) max_tokens: u64,
    /// The label for the server until it names itself.
    pub(crate) server_label: String,
}

/// The `InputProvider` of `tern call` and `tern demo`.
#[derive(Clone)]
pub(crate) struct TerminalProvider {
    inner: Arc<Inner>,
}

/// The provider's shared state.
struct Inner {
    s: Settings,
    /// One dialog at a time: the client asks a round's questions
    /// concurrently.
    dialog: tokio::sync::Mutex<()>,
    /// Set when a question could not be answered as tern was invoked: no
    /// terminal, or `--yes` facing a required field without a default
    /// (exit code 2).
    no_terminal: AtomicBool,
    /// Set by Ctrl-C at a question: the whole call ends, and no further
    /// question is asked.
    interrupted: AtomicBool,
    /// The round in which the person declined or cancelled a form or a
    /// link: the roots of that round are not asked for.
    declined_round: Mutex<Option<u32>>,
    /// The keys of links the person said they had finished, so that a
    /// server asking again is explained.
    urls_done: Mutex<std::collections::BTreeSet<String>>,
}

impl TerminalProvider {
    /// A provider with these settings.
    pub(crate) fn new(s: Settings) -> Self {
        TerminalProvider {
            inner: Arc::new(Inner {
                s,
                dialog: tokio::sync::Mutex::new(()),
                no_terminal: AtomicBool::new(false),
                interrupted: AtomicBool::new(false),
                declined_round: Mutex::new(None),
                urls_done: Mutex::default(),
            }),
        }
    }

    /// Whether a question failed for want of a terminal or of answers.
    pub(crate) fn lacked_terminal(&self) -> bool {
        self.inner.no_terminal.load(Ordering::Relaxed)
    }

    /// A dialog for a form or link that notes, while it still holds the
    /// turn, whether the person said no in this round.
    async fn elicit_dialog(
        &self,
        round: u32,
        f: impl FnOnce() -> Result<ElicitResult, Stop> + Send + 'static,
    ) -> Result<ElicitResult, Refusal> {
        let inner = self.inner.clone();
        let answer = self
            .dialog(move || {
                let r = f();
                let said_no = match &r {
                    Ok(a) => a.action != ElicitAction::Accept,
                    Err(Stop::Dismissed) => true,
                    Err(Stop::Abort(_)) => false,
                };
                if said_no && let Ok(mut d) = inner.declined_round.lock() {
                    *d = Some(round);
                }
                r
            })
            .await;
        match answer {
            Err(r) if r.reason == "dismissed" => Ok(ElicitResult::new(ElicitAction::Cancel)),
            other => other,
        }
    }

    /// Whether the person pressed Ctrl-C at a question.
    pub(crate) fn interrupted(&self) -> bool {
        self.inner.interrupted.load(Ordering::Relaxed)
    }

    /// Notes that a question could not be answered as tern was invoked
    /// (exit code 2).
    fn mark_no_terminal(&self) {
        self.inner.no_terminal.store(true, Ordering::Relaxed);
    }

    /// A question with no scripted answer, no `--yes` and no terminal:
    /// which question, and what the answers file has instead.
    fn no_terminal(&self, key: &str) -> Refusal {
        self.mark_no_terminal();
        let key = safe::line(key);
        match &self.inner.s.answers {
            Some(a) => Refusal::new(format!(
                "the --answers file has no answer for the question {key:?} (its keys: {})",
                safe::names(&a.keys())
            )),
            None => Refusal::new(format!("the question {key:?}: {NO_TERMINAL}")),
        }
    }

    /// Who asks, as the dialogs show it: the server's name (safe), else
    /// the target it was reached at.
    fn server(&self, cx: &InputContext) -> String {
        crate::ui::server_name(cx.server_info.as_ref())
            .unwrap_or_else(|| safe::line(&self.inner.s.server_label))
    }

    /// The `--answers` entry for the question's key, else for its method
    /// name: a legacy server's requests have no keys (their key is the
    /// method), and one entry can answer every request of a kind.
    fn scripted<T: DeserializeOwned>(&self, key: &str, method: &str) -> Result<Option<T>, Refusal> {
        match &self.inner.s.answers {
            Some(a) => match a.take(key, method)? {
                Some(t) => Ok(Some(t)),
                None if key != method => a.take(method, method),
                None => Ok(None),
            },
            None => Ok(None),
        }
    }

    /// Runs a blocking dialog on its own thread, one at a time.
    async fn dialog<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T, Stop> + Send + 'static,
    ) -> Result<T, Refusal> {
        let _turn = self.inner.dialog.lock().await;
        if self.interrupted() {
            return Err(Refusal::new(INTERRUPTED));
        }
        match tokio::task::spawn_blocking(f).await {
            Ok(Ok(t)) => Ok(t),
            Ok(Err(Stop::Abort(why))) => {
                if why == INTERRUPTED {
                    self.inner.interrupted.store(true, Ordering::Relaxed);
                }
                Err(Refusal::new(why))
            }
            Ok(Err(Stop::Dismissed)) => Err(Refusal::new("dismissed")),
            Err(e) => Err(Refusal::new(format!("the dialog failed: {e}"))),
        }
    }
}

impl std::fmt::Debug for TerminalProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalProvider")
            .field("kinds", &self.inner.s.kinds)
            .finish_non_exhaustive()
    }
}

impl InputProvider for TerminalProvider {
    fn kinds(&self) -> InputKinds {
        self.inner.s.kinds
    }

    fn elicit_form(
        &self,
        cx: InputContext,
        params: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        Box::pin(async move {
            if let Some(answer) = self.scripted::<ElicitResult>(&cx.key, "elicitation/create")? {
                if answer.action == ElicitAction::Accept {
                    // ELIC-C6: check a scripted answer like a typed one.
                    let content = answer.content.clone().unwrap_or_default();
                    form::check_content(&params.requested_schema, &content).map_err(|e| {
                        // Fixed by how tern is invoked: a usage error (exit 2).
                        self.mark_no_terminal();
                        Refusal::new(format!(
                            "the --answers entry for {:?}: {}",
                            safe::line(&cx.key),
                            safe::line(&e)
                        ))
                    })?;
                }
                return Ok(answer);
            }
            if self.inner.s.yes {
                let content = form::yes_content(&params.requested_schema).map_err(|e| {
                    // Fixed by how tern is invoked: a usage error (exit 2).
                    self.mark_no_terminal();
                    Refusal::new(safe::line(&e))
                })?;
                return Ok(ElicitResult {
                    action: ElicitAction::Accept,
                    content: Some(content),
                });
            }
            if !self.inner.s.interactive {
                return Err(self.no_terminal(&cx.key));
            }
            let server = self.server(&cx);
            let key = key_label(&cx);
            self.elicit_dialog(cx.round, move || form::ask_form(&server, &key, &params))
                .await
        })
    }

    fn elicit_url(
        &self,
        cx: InputContext,
        params: ElicitRequestUrlParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        Box::pin(async move {
            let server = self.server(&cx);
            if let Some(answer) = self.scripted::<ElicitResult>(&cx.key, "elicitation/create")? {
                if answer.action != ElicitAction::Accept {
                    return Ok(answer);
                }
                // Consent came from the file; the person still does the
                // out-of-band step and says when it is done (ELIC-10).
                let view = url::inspect_url(&params.url);
                form::header("to open a web page", &server, &key_label(&cx));
                url::show_url(&view, &params.message);
                if !view.openable {
                    return Ok(ElicitResult::new(ElicitAction::Decline));
                }
                let _turn = self.inner.dialog.lock().await;
                eprintln!(
                    "tern: open {} then type done (or cancel) and press Enter",
                    safe::url(&view.url)
                );
                let line = tokio::task::spawn_blocking(|| {
                    let mut line = String::new();
                    std::io::stdin()
                        .lock()
                        .read_line(&mut line)
                        .map(|n| (n, line))
                })
                .await
                .map_err(|e| Refusal::new(e.to_string()))?;
                return Ok(match line {
                    Ok((n, l)) if n > 0 && !l.trim().eq_ignore_ascii_case("cancel") => {
                        ElicitResult::new(ElicitAction::Accept)
                    }
                    _ => ElicitResult::new(ElicitAction::Cancel),
                });
            }
            if self.inner.s.yes {
                // --yes never consents to a URL by itself.
                eprintln!(
                    "tern: --yes does not consent to opening {}; answering cancel (give the key {:?} in --answers to consent)",
                    safe::url(&params.url),
                    safe::line(&cx.key)
                );
                return Ok(ElicitResult::new(ElicitAction::Cancel));
            }
            if !self.inner.s.interactive {
                return Err(self.no_terminal(&cx.key));
            }
            let key = cx.key.clone();
            let label = key_label(&cx);
            let again = self
                .inner
                .urls_done
                .lock()
                .is_ok_and(|done| done.contains(&key));
            let answer = self
                .elicit_dialog(cx.round, move || {
                    if again {
                        eprintln!(
                            "{}",
                            warn("The server asks again: it has not seen this step finished yet (finish it in the browser, then choose Done).")
                        );
                    }
                    url::ask_url(&server, &label, &params.message, &params.url)
                })
                .await;
            if let (Ok(a), Ok(mut done)) = (&answer, self.inner.urls_done.lock())
                && a.action == ElicitAction::Accept
            {
                done.insert(cx.key.clone());
            }
            answer
        })
    }

    fn sample(
        &self,
        cx: InputContext,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, Refusal>> {
        Box::pin(self.sample_request(cx, params))
    }

    fn list_roots(&self, cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, Refusal>> {
        Box::pin(async move {
            if let Some(answer) = self.scripted::<ListRootsResult>(&cx.key, "roots/list")? {
                return Ok(answer);
            }
            let s = &self.inner.s;
            let roots = ListRootsResult {
                roots: s.roots.clone(),
            };
            if s.yes || (s.roots_chosen && !s.interactive) {
                // --yes (with the --root flags, else the documented default,
                // the current directory) or --root itself is the person's
                // permission (ROOT-C2); say so.
                let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
                eprintln!(
                    "{}",
                    dim(&format!(
                        "tern: sharing the roots {} without asking ({}; --no-roots shares none)",
                        safe::line(&uris.join(" ")),
                        if s.yes { "--yes" } else { "--root" }
                    ))
                );
                return Ok(roots);
            }
            if !s.interactive {
                // Nothing is shared without consent (ROOT-C2). Roots are not
                // declared then, so only a server breaking MRTR-S8 (or an
                // answers file whose list ran out) gets here.
                self.mark_no_terminal();
                return Err(Refusal::new(format!(
                    "the question {:?} asks for your workspace roots and there is no terminal to ask: pass --root DIR to share a directory, or --yes to share the current one",
                    safe::line(&cx.key)
                )));
            }
            // The person said no to this round's form or link: the flow is
            // not going ahead, so do not ask them about roots as well; a
            // server that still needs roots asks again.
            let turn = self.inner.dialog.lock().await;
            let declined = self.inner.declined_round.lock().ok().and_then(|d| *d);
            if declined == Some(cx.round) {
                eprintln!(
                    "{}",
                    dim("tern: not sharing roots: you declined this round's question")
                );
                return Ok(ListRootsResult { roots: Vec::new() });
            }
            drop(turn);
            let server = self.server(&cx);
            let key = key_label(&cx);
            let shown = roots.clone();
            let ok = self
                .dialog(move || {
                    form::header("for your workspace roots", &server, &key);
                    for r in &shown.roots {
                        eprintln!("{}   {}", bold("│"), safe::line(&r.uri));
                    }
                    form::confirm("Share these roots?", Some(true))
                })
                .await;
            match ok {
                Ok(true) => Ok(roots),
                // Sharing nothing is an honest answer, and the server copes
                // with no roots (ROOT-S3).
                Ok(false) => Ok(ListRootsResult { roots: Vec::new() }),
                Err(r) => Err(r),
            }
        })
    }
}

/// The roots for `--root` directories (default: the current directory):
/// `file://` URIs of canonical absolute paths, so no `..` or symlink can
/// point elsewhere (ROOT-1, ROOT-C2).
pub(crate) fn roots(dirs: &[PathBuf]) -> Result<Vec<Root>, String> {
    let dirs = if dirs.is_empty() {
        vec![std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?]
    } else {
        dirs.to_vec()
    };
    dirs.iter()
        .map(|d| {
            let canon =
                std::fs::canonicalize(d).map_err(|e| format!("--root {}: {e}", d.display()))?;
            if !canon.is_dir() {
                return Err(format!("--root {}: not a directory", d.display()));
            }
            let uri = reqwest::Url::from_file_path(&canon)
                .map_err(|()| format!("--root {}: cannot be a file:// URI", d.display()))?;
            Ok(Root {
                uri: uri.to_string(),
                name: canon.file_name().map(|n| n.to_string_lossy().into_owned()),
                meta: None,
            })
        })
        .collect()
}

/// Whether the person can be asked: stdin is a terminal.
pub(crate) fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// The input key as the dialog header shows it, with the time the server
/// gives for the answer when it says (a Tern server does).
fn key_label(cx: &InputContext) -> String {
    let key = safe::line(&cx.key);
    match cx.answer_within.map(|d| d.as_secs()) {
        None => key,
        Some(s) if s < 120 => format!("{key} · answer within {s} s"),
        Some(s) if s < 7200 => format!("{key} · answer within {} min", s / 60),
        Some(s) => format!("{key} · answer within {} h", s / 3600),
    }
}
