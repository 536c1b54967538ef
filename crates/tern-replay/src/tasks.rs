//! The bounds both task-store backends apply before any I/O, so a task
//! cannot fill a shared store and any entry can be read back under the
//! command timeout (the same reasons as `tern_seal::MAX_RESULT_BYTES`).
//!
//! Past a bound the call is refused whole with [`StoreError::Full`] and
//! nothing is written, as an over-cap stored result is.

use tern_seal::{MAX_TASK_ANSWERS, MAX_TASK_ID_BYTES, StoreError};

/// Largest task record [`tern_seal::TaskStore::put`] accepts, in bytes
/// (4 MiB).
///
/// A record holds at most one result (1 MiB encoded by default,
/// SECURITY.md "Budgets", tasks) beside the task's status and open
/// questions; the rest is room for a raised result bound.
pub const MAX_TASK_RECORD_BYTES: usize = 4 * 1024 * 1024;

/// Longest answer key a task store accepts, in bytes (1 KiB). Keys are the
/// server's names for its questions, far shorter.
pub const MAX_TASK_ANSWER_KEY_BYTES: usize = 1024;

/// Most bytes of answers one task may hold, summed over its answers'
/// values (16 MiB).
///
/// With the default budgets an update carries at most 1.25 MiB of answers
/// (SECURITY.md "Budgets", `inputResponses` size) and a task asks at most 8
/// rounds, so an honest task stays below 10 MiB. An
/// [`answer`](tern_seal::TaskStore::answer) that would take a task past it
/// is refused whole with [`StoreError::Full`]; unlike the count bound
/// ([`MAX_TASK_ANSWERS`], past which new keys are ignored), bytes are not
/// silently dropped.
pub const MAX_TASK_ANSWERS_BYTES: usize = 16 * 1024 * 1024;

/// Refuses an id a key or row must not hold. Callers check ids first; this
/// is the store's own fence.
pub(crate) fn check_id(id: &str) -> Result<(), StoreError> {
    if id.len() > MAX_TASK_ID_BYTES {
        return Err(StoreError::Full(format!(
            "task id of {} bytes exceeds the {MAX_TASK_ID_BYTES}-byte cap",
            id.len()
        )));
    }
    Ok(())
}

/// Refuses a record above [`MAX_TASK_RECORD_BYTES`].
pub(crate) fn check_record(id: &str, record: &[u8]) -> Result<(), StoreError> {
    check_id(id)?;
    if record.len() > MAX_TASK_RECORD_BYTES {
        return Err(StoreError::Full(format!(
            "task record of {} bytes exceeds the {MAX_TASK_RECORD_BYTES}-byte cap",
            record.len()
        )));
    }
    Ok(())
}

/// Refuses answers that could never all be kept: more entries than a task
/// holds, a key above [`MAX_TASK_ANSWER_KEY_BYTES`], or more bytes than
/// [`MAX_TASK_ANSWERS_BYTES`] on their own. The store checks the task's
/// total again against what it already holds.
pub(crate) fn check_answers(id: &str, answers: &[(String, Vec<u8>)]) -> Result<(), StoreError> {
    check_id(id)?;
    if answers.len() > MAX_TASK_ANSWERS {
        return Err(StoreError::Full(format!(
            "{} answers in one call exceed the {MAX_TASK_ANSWERS} a task holds",
            answers.len()
        )));
    }
    if let Some((key, _)) = answers
        .iter()
        .find(|(key, _)| key.len() > MAX_TASK_ANSWER_KEY_BYTES)
    {
        return Err(StoreError::Full(format!(
            "answer key of {} bytes exceeds the {MAX_TASK_ANSWER_KEY_BYTES}-byte cap",
            key.len()
        )));
    }
    let bytes: usize = answers.iter().map(|(_, a)| a.len()).sum();
    if bytes > MAX_TASK_ANSWERS_BYTES {
        return Err(answers_full());
    }
    Ok(())
}

/// The refusal of answers that would take a task past
/// [`MAX_TASK_ANSWERS_BYTES`].
pub(crate) fn answers_full() -> StoreError {
    StoreError::Full(format!(
        "the answers would take the task past its {MAX_TASK_ANSWERS_BYTES}-byte cap"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive() {
        let id = "i".repeat(MAX_TASK_ID_BYTES);
        assert_eq!(check_record(&id, &vec![0; MAX_TASK_RECORD_BYTES]), Ok(()));
        assert!(matches!(
            check_record(&format!("{id}x"), b"r"),
            Err(StoreError::Full(_))
        ));
        assert!(matches!(
            check_record(&id, &vec![0; MAX_TASK_RECORD_BYTES + 1]),
            Err(StoreError::Full(_))
        ));
        let key = "k".repeat(MAX_TASK_ANSWER_KEY_BYTES);
        assert_eq!(
            check_answers(&id, &[(key.clone(), vec![0; MAX_TASK_ANSWERS_BYTES])]),
            Ok(())
        );
        assert!(matches!(
            check_answers(&id, &[(format!("{key}k"), Vec::new())]),
            Err(StoreError::Full(_))
        ));
        assert!(matches!(
            check_answers(
                &id,
                &[
                    ("a".into(), vec![0; MAX_TASK_ANSWERS_BYTES]),
                    ("b".into(), vec![0])
                ]
            ),
            Err(StoreError::Full(_))
        ));
        let many: Vec<_> = (0..=MAX_TASK_ANSWERS)
            .map(|n| (n.to_string(), Vec::new()))
            .collect();
        assert!(matches!(
            check_answers(&id, &many),
            Err(StoreError::Full(_))
        ));
        assert_eq!(check_answers(&id, &many[1..]), Ok(()));
    }
}
