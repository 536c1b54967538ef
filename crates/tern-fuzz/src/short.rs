//! A short run of every fuzz target: its corpus (regression vectors
//! included) and a few thousand generated and mutated cases, seconds in
//! all. The long run is `tern-fuzz TARGET --cases N` (README). Unit tests
//! rather than an integration test, so testing links no `tern-fuzz` binary.

fn short(name: &str, cases: u64) {
    let target = crate::target(name).expect("a target of that name");
    let report = crate::run(target, cases, 0x7e57);
    assert_eq!(report.cases, cases + report.corpus);
}

#[test]
fn decode_message() {
    short("decode_message", 100_000);
}

#[test]
fn open_sealed_state() {
    short("open_sealed_state", 100_000);
}

#[test]
fn server_request() {
    short("server_request", 40_000);
}

#[test]
fn answers() {
    short("answers", 20_000);
}

#[test]
fn stdio_framing() {
    short("stdio_framing", 3_000);
}

#[test]
fn sse_decode() {
    short("sse_decode", 100_000);
}

#[test]
fn header_value() {
    short("header_value", 100_000);
}

#[test]
fn client_result() {
    short("client_result", 100_000);
}

#[test]
fn legacy_session() {
    short("legacy_session", 2_000);
}

#[test]
fn every_target_has_a_corpus() {
    for t in crate::TARGETS {
        assert!(
            !crate::corpus(t.name).is_empty(),
            "{} has no corpus",
            t.name
        );
    }
}
