//! The reference workload `tern serve` offers: one tool per kind of input a
//! server can ask for, a prompt and a resource that ask first. It is also
//! the workload the end-to-end benchmarks measure.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State as AxumState};
use axum::response::Html;
use axum::routing::get;
use serde::Deserialize;
use tern::server::{
    Args, Ask, ElicitForm, Elicited, Error, Flow, Log, Need, Outcome, Progress, PromptDef,
    PromptResult, ResourceDef, ResourceResult, RouteLimits, ServerBuilder, SingleUse, State, Task,
    TaskScope, TaskSupport, ToolDef, ToolResult,
};

/// The application code for "the person declined", from Tern's registry
/// (ERR-5).
pub(crate) const DECLINED: i64 = tern::types::ErrorCode::DECLINED.0;

/// Out-of-band sign-ins, by flow id. The URL carries the flow id, 128
/// random bits, so only the person who was shown it can complete it.
#[derive(Debug, Default)]
pub(crate) struct Logins {
    completed: Mutex<HashSet<[u8; 16]>>,
    base_url: OnceLock<String>,
}

impl Logins {
    /// Where the login pages are served, e.g. `http://127.0.0.1:8080`.
    pub(crate) fn set_base_url(&self, url: String) {
        let _ = self.base_url.set(url);
    }

    fn url(&self, flow: &[u8; 16]) -> String {
        let base = self
            .base_url
            .get()
            .map_or("http://127.0.0.1", String::as_str);
        format!("{base}/login/{}", tern::seal::hex(flow))
    }

    fn complete(&self, id: &str) -> bool {
        match unhex(id) {
            Some(f) => self.completed.lock().map(|mut c| c.insert(f)).is_ok(),
            None => false,
        }
    }

    fn is_complete(&self, flow: &[u8; 16]) -> bool {
        self.completed
            .lock()
            .map(|c| c.contains(flow))
            .unwrap_or(false)
    }
}

fn unhex(s: &str) -> Option<[u8; 16]> {
    if s.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[derive(Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to return.
    text: String,
}

async fn echo(Args(a): Args<EchoArgs>) -> ToolResult {
    ToolResult::text(a.text)
}

#[derive(Deserialize, schemars::JsonSchema)]
struct CountArgs {
    /// How far to count (at most 100).
    to: u32,
}

/// Counts to `to`, a step every 20 ms, with progress and a log line per
/// step: what a long-running tool shows its caller.
async fn count(Args(a): Args<CountArgs>, progress: Progress, log: Log) -> ToolResult {
    let to = a.to.min(100);
    for i in 1..=to {
        tokio::time::sleep(Duration::from_millis(20)).await;
        progress
            .notify(
                f64::from(i),
                Some(f64::from(to)),
                Some(&format!("step {i}")),
            )
            .await;
        log.info(serde_json::json!(format!("counted {i}"))).await;
    }
    ToolResult::text(format!("counted to {to}"))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct DeployArgs {
    /// The environment to deploy to.
    environment: String,
}

#[derive(Debug, Deserialize, ElicitForm)]
struct Approval {
    /// Approve this deployment
    approved: bool,
}

async fn deploy(Args(a): Args<DeployArgs>, ask: Ask) -> Result<ToolResult, Error> {
    let (approval, roots) = ask.all((
        Need::form::<Approval>(
            "deployment_approval",
            &format!("Approve deployment to {}?", a.environment),
        ),
        Need::roots("workspace_roots").optional(),
    ))?;
    let n = roots.map_or(0, |r| r.len());
    match approval {
        Elicited::Accepted(Approval { approved: true }) => Ok(ToolResult::text(format!(
            "deployed to {} with {n} workspace root(s)",
            a.environment
        ))),
        Elicited::Accepted(_) => Err(Error::tool(format!(
            "deployment to {} was not approved",
            a.environment
        ))),
        Elicited::Declined => Err(Error::tool(format!(
            "deployment to {} was declined",
            a.environment
        ))),
        Elicited::Cancelled => Err(Error::tool(format!(
            "deployment to {} was cancelled",
            a.environment
        ))),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct MigrateArgs {
    /// The database to migrate.
    database: String,
    /// Seconds the checks take before the question (default 0, at most 60).
    #[serde(default)]
    seconds: f64,
}

#[derive(Debug, Deserialize, ElicitForm)]
struct ApplyMigration {
    /// Apply the migration now
    apply: bool,
}

/// A long-running tool (the tasks extension): checks, then asks whether to
/// apply, then applies. Run as a task it asks during the task and the
/// checks run once; run inline (a client without tasks) it is an MRTR flow
/// whose checks run again on each round, so nothing irreversible happens
/// before the last question.
async fn migrate(Args(a): Args<MigrateArgs>, task: Task) -> Outcome {
    let secs = if a.seconds.is_finite() {
        a.seconds.clamp(0.0, 60.0)
    } else {
        0.0
    };
    task.run(move |scope: TaskScope| async move {
        scope.status(format!("checking {}", a.database));
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        let question = format!("The checks of {} passed. Apply the migration?", a.database);
        let answer = scope
            .ask(Need::form::<ApplyMigration>("apply_migration", &question))
            .await?;
        match answer {
            Elicited::Accepted(ApplyMigration { apply: true }) => {
                scope.status(format!("applying to {}", a.database));
                Ok(ToolResult::text(format!("migrated {}", a.database)))
            }
            Elicited::Accepted(_) | Elicited::Declined => Err(Error::tool(format!(
                "the migration of {} was not applied",
                a.database
            ))),
            Elicited::Cancelled => Err(Error::tool(format!(
                "the migration of {} was cancelled",
                a.database
            ))),
        }
    })
}

#[derive(Deserialize, schemars::JsonSchema)]
struct AskModelArgs {
    /// The question for the client's model.
    question: String,
}

async fn ask_model(Args(a): Args<AskModelArgs>, ask: Ask) -> Result<ToolResult, Error> {
    let s = ask.all(Need::sample_text("model_answer", &a.question, 100))?;
    Ok(ToolResult::text(s.text()))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct RedeemArgs {
    /// The one-time code to redeem.
    code: String,
}

#[derive(Debug, Deserialize, ElicitForm)]
struct Confirm {
    /// Confirm
    confirm: bool,
}

/// A code redeems at most once, ever: its consume key is the code itself.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

async fn redeem(Args(a): Args<RedeemArgs>, ask: Ask, once: SingleUse) -> Result<ToolResult, Error> {
    match ask.form::<Confirm>("confirm_redeem", &format!("Redeem code {}?", a.code))? {
        Elicited::Accepted(Confirm { confirm: true }) => {
            // At the point of the irreversible effect (SECURITY.md §3.9).
            once.consume_key("redeem", &a.code, FOREVER).await?;
            Ok(ToolResult::text(format!("redeemed {}", a.code)))
        }
        Elicited::Accepted(_) => Err(Error::tool("redemption not confirmed")),
        Elicited::Declined => Err(Error::tool("redemption declined")),
        Elicited::Cancelled => Err(Error::tool("redemption cancelled")),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct OrderArgs {
    /// What to order.
    item: String,
}

/// Orders placed since the server started.
static ORDERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Each confirmed flow places one order: the route is single use, so a
/// replayed confirmation cannot place a second (SECURITY.md §3.9). Unlike
/// `redeem`, the same arguments may be ordered again in a new flow.
async fn order(Args(a): Args<OrderArgs>, ask: Ask) -> Result<ToolResult, Error> {
    match ask.form::<Confirm>("confirm_order", &format!("Place an order for {}?", a.item))? {
        Elicited::Accepted(Confirm { confirm: true }) => {
            let n = ORDERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            Ok(ToolResult::text(format!("order {n} placed for {}", a.item)))
        }
        Elicited::Accepted(_) => Err(Error::tool("order not confirmed")),
        Elicited::Declined => Err(Error::tool("order declined")),
        Elicited::Cancelled => Err(Error::tool("order cancelled")),
    }
}

async fn login(
    ask: Ask,
    flow: Flow,
    State(logins): State<Arc<Logins>>,
) -> Result<ToolResult, Error> {
    let url = logins.url(&flow.id);
    let need = || Need::url("login", "Sign in to the Tern demo service", &url);
    match ask.all(need())? {
        Elicited::Accepted(()) if logins.is_complete(&flow.id) => Ok(ToolResult::text("signed in")),
        // Accept is consent, not completion (ELIC-10): ask again.
        Elicited::Accepted(()) => Err(ask.again(need())),
        Elicited::Declined => Err(Error::tool("sign-in declined")),
        Elicited::Cancelled => Err(Error::tool("sign-in cancelled")),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ReviewArgs {
    /// What to review.
    target: String,
}

#[derive(Debug, Deserialize, ElicitForm)]
struct Focus {
    /// What should the review focus on?
    focus: String,
}

async fn review(Args(a): Args<ReviewArgs>, ask: Ask) -> Result<PromptResult, Error> {
    match ask.form::<Focus>(
        "review_focus",
        &format!("What should the review of {} focus on?", a.target),
    )? {
        Elicited::Accepted(f) => Ok(PromptResult::user_text(format!(
            "Please review {}, focusing on {}.",
            a.target, f.focus
        ))),
        Elicited::Declined => Err(Error::application(
            DECLINED,
            "The person declined to give a focus",
        )),
        Elicited::Cancelled => Err(Error::application(
            DECLINED,
            "The person cancelled the review",
        )),
    }
}

async fn secret(ask: Ask) -> Result<ResourceResult, Error> {
    match ask.form::<Confirm>("reveal_secret", "Reveal config://secret?")? {
        Elicited::Accepted(Confirm { confirm: true }) => Ok(ResourceResult::text(
            "config://secret",
            "text/plain",
            "api_endpoint=https://internal.example\nfeature_flags=mrtr",
        )),
        Elicited::Accepted(_) | Elicited::Declined => Err(Error::application(
            DECLINED,
            "The person declined to reveal the secret",
        )),
        Elicited::Cancelled => Err(Error::application(
            DECLINED,
            "The person cancelled revealing the secret",
        )),
    }
}

/// The reference workload on a server builder.
pub(crate) fn server(builder: ServerBuilder, logins: Arc<Logins>) -> ServerBuilder {
    builder
        .instructions("The Tern reference workload: each tool asks the client for a different kind of input.")
        .state(logins)
        .tool("echo", "Returns the text it is given", echo)
        .tool("count", "Counts to a number, reporting progress and logging each step", count)
        .tool("deploy", "Deploys to an environment after a person approves; reads the workspace roots if offered", deploy)
        .tool("ask_model", "Asks the client's model a question", ask_model)
        .tool_def(ToolDef::new("migrate", "Migrates a database after checks and a person's go-ahead; a task when the client takes tasks", migrate).task(TaskSupport::Optional))
        .tool_def(ToolDef::new("redeem", "Redeems a one-time code after confirmation; a code redeems at most once", redeem).single_use())
        .tool_def(ToolDef::new("order", "Places an order after confirmation; each confirmed flow places one", order).single_use())
        .tool_def(
            ToolDef::new("login", "Signs in through a page the person opens in a browser", login)
                .limits(RouteLimits { max_rounds: Some(20), ..RouteLimits::default() }),
        )
        .prompt_def(PromptDef::new("review", "A review request whose focus the person chooses", review))
        .resource_def(
            ResourceDef::new("config://secret", "secret configuration", secret)
                .mime_type("text/plain")
                .description("Revealed only after the person confirms"),
        )
}

/// The sign-in pages: `GET /login/{id}` shows a button, `POST
/// /login/{id}` completes the flow.
pub(crate) fn login_routes(logins: Arc<Logins>) -> Router {
    Router::new()
        .route("/login/{id}", get(login_page).post(login_done))
        .with_state(logins)
}

async fn login_page(Path(id): Path<String>) -> Html<String> {
    let id: String = id.chars().filter(char::is_ascii_hexdigit).collect();
    Html(format!(
        "<!doctype html><title>Tern sign-in</title><h1>Sign in to the Tern demo</h1>\
         <form method=post action=\"/login/{id}\"><button>Complete sign-in</button></form>"
    ))
}

async fn login_done(
    Path(id): Path<String>,
    AxumState(logins): AxumState<Arc<Logins>>,
) -> Html<&'static str> {
    if logins.complete(&id) {
        Html("<!doctype html><title>Signed in</title><p>Signed in. You can return to the terminal.")
    } else {
        Html("<!doctype html><title>Unknown</title><p>This sign-in link is not valid.")
    }
}
