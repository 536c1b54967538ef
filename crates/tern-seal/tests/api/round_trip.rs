//! Whatever is sealed opens to the same value (SECURITY.md §3.1).

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use tern_seal::{Claims, OpenPolicy};

use crate::util::{RID, T0, binding, claims, ring};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Payload {
    ids: Vec<[u8; 16]>,
    name: String,
    counter: u64,
    signed: Option<i32>,
    flag: bool,
    blob: Vec<u8>,
}

fn payload() -> impl Strategy<Value = Payload> {
    (
        proptest::collection::vec(any::<[u8; 16]>(), 0..8),
        any::<String>(),
        any::<u64>(),
        any::<Option<i32>>(),
        any::<bool>(),
        proptest::collection::vec(any::<u8>(), 0..512),
    )
        .prop_map(|(ids, name, counter, signed, flag, blob)| Payload {
            ids,
            name,
            counter,
            signed,
            flag,
            blob,
        })
}

proptest! {
    #[test]
    fn arbitrary_payloads_round_trip(body in payload(), kid in any::<u32>()) {
        let ring = ring(kid);
        let sealed = claims(body);
        let token = ring.seal_at(RID, &sealed).unwrap();
        let opened = ring
            .open_at::<Payload>(RID, &token, &binding(), T0, &OpenPolicy::default())
            .unwrap();
        prop_assert_eq!(opened.kid(), kid);
        prop_assert_eq!(opened.claims(), &sealed);
        prop_assert_eq!(opened.body(), &sealed.body);
        prop_assert_eq!(opened.into_claims(), sealed);
    }

    #[test]
    fn arbitrary_resource_ids_round_trip(rid in any::<String>()) {
        let ring = ring(1);
        let token = ring.seal_at(&rid, &claims(7u8)).unwrap();
        let opened = ring.open_at::<u8>(&rid, &token, &binding(), T0, &OpenPolicy::default());
        prop_assert_eq!(*opened.unwrap().body(), 7);
    }
}

#[test]
fn every_seal_draws_a_fresh_nonce() {
    let ring = ring(1);
    let c: Claims<u8> = claims(1);
    assert_ne!(
        ring.seal_at(RID, &c).unwrap(),
        ring.seal_at(RID, &c).unwrap()
    );
}
