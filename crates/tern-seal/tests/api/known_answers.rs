//! Committed vectors: a fixed secret, kid, nonce and payload give exactly
//! these tokens. They pin the HKDF labels, the AAD, the header and the
//! postcard layout (SECURITY.md §3.1, §3.3). `tests/vectors/reproduce.py`
//! derives every value here from the format description alone, with
//! Python's `cryptography` package and HChaCha20 as specified in
//! draft-irtf-cfrg-xchacha §2.2.

use serde::{Deserialize, Serialize};
use serde_json::json;
use tern_seal::{
    Binding, Claims, ConsumeKey, KeyRing, KeyRole, KeySpec, MasterSecret, OpenPolicy, canonical,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Body {
    note: String,
    round: u8,
}

struct Vector {
    secret_hex: &'static str,
    kid: u32,
    nonce: [u8; 24],
    resource_id: &'static str,
    issued_at: u64,
    expires_at: u64,
    binding_parts: &'static [&'static [u8]],
    body: (&'static str, u8),
    token: &'static str,
}

const VECTORS: &[Vector] = &[
    Vector {
        secret_hex: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        kid: 1,
        nonce: [0; 24],
        resource_id: "https://mcp.example.com",
        issued_at: 1_800_000_000,
        expires_at: 1_800_000_600,
        binding_parts: &[b"anonymous"],
        body: ("hello", 1),
        token: "AQAAAAEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAADUjSU6-V8YJxRyG5f2SGFYyJEM98FUjOYmnHR_gkGsYbeiuRDflrohyhbNtoSTxwCJ8P5GqRQAdV8L3-zFAzX7Yw",
    },
    Vector {
        secret_hex: "f0e1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff",
        kid: 0xdead_beef,
        nonce: [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
        ],
        resource_id: "stdio:deployment-7",
        issued_at: 0,
        expires_at: 3600,
        binding_parts: &[b"stdio", b"instance", b"1000", b""],
        body: ("", 255),
        token: "Ad6tvu8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFheBC04FmwbLKEjOEwRgFFyqMmgFbi4kLGmBRjCx6JWQ451sSNUgl_TPBSRKJi0ZZz4M_-TT7w",
    },
];

fn hex(text: &str) -> Vec<u8> {
    (0..text.len() / 2)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

#[test]
fn vectors_seal_to_the_committed_tokens_and_open() {
    for (i, v) in VECTORS.iter().enumerate() {
        let ring = KeyRing::new(vec![KeySpec {
            kid: v.kid,
            secret: MasterSecret::from_bytes(&hex(v.secret_hex)).unwrap(),
            role: KeyRole::Active,
            verify_until: None,
        }])
        .unwrap();
        let binding = Binding::digest(v.binding_parts);
        let claims = Claims {
            issued_at: v.issued_at,
            expires_at: v.expires_at,
            binding,
            body: Body {
                note: v.body.0.to_owned(),
                round: v.body.1,
            },
        };
        let token = ring
            .seal_with_nonce(v.resource_id, &claims, &v.nonce)
            .unwrap();
        assert_eq!(token, v.token, "vector {i}");
        let opened = ring
            .open_at::<Body>(
                v.resource_id,
                v.token,
                &binding,
                v.issued_at,
                &OpenPolicy::default(),
            )
            .unwrap();
        assert_eq!(opened.into_claims(), claims, "vector {i}");
    }
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn digests_are_pinned() {
    assert_eq!(
        to_hex(&Binding::digest(&[b"anonymous"]).0),
        "e773b4574838168403225dd6ccef380c9e003233d6095abb723a29f68c4a2d23"
    );
    let flow: [u8; 16] = std::array::from_fn(|i| i as u8);
    assert_eq!(
        ConsumeKey::for_flow(&flow, "commit").to_hex(),
        "1b06af71d2bcf911f3d094c3c691644bea16837ea29f2bc8f897b766a97641e4"
    );
    assert_eq!(
        ConsumeKey::business("coupon", "SPRING-2026").to_hex(),
        "243e35ab46cc2a72e23fc51f0acc685b5637bde0e334e878dfb1079895ab4910"
    );
    let params = json!({"name": "pay", "m": 1, "arguments": {"to": "bob", "amount": 1.25e2}});
    assert_eq!(
        to_hex(&canonical::digest(&params).unwrap()),
        "59a0b55c60d5a79939c8cafbd34fafcf759729369edac95449f470851a165d61"
    );
}
