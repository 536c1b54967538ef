//! The terminal input provider: answers a server's questions from an
//! answers file, from `--yes`, or by asking the person in the terminal
//! (DIGEST §5), and declares exactly what the person enabled (META-A1).
//!
//! The order for each question: the `--answers` entry for its key, then
//! `--yes`, then the terminal. Without any of them a question fails at once
//! with a clear message instead of waiting for input that cannot come.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tern::client::{BoxFuture, InputContext, InputKinds, InputProvider, Refusal};
use tern::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestFormParams,
    ElicitRequestUrlParams, ElicitResult, ListRootsResult, Role, Root, SamplingContent,
    SamplingMessageContentBlock, TextContent,
};

use crate::form::{self, Stop};
use crate::ui::{bold, dim, highlight, warn};
use crate::url;

/// The message when a question needs a person and there is no terminal.
pub(crate) const NO_TERMINAL: &str = "the server asks a question and there is no terminal to ask it in: run in a terminal, or pass --answers FILE or --yes";

/// Why a question ended when the person pressed Ctrl-C.
pub(crate) const INTERRUPTED: &str = "interrupted";

/// Scripted answers by input key (`--answers`), or by method name
/// (`"elicitation/create"`) for questions with no entry of their own and for
/// 2025-11-25 servers, whose requests have no keys. A value is the answer
/// for every time the key is asked; an array gives one answer per ask, in
/// order.
#[derive(Debug, Default)]
pub(crate) struct Answers {
    by_key: Mutex<BTreeMap<String, Entry>>,
}

#[derive(Debug)]
/// One key's scripted answers.
enum Entry {
    Always(Value),
    Sequence(VecDeque<Value>),
}

impl Answers {
    /// Reads an answers file (README, "Answers files"): a JSON object from
    /// input key, or method name, to an answer or a list of answers. Every
    /// entry is checked here, before anything is sent, and a problem names
    /// the key.
    pub(crate) fn load(path: &Path) -> Result<Answers, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --answers {}: {e}", path.display()))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("--answers {}: not valid JSON: {e}", path.display()))?;
        let Value::Object(map) = value else {
            return Err(format!(
                "--answers {}: expected a JSON object of answers by input key, e.g. {{\"approval\": {{\"action\": \"accept\", \"content\": {{\"confirm\": true}}}}}}",
                path.display()
            ));
        };
        let mut by_key = BTreeMap::new();
        for (k, v) in map {
            let bad = |why: String| format!("--answers {}: the entry {k:?}: {why}", path.display());
            let entry = match v {
                Value::Array(a) if a.is_empty() => {
                    return Err(bad(
                        "an empty list holds no answers (for no roots, write {\"roots\": []})"
                            .to_owned(),
                    ));
                }
                Value::Array(a) => {
                    for (i, one) in a.iter().enumerate() {
                        check_answer(&k, one).map_err(|e| bad(format!("answer {}: {e}", i + 1)))?;
                    }
                    Entry::Sequence(a.into())
                }
                v => {
                    check_answer(&k, &v).map_err(bad)?;
                    Entry::Always(v)
                }
            };
            by_key.insert(k, entry);
        }
        Ok(Answers {
            by_key: Mutex::new(by_key),
        })
    }

    /// The keys of the file, for a message about a key it lacks.
    fn keys(&self) -> Vec<String> {
        self.by_key
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// The next answer for `key`, parsed as `T`.
    fn take<T: DeserializeOwned>(&self, key: &str, method: &str) -> Result<Option<T>, Refusal> {
        let raw = {
            let mut map = self
                .by_key
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match map.get_mut(key) {
                None => None,
                Some(Entry::Always(v)) => Some(v.clone()),
                Some(Entry::Sequence(q)) => q.pop_front(),
            }
        };
        raw.map(|v| {
            serde_json::from_value(v).map_err(|e| {
                tracing::debug!(error = %e, "a scripted answer of another kind");
                Refusal::new(format!(
                    "the --answers entry for {key:?} is not an answer to {}",
                    match method {
                        "elicitation/create" => "a form or a link (give {\"action\": ...})",
                        "roots/list" => "a roots question (give {\"roots\": [...]})",
                        _ => "a sampling request (give {\"role\", \"content\", \"model\"})",
                    }
                ))
            })
        })
        .transpose()
    }
}

/// Checks one scripted answer's shape, in the words of the answers file
/// format: an elicitation answer, a roots answer or a sampling answer (by
/// its key's method when the key is a method name).
fn check_answer(key: &str, v: &Value) -> Result<(), String> {
    let Value::Object(o) = v else {
        return Err(format!("expected an object, found {v}"));
    };
    let kind = match key {
        "elicitation/create" => "elicitation",
        "roots/list" => "roots",
        "sampling/createMessage" => "sampling",
        _ if o.contains_key("action") => "elicitation",
        _ if o.contains_key("roots") => "roots",
        _ if o.contains_key("content") && o.contains_key("model") => "sampling",
        _ => {
            return Err(
                "expected an elicitation answer {\"action\": \"accept\"|\"decline\"|\"cancel\", \"content\": {...}}, a roots answer {\"roots\": [{\"uri\": \"file:///...\"}]} or a sampling answer {\"role\": \"assistant\", \"content\": {\"type\": \"text\", \"text\": \"...\"}, \"model\": \"...\"}"
                    .to_owned(),
            );
        }
    };
    match kind {
        "elicitation" => {
            match o.get("action").and_then(Value::as_str) {
                Some("accept" | "decline" | "cancel") => {}
                Some(other) => {
                    return Err(format!(
                        "\"action\" is {other:?}; it must be \"accept\", \"decline\" or \"cancel\""
                    ));
                }
                None => return Err(
                    "an elicitation answer needs \"action\": \"accept\", \"decline\" or \"cancel\""
                        .to_owned(),
                ),
            }
            if let Some(c) = o.get("content").filter(|c| !c.is_object() && !c.is_null()) {
                return Err(format!(
                    "\"content\" must be an object of form fields, found {c}"
                ));
            }
            if let Some(extra) = o.keys().find(|k| *k != "action" && *k != "content") {
                return Err(format!(
                    "unknown member {extra:?} (an elicitation answer has \"action\" and \"content\")"
                ));
            }
        }
        "roots" => {
            let Some(roots) = o.get("roots").and_then(Value::as_array) else {
                return Err(
                    "a roots answer needs \"roots\": [{\"uri\": \"file:///...\"}]".to_owned(),
                );
            };
            for r in roots {
                match r.get("uri").and_then(Value::as_str) {
                    Some(u) if u.starts_with("file://") => {}
                    Some(u) => return Err(format!("the root {u:?} is not a file:// URI")),
                    None => return Err(format!("a root needs a \"uri\", found {r}")),
                }
            }
        }
        _ => {
            let text = o
                .get("content")
                .and_then(|c| c.get("text"))
                .and_then(Value::as_str);
            if o.get("model").and_then(Value::as_str).is_none() {
                return Err("a sampling answer needs \"model\"".to_owned());
            }
            if text.is_none_or(|t| t.trim().is_empty()) {
                return Err("a sampling answer needs \"content\": {\"type\": \"text\", \"text\": \"...\"} with some text".to_owned());
            }
        }
    }
    Ok(())
}

/// How sampling requests are answered, after the person approves them.
#[derive(Debug, Clone)]
pub(crate) enum Sampler {
    /// An OpenAI-compatible chat-completions endpoint.
    OpenAi {
        /// The endpoint URL.
        url: String,
        /// The model name.
        model: String,
    },
    /// A command that reads the request JSON on stdin and prints the text.
    Command(String),
}

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
    /// The roots the person allowed (ROOT-C2).
    pub(crate) roots: Vec<Root>,
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

    /// A question with no scripted answer, no `--yes` and no terminal:
    /// which question, and what the answers file has instead.
    fn no_terminal(&self, key: &str) -> Refusal {
        self.inner.no_terminal.store(true, Ordering::Relaxed);
        match &self.inner.s.answers {
            Some(a) => Refusal::new(format!(
                "the --answers file has no answer for the question {key:?} (its keys: {})",
                a.keys().join(", ")
            )),
            None => Refusal::new(format!("the question {key:?}: {NO_TERMINAL}")),
        }
    }

    fn server(&self, cx: &InputContext) -> String {
        crate::ui::server_name(cx.server_info.as_ref())
            .unwrap_or_else(|| self.inner.s.server_label.clone())
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
                        self.inner.no_terminal.store(true, Ordering::Relaxed);
                        Refusal::new(format!("the --answers entry for {:?}: {e}", cx.key))
                    })?;
                }
                return Ok(answer);
            }
            if self.inner.s.yes {
                let content = form::yes_content(&params.requested_schema).map_err(|e| {
                    // Fixed by how tern is invoked: a usage error (exit 2).
                    self.inner.no_terminal.store(true, Ordering::Relaxed);
                    Refusal::new(e)
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
                let url = view.url.clone();
                let _turn = self.inner.dialog.lock().await;
                eprintln!("tern: open {url} then type done (or cancel) and press Enter");
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
                    params.url, cx.key
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
        Box::pin(async move {
            if let Some(answer) =
                self.scripted::<CreateMessageResult>(&cx.key, "sampling/createMessage")?
            {
                return Ok(answer);
            }
            let server = self.server(&cx);
            let s = &self.inner.s;
            if !s.interactive && !s.yes {
                if s.sampler.is_some() {
                    self.inner.no_terminal.store(true, Ordering::Relaxed);
                    return Err(Refusal::new(format!(
                        "the sampling request {:?} needs your approval: run in a terminal, or pass --yes to approve sampling requests",
                        cx.key
                    )));
                }
                return Err(self.no_terminal(&cx.key));
            }
            let backend = match &s.sampler {
                Some(Sampler::OpenAi { url, model }) => format!("{model} at {url}"),
                Some(Sampler::Command(c)) => format!("the command {c:?}"),
                None => "you (no --model-url or --sampling-cmd)".to_owned(),
            };
            // SAMP-5: the person sees the request before anything is sent.
            let _turn = self.inner.dialog.lock().await;
            form::header("for a model completion", &server, &key_label(&cx));
            show_sampling(&params);
            eprintln!("{} it would go to {}", bold("│"), highlight(&backend));
            if s.yes {
                eprintln!("{} approved by --yes", bold("│"));
            } else {
                let ok = tokio::task::spawn_blocking(|| form::confirm("Send this request?", None))
                    .await
                    .map_err(|e| Refusal::new(e.to_string()))?;
                if !matches!(ok, Ok(true)) {
                    // MRTR-C4: a rejected sample has no answer; end here.
                    return Err(Refusal::new("the person rejected the sampling request"));
                }
            }
            let (text, model, stop) = match &s.sampler {
                Some(sampler) => {
                    let (text, model, stop) =
                        run_sampler(sampler, &params).await.map_err(Refusal::new)?;
                    if text.trim().is_empty() {
                        return Err(Refusal::new(format!(
                            "{backend} gave an empty reply; nothing was sent to the server"
                        )));
                    }
                    (text, model, stop)
                }
                None if s.interactive => {
                    let t = tokio::task::spawn_blocking(|| {
                        form::text("Your reply:", "typed in place of a model")
                    })
                    .await
                    .map_err(|e| Refusal::new(e.to_string()))?
                    .map_err(|_| Refusal::new("no reply was written"))?;
                    (t, "human".to_owned(), Some("endTurn".to_owned()))
                }
                None => {
                    return Err(Refusal::new(
                        "no model to sample with: pass --model-url or --sampling-cmd",
                    ));
                }
            };
            let (text, stop) = limit_tokens(text, params.max_tokens, stop);
            eprintln!("{} reply: {}", bold("│"), text);
            if !s.yes && s.sampler.is_some() {
                let ok = tokio::task::spawn_blocking(|| {
                    form::confirm("Return this reply to the server?", None)
                })
                .await
                .map_err(|e| Refusal::new(e.to_string()))?;
                if !matches!(ok, Ok(true)) {
                    return Err(Refusal::new("the person withheld the model's reply"));
                }
            }
            Ok(CreateMessageResult {
                role: Role::Assistant,
                content: SamplingContent::Single(SamplingMessageContentBlock::Text(
                    TextContent::new(text),
                )),
                model,
                stop_reason: stop,
                meta: None,
            })
        })
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
            if s.yes || !s.interactive {
                // The --root flags (or the documented default, the current
                // directory) are the person's permission (ROOT-C2); say so.
                let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
                eprintln!(
                    "{}",
                    dim(&format!(
                        "tern: sharing the roots {} without asking ({}; --no-roots shares none)",
                        uris.join(" "),
                        if s.yes { "--yes" } else { "no terminal" }
                    ))
                );
                return Ok(roots);
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
                        eprintln!("{}   {}", bold("│"), r.uri);
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

/// Shows a sampling request for approval (SAMP-5).
fn show_sampling(p: &CreateMessageRequestParams) {
    if let Some(sys) = &p.system_prompt {
        eprintln!("{} system: {}", bold("│"), sys);
    }
    for m in &p.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for b in m.content.blocks() {
            let text = match b {
                SamplingMessageContentBlock::Text(t) => t.text.clone(),
                SamplingMessageContentBlock::Image(i) => format!("[image {}]", i.mime_type),
                SamplingMessageContentBlock::Audio(a) => format!("[audio {}]", a.mime_type),
                SamplingMessageContentBlock::ToolUse(t) => format!("[tool use {}]", t.name),
                SamplingMessageContentBlock::ToolResult(t) => {
                    format!("[tool result {}]", t.tool_use_id)
                }
            };
            eprintln!("{} {}: {}", bold("│"), role, text);
        }
    }
    eprintln!(
        "{} {}",
        bold("│"),
        dim(&format!("at most {} tokens", p.max_tokens))
    );
    if p.include_context
        .is_some_and(|c| c != tern::types::IncludeContext::None)
    {
        // SECURITY.md §3.10: never another server's context without consent.
        eprintln!(
            "{} {}",
            bold("│"),
            warn("the server asked to include context; none is included")
        );
    }
}

/// The conversation as chat-completions messages; text only.
fn chat_messages(p: &CreateMessageRequestParams) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    if let Some(sys) = &p.system_prompt {
        out.push(json!({"role": "system", "content": sys}));
    }
    for m in &p.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let mut text = String::new();
        for b in m.content.blocks() {
            match b {
                SamplingMessageContentBlock::Text(t) => text.push_str(&t.text),
                _ => return Err("only text can be sent to the model".to_owned()),
            }
        }
        out.push(json!({"role": role, "content": text}));
    }
    Ok(out)
}

/// Runs the backend: `(text, model, stopReason)`.
async fn run_sampler(
    sampler: &Sampler,
    p: &CreateMessageRequestParams,
) -> Result<(String, String, Option<String>), String> {
    match sampler {
        Sampler::OpenAi { url, model } => {
            let key = std::env::var("OPENAI_API_KEY")
                .or_else(|_| std::env::var("TERN_MODEL_KEY"))
                .ok();
            let mut body = json!({
                "model": model,
                "messages": chat_messages(p)?,
                "max_tokens": p.max_tokens,
            });
            if let Some(t) = p.temperature {
                body["temperature"] = json!(t);
            }
            if let Some(s) = &p.stop_sequences {
                body["stop"] = json!(s);
            }
            let mut req = reqwest::Client::new()
                .post(url)
                .header("content-type", "application/json")
                .body(body.to_string());
            if let Some(k) = key {
                req = req.bearer_auth(k);
            }
            let resp = req
                .send()
                .await
                .map_err(|e| format!("the model endpoint failed: {e}"))?;
            let status = resp.status();
            let bytes = resp
                .bytes()
                .await
                .map_err(|e| format!("the model endpoint failed: {e}"))?;
            if !status.is_success() {
                return Err(format!(
                    "the model endpoint answered {status}: {}",
                    String::from_utf8_lossy(&bytes)
                        .chars()
                        .take(300)
                        .collect::<String>()
                ));
            }
            let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
                format!("the model endpoint answered something that is not JSON: {e}")
            })?;
            let choice = &v["choices"][0];
            let text = choice["message"]["content"]
                .as_str()
                .ok_or("the model endpoint's answer has no choices[0].message.content")?
                .to_owned();
            let stop = match choice["finish_reason"].as_str() {
                Some("length") => Some("maxTokens".to_owned()),
                Some("stop") => Some("endTurn".to_owned()),
                Some(other) => Some(other.to_owned()),
                None => None,
            };
            let used = v["model"].as_str().unwrap_or(model).to_owned();
            Ok((text, used, stop))
        }
        Sampler::Command(cmd) => {
            use tokio::io::AsyncWriteExt;
            let mut child = tokio::process::Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .env("TERN_MAX_TOKENS", p.max_tokens.to_string())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::inherit())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| format!("cannot run --sampling-cmd: {e}"))?;
            let request = serde_json::to_vec(p).map_err(|e| e.to_string())?;
            if let Some(mut stdin) = child.stdin.take() {
                // A command that ignores its input may close stdin early.
                let _ = stdin.write_all(&request).await;
            }
            let out = child
                .wait_with_output()
                .await
                .map_err(|e| format!("--sampling-cmd failed: {e}"))?;
            if !out.status.success() {
                return Err(format!("--sampling-cmd exited with {}", out.status));
            }
            let text = String::from_utf8_lossy(&out.stdout).trim_end().to_owned();
            Ok((text, "sampling-cmd".to_owned(), Some("endTurn".to_owned())))
        }
    }
}

/// Respects `maxTokens` for replies the client did not meter itself: at
/// about four characters a token, longer text is cut and marked
/// `maxTokens`.
fn limit_tokens(text: String, max_tokens: u64, stop: Option<String>) -> (String, Option<String>) {
    let budget = usize::try_from(max_tokens.saturating_mul(4)).unwrap_or(usize::MAX);
    if text.chars().count() <= budget {
        return (text, stop);
    }
    (
        text.chars().take(budget).collect(),
        Some("maxTokens".to_owned()),
    )
}

/// The input key as the dialog header shows it, with the time the server
/// gives for the answer when it says (a Tern server does).
fn key_label(cx: &InputContext) -> String {
    match cx.answer_within.map(|d| d.as_secs()) {
        None => cx.key.clone(),
        Some(s) if s < 120 => format!("{} · answer within {s} s", cx.key),
        Some(s) if s < 7200 => format!("{} · answer within {} min", cx.key, s / 60),
        Some(s) => format!("{} · answer within {} h", cx.key, s / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::limit_tokens;

    #[test]
    fn long_replies_are_cut_to_max_tokens() {
        let (t, s) = limit_tokens("x".repeat(50), 10, Some("endTurn".into()));
        assert_eq!((t.len(), s.as_deref()), (40, Some("maxTokens")));
        let (t, s) = limit_tokens("short".into(), 10, Some("endTurn".into()));
        assert_eq!((t.as_str(), s.as_deref()), ("short", Some("endTurn")));
    }
}
