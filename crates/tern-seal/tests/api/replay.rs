//! Single use through the replay store (SECURITY.md §3.9; MRTR-SEC4).

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use tern_seal::{
    ConsumeKey, Consumed, DEFAULT_MEMORY_CAPACITY, Durability, MemoryReplayStore, ReplayStore,
    StoreError,
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
