//! The one engine that runs the probe's cases: each case is a [`Row`] of
//! [`super::cases::ROWS`] saying what to send and what counts as a pass,
//! and [`run`] plays every row against one flow.

use serde_json::{Map, Value, json};

use super::cases::{CrossUse, ROWS};
use super::wire::{Baseline, Flow, Probe, Reply};

/// How binding a case's rule is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    Must,
    Should,
    Advice,
}

impl Level {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
            Level::Advice => "advice",
        }
    }
}

/// The verdict on one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    Pass,
    Fail,
    Skip,
}

impl Status {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
        }
    }
}

/// One case's outcome, as reported.
#[derive(Debug, Clone)]
pub(super) struct Case {
    /// The tool whose flow the case ran against (empty when none).
    pub(super) tool: String,
    pub(super) family: &'static str,
    pub(super) id: String,
    pub(super) rule: &'static str,
    pub(super) level: Level,
    pub(super) status: Status,
    pub(super) reason: String,
}

/// What the probe sends for a row.
#[derive(Debug, Clone, Copy)]
pub(super) enum Send {
    /// The whole flow with good answers (the one the tool's examination ran,
    /// when it ran one).
    Flow,
    /// Round 1 of a new flow, kept: later rows alter its state and answers.
    Prelude,
    /// Round 1 of a new flow.
    RoundOne,
    /// Round 1 as a client that declares no capability.
    RoundOneNoCapabilities,
    /// Round 1 with an `Mcp-Name` header unlike the body's name.
    RoundOneOtherNameHeader,
    /// The prelude's state, altered, with good answers.
    State(fn(&str) -> Value),
    /// A fresh state with these answers.
    Answers(Answers),
    /// A fresh state and good answers, with other arguments.
    OtherArguments,
    /// A fresh state and good answers, under another tool's name.
    OtherTool,
    /// A fresh state and good answers on another method.
    OtherMethod(&'static CrossUse),
    /// A fresh state and good answers, sent as another principal.
    OtherPrincipal,
    /// `tools/list` carrying the good answers.
    ListWithAnswers,
    /// The baseline's final state and answers, again.
    FinalState,
    /// Two retries of one fresh state at once.
    TwoAtOnce,
    /// Two fresh flows, this row's input declined in one and cancelled in
    /// the other.
    DeclineAndCancel,
    /// Retries of a fresh state with every answer withheld, each with the
    /// state the server last gave, for at most this many rounds.
    Withheld(u32),
    /// The prelude's state once its lifetime (`--state-ttl`) and 30 s of
    /// clock skew have passed.
    Expired,
}

impl Send {
    /// Whether the server must refuse a `requestState` here (altered,
    /// bound to something else, replayed or expired): such a refusal is the
    /// client's error (`-32602`, MRTR-E-A1), never a server error.
    pub(super) fn refuses_a_state(self) -> bool {
        matches!(
            self,
            Send::State(_)
                | Send::OtherArguments
                | Send::OtherTool
                | Send::OtherMethod(_)
                | Send::OtherPrincipal
                | Send::FinalState
                | Send::TwoAtOnce
                | Send::Expired
        )
    }
}

impl Outcome {
    /// The first reply that is a server error, in a reason's words.
    fn server_error(&self) -> Option<String> {
        match self {
            Outcome::One(r) => r.server_error(),
            Outcome::Two(a, b) => a.server_error().or_else(|| b.server_error()),
            _ => None,
        }
    }
}

/// The answers a row sends with a fresh state.
#[derive(Debug, Clone, Copy)]
pub(super) enum Answers {
    /// Only an answer to a key never asked.
    Unasked,
    /// None: `{}`.
    Empty,
    /// `null`.
    Null,
    /// The good answers with this row's input answered by the function
    /// (given the input request); `None` leaves the row out for that input.
    Replace(fn(&Value) -> Option<Value>),
}

/// What counts as a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pass {
    /// The flow completes.
    Completes,
    /// Round 1 asks for input with a state.
    Asks,
    /// The server asks the client nothing.
    NothingAsked,
    /// A JSON-RPC error.
    Refused,
    /// An error or another question: anything but completion.
    NotCompleted,
    /// Another question.
    AskedAgain,
    /// Of two replies, at most one completes.
    AtMostOneCompletes,
    /// Two replies differ.
    Differ,
    /// An error before the rounds run out.
    RefusedInTime,
}

/// Which input requests a per-input row runs for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Each {
    /// Every form-mode elicitation.
    Form,
    /// The first form-mode elicitation only.
    FirstForm,
    /// Every sampling request.
    Sampling,
    /// Every roots request.
    Roots,
}

/// When a row applies; otherwise it is a SKIP with [`Row::otherwise`], or
/// left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum When {
    Always,
    /// Over HTTP only (headers).
    Http,
    /// For the tool declared `--single-use` only.
    SingleUse,
    /// With `--other-bearer-env` only.
    OtherPrincipal,
    /// With `--state-ttl` only.
    StateTtl,
}

/// One case: what it is, what it sends, and what counts as a pass.
#[derive(Debug, Clone, Copy)]
pub(super) struct Row {
    pub(super) family: &'static str,
    pub(super) name: &'static str,
    pub(super) level: Level,
    pub(super) rule: &'static str,
    pub(super) send: Send,
    pub(super) pass: Pass,
    pub(super) when: When,
    /// The SKIP reason where the row does not apply (`None`: left out).
    pub(super) otherwise: Option<&'static str>,
    /// Run once per matching input request, named `KEY: name`.
    pub(super) each: Option<Each>,
    /// Reported only when it does not pass.
    pub(super) quiet: bool,
    /// The flow's remaining rows are not run when this row ends so.
    pub(super) ends_on: Option<Status>,
}

/// A row that always applies, once per flow.
pub(super) const fn row(
    family: &'static str,
    name: &'static str,
    level: Level,
    rule: &'static str,
    send: Send,
    pass: Pass,
) -> Row {
    Row {
        family,
        name,
        level,
        rule,
        send,
        pass,
        when: When::Always,
        otherwise: None,
        each: None,
        quiet: false,
        ends_on: None,
    }
}

impl Row {
    /// Applies only `when`; a SKIP with `otherwise` (or left out) else.
    pub(super) const fn only(self, when: When, otherwise: Option<&'static str>) -> Row {
        Row {
            when,
            otherwise,
            ..self
        }
    }

    /// Runs once per input request of the kind.
    pub(super) const fn each(self, each: Each) -> Row {
        Row {
            each: Some(each),
            ..self
        }
    }

    /// Shown only when it does not pass.
    pub(super) const fn quiet(self) -> Row {
        Row {
            quiet: true,
            ..self
        }
    }

    /// Ends the flow's rows when its status is `status`.
    pub(super) const fn ends_on(self, status: Status) -> Row {
        Row {
            ends_on: Some(status),
            ..self
        }
    }
}

/// What a row's requests came back with, before it is judged.
#[derive(Debug)]
pub(super) enum Outcome {
    /// One reply.
    One(Reply),
    /// How the flow ended (baseline).
    Ended(Result<Reply, String>),
    /// Whether round 1 asked, or why not.
    Started(Result<(), String>),
    /// Two replies.
    Two(Reply, Reply),
    /// The round of the last reply, and that reply (`None`: still asking
    /// when the rounds ran out).
    Rounds(u32, Option<Reply>),
    /// Judged already: the row could not be set up, or does not apply.
    Verdict(Status, String),
}

/// The per-flow settings the rows read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Options {
    /// This flow's tool is the one declared `--single-use`.
    pub(super) single_use: bool,
    /// `--state-ttl`.
    pub(super) state_ttl: Option<u64>,
    /// `--clock-skew`.
    pub(super) clock_skew: u64,
}

/// One flow's run through the rows.
pub(super) struct Ctx<'a> {
    pub(super) p: &'a Probe,
    pub(super) flow: &'a Flow,
    pub(super) opts: Options,
    /// The baseline, once run (or given by the examination).
    pub(super) baseline: Option<Baseline>,
    /// The prelude's round-1 state and requests.
    pub(super) state: Value,
    pub(super) requests: Map<String, Value>,
    /// Good answers to the prelude's requests.
    pub(super) good: Value,
}

/// Runs every row against `flow`. `examined` is the flow the tool's
/// examination already completed: it serves as the baseline, so a flow
/// whose effect happens once (a one-time code) is not spent twice.
pub(super) async fn run(
    p: &Probe,
    flow: &Flow,
    examined: Option<Baseline>,
    opts: Options,
) -> Vec<Case> {
    let mut ctx = Ctx {
        p,
        flow,
        opts,
        baseline: examined,
        state: Value::Null,
        requests: Map::new(),
        good: json!({}),
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < ROWS.len() {
        if ROWS[i].each.is_some() {
            let n = ROWS[i..].iter().take_while(|r| r.each.is_some()).count();
            per_input(&mut ctx, &ROWS[i..i + n], &mut out).await;
            i += n;
            continue;
        }
        let row = &ROWS[i];
        i += 1;
        if !applies(&ctx, row) && row.otherwise.is_none() {
            continue;
        }
        let case = play(&mut ctx, row, None).await;
        let ends = row.ends_on == Some(case.status);
        if !(row.quiet && case.status == Status::Pass) {
            out.push(case);
        }
        if ends {
            break;
        }
    }
    out
}

/// A block of per-input rows: for each input request in turn, each row
/// that applies to it.
async fn per_input(ctx: &mut Ctx<'_>, rows: &[Row], out: &mut Vec<Case>) {
    let requests = ctx.requests.clone();
    let first_form = requests
        .iter()
        .find(|(_, r)| is_form(r))
        .map(|(k, _)| k.clone());
    for (key, request) in &requests {
        for row in rows {
            let kind_fits = match row.each {
                Some(Each::Form) => is_form(request),
                Some(Each::FirstForm) => first_form.as_deref() == Some(key.as_str()),
                Some(Each::Sampling) => method(request) == "sampling/createMessage",
                Some(Each::Roots) => method(request) == "roots/list",
                None => true,
            };
            let left_out = matches!(row.send, Send::Answers(Answers::Replace(f)) if f(request).is_none())
                || (!applies(ctx, row) && row.otherwise.is_none());
            if kind_fits && !left_out {
                out.push(play(ctx, row, Some((key, request))).await);
            }
        }
    }
}

fn method(request: &Value) -> &str {
    request.get("method").and_then(Value::as_str).unwrap_or("")
}

/// A form-mode elicitation.
fn is_form(request: &Value) -> bool {
    method(request) == "elicitation/create"
        && request.pointer("/params/mode").and_then(Value::as_str) != Some("url")
}

/// Plays one row (for one input, when it runs per input) and judges it.
async fn play(ctx: &mut Ctx<'_>, row: &Row, input: Option<(&String, &Value)>) -> Case {
    let id = match input {
        Some((key, _)) => format!("{key}: {}", row.name),
        None => row.name.to_owned(),
    };
    let unsent = ctx.p.unsent();
    let (mut level, mut rule) = (row.level, row.rule);
    let (status, reason) = if applies(ctx, row) {
        let outcome = super::sends::send(ctx, row.send, input).await;
        let server_error = row
            .send
            .refuses_a_state()
            .then(|| outcome.server_error())
            .flatten();
        if ctx.p.unsent() > unsent {
            // Not measured: a verdict on a request never sent would be a
            // guess about the server.
            (
                Status::Skip,
                format!(
                    "not measured: the budget of {} requests (--max-requests) is spent",
                    ctx.p.max_requests
                ),
            )
        } else if let Some(reply) = server_error {
            // The state was not taken, but a client retries a server error
            // (-32603, HTTP 5xx): a SHOULD fails, whatever the row's level.
            (level, rule) = (Level::Should, "MRTR-E-A1");
            (
                Status::Fail,
                format!(
                    "refused as a server error ({reply}), which clients retry: a bad requestState is the client's error (-32602)"
                ),
            )
        } else {
            judge(row.pass, outcome)
        }
    } else {
        (Status::Skip, row.otherwise.unwrap_or_default().to_owned())
    };
    Case {
        tool: ctx.flow.tool.clone(),
        family: row.family,
        id,
        rule,
        level,
        status,
        reason,
    }
}

/// Whether `row` applies to this flow (`When`).
fn applies(ctx: &Ctx<'_>, row: &Row) -> bool {
    match row.when {
        When::Always => true,
        When::Http => ctx.p.http,
        When::SingleUse => ctx.opts.single_use,
        When::OtherPrincipal => ctx.p.other.is_some(),
        When::StateTtl => ctx.opts.state_ttl.is_some(),
    }
}

/// What counts as a pass, applied to what came back.
pub(super) fn judge(pass: Pass, outcome: Outcome) -> (Status, String) {
    match (pass, outcome) {
        (_, Outcome::Verdict(s, why)) => (s, why),
        (Pass::Completes, Outcome::Ended(Ok(Reply::Complete(_)))) => {
            (Status::Pass, "completed with good answers".to_owned())
        }
        (Pass::Completes, Outcome::Ended(Ok(r))) => (Status::Fail, r.short()),
        (Pass::Completes, Outcome::Ended(Err(e))) | (Pass::Asks, Outcome::Started(Err(e))) => {
            (Status::Fail, e)
        }
        (Pass::Asks, Outcome::Started(Ok(()))) => {
            (Status::Pass, "round 1 still answers".to_owned())
        }
        (Pass::NothingAsked, Outcome::One(Reply::Asked(_, req))) if !req.is_empty() => (
            Status::Fail,
            "asked a client that declared nothing".to_owned(),
        ),
        (Pass::NothingAsked, Outcome::One(r)) => (Status::Pass, r.short()),
        (Pass::Refused, Outcome::One(r @ Reply::Refused(..))) => {
            (Status::Pass, format!("refused ({})", r.short()))
        }
        (Pass::Refused, Outcome::One(r)) => must_not_be(&r, "accepted: "),
        (Pass::NotCompleted, Outcome::One(r @ (Reply::Refused(..) | Reply::Asked(..)))) => {
            (Status::Pass, r.short())
        }
        (Pass::NotCompleted, Outcome::One(r)) => match r {
            Reply::Complete(_) => (Status::Fail, format!("{} from it", r.short())),
            _ => (Status::Fail, r.short()),
        },
        (Pass::AskedAgain, Outcome::One(Reply::Asked(..))) => (
            Status::Pass,
            "asked again for the missing answers".to_owned(),
        ),
        (Pass::AskedAgain, Outcome::One(r)) => (Status::Fail, r.short()),
        (Pass::AtMostOneCompletes, Outcome::Two(a, b)) => {
            let done = [&a, &b]
                .iter()
                .filter(|r| matches!(r, Reply::Complete(_)))
                .count();
            if done <= 1 {
                (Status::Pass, format!("{done} of 2 completed"))
            } else {
                (Status::Fail, "both completed".to_owned())
            }
        }
        (Pass::Differ, Outcome::Two(Reply::Broken(e), _) | Outcome::Two(_, Reply::Broken(e))) => {
            (Status::Fail, e)
        }
        (Pass::Differ, Outcome::Two(a, b)) if format!("{a:?}") != format!("{b:?}") => (
            Status::Pass,
            format!("decline: {}; cancel: {}", a.short(), b.short()),
        ),
        (Pass::Differ, Outcome::Two(a, _)) => {
            (Status::Fail, format!("both answered alike: {}", a.short()))
        }
        (Pass::RefusedInTime, Outcome::Rounds(round, Some(r @ Reply::Refused(..)))) => (
            Status::Pass,
            format!("refused at round {round}: {}", r.short()),
        ),
        (Pass::RefusedInTime, Outcome::Rounds(_, Some(r))) => (Status::Fail, r.short()),
        (Pass::RefusedInTime, Outcome::Rounds(round, None)) => {
            (Status::Fail, format!("still asking after {round} rounds"))
        }
        (pass, outcome) => (
            Status::Skip,
            format!("not judged: {pass:?} does not read {outcome:?}"),
        ),
    }
}

/// A reply that should have been an error: no answer at all is reported as
/// such, anything else with `prefix`.
fn must_not_be(r: &Reply, prefix: &str) -> (Status, String) {
    match r {
        Reply::Broken(_) => (Status::Fail, r.short()),
        _ => (Status::Fail, format!("{prefix}{}", r.short())),
    }
}
