//! The long run: `tern-fuzz TARGET [--cases N] [--seed S]`, or `tern-fuzz
//! list`. Runs the target's corpus, then N generated and mutated cases, and
//! prints how many ran. A broken invariant panics naming the input.

use std::process::ExitCode;

#[expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool"
)]
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| -> Option<u64> {
        let i = args.iter().position(|a| a == name)?;
        args.get(i + 1)?.replace('_', "").parse().ok()
    };
    let Some(name) = args.first() else {
        eprintln!("usage: tern-fuzz TARGET [--cases N] [--seed S] | tern-fuzz list");
        return ExitCode::from(2);
    };
    if name == "list" {
        for t in tern_fuzz::TARGETS {
            println!("{:<18} {}", t.name, t.about);
        }
        return ExitCode::SUCCESS;
    }
    let Some(target) = tern_fuzz::target(name) else {
        eprintln!("tern-fuzz: no target {name:?} (tern-fuzz list names them)");
        return ExitCode::from(2);
    };
    let cases = flag("--cases").unwrap_or(1_000_000);
    let seed = flag("--seed").unwrap_or(1);
    let report = tern_fuzz::run(target, cases, seed);
    println!(
        "{}: {} cases ({} from the corpus), seed {seed}, no invariant broken",
        target.name, report.cases, report.corpus
    );
    ExitCode::SUCCESS
}
