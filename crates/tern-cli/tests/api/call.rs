//! `tern call` against `tern serve`, over HTTP and over stdio, for every
//! operation of the reference workload, answered with `--answers` and
//! `--yes` as a script would.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use super::common::{Target, post, tern_bin};

/// Each scenario runs against both transports.
macro_rules! both {
    ($($name:ident => $body:expr;)*) => {$(
        mod $name {
            use super::*;
            #[test]
            fn http() {
                ($body)(Target::http());
            }
            #[test]
            fn stdio() {
                ($body)(Target::stdio());
            }
        }
    )*};
}

const APPROVE: &str =
    r#"{"deployment_approval": {"action": "accept", "content": {"approved": true}}}"#;

both! {
    echo => |t: Target| {
        let r = t.call(&["tool", "echo", "text=hello there"]);
        r.ok();
        assert_eq!(r.stdout.trim(), "hello there");
    };
    deploy_approved => |t: Target| {
        // No terminal, --root or --yes: no root is offered (ROOT-C2).
        t.call_with(APPROVE, &["tool", "deploy", "environment=staging"])
            .ok()
            .says("deployed to staging with 0 workspace root(s)");
    };
    deploy_with_yes_and_two_roots => |t: Target| {
        let a = t.dir().join("a");
        let b = t.dir().join("b");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let (a, b) = (a.display().to_string(), b.display().to_string());
        t.call(&["tool", "deploy", "environment=qa", "--yes", "--root", &a, "--root", &b])
            .ok()
            .says("deployed to qa with 2 workspace root(s)");
    };
    deploy_declined => |t: Target| {
        t.call_with(
            r#"{"deployment_approval": {"action": "decline"}}"#,
            &["tool", "deploy", "environment=staging"],
        )
        .failed(4)
        .says("deployment to staging was declined");
    };
    deploy_cancelled => |t: Target| {
        t.call_with(
            r#"{"deployment_approval": {"action": "cancel"}}"#,
            &["tool", "deploy", "environment=staging"],
        )
        .failed(4)
        .says("deployment to staging was cancelled");
    };
    deploy_without_roots => |t: Target| {
        t.call(&["tool", "deploy", "environment=staging", "--yes", "--no-roots"])
            .ok()
            .says("deployed to staging with 0 workspace root(s)");
    };
    deploy_without_elicitation => |t: Target| {
        t.call(&["tool", "deploy", "environment=staging", "--yes", "--no-elicitation"])
            .failed(3)
            .says("-32021")
            .says("drop --no-elicitation");
    };
    deploy_without_a_terminal => |t: Target| {
        t.call(&["tool", "deploy", "environment=staging"])
            .failed(2)
            .says("no terminal");
    };
    ask_model_through_a_command => |t: Target| {
        t.call(&[
            "tool", "ask_model", "question=What is six times seven?", "--yes",
            "--sampling-cmd", "cat >/dev/null; echo forty-two",
        ])
        .ok()
        .says("forty-two");
    };
    ask_model_from_answers => |t: Target| {
        t.call_with(
            r#"{"model_answer": {"role": "assistant", "content": {"type": "text", "text": "scripted"}, "model": "m"}}"#,
            &["tool", "ask_model", "question=hi"],
        )
        .ok()
        .says("scripted");
    };
    redeem_twice => |t: Target| {
        t.call(&["tool", "redeem", "code=ABC-123", "--yes"]).ok().says("redeemed ABC-123");
        t.call(&["tool", "redeem", "code=ABC-123", "--yes"]).failed(1).says("-32602");
    };
    order_twice => |t: Target| {
        // Single use per flow, not per arguments: each new flow orders.
        t.call(&["tool", "order", "item=book", "--yes"]).ok().says("placed for book");
        t.call(&["tool", "order", "item=book", "--yes"]).ok().says("placed for book");
    };
    order_declined => |t: Target| {
        t.call_with(r#"{"confirm_order": {"action": "decline"}}"#, &["tool", "order", "item=pen"])
            .failed(4)
            .says("order declined");
    };
    redeem_declined => |t: Target| {
        t.call_with(r#"{"confirm_redeem": {"action": "decline"}}"#, &["tool", "redeem", "code=X"])
            .failed(4)
            .says("redemption declined");
    };
    login_signed_in => |t: Target| login(&t, "done", 0, "signed in");
    login_cancelled => |t: Target| login(&t, "cancel", 4, "sign-in cancelled");
    login_declined => |t: Target| {
        t.call_with(r#"{"login": {"action": "decline"}}"#, &["tool", "login"])
            .failed(4)
            .says("sign-in declined");
    };
    login_is_never_consented_by_yes => |t: Target| {
        t.call(&["tool", "login", "--yes"]).failed(4).says("sign-in cancelled");
    };
    review_accepted => |t: Target| {
        t.call_with(
            r#"{"review_focus": {"action": "accept", "content": {"focus": "error handling"}}}"#,
            &["prompt", "review", "target=main.rs"],
        )
        .ok()
        .says("Please review main.rs, focusing on error handling.");
    };
    review_declined => |t: Target| {
        t.call_with(r#"{"review_focus": {"action": "decline"}}"#, &["prompt", "review", "target=main.rs"])
            .failed(4)
            .says("-31001");
    };
    secret_revealed => |t: Target| {
        t.call_with(
            r#"{"reveal_secret": {"action": "accept", "content": {"confirm": true}}}"#,
            &["read", "config://secret"],
        )
        .ok()
        .says("feature_flags=mrtr");
    };
    secret_declined => |t: Target| {
        t.call_with(r#"{"reveal_secret": {"action": "decline"}}"#, &["read", "config://secret"])
            .failed(4)
            .says("-31001");
    };
    json_output_has_rounds => |t: Target| {
        let r = t.call(&["tool", "deploy", "environment=staging", "--yes", "--json"]);
        r.ok();
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["result"]["content"][0]["text"], "deployed to staging with 1 workspace root(s)");
        let rounds = v["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 2);
        assert!(rounds[0]["requestStateBytes"].as_u64().unwrap() > 0);
        assert_eq!(rounds[0]["inputResponses"]["deployment_approval"]["action"], "accept");
    };
    verbose_prints_rounds => |t: Target| {
        t.call(&["tool", "deploy", "environment=staging", "--yes", "-v"])
            .ok()
            .says("round 1")
            .says("input_required · requestState")
            .says("answers deployment_approval: accept")
            .says("round 2");
    };
    invalid_answers_are_refused => |t: Target| {
        t.call_with(
            r#"{"deployment_approval": {"action": "accept", "content": {"approved": "yes"}}}"#,
            &["tool", "deploy", "environment=staging"],
        )
        .failed(2)
        .says("wrong type");
    };
    usage_errors => |t: Target| {
        t.call(&["tool", "no_such_tool"]).failed(2).says("no tool");
        t.call(&["tool", "echo", "oops"]).failed(2).says("key=value");
        t.call(&["frob", "x"]).failed(2);
    };
    discover => |t: Target| {
        let mut cmd = Command::new(tern_bin());
        cmd.arg("discover").args(t.args());
        let r = crate::api::common::run(cmd);
        r.ok().says("2026-07-28").says("deploy").says("review").says("config://secret");
        let mut cmd = Command::new(tern_bin());
        cmd.arg("discover").args(t.args()).arg("--json");
        let r = crate::api::common::run(cmd);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let names: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["echo", "count", "deploy", "ask_model", "migrate", "redeem", "order", "login"]);
    };
}

/// The URL flow: consent from the answers file, the sign-in completed by
/// POSTing to the page the client showed, then `done` (or `cancel`) typed on
/// stdin, as a person would after the browser step.
fn login(t: &Target, reply: &str, code: i32, expect: &str) {
    let answers = t.answers(r#"{"login": {"action": "accept"}}"#);
    let mut child = Command::new(tern_bin())
        .arg("call")
        .args(t.args())
        .args(["tool", "login", "--answers"])
        .arg(&answers)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "no URL was shown");
        if let Some(rest) = line.trim().strip_prefix("tern: open ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    assert!(url.contains("/login/"), "{url}");
    if reply == "done" {
        assert!(post(&url).contains("Signed in"));
    }
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{reply}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(code), "{stdout}");
    assert!(stdout.contains(expect), "{stdout}");
}

/// Issue 52: the one line of `tern --help` names every command clap lists
/// under "Commands:" (it had named 5 of them), `help` aside.
#[test]
fn the_help_line_names_every_command() {
    let out = Command::new(tern_bin()).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let about = help.lines().next().unwrap();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A wrapped description goes on indented further.
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert_eq!(commands.len(), 12, "{help}");
    let named: Vec<&str> = about
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .collect();
    for c in &commands {
        assert!(named.contains(c), "{c} is not in {about:?}");
    }
}
