//! Key files as an operator handles them: one others can read is refused,
//! `tern keys list` and `retire` speak to people, and `tern serve` reloads
//! its key file on SIGHUP.

use std::path::Path;
use std::process::Command;

use tempfile::TempDir;

use super::{Logged, deploy_state, resume_deploy, tern};

#[test]
fn a_key_file_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let data = TempDir::new().unwrap();
    let file = data.path().join("keys.json");
    let f = file.display().to_string();
    tern(&["keys", "new", &f], data.path()).ok();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = tern(
        &["serve", "--http", "127.0.0.1:0", "--keys", &f],
        data.path(),
    );
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(r.stderr.contains("(mode 644)"), "{r:#?}");
    assert!(r.stderr.contains(&format!("run: chmod 600 {f}")), "{r:#?}");
    tern(&["keys", "list", &f], data.path())
        .failed(1)
        .says("chmod 600");
}

/// `tern keys new FILE`; returns the active kid it printed.
fn new_key_file(file: &str, data: &Path) -> String {
    let created = tern(&["keys", "new", file], data);
    let kid = created
        .ok()
        .stdout
        .rsplit("active kid ")
        .next()
        .unwrap()
        .trim_end_matches([')', '\n']);
    assert!(kid.parse::<u32>().is_ok(), "{created:#?}");
    kid.to_owned()
}

#[test]
fn keys_list_and_retire_speak_to_people() {
    let data = TempDir::new().unwrap();
    let f = data.path().join("keys.json").display().to_string();
    let old = new_key_file(&f, data.path());
    let new = tern(&["keys", "add", &f], data.path());
    let new = new.ok().stdout.trim().to_owned();
    tern(&["keys", "list", &f], data.path())
        .ok()
        .says("verify-only (published, not yet active)");
    tern(&["keys", "activate", &f, &new], data.path()).ok();
    let list = tern(&["keys", "list", &f], data.path());
    let line = list
        .ok()
        .stdout
        .lines()
        .find(|l| l.contains(&format!(" {old}  ")))
        .unwrap()
        .to_owned();
    // "verify-only until Fri, 04 Dec 2026 14:02:09 UTC"
    assert!(
        line.contains("verify-only until ") && line.ends_with(" UTC"),
        "{line}"
    );
    assert!(
        list.stdout
            .lines()
            .any(|l| l.contains(&format!(" {new}  active: seals and opens"))),
        "{list:#?}"
    );
    // Inside the grace period a retire needs --force, and says until when.
    tern(&["keys", "retire", &f, &old], data.path())
        .failed(1)
        .says("still opens states until ")
        .says("Pass --force");
    tern(&["keys", "retire", &f, &old, "--force"], data.path())
        .ok()
        .says(&format!("kid {old} is retired"));
    tern(&["keys", "list", &f], data.path())
        .ok()
        .says(&format!(" {old}  retired"));
}

#[test]
fn sighup_reloads_the_key_file() {
    let dir = TempDir::new().unwrap();
    let f = dir.path().join("keys.json").display().to_string();
    let old = new_key_file(&f, dir.path());
    let s = Logged::start(&["--keys", &f], dir);
    let before = deploy_state(&s.url);
    let path = Path::new(&f);
    let data = path.parent().unwrap();
    let new = tern(&["keys", "add", &f], data);
    let new = new.ok().stdout.trim().to_owned();
    tern(&["keys", "activate", &f, &new], data).ok();
    tern(&["keys", "retire", &f, &old, "--force"], data).ok();
    // Still the old ring until the signal.
    let again = resume_deploy(&s.url, &before);
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    let pid = s.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let reloaded = s.wait_for("key file reloaded");
    assert!(reloaded.contains(&format!("active={new}")), "{reloaded}");
    // A state sealed under the retired key no longer opens.
    let after = resume_deploy(&s.url, &before);
    assert_eq!(after["error"]["code"], -32602, "{after}");
    // New states are sealed under the new key and open.
    let fresh = deploy_state(&s.url);
    let r = resume_deploy(&s.url, &fresh);
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
}
