//! `tern keys`: the key ring file a fleet shares (SECURITY.md §3.3). Each
//! step is a pure change to the file; rotation runs publish (add), then
//! activate, then retire after the grace period, so no flow fails.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::process::ExitCode;

use tern::seal::{DEFAULT_GRACE_SECS, KeyFile, KeyRole};

use crate::{KeysAction, KeysArgs};

/// Reads a key file, refusing one that others may read: it holds every
/// secret of the ring.
pub(crate) fn read(path: &Path) -> Result<KeyFile, String> {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = std::fs::metadata(path)
        .map_err(|e| format!("cannot read key file {}: {e}", path.display()))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "key file {} can be read by group or others (mode {mode:o}); run: chmod 600 {}",
            path.display(),
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read key file {}: {e}", path.display()))?;
    KeyFile::from_json(&text).map_err(|e| format!("bad key file {}: {e}", path.display()))
}

/// Writes the key file with mode 0600, replacing it atomically.
pub(crate) fn write(path: &Path, file: &KeyFile, create_new: bool) -> Result<(), String> {
    let json = file.to_json().map_err(|e| e.to_string())?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension("tmp");
    let target = if create_new {
        path.to_path_buf()
    } else {
        tmp.clone()
    };
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&target)
        .map_err(|e| format!("cannot create {}: {e}", target.display()))?;
    f.write_all(json.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    if !create_new {
        std::fs::rename(&tmp, path)
            .map_err(|e| format!("cannot replace {}: {e}", path.display()))?;
    }
    Ok(())
}

#[expect(
    clippy::disallowed_methods,
    reason = "activation stamps the grace period with wall time"
)]
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A unix time for people: `2026-12-09 14:02 UTC`.
pub(crate) fn utc(secs: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    // RFC 7231's "Wed, 09 Dec 2026 14:02:09 GMT"; GMT is UTC here.
    httpdate::fmt_http_date(t).replace("GMT", "UTC")
}

pub(crate) fn run(args: KeysArgs) -> Result<ExitCode, String> {
    match args.action {
        KeysAction::New { file, resource_id } => {
            let rid =
                resource_id.unwrap_or_else(|| format!("urn:tern:{}", tern::seal::random_id()));
            let kf = KeyFile::generate(rid.clone()).map_err(|e| e.to_string())?;
            write(&file, &kf, true)?;
            println!(
                "created {} (resource id {rid}, active kid {})",
                file.display(),
                kf.key_ring().map_err(|e| e.to_string())?.active_kid()
            );
        }
        KeysAction::Add { file } => {
            let mut kf = read(&file)?;
            let kid = kf.add_key().map_err(|e| e.to_string())?;
            write(&file, &kf, false)?;
            println!("{kid}");
        }
        KeysAction::Activate { file, kid, grace } => {
            let mut kf = read(&file)?;
            kf.activate(kid, now(), grace.unwrap_or(DEFAULT_GRACE_SECS))
                .map_err(|e| e.to_string())?;
            write(&file, &kf, false)?;
            println!("kid {kid} is active");
        }
        KeysAction::Retire { file, kid, force } => {
            let mut kf = read(&file)?;
            let until = kf
                .keys
                .iter()
                .find(|k| k.kid == kid && k.role == KeyRole::VerifyOnly)
                .and_then(|k| k.verify_until)
                .filter(|t| *t > now());
            if let (Some(t), false) = (until, force) {
                return Err(format!(
                    "kid {kid} still opens states until {} (its grace period); flows sealed with it would fail. Pass --force to retire it now",
                    utc(t)
                ));
            }
            kf.retire(kid).map_err(|e| e.to_string())?;
            write(&file, &kf, false)?;
            println!("kid {kid} is retired");
        }
        KeysAction::List { file } => {
            let kf = read(&file)?;
            println!("resource id: {}", kf.resource_id);
            let now = now();
            for k in &kf.keys {
                let role = match (k.role, k.verify_until) {
                    (KeyRole::Active, _) => "active: seals and opens".to_owned(),
                    (KeyRole::VerifyOnly, Some(t)) if t <= now => {
                        format!("verify-only, grace ended {}: retire it", utc(t))
                    }
                    (KeyRole::VerifyOnly, Some(t)) => format!("verify-only until {}", utc(t)),
                    (KeyRole::VerifyOnly, None) => {
                        "verify-only (published, not yet active)".to_owned()
                    }
                    (KeyRole::Retired, _) => "retired".to_owned(),
                };
                println!("kid {:>10}  {role}", k.kid);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
