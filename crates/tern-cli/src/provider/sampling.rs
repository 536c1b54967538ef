//! Sampling requests (DIGEST §5.2): shown for approval (SAMP-5), sent to
//! the model the person chose, and the reply shown before it is returned.
//!
//! A request's `maxTokens` is the server's wish, not the person's budget:
//! above `--max-tokens` it is lowered before the model is called, and the
//! dialog says so. What the request shows (system prompt, messages) is the
//! server's text, shown safe and within the display budget.

use serde_json::{Value, json};
use tern::client::{InputContext, Refusal};
use tern::types::{
    CreateMessageRequestParams, CreateMessageResult, Role, SamplingContent,
    SamplingMessageContentBlock, TextContent,
};

use super::{TerminalProvider, key_label};
use crate::form;
use crate::safe;
use crate::ui::{bold, dim, highlight, warn};

/// The default of `--max-tokens`: the most tokens one sampling request may
/// ask of the model, whatever its `maxTokens` says.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 4096;

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

/// A reply: its text, the model that wrote it, and why it stopped.
type Reply = (String, String, Option<String>);

impl TerminalProvider {
    /// Answers a sampling request: from the answers file, else with the
    /// person's approval (or `--yes`), from the model, within the token
    /// ceiling.
    pub(super) async fn sample_request(
        &self,
        cx: InputContext,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, Refusal> {
        if let Some(answer) =
            self.scripted::<CreateMessageResult>(&cx.key, "sampling/createMessage")?
        {
            return Ok(answer);
        }
        let s = &self.inner.s;
        if !s.interactive && !s.yes {
            if s.sampler.is_some() {
                self.mark_no_terminal();
                return Err(Refusal::new(format!(
                    "the sampling request {:?} needs your approval: run in a terminal, or pass --yes to approve sampling requests",
                    safe::line(&cx.key)
                )));
            }
            return Err(self.no_terminal(&cx.key));
        }
        // The ceiling applies before anything is shown or sent: the model
        // sees the lowered maxTokens, and so does --sampling-cmd.
        let asked = params.max_tokens;
        let mut params = params;
        params.max_tokens = asked.min(s.max_tokens);
        // SAMP-5: the person sees the request before anything is sent.
        let _turn = self.inner.dialog.lock().await;
        self.approve(&cx, &params, asked).await?;
        let (text, model, stop) = self.reply(&params).await?;
        let (text, stop) = limit_tokens(text, params.max_tokens, stop);
        eprintln!("{} reply:", bold("│"));
        form::block(&text);
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
            content: SamplingContent::Single(SamplingMessageContentBlock::Text(TextContent::new(
                text,
            ))),
            model,
            stop_reason: stop,
            meta: None,
        })
    }

    /// Shows the request and where it would go, then asks (or says that
    /// `--yes` approved it). `asked` is the server's `maxTokens`.
    async fn approve(
        &self,
        cx: &InputContext,
        params: &CreateMessageRequestParams,
        asked: u64,
    ) -> Result<(), Refusal> {
        let s = &self.inner.s;
        let backend = backend(s.sampler.as_ref());
        form::header("for a model completion", &self.server(cx), &key_label(cx));
        show_sampling(params, asked);
        eprintln!("{} it would go to {}", bold("│"), highlight(&backend));
        if s.yes {
            eprintln!("{} approved by --yes", bold("│"));
            return Ok(());
        }
        let ok = tokio::task::spawn_blocking(|| form::confirm("Send this request?", None))
            .await
            .map_err(|e| Refusal::new(e.to_string()))?;
        if matches!(ok, Ok(true)) {
            Ok(())
        } else {
            // MRTR-C4: a rejected sample has no answer; end here.
            Err(Refusal::new("the person rejected the sampling request"))
        }
    }

    /// The reply: from the model, or typed by the person in a terminal
    /// when there is none.
    async fn reply(&self, params: &CreateMessageRequestParams) -> Result<Reply, Refusal> {
        let s = &self.inner.s;
        match &s.sampler {
            Some(sampler) => {
                let reply = run_sampler(sampler, params).await.map_err(Refusal::new)?;
                if reply.0.trim().is_empty() {
                    return Err(Refusal::new(format!(
                        "{} gave an empty reply; nothing was sent to the server",
                        backend(Some(sampler))
                    )));
                }
                Ok(reply)
            }
            None if s.interactive => {
                let t = tokio::task::spawn_blocking(|| {
                    form::text("Your reply:", "typed in place of a model")
                })
                .await
                .map_err(|e| Refusal::new(e.to_string()))?
                .map_err(|_| Refusal::new("no reply was written"))?;
                Ok((t, "human".to_owned(), Some("endTurn".to_owned())))
            }
            None => Err(Refusal::new(
                "no model to sample with: pass --model-url or --sampling-cmd",
            )),
        }
    }
}

/// Where a request goes, in words (one safe line: the flags are the
/// person's, but the model name may come from a config file).
fn backend(sampler: Option<&Sampler>) -> String {
    safe::line(&match sampler {
        Some(Sampler::OpenAi { url, model }) => format!("{model} at {url}"),
        Some(Sampler::Command(c)) => format!("the command {c:?}"),
        None => "you (no --model-url or --sampling-cmd)".to_owned(),
    })
}

/// Shows a sampling request for approval (SAMP-5): the conversation as one
/// block of safe text within the display budget, then the token ceiling.
fn show_sampling(p: &CreateMessageRequestParams, asked: u64) {
    let mut shown = String::new();
    if let Some(sys) = &p.system_prompt {
        shown.push_str(&format!("system: {sys}\n"));
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
            shown.push_str(&format!("{role}: {text}\n"));
        }
    }
    form::block(shown.trim_end_matches('\n'));
    let ceiling = if asked > p.max_tokens {
        format!(
            "at most {} tokens (the server asked for {asked}; --max-tokens caps it)",
            p.max_tokens
        )
    } else {
        format!("at most {} tokens", p.max_tokens)
    };
    eprintln!("{} {}", bold("│"), dim(&ceiling));
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

/// Runs the backend with `p` (its `maxTokens` already within the ceiling).
async fn run_sampler(sampler: &Sampler, p: &CreateMessageRequestParams) -> Result<Reply, String> {
    match sampler {
        Sampler::OpenAi { url, model } => chat_completion(url, model, p).await,
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

/// One request to an OpenAI-compatible chat-completions endpoint.
async fn chat_completion(
    url: &str,
    model: &str,
    p: &CreateMessageRequestParams,
) -> Result<Reply, String> {
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
            safe::line(&String::from_utf8_lossy(&bytes))
        ));
    }
    let v: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the model endpoint answered something that is not JSON: {e}"))?;
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
