//! `tern call` in a pseudo-terminal, driven keystroke by keystroke as a
//! person would: approve the deploy form, then decline a redemption. And
//! against a hostile server, one test per place that shows its text (a
//! form, a URL, a sampling request and its reply, progress and log lines,
//! results as text and JSON, errors, `tern discover`, a missing argument,
//! `-v` rounds): no escape sequence of the server reaches the terminal, and
//! each is shown escaped (SECURITY.md §3.10).

use std::process::Command;

use rexpect::session::{Options, PtySession, spawn_with_options};
use serde_json::{Value, json};

use super::common::hostile::{Hostile, form, text_result, tool};
use super::common::{Server, tern_bin};

const ENTER: &str = "\r";
const DOWN: &str = "\x1b[B";

/// Types `keys` once the prompt on screen is reading: a prompt redraws
/// before it reads, so keys sent at the first glimpse could be lost.
fn press(p: &mut PtySession, keys: &str) {
    std::thread::sleep(std::time::Duration::from_millis(300));
    p.send(keys).unwrap();
    p.flush().unwrap();
}

fn spawn(server: &Server, args: &[&str]) -> PtySession {
    let mut cmd = Command::new(tern_bin());
    cmd.arg("call")
        .arg(&server.url)
        .args(args)
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .current_dir(server.dir.path());
    spawn_with_options(
        cmd,
        Options::new()
            .timeout_ms(Some(20_000))
            .strip_ansi_escape_codes(true),
    )
    .unwrap()
}

#[test]
fn a_person_approves_a_deploy_and_declines_a_redemption() {
    let server = Server::start();

    let mut p = spawn(&server, &["tool", "deploy", "environment=staging"]);
    // ELIC-C9: who asks, what, and explicit answer/decline/cancel choices.
    p.exp_string("asks: a form").unwrap();
    // The state's lifetime, from the server's hint (600 s by default).
    p.exp_string("answer within 10 min").unwrap();
    p.exp_string("Approve deployment to staging?").unwrap();
    // A form of one yes/no field is answered in one step.
    p.exp_string("Yes: Approve this deployment").unwrap();
    p.exp_string("No: Approve this deployment").unwrap();
    p.exp_string("Decline").unwrap();
    p.exp_string("Cancel").unwrap();
    press(&mut p, ENTER);
    // ROOT-C2: the roots are shown and shared only with consent.
    p.exp_string("Share these roots?").unwrap();
    press(&mut p, "y");
    press(&mut p, ENTER);
    p.exp_string("deployed to staging with 1 workspace root(s)")
        .unwrap();
    p.exp_eof().unwrap();
    assert_exit(&mut p, 0);

    let mut p = spawn(&server, &["tool", "redeem", "code=GIFT-1"]);
    p.exp_string("Redeem code GIFT-1?").unwrap();
    p.exp_string("Cancel").unwrap();
    // Yes, No, then Decline.
    press(&mut p, DOWN);
    press(&mut p, DOWN);
    press(&mut p, ENTER);
    p.exp_string("redemption declined").unwrap();
    p.exp_eof().unwrap();
    // Declined by the person: exit status 4.
    assert_exit(&mut p, 4);
}

fn assert_exit(p: &mut PtySession, code: i32) {
    let status = p.process_mut().wait().unwrap();
    let status = format!("{status:?}");
    assert!(
        status.starts_with("Exited(") && status.ends_with(&format!(", {code})")),
        "{status}"
    );
}

#[test]
fn one_ctrl_c_at_a_form_cancels_the_whole_call() {
    let server = Server::start();
    let mut p = spawn(&server, &["tool", "deploy", "environment=staging"]);
    p.exp_string("Yes: Approve this deployment").unwrap();
    press(&mut p, "\x03");
    // No further question (the roots are not asked), exit status 130.
    p.exp_string("tern: cancelled").unwrap();
    let rest = p.exp_eof().unwrap();
    assert!(!rest.contains("Share these roots"), "{rest}");
    assert_exit(&mut p, 130);
}

#[test]
fn esc_at_a_form_answers_cancel() {
    let server = Server::start();
    let mut p = spawn(&server, &["tool", "deploy", "environment=staging"]);
    p.exp_string("Approve deployment to staging?").unwrap();
    press(&mut p, "\x1b");
    // The elicitation's cancel outcome goes to the server, which ends the
    // deploy; the person cancelled it: exit status 4.
    p.exp_string("deployment to staging was cancelled").unwrap();
    p.exp_eof().unwrap();
    assert_exit(&mut p, 4);
}

#[test]
fn a_missing_required_argument_is_asked_for() {
    let server = Server::start();
    let mut p = spawn(&server, &["tool", "echo"]);
    p.exp_string("text (string, required):").unwrap();
    press(&mut p, "typed in");
    press(&mut p, ENTER);
    p.exp_string("typed in").unwrap();
    p.exp_eof().unwrap();
    assert_exit(&mut p, 0);
}

#[test]
fn a_link_asked_again_says_why() {
    let server = Server::start();
    let mut p = spawn(&server, &["tool", "login"]);
    p.exp_string("Open this page?").unwrap();
    press(&mut p, ENTER); // Open it in my browser
    p.exp_string("When you have finished in the browser:")
        .unwrap();
    press(&mut p, ENTER); // Done, though the sign-in was not finished
    p.exp_string("The server asks again: it has not seen this step finished yet")
        .unwrap();
    p.exp_string("Open this page?").unwrap();
    press(&mut p, "\x1b");
    p.exp_string("sign-in cancelled").unwrap();
    p.exp_eof().unwrap();
    assert_exit(&mut p, 4);
}

/// What a hostile server puts in every string it hands tern: OSC 52 (writes
/// the clipboard), cursor-up and erase-line (repaint a dialog), a C1 CSI,
/// a bidi override and a zero-width space, after `tag`.
fn hostile(tag: &str) -> String {
    format!("{tag}\x1b]52;c;aGk=\x07EVIL\x1b[1A\x1b[2K\u{9b}2J\u{202e}\u{200b}")
}

/// How tern shows [`hostile`]: every piece escaped, visible.
fn shown(tag: &str) -> String {
    format!(
        "{tag}\\u{{1b}}]52;c;aGk=\\u{{7}}EVIL\\u{{1b}}[1A\\u{{1b}}[2K\\u{{9b}}2J\\u{{202e}}\\u{{200b}}"
    )
}

/// `tern SUB TARGET ARGS…` in a pseudo-terminal, raw: the test sees the
/// bytes the terminal gets, escape sequences and all.
fn spawn_raw(h: &Hostile, sub: &str, args: &[&str]) -> PtySession {
    let mut cmd = Command::new(tern_bin());
    cmd.arg(sub)
        .args(h.target())
        .args(args)
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .env("XDG_CACHE_HOME", h.path("cache"))
        .current_dir(h.dir());
    spawn_with_options(
        cmd,
        Options::new()
            .timeout_ms(Some(20_000))
            .strip_ansi_escape_codes(false),
    )
    .unwrap()
}

/// Reads up to `marker`, keeping what was read in `screen`.
fn read_to(p: &mut PtySession, screen: &mut String, marker: &str) {
    screen.push_str(&p.exp_string(marker).unwrap());
    screen.push_str(marker);
}

/// What the terminal got, as text: the session hands over one char per
/// byte.
fn utf8(screen: &str) -> String {
    let bytes: Vec<u8> = screen
        .chars()
        .map(|c| u8::try_from(u32::from(c)).expect("one byte a char"))
        .collect();
    String::from_utf8(bytes).expect("tern writes UTF-8")
}

/// Reads to the end, then checks that no sequence of the server reached
/// the terminal raw and that each tagged string was shown escaped.
fn assert_safe(p: &mut PtySession, mut screen: String, tags: &[&str]) -> String {
    screen.push_str(&p.exp_eof().unwrap());
    let screen = utf8(&screen);
    for raw in ["\x1b]52", "EVIL\x1b", "\u{9b}", "\u{202e}", "\u{200b}"] {
        assert!(
            !screen.contains(raw),
            "{raw:?} reached the terminal: {screen:?}"
        );
    }
    for tag in tags {
        assert!(
            screen.contains(&shown(tag)),
            "{tag} not shown escaped: {screen:?}"
        );
    }
    screen
}

fn calling(round: Value) -> Value {
    json!({"serverInfo": {"name": hostile("server"), "version": "1"}, "tools": [tool("t")],
        "call": {"rounds": [{"result": round}, {"result": text_result("after")}]}})
}

#[test]
fn a_form_shows_the_server_s_text_escaped() {
    // Who asks (serverInfo.name), the key, the message, a field's title and
    // description and a choice's title: all the server's (ELIC-C9).
    let key = hostile("key");
    let h = Hostile::modern(calling(json!({"resultType": "input_required",
        "requestState": "$next", "inputRequests": {key.clone(): {"method": "elicitation/create",
        "params": {"mode": "form", "message": format!("first line\n{}", hostile("msg")),
            "requestedSchema": {"type": "object", "properties": {
                "env": {"type": "string", "title": hostile("title"),
                    "description": hostile("desc"),
                    "oneOf": [{"const": "a", "title": hostile("opt")}]},
                "n": {"type": "integer"}}}}}}})));
    let mut p = spawn_raw(&h, "call", &["tool", "t"]);
    let mut screen = String::new();
    read_to(&mut p, &mut screen, "Your choice");
    press(&mut p, ENTER); // Answer the form
    read_to(&mut p, &mut screen, "opt\\u{1b}");
    press(&mut p, "\x1b"); // dismissed: cancel
    let screen = assert_safe(
        &mut p,
        screen,
        &["server", "key", "msg", "title", "desc", "opt"],
    );
    assert!(screen.contains("first line"), "{screen:?}");
    let retry = &h.requests("tools/call")[1];
    assert_eq!(
        retry["params"]["inputResponses"][key.as_str()]["action"],
        "cancel"
    );
}

#[test]
fn a_url_with_control_characters_is_shown_escaped() {
    let url = "https://exa\x1bmple.com/\u{202e}\u{200b}x";
    let h = Hostile::modern(calling(json!({"resultType": "input_required",
        "requestState": "$next", "inputRequests": {"link": {"method": "elicitation/create",
        "params": {"mode": "url", "message": hostile("urlmsg"), "url": url}}}})));
    let mut p = spawn_raw(&h, "call", &["tool", "t"]);
    let mut screen = String::new();
    read_to(&mut p, &mut screen, "Open this page?");
    press(&mut p, "\x1b");
    let screen = assert_safe(&mut p, screen, &["server", "urlmsg"]);
    assert!(
        screen.contains("URL:  https://exa\\u{1b}mple.com/\\u{202e}\\u{200b}x"),
        "{screen:?}"
    );
    assert!(
        screen.contains("this is not a valid URL; it cannot be opened"),
        "{screen:?}"
    );
}

#[test]
fn a_sampling_request_and_the_model_s_reply_are_shown_escaped() {
    let h = Hostile::modern(calling(json!({"resultType": "input_required",
        "requestState": "$next", "inputRequests": {"model_answer": {
            "method": "sampling/createMessage", "params": {"systemPrompt": hostile("sys"),
            "messages": [{"role": "user", "content": {"type": "text", "text": hostile("ask")}}],
            "maxTokens": 1_000_000_000}}}})));
    // The model's reply is shaped by the server's prompt: shown safe too.
    let cmd = format!("cat >/dev/null; printf '%s' '{}'", hostile("reply"));
    let mut p = spawn_raw(&h, "call", &["tool", "t", "--yes", "--sampling-cmd", &cmd]);
    let screen = assert_safe(&mut p, String::new(), &["server", "sys", "ask", "reply"]);
    assert!(
        screen.contains(&format!("│ {}", shown("reply"))),
        "{screen:?}"
    );
    assert!(
        screen.contains(
            "at most 4096 tokens (the server asked for 1000000000; --max-tokens caps it)"
        ),
        "{screen:?}"
    );
}

#[test]
fn a_task_s_status_and_error_are_shown_escaped() {
    // The task id, its status messages and its error are the server's.
    let task = |status: &str, extra: Value| {
        let mut t = json!({"taskId": hostile("tid"), "status": status,
            "createdAt": "2026-12-05T00:00:00Z", "lastUpdatedAt": "2026-12-05T00:00:00Z",
            "ttlMs": null, "pollIntervalMs": 100});
        t.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        t
    };
    let h = Hostile::modern(json!({"tools": [tool("t")], "call": {"task": {
    "created": task("working", json!({"statusMessage": hostile("created")})),
    "polls": [
        task("working", json!({"statusMessage": hostile("busy")})),
        task("failed", json!({"statusMessage": hostile("last"),
            "error": {"code": -32603, "message": hostile("err")}})),
    ]}}}));
    let mut p = spawn_raw(&h, "call", &["tool", "t", "--tasks"]);
    assert_safe(
        &mut p,
        String::new(),
        &["tid", "created", "busy", "last", "err"],
    );
    // A task failed with a JSON-RPC error is the server's error (exit 1).
    assert_exit(&mut p, 1);
    let polls = h.requests("tasks/get");
    assert_eq!(polls.len(), 2, "{polls:#?}");
    assert_eq!(polls[0]["params"]["taskId"], hostile("tid"));
}

#[test]
fn progress_and_log_lines_are_shown_escaped() {
    let mut scenario = calling(text_result("done"));
    scenario["call"]["notices"] = json!([
        {"method": "notifications/progress", "params": {"progressToken": "x", "progress": 1,
            "total": 2, "message": format!("{}\rfake", hostile("prog"))}},
        {"method": "notifications/message", "params": {"level": hostile("level"),
            "logger": hostile("logger"), "data": format!("{}\nsecond", hostile("log"))}}
    ]);
    let h = Hostile::modern(scenario);
    let mut p = spawn_raw(&h, "call", &["tool", "t"]);
    let screen = assert_safe(&mut p, String::new(), &["prog", "level", "logger", "log"]);
    // One line each: the carriage return and the newline are shown.
    assert!(screen.contains("\\rfake"), "{screen:?}");
    assert!(screen.contains("\\nsecond"), "{screen:?}");
}

#[test]
fn a_tool_result_is_shown_escaped_as_text_and_as_json() {
    let result = text_result(&format!("{}\nline two", hostile("result")));
    let h = Hostile::modern(calling(result.clone()));
    let mut p = spawn_raw(&h, "call", &["tool", "t"]);
    // Newlines of a result stay: it is what the person asked for.
    let screen = assert_safe(&mut p, String::new(), &["result"]);
    assert!(screen.contains("\r\nline two"), "{screen:?}");

    let h = Hostile::modern(calling(result));
    let mut p = spawn_raw(&h, "call", &["tool", "t", "--json"]);
    let screen = assert_safe(&mut p, String::new(), &[]);
    // The same string, JSON-escaped: a parser reads it back unchanged.
    assert!(
        screen.contains(
            r#""text": "result\u001b]52;c;aGk=\u0007EVIL\u001b[1A\u001b[2K\u009b2J\u202e\u200b\nline two""#
        ),
        "{screen:?}"
    );
}

#[test]
fn a_server_error_is_shown_escaped() {
    let h = Hostile::modern(json!({"tools": [tool("t")], "call": {"rounds": [{"error": {
        "code": -32000, "message": hostile("err"), "data": {"why": hostile("data")}}}]}}));
    let mut p = spawn_raw(&h, "call", &["tool", "t"]);
    let screen = assert_safe(&mut p, String::new(), &["err"]);
    // serde_json writes C0 controls as \u001b; tern escapes the rest.
    assert!(
        screen.contains(r#"tern: error data: {"why":"data\u001b]52;c;aGk=\u0007EVIL\u001b[1A\u001b[2K\u{9b}2J\u{202e}\u{200b}"}"#),
        "{screen:?}"
    );
}

#[test]
fn discover_shows_the_server_s_text_escaped() {
    let h = Hostile::modern(json!({
        "serverInfo": {"name": hostile("name"), "title": hostile("server"), "version": "1"},
        "instructions": hostile("instructions"),
        "tools": [{"name": hostile("tool"), "description": hostile("tooldesc"),
            "inputSchema": {"type": "object", "properties": {
                "arg": {"type": "string", "description": hostile("argdesc")}}}}]}));
    let mut p = spawn_raw(&h, "discover", &[]);
    assert_safe(
        &mut p,
        String::new(),
        &[
            "name",
            "server",
            "instructions",
            "tool",
            "tooldesc",
            "argdesc",
        ],
    );
}

#[test]
fn a_missing_argument_is_asked_for_in_the_server_s_words_escaped() {
    let h = Hostile::modern(
        json!({"tools": [{"name": "t", "inputSchema": {"type": "object",
        "properties": {"path": {"type": "string", "description": hostile("argdesc")}},
        "required": ["path"]}}]}),
    );
    let mut p = spawn_raw(&h, "call", &["tool", "t"]);
    let mut screen = String::new();
    read_to(&mut p, &mut screen, "path (string, required):");
    read_to(&mut p, &mut screen, "argdesc");
    press(&mut p, "\x1b");
    let screen = assert_safe(&mut p, screen, &["argdesc"]);
    assert!(screen.contains("argument path was not given"), "{screen:?}");
    assert_exit(&mut p, 2);
}

#[test]
fn verbose_rounds_show_the_server_s_text_escaped() {
    let h = Hostile::modern(calling(json!({"resultType": "input_required",
        "requestState": "$next", "inputRequests": {hostile("vkey"): {
            "method": "elicitation/create", "params": {"mode": "form",
            "message": hostile("vmsg"), "requestedSchema": {"type": "object", "properties": {
                "note": {"type": "string", "default": hostile("vdefault")}}}}}}})));
    let mut p = spawn_raw(&h, "call", &["tool", "t", "--yes", "-v"]);
    let screen = assert_safe(&mut p, String::new(), &["vkey", "vmsg"]);
    // --yes answers with the server's own default: shown as JSON text.
    assert!(
        screen.contains(r#"accept {"note":"vdefault\u001b]52;c;aGk=\u0007EVIL"#),
        "{screen:?}"
    );
    assert!(screen.contains("after"), "{screen:?}");
}

#[test]
fn the_whole_call_s_time_runs_out_at_a_dialog() {
    // Nobody answers: --timeout ends the call all the same, and the dialog
    // left waiting on the terminal does not keep the process alive.
    let h = Hostile::modern(calling(form("go", "Go on?")));
    let mut p = spawn_raw(&h, "call", &["tool", "t", "--timeout", "2"]);
    p.exp_string("Your choice").unwrap();
    p.exp_string("tern: the call did not finish within 2 s (--timeout SECS; 0 for no limit)")
        .unwrap();
    p.exp_eof().unwrap();
    assert_exit(&mut p, 3);
}
