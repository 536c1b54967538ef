//! Single use through the replay store (SECURITY.md §3.9; MRTR-SEC4).

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use tern_seal::{
    BoxFuture, ConsumeKey, Consumed, DEFAULT_MEMORY_CAPACITY, DEFAULT_MEMORY_RESULT_BUDGET,
    Durability, MAX_RESULT_BYTES, MemoryReplayStore, ReplayStore, StoreError, StoredResult,
    check_result_size,
};

use crate::util::block_on;

const TTL: Duration = Duration::from_secs(690);

fn key(n: u32) -> ConsumeKey {
    ConsumeKey::for_flow(&[0x42; 16], &format!("effect-{n}"))
}

#[test]
fn first_use_then_already_used() {
    let store = MemoryReplayStore::new();
    assert_eq!(block_on(store.consume(key(1), TTL)), Ok(Consumed::FirstUse));
    assert_eq!(
        block_on(store.consume(key(1), TTL)),
        Ok(Consumed::AlreadyUsed)
    );
    assert_eq!(block_on(store.consume(key(2), TTL)), Ok(Consumed::FirstUse));
    assert_eq!(store.len(), 2);
    assert_eq!(store.durability(), Durability::Volatile);
}

#[test]
fn a_32_way_race_has_exactly_one_winner() {
    let store: Arc<dyn ReplayStore> = Arc::new(MemoryReplayStore::new());
    for round in 0..20 {
        let barrier = Arc::new(Barrier::new(32));
        let handles: Vec<_> = (0..32)
            .map(|_| {
                let store = Arc::clone(&store);
                let barrier = Arc::clone(&barrier);
                thread::spawn(move || {
                    barrier.wait();
                    block_on(store.consume(key(round), TTL))
                })
            })
            .collect();
        let outcomes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let winners = outcomes
            .iter()
            .filter(|o| **o == Ok(Consumed::FirstUse))
            .count();
        let losers = outcomes
            .iter()
            .filter(|o| **o == Ok(Consumed::AlreadyUsed))
            .count();
        assert_eq!((winners, losers), (1, 31), "round {round}");
    }
}

#[test]
fn a_full_store_fails_closed() {
    let store = MemoryReplayStore::with_capacity(3);
    for n in 0..3 {
        assert_eq!(block_on(store.consume(key(n), TTL)), Ok(Consumed::FirstUse));
    }
    assert!(matches!(
        block_on(store.consume(key(3), TTL)),
        Err(StoreError::Full(_))
    ));
    // Known keys still answer: being full never turns a replay into a first use.
    assert_eq!(
        block_on(store.consume(key(0), TTL)),
        Ok(Consumed::AlreadyUsed)
    );
    assert_eq!(store.len(), 3);
}

#[test]
fn expired_markers_are_purged_and_their_keys_usable_again() {
    let store = MemoryReplayStore::with_capacity(1);
    let short = Duration::from_millis(1);
    assert_eq!(
        block_on(store.consume(key(0), short)),
        Ok(Consumed::FirstUse)
    );
    thread::sleep(Duration::from_millis(20));
    // Full, but the marker expired: it is purged and the new key fits.
    assert_eq!(block_on(store.consume(key(1), TTL)), Ok(Consumed::FirstUse));
    assert_eq!(store.len(), 1);
    // The long-lived marker is now the only one and keeps the store full.
    assert!(matches!(
        block_on(store.consume(key(0), short)),
        Err(StoreError::Full(_))
    ));
}

#[test]
fn an_expired_marker_no_longer_blocks_its_key() {
    let store = MemoryReplayStore::new();
    let short = Duration::from_millis(1);
    assert_eq!(
        block_on(store.consume(key(0), short)),
        Ok(Consumed::FirstUse)
    );
    thread::sleep(Duration::from_millis(20));
    assert_eq!(block_on(store.consume(key(0), TTL)), Ok(Consumed::FirstUse));
    assert_eq!(
        block_on(store.consume(key(0), TTL)),
        Ok(Consumed::AlreadyUsed)
    );
    // Held for its new lifetime, not its first: dropping what lapsed
    // (another key's consume) leaves it.
    thread::sleep(Duration::from_millis(20));
    assert_eq!(block_on(store.consume(key(1), TTL)), Ok(Consumed::FirstUse));
    assert_eq!(store.len(), 2);
    assert_eq!(
        block_on(store.consume(key(0), TTL)),
        Ok(Consumed::AlreadyUsed)
    );
}

#[test]
fn a_store_kept_full_admits_one_for_each_that_lapses() {
    // Past the capacity, a key gets in only as another lapses; those
    // still live are never dropped to make room.
    let store = MemoryReplayStore::with_capacity(3);
    let short = Duration::from_millis(1);
    assert_eq!(
        block_on(store.consume(key(0), short)),
        Ok(Consumed::FirstUse)
    );
    for n in 1..3 {
        assert_eq!(block_on(store.consume(key(n), TTL)), Ok(Consumed::FirstUse));
    }
    thread::sleep(Duration::from_millis(20));
    assert_eq!(block_on(store.consume(key(3), TTL)), Ok(Consumed::FirstUse));
    assert!(matches!(
        block_on(store.consume(key(4), TTL)),
        Err(StoreError::Full(_))
    ));
    assert_eq!(store.len(), 3);
    for n in 1..4 {
        assert_eq!(
            block_on(store.consume(key(n), TTL)),
            Ok(Consumed::AlreadyUsed)
        );
    }
}

#[test]
fn huge_ttls_do_not_overflow() {
    let store = MemoryReplayStore::new();
    assert_eq!(
        block_on(store.consume(key(0), Duration::MAX)),
        Ok(Consumed::FirstUse)
    );
    assert_eq!(
        block_on(store.consume(key(0), TTL)),
        Ok(Consumed::AlreadyUsed)
    );
}

#[test]
fn defaults() {
    assert_eq!(DEFAULT_MEMORY_CAPACITY, 100_000);
    assert!(MemoryReplayStore::default().is_empty());
}

#[test]
fn consume_keys_are_domain_separated_and_stable() {
    let flow = [1u8; 16];
    assert_eq!(
        ConsumeKey::for_flow(&flow, "pay"),
        ConsumeKey::for_flow(&flow, "pay")
    );
    assert_ne!(
        ConsumeKey::for_flow(&flow, "pay"),
        ConsumeKey::for_flow(&[2; 16], "pay")
    );
    assert_ne!(
        ConsumeKey::business("coupon", "X1"),
        ConsumeKey::business("coupon", "X2")
    );
    let hex = ConsumeKey::business("coupon", "X1").to_hex();
    assert_eq!(hex.len(), 64);
    assert!(
        hex.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert_eq!(
        ConsumeKey::business("coupon", "X1").as_bytes().to_vec(),
        (0..32)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect::<Vec<_>>()
    );
}

const OWNER: [u8; 32] = [0xA1; 32];

fn stored(result: &[u8]) -> Option<StoredResult> {
    Some(StoredResult {
        owner: OWNER,
        result: result.to_vec(),
    })
}

/// A store written before results existed: only the required methods.
struct MarkersOnly;

impl ReplayStore for MarkersOnly {
    fn consume(
        &self,
        _key: ConsumeKey,
        _ttl: Duration,
    ) -> BoxFuture<'_, Result<Consumed, StoreError>> {
        Box::pin(std::future::ready(Ok(Consumed::FirstUse)))
    }

    fn durability(&self) -> Durability {
        Durability::Volatile
    }
}

#[test]
fn a_store_without_results_says_so_and_fails_closed() {
    let store: Arc<dyn ReplayStore> = Arc::new(MarkersOnly);
    assert!(!store.keeps_results());
    // An error, never `Ok(None)`: the caller must not read "no result
    // yet" from a store that never keeps any.
    assert_eq!(
        block_on(store.put_result(key(0), OWNER, b"r".to_vec(), TTL)),
        Err(StoreError::Unavailable(
            "this store keeps no results".into()
        ))
    );
    assert_eq!(
        block_on(store.get_result(key(0))),
        Err(StoreError::Unavailable(
            "this store keeps no results".into()
        ))
    );
}

#[test]
fn memory_results_round_trip_and_replace() {
    let store = MemoryReplayStore::new();
    assert!(store.keeps_results());
    assert_eq!(block_on(store.get_result(key(0))), Ok(None));
    block_on(store.put_result(key(0), OWNER, b"first".to_vec(), TTL)).unwrap();
    assert_eq!(block_on(store.get_result(key(0))), Ok(stored(b"first")));
    block_on(store.put_result(key(0), [0xB0; 32], b"second".to_vec(), TTL)).unwrap();
    assert_eq!(
        block_on(store.get_result(key(0))),
        Ok(Some(StoredResult {
            owner: [0xB0; 32],
            result: b"second".to_vec()
        }))
    );
    assert_eq!(store.results_len(), 1);
    // Results and markers are separate: a result consumes nothing.
    assert!(store.is_empty());
    assert_eq!(block_on(store.consume(key(0), TTL)), Ok(Consumed::FirstUse));
}

#[test]
fn the_cap_is_inclusive() {
    assert_eq!(MAX_RESULT_BYTES, 64 * 1024);
    assert_eq!(check_result_size(&vec![0; MAX_RESULT_BYTES]), Ok(()));
    assert!(matches!(
        check_result_size(&vec![0; MAX_RESULT_BYTES + 1]),
        Err(StoreError::Full(_))
    ));
    let store = MemoryReplayStore::new();
    assert!(matches!(
        block_on(store.put_result(key(0), OWNER, vec![0; MAX_RESULT_BYTES + 1], TTL)),
        Err(StoreError::Full(_))
    ));
    assert_eq!(store.results_len(), 0);
}

#[test]
fn memory_results_are_bounded_by_count() {
    let store = MemoryReplayStore::with_capacity(2);
    block_on(store.put_result(key(0), OWNER, b"a".to_vec(), TTL)).unwrap();
    block_on(store.put_result(key(1), OWNER, b"b".to_vec(), TTL)).unwrap();
    assert!(matches!(
        block_on(store.put_result(key(2), OWNER, b"c".to_vec(), TTL)),
        Err(StoreError::Full(_))
    ));
    // Full never drops a live result, and replacing one needs no room.
    assert_eq!(block_on(store.get_result(key(0))), Ok(stored(b"a")));
    block_on(store.put_result(key(1), OWNER, b"B".to_vec(), TTL)).unwrap();
    assert_eq!(block_on(store.get_result(key(1))), Ok(stored(b"B")));
}

#[test]
fn memory_results_are_bounded_by_bytes() {
    assert_eq!(DEFAULT_MEMORY_RESULT_BUDGET, 64 * 1024 * 1024);
    let store = MemoryReplayStore::new().with_result_budget(10);
    block_on(store.put_result(key(0), OWNER, vec![1; 6], TTL)).unwrap();
    assert!(matches!(
        block_on(store.put_result(key(1), OWNER, vec![2; 5], TTL)),
        Err(StoreError::Full(_))
    ));
    block_on(store.put_result(key(1), OWNER, vec![2; 4], TTL)).unwrap();
    // Replacing frees the old bytes first: 4 + 6 fits, 4 + 7 does not.
    block_on(store.put_result(key(0), OWNER, vec![3; 6], TTL)).unwrap();
    assert!(matches!(
        block_on(store.put_result(key(0), OWNER, vec![3; 7], TTL)),
        Err(StoreError::Full(_))
    ));
    assert_eq!(block_on(store.get_result(key(0))), Ok(stored(&[3; 6])));
}

#[test]
fn expired_results_are_none_and_make_room() {
    let store = MemoryReplayStore::with_capacity(1).with_result_budget(8);
    let short = Duration::from_millis(1);
    block_on(store.put_result(key(0), OWNER, vec![1; 8], short)).unwrap();
    thread::sleep(Duration::from_millis(20));
    assert_eq!(block_on(store.get_result(key(0))), Ok(None));
    // Full by count and by bytes, but expired: purged, and the new one fits.
    block_on(store.put_result(key(1), OWNER, vec![2; 8], TTL)).unwrap();
    assert_eq!(store.results_len(), 1);
    assert_eq!(block_on(store.get_result(key(1))), Ok(stored(&[2; 8])));
    // Huge TTLs do not overflow.
    let store = MemoryReplayStore::new();
    block_on(store.put_result(key(0), OWNER, b"r".to_vec(), Duration::MAX)).unwrap();
    assert_eq!(block_on(store.get_result(key(0))), Ok(stored(b"r")));
}

#[test]
fn a_result_replaced_with_a_later_expiry_outlives_the_first() {
    // The replaced result's expiry comes up first and must leave the new
    // one, and its bytes, counted.
    let store = MemoryReplayStore::new().with_result_budget(8);
    let short = Duration::from_millis(1);
    block_on(store.put_result(key(0), OWNER, vec![1; 4], short)).unwrap();
    block_on(store.put_result(key(0), OWNER, vec![2; 4], TTL)).unwrap();
    thread::sleep(Duration::from_millis(20));
    block_on(store.put_result(key(1), OWNER, vec![3; 4], TTL)).unwrap();
    assert_eq!(block_on(store.get_result(key(0))), Ok(stored(&[2; 4])));
    assert_eq!(store.results_len(), 2);
    // 4 + 4 bytes held: the budget of 8 has no room for one more.
    assert!(matches!(
        block_on(store.put_result(key(2), OWNER, vec![4; 1], TTL)),
        Err(StoreError::Full(_))
    ));
}

#[test]
fn a_result_replaced_again_and_again_stays_one_result() {
    // Each replacement leaves its predecessor's expiry queued; the queue
    // is rebuilt from what is held, and the result held is the last.
    let store = MemoryReplayStore::with_capacity(1).with_result_budget(8);
    let byte = |n: u32| u8::try_from(n % 251).unwrap();
    for n in 0..1_000 {
        block_on(store.put_result(key(0), OWNER, vec![byte(n); 8], TTL)).unwrap();
    }
    assert_eq!(store.results_len(), 1);
    assert_eq!(
        block_on(store.get_result(key(0))),
        Ok(stored(&[byte(999); 8]))
    );
    assert!(matches!(
        block_on(store.put_result(key(1), OWNER, vec![1], TTL)),
        Err(StoreError::Full(_))
    ));
}

#[test]
fn stored_results_do_not_print_their_bytes() {
    let shown = format!(
        "{:?}",
        StoredResult {
            owner: [0xAB; 32],
            result: b"card 4111 1111".to_vec(),
        }
    );
    assert!(!shown.contains("4111"), "{shown}");
    assert!(shown.contains("result_len: 14"), "{shown}");
    assert!(shown.contains(&"ab".repeat(32)), "{shown}");
}
