//! `tern call` in a pseudo-terminal, driven keystroke by keystroke as a
//! person would: approve the deploy form, then decline a redemption.

use std::process::Command;

use super::common::{Server, tern_bin};
use rexpect::session::{Options, PtySession, spawn_with_options};

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
