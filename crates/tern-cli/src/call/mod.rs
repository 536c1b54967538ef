//! `tern call`: call a tool, get a prompt or read a resource, answering the
//! server's questions round by round (DIGEST §4.5).
//!
//! The client's driver runs the flow (MRTR-C-A3): it builds every retry
//! (MRTR-C5..C8), checks every interim result (MRTR-C-A2) and keeps the
//! round limit, deadline and backoff. The command only watches, through the
//! driver's per-round observer, to show each round with its timing and
//! `requestState` size.
//!
//! What a server can make one call hold or do is bounded (README, "Budgets
//! of `tern call`"): rounds and a legacy server's requests (`--max-rounds`),
//! the whole call's time (`--timeout`), the tokens of a sampling request
//! (`--max-tokens`), and what the terminal shows (`safe`, `report`).
//!
//! The seams: the words ([`args`]), the checks against the server's schemas
//! ([`schema`]), the display of rounds and notifications ([`report`]),
//! starting over ([`restart`]), the printed outcome with its exit code
//! ([`outcome`]), and what a `-32021` asks of the call's flags
//! ([`missing`]).

mod args;
mod missing;
mod outcome;
mod report;
mod restart;
mod schema;

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tern::client::{CancelToken, Error, InputKinds};
use tern::types::{CallToolResult, GetPromptResult, ReadResourceResult};

use self::args::{What, parse_args_json, parse_what};
use self::missing::Withheld;
use self::outcome::{Out, detach, finish, report_error};
pub(crate) use self::report::{Reporter, Sink, drive};
use self::restart::drive_restarting;
use self::schema::{Lookup, check_prompt_args, prompt_arguments, tool_arguments};
use crate::CallArgs;
use crate::exit::{self, usage};
use crate::provider::{self, Answers, Sampler, Settings, TerminalProvider};
use crate::ui::{self, dim};
use crate::{safe, target};

/// How long a cancelled call may take to tell the server (a task it
/// follows is cancelled there) before it is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// The runtime of the client commands.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

/// `tern call`.
pub(crate) fn run(mut args: CallArgs) -> Result<ExitCode, String> {
    let (what, settings) = match prepare(&mut args) {
        Ok(p) => p,
        Err(e) => return Ok(usage(&e)),
    };
    let limit = (args.timeout > 0).then(|| Duration::from_secs(args.timeout));
    let rt = runtime()?;
    let cancel = CancelToken::new();
    let code = rt.block_on(async move {
        let run = within(limit, &cancel, call(args, what, settings, cancel.clone()));
        tokio::pin!(run);
        tokio::select! {
            r = &mut run => r,
            _ = tokio::signal::ctrl_c() => {
                // The call ends at once; a task it follows is first
                // cancelled at the server (bounded).
                cancel.cancel();
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut run).await;
                eprintln!("\ntern: cancelled");
                Ok(exit::code(exit::INTERRUPTED))
            }
        }
    });
    // A dialog still waiting on the terminal when the time ran out is left
    // behind with its thread, not waited for.
    rt.shutdown_background();
    code
}

/// The whole call within `--timeout` (connecting, listing, every round,
/// the time a person takes to answer): an unattended call always ends. At
/// the limit the call is cancelled as on Ctrl-C, so a task it follows is
/// first cancelled at the server (bounded, SECURITY.md), then dropped.
async fn within(
    limit: Option<Duration>,
    cancel: &CancelToken,
    run: impl Future<Output = Result<ExitCode, String>>,
) -> Result<ExitCode, String> {
    let Some(limit) = limit else {
        return run.await;
    };
    tokio::pin!(run);
    match tokio::time::timeout(limit, &mut run).await {
        Ok(r) => r,
        Err(_) => {
            cancel.cancel();
            let _ = tokio::time::timeout(CANCEL_GRACE, &mut run).await;
            ui::give_back_terminal();
            eprintln!(
                "tern: the call did not finish within {} s (--timeout SECS; 0 for no limit)",
                limit.as_secs()
            );
            Ok(exit::code(exit::PROTOCOL))
        }
    }
}

/// Everything the flags decide before anything is sent: the operation,
/// and the provider's settings.
fn prepare(args: &mut CallArgs) -> Result<(What, Settings), String> {
    target::settle(&mut args.target, Some(&mut args.what))?;
    crate::servers::resolve(&mut args.target)?;
    let what = parse_what(&args.what)?;
    if args.model_url.is_some() && args.sampling_cmd.is_some() {
        return Err("give --model-url or --sampling-cmd, not both".to_owned());
    }
    if let Some(u) = &args.model_url {
        exit::check_url("--model-url", u)?;
    }
    let answers = args.answers.as_deref().map(Answers::load).transpose()?;
    let roots = if args.no_roots {
        Vec::new()
    } else {
        provider::roots(&args.roots)?
    };
    let sampler = match (&args.model_url, &args.sampling_cmd) {
        (Some(url), _) => Some(Sampler::OpenAi {
            url: url.clone(),
            model: args.model.clone(),
        }),
        (None, Some(cmd)) => Some(Sampler::Command(cmd.clone())),
        (None, None) => None,
    };
    let interactive = provider::stdin_is_terminal();
    let kinds = declared(args, sampler.is_some(), answers.as_ref(), interactive);
    let settings = Settings {
        kinds,
        answers,
        yes: args.yes,
        interactive,
        sampler,
        roots,
        roots_chosen: !args.roots.is_empty(),
        max_tokens: args.max_tokens,
        server_label: String::new(),
    };
    Ok((what, settings))
}

/// META-A1: declare what the person enabled, and only what something can
/// answer: sampling with a model, a terminal or an answers file; roots in
/// a terminal (which asks), with `--root` or `--yes` (the consent), or
/// from an answers file that has some (ROOT-C2). Without a terminal and
/// without those, no root is offered, so none can be shared.
fn declared(
    args: &CallArgs,
    sampler: bool,
    answers: Option<&Answers>,
    interactive: bool,
) -> InputKinds {
    let mut kinds = InputKinds::NONE;
    if !args.no_elicitation {
        kinds = kinds.with_form();
        if !args.form_only {
            kinds = kinds.with_url();
        }
    }
    if !args.no_sampling && (sampler || answers.is_some() || interactive) {
        kinds = kinds.with_sampling();
    }
    let roots_consent = interactive
        || args.yes
        || !args.roots.is_empty()
        || answers.is_some_and(Answers::has_roots);
    if !args.no_roots && roots_consent {
        kinds = kinds.with_roots();
    }
    kinds
}

/// Connects, runs the operation and prints its outcome; after `cancel`
/// (Ctrl-C) it prints nothing more.
async fn call(
    args: CallArgs,
    what: What,
    mut settings: Settings,
    cancel: CancelToken,
) -> Result<ExitCode, String> {
    let label = args
        .target
        .cmd
        .clone()
        .or_else(|| args.target.url.clone())
        .unwrap_or_default();
    settings.server_label = label.clone();
    let provider = TerminalProvider::new(settings);
    // The rounds of every flow, and a legacy server's requests, within
    // --max-rounds (MRTR-C-A3); the whole call's time is kept by `within`.
    let rounds = args.max_rounds;
    // The tasks extension is declared like the kinds of input, unless
    // --no-tasks (which clap keeps apart from --detach).
    let tasks = !args.no_tasks;
    let tune = move |b: tern::client::ClientBuilder| {
        b.max_rounds(rounds)
            .flow_timeout(Duration::MAX)
            .task_timeout(Duration::MAX)
            .tasks(tasks)
    };
    let conn = match target::connect_with(&args.target, provider.clone(), tune).await {
        Ok(c) => c,
        Err(e) => return Ok(usage(&e)),
    };
    let sink = if args.verbose {
        Sink::Stderr
    } else {
        Sink::Quiet
    };
    let server_label = conn.label.clone();
    let rep_for = |what: &str| Reporter::new(sink, &server_label, what);
    if args.verbose {
        eprintln!(
            "{} {}",
            dim("declared clientCapabilities:"),
            serde_json::to_string(&conn.client.capabilities()).unwrap_or_default()
        );
    }
    let out = Out {
        json: args.json,
        restart: args.restart,
        url: args.target.url.clone(),
        detach: args.detach,
        cancel,
        declared: serde_json::to_value(conn.client.capabilities()).unwrap_or_default(),
        withheld: Withheld {
            tasks: args.no_tasks,
            elicitation: args.no_elicitation,
            url: args.form_only,
            sampling: args.no_sampling,
            roots: args.no_roots,
            session: conn.client.era() == Some(tern::client::Era::Legacy),
        },
    };
    let code = match operate(&conn, what, args.args.as_deref(), &out, &rep_for, &provider).await {
        Ok(code) => code,
        Err(Early::Usage(e)) => usage(&e),
        Err(Early::Interrupted) => {
            eprintln!("tern: cancelled");
            exit::code(exit::INTERRUPTED)
        }
        Err(Early::Failed(e, what)) => report_error(&e, &out, &rep_for(&what), &provider),
    };
    conn.close().await;
    Ok(code)
}

/// Why a call ended before its request was sent.
enum Early {
    /// Flags or arguments that cannot work (exit 2).
    Usage(String),
    /// Ctrl-C at a question about the arguments.
    Interrupted,
    /// Listing the tools or prompts failed, for the operation named.
    Failed(Box<Error>, String),
}

impl From<String> for Early {
    fn from(e: String) -> Self {
        Early::Usage(e)
    }
}

impl Early {
    fn lookup(e: Lookup, what: String) -> Self {
        match e {
            Lookup::Usage(e) => Early::Usage(e),
            Lookup::Failed(e) => Early::Failed(Box::new(e), what),
        }
    }
}

/// Checks the arguments, then runs the operation and prints its outcome.
async fn operate(
    conn: &target::Connected,
    what: What,
    args_json: Option<&str>,
    out: &Out,
    rep_for: &dyn Fn(&str) -> Arc<Reporter>,
    provider: &TerminalProvider,
) -> Result<ExitCode, Early> {
    let extra = args_json
        .map(parse_args_json)
        .transpose()?
        .unwrap_or_default();
    let client = &conn.client;
    Ok(match what {
        What::Tool(name, pairs) => {
            let what = format!("tools/call {name}");
            let arguments = tool_arguments(client, &name, &what, [extra, pairs].concat()).await?;
            let rep = rep_for(&what);
            if out.detach {
                return Ok(detach(client, &name, arguments, out, &rep, provider).await);
            }
            let r: Result<CallToolResult, Error> = drive_restarting(&rep, out.restart, |opts| {
                let (name, arguments) = (&name, arguments.clone());
                let opts = opts.cancel(out.cancel.clone());
                async move { client.call_tool_with(name, arguments, &opts).await }
            })
            .await;
            finish(r, out, &rep, provider, |r| (ui::tool_text(r), r.is_error()))
        }
        What::Prompt(name, pairs) => {
            let what = format!("prompts/get {name}");
            let declared = prompt_arguments(client, &name)
                .await
                .map_err(|e| Early::lookup(e, what.clone()))?;
            let arguments = check_prompt_args(&name, &declared, [extra, pairs].concat())?;
            let arguments = (!arguments.is_empty()).then_some(arguments);
            let rep = rep_for(&what);
            let r: Result<GetPromptResult, Error> = drive_restarting(&rep, out.restart, |opts| {
                let (name, arguments) = (&name, arguments.clone());
                let opts = opts.cancel(out.cancel.clone());
                async move { client.get_prompt_with(name, arguments, &opts).await }
            })
            .await;
            finish(r, out, &rep, provider, |r| (ui::prompt_text(r), false))
        }
        What::Read(uri) => {
            let rep = rep_for(&format!("resources/read {}", safe::line(&uri)));
            let r: Result<ReadResourceResult, Error> =
                drive_restarting(&rep, out.restart, |opts| {
                    let uri = &uri;
                    let opts = opts.cancel(out.cancel.clone());
                    async move { client.read_resource_with(uri, &opts).await }
                })
                .await;
            finish(r, out, &rep, provider, |r| (ui::resource_text(r), false))
        }
    })
}
