//! The registry of Tern's application error codes (ERR-5): one number per
//! meaning, none in the reserved range, every one documented in the README.

use std::collections::BTreeSet;

use tern_types::ErrorCode;

#[test]
fn every_application_code_is_unique_and_outside_the_reserved_range() {
    let codes: BTreeSet<i64> = ErrorCode::APPLICATION.iter().map(|c| c.code.0).collect();
    assert_eq!(codes.len(), ErrorCode::APPLICATION.len(), "a code twice");
    let names: BTreeSet<&str> = ErrorCode::APPLICATION.iter().map(|c| c.name).collect();
    assert_eq!(names.len(), ErrorCode::APPLICATION.len(), "a name twice");
    for c in ErrorCode::APPLICATION {
        assert!(!c.code.is_reserved(), "{} is reserved", c.code);
        assert!(!c.meaning.is_empty());
    }
    assert_eq!(
        codes.into_iter().collect::<Vec<_>>(),
        [-31401, -31004, -31003, -31002, -31001, -31000]
    );
}

#[test]
fn the_proxys_own_codes_are_registered_and_nothing_else_counts_as_its() {
    let own: Vec<i64> = ErrorCode::APPLICATION
        .iter()
        .filter(|c| c.code.is_proxy_own())
        .map(|c| c.code.0)
        .collect();
    assert_eq!(own, [-31000, -31002, -31003]);
    assert!(!ErrorCode::DECLINED.is_proxy_own());
    assert!(!ErrorCode::TIMEOUT.is_proxy_own());
    assert!(!ErrorCode(-31005).is_proxy_own());
    assert!(!ErrorCode::INVALID_PARAMS.is_proxy_own());
}

/// The README's table lists each code with its name, so the registry and
/// its documentation cannot drift apart.
#[test]
fn the_readme_lists_every_application_code() {
    let readme = include_str!("../../../../README.md");
    for c in ErrorCode::APPLICATION {
        let row = format!("| `{}` | `{}` |", c.code.0, c.name);
        assert!(readme.contains(&row), "README lacks the row {row:?}");
    }
}
