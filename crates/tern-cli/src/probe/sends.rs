//! What each kind of [`Send`] puts on the wire: the one thing wrong in a
//! row's requests, and what came back.

use std::time::Duration;

use serde_json::{Value, json};

use super::cases::CrossUse;
use super::engine::{Answers, Ctx, Outcome, Send, Status};
use super::wire::{Baseline, Reply};

/// Sends what `send` says for the row (for `input`, when it runs per
/// input request) and returns what came back.
pub(super) async fn send(
    ctx: &mut Ctx<'_>,
    send: Send,
    input: Option<(&String, &Value)>,
) -> Outcome {
    let (p, flow) = (ctx.p, ctx.flow);
    let round_one = json!({"name": flow.tool, "arguments": flow.args});
    match send {
        Send::Flow => baseline(ctx).await,
        Send::Prelude => match p.fresh(flow).await {
            Ok((state, requests)) => {
                ctx.good = Value::Object(p.answers(&requests));
                ctx.state = state;
                ctx.requests = requests;
                Outcome::Started(Ok(()))
            }
            Err(e) => Outcome::Started(Err(e)),
        },
        Send::RoundOne => Outcome::Started(p.fresh(flow).await.map(|_| ())),
        Send::RoundOneNoCapabilities => {
            Outcome::One(p.send_with("tools/call", round_one, &json!({}), None).await)
        }
        Send::RoundOneOtherNameHeader => Outcome::One(
            p.send_with(
                "tools/call",
                round_one,
                &p.caps,
                Some("tern-probe-other-name"),
            )
            .await,
        ),
        Send::State(alter) => {
            let altered = alter(ctx.state.as_str().unwrap_or_default());
            Outcome::One(p.retry(flow, altered, ctx.good.clone()).await)
        }
        Send::Answers(answers) => match wrong_answers(ctx, answers, input) {
            Some(a) => {
                let state = p.fresh_state(flow).await;
                Outcome::One(p.retry(flow, state, a).await)
            }
            None => Outcome::Verdict(Status::Skip, "no input request to answer".to_owned()),
        },
        Send::OtherArguments => {
            let mut other = flow.args.clone();
            other.insert("tern_probe_extra".into(), json!("changed"));
            if let Some((_, v)) = other.iter_mut().find(|(k, _)| *k != "tern_probe_extra") {
                *v = json!("tern-probe-changed");
            }
            let state = p.fresh_state(flow).await;
            let params = json!({"name": flow.tool, "arguments": other, "requestState": state, "inputResponses": ctx.good});
            Outcome::One(p.send("tools/call", params).await)
        }
        Send::OtherTool => {
            let state = p.fresh_state(flow).await;
            let params = json!({"name": format!("{}-tern-probe", flow.tool), "arguments": flow.args, "requestState": state, "inputResponses": ctx.good});
            Outcome::One(p.send("tools/call", params).await)
        }
        Send::OtherMethod(target) => cross_use(ctx, target).await,
        Send::OtherPrincipal => match &p.other {
            Some(t) => {
                let state = p.fresh_state(flow).await;
                let params = json!({"name": flow.tool, "arguments": flow.args, "requestState": state, "inputResponses": ctx.good});
                Outcome::One(p.send_via(t, "tools/call", params, &p.caps, None).await)
            }
            None => Outcome::Verdict(Status::Skip, "no other principal".to_owned()),
        },
        Send::ListWithAnswers => Outcome::One(
            p.send("tools/list", json!({"inputResponses": ctx.good}))
                .await,
        ),
        Send::FinalState => final_state(ctx).await,
        Send::TwoAtOnce => match p.fresh(flow).await {
            Ok((state, requests)) => {
                let a = Value::Object(p.answers(&requests));
                let (r1, r2) = tokio::join!(
                    p.retry(flow, state.clone(), a.clone()),
                    p.retry(flow, state, a)
                );
                Outcome::Two(r1, r2)
            }
            Err(e) => Outcome::Verdict(Status::Fail, e),
        },
        Send::DeclineAndCancel => match input {
            Some((key, _)) => decline_and_cancel(ctx, key).await,
            None => Outcome::Verdict(Status::Skip, "no input request to answer".to_owned()),
        },
        Send::Withheld(rounds) => withheld(ctx, rounds).await,
        Send::Expired => {
            let ttl = Duration::from_secs(ctx.opts.state_ttl.unwrap_or(0));
            // The skew the server allows, and a second for the lifetime's
            // grain (whole seconds).
            let skew = Duration::from_secs(ctx.opts.clock_skew.saturating_add(1));
            tokio::time::sleep(ttl.saturating_add(skew)).await;
            Outcome::One(p.retry(flow, ctx.state.clone(), ctx.good.clone()).await)
        }
    }
}

/// The baseline: the examination's flow when it ran one, else the flow
/// run now. A flow waiting on an out-of-band step is a SKIP (ELIC-10).
async fn baseline(ctx: &mut Ctx<'_>) -> Outcome {
    let b = match ctx.baseline.take() {
        Some(b) => b,
        None => ctx.p.complete(ctx.flow).await,
    };
    let outcome = match &b.out_of_band {
        Some(why) => Outcome::Verdict(Status::Skip, why.clone()),
        None => Outcome::Ended(b.end.clone().map(|(_, _, r)| r)),
    };
    ctx.baseline = Some(b);
    outcome
}

/// The answers of an [`Answers`] row: `None` when it replaces the answer
/// to an input request and there is none, or none that fits.
fn wrong_answers(
    ctx: &Ctx<'_>,
    answers: Answers,
    input: Option<(&String, &Value)>,
) -> Option<Value> {
    Some(match answers {
        Answers::Unasked => json!({"tern_probe_unasked": {"action": "accept", "content": {}}}),
        Answers::Empty => json!({}),
        Answers::Null => Value::Null,
        Answers::Replace(f) => {
            let (key, request) = input?;
            let mut bad = ctx.good.clone();
            bad[key.as_str()] = f(request)?;
            bad
        }
    })
}

/// The tool's state and answers replayed on another method: the first
/// entry the server lists is asked for with the target method. Skipped
/// when the server lists none.
async fn cross_use(ctx: &Ctx<'_>, target: &CrossUse) -> Outcome {
    let p = ctx.p;
    let first = match p.send(target.list, json!({})).await {
        Reply::Complete(r) => r
            .get(target.field)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(|e| e.get(target.key))
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    };
    let Some(name) = first else {
        return Outcome::Verdict(Status::Skip, format!("the server lists no {}", target.noun));
    };
    let mut params =
        json!({"requestState": p.fresh_state(ctx.flow).await, "inputResponses": ctx.good});
    params[target.key] = json!(name);
    Outcome::One(p.send(target.method, params).await)
}

/// The baseline's final state and answers again (MRTR-SEC4).
async fn final_state(ctx: &Ctx<'_>) -> Outcome {
    match &ctx.baseline {
        Some(Baseline {
            end: Ok((state, responses, Reply::Complete(_))),
            ..
        }) => Outcome::One(
            ctx.p
                .retry(ctx.flow, state.clone(), responses.clone())
                .await,
        ),
        Some(Baseline {
            end: Ok((_, _, r)), ..
        }) => Outcome::Verdict(
            Status::Fail,
            format!("the flow did not complete: {}", r.short()),
        ),
        Some(Baseline { end: Err(e), .. }) => Outcome::Verdict(Status::Fail, e.clone()),
        None => Outcome::Verdict(Status::Skip, "no baseline ran".to_owned()),
    }
}

/// Two fresh flows, `key` declined in one and cancelled in the other
/// (MRTR-E4).
async fn decline_and_cancel(ctx: &Ctx<'_>, key: &str) -> Outcome {
    let p = ctx.p;
    let mut replies = Vec::with_capacity(2);
    for action in ["decline", "cancel"] {
        replies.push(match p.fresh(ctx.flow).await {
            Ok((state, requests)) => {
                let mut a = Value::Object(p.answers(&requests));
                a[key] = json!({"action": action});
                p.retry(ctx.flow, state, a).await
            }
            Err(e) => Reply::Broken(e),
        });
    }
    let cancel = replies.pop().unwrap_or(Reply::Broken(String::new()));
    let decline = replies.pop().unwrap_or(Reply::Broken(String::new()));
    Outcome::Two(decline, cancel)
}

/// Retries of a fresh state with no answers, each with the state the
/// server last gave, until it stops asking or `rounds` are spent.
async fn withheld(ctx: &Ctx<'_>, rounds: u32) -> Outcome {
    let mut state = ctx.p.fresh_state(ctx.flow).await;
    for round in 1..=rounds {
        match ctx.p.retry(ctx.flow, state.clone(), json!({})).await {
            Reply::Asked(Some(next), _) => state = next,
            other => return Outcome::Rounds(round, Some(other)),
        }
    }
    Outcome::Rounds(rounds, None)
}
