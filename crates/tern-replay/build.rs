//! Decides whether the Redis tests can run here: they need a `redis-server`
//! on the `PATH`. Without one they are compiled as ignored, so the test
//! runner shows them as skipped, unless `CI` is set: there a missing server
//! is a failure, never a silent pass.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(tern_no_redis)");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=PATH");
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join("redis-server"))
        .find(|p| p.is_file());
    match found {
        Some(p) => println!("cargo::rerun-if-changed={}", p.display()),
        None if ci => {}
        None => {
            // Look again once it is installed (a missing path reruns this).
            for dir in std::env::split_paths(&path) {
                println!("cargo::rerun-if-changed={}", Path::new(&dir).display());
            }
            println!(
                "cargo::warning=redis-server is not installed: the Redis tests are skipped here (CI requires them; apt-get install redis-server)"
            );
            println!("cargo::rustc-cfg=tern_no_redis");
        }
    }
}
