//! Header value encoding for `Mcp-Name` and `Mcp-Param-*` (DIGEST
//! HTTP-C16, HTTP-C17, HTTP-XMH-A1).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

const PREFIX: &str = "=?base64?";
const SUFFIX: &str = "?=";

/// Whether a value can travel as a plain header value: every byte in
/// 0x20–0x7E, no leading or trailing space, and not itself shaped like the
/// sentinel (HTTP-XMH-A1).
pub fn is_plain_safe(value: &str) -> bool {
    value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !is_sentinel(value)
}

fn is_sentinel(value: &str) -> bool {
    value.len() >= PREFIX.len() + SUFFIX.len()
        && value.starts_with(PREFIX)
        && value.ends_with(SUFFIX)
}

/// Encodes a string for a header: as is when plain safe, else wrapped as
/// `=?base64?…?=` (HTTP-C17). The empty string stays empty.
pub fn encode_header_value(value: &str) -> String {
    if is_plain_safe(value) {
        value.to_owned()
    } else {
        format!("{PREFIX}{}{SUFFIX}", STANDARD.encode(value.as_bytes()))
    }
}

/// Decodes a received header value. A value with both markers is Base64
/// (standard alphabet, padding required) and must decode to UTF-8; anything
/// else is literal (HTTP-XMH-S5 and its conformance line).
pub fn decode_header_value(raw: &str) -> Result<String, String> {
    if !is_sentinel(raw) {
        return Ok(raw.to_owned());
    }
    let inner = &raw[PREFIX.len()..raw.len() - SUFFIX.len()];
    let bytes = STANDARD
        .decode(inner)
        .map_err(|e| format!("invalid Base64 value: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "Base64 value is not UTF-8".to_owned())
}

/// The header form of a tool argument annotated with `x-mcp-header`
/// (HTTP-C16): strings as they are, integers in decimal, booleans as
/// `true`/`false`. `None` for null (the header is omitted, HTTP-XMH-C4) and
/// for types that cannot be mirrored.
pub fn argument_header_value(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(encode_header_value(s)),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// Whether a received header value matches a body value, after decoding
/// (HTTP-XMH-S5): strings exactly, integers numerically (so `42.0` equals
/// `42`), booleans as `true`/`false`.
pub fn header_matches(decoded: &str, body: &Value) -> bool {
    match body {
        Value::String(s) => decoded == s,
        Value::Bool(b) => decoded == if *b { "true" } else { "false" },
        Value::Number(n) => match (decoded.parse::<f64>(), n.as_f64()) {
            (Ok(h), Some(b)) => h == b && h.fract() == 0.0,
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encoding_follows_the_digest_examples() {
        // HTTP-C17 examples.
        assert_eq!(encode_header_value("us-west1"), "us-west1");
        assert_eq!(
            encode_header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(
            encode_header_value("line1\nline2"),
            "=?base64?bGluZTEKbGluZTI=?="
        );
        assert_eq!(
            encode_header_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(encode_header_value(""), "");
        assert_eq!(encode_header_value("a\tb"), "=?base64?YQli?=");
    }

    #[test]
    fn decoding_is_strict_inside_markers_and_literal_outside() {
        // Conformance http-custom-header-server-validation.
        assert_eq!(decode_header_value("=?base64?SGVsbG8=?=").unwrap(), "Hello");
        assert!(decode_header_value("=?base64?SGVsbG8?=").is_err());
        assert!(decode_header_value("=?base64?SGVs!!!bG8=?=").is_err());
        assert_eq!(decode_header_value("SGVsbG8=").unwrap(), "SGVsbG8=");
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=").unwrap(),
            "=?base64?SGVsbG8="
        );
        assert_eq!(
            decode_header_value("=?BASE64?SGVsbG8=?=").unwrap(),
            "=?BASE64?SGVsbG8=?="
        );
    }

    #[test]
    fn argument_values_convert_and_compare() {
        assert_eq!(argument_header_value(&json!(42)).as_deref(), Some("42"));
        assert_eq!(argument_header_value(&json!(-7)).as_deref(), Some("-7"));
        assert_eq!(argument_header_value(&json!(true)).as_deref(), Some("true"));
        assert_eq!(argument_header_value(&json!(null)), None);
        assert_eq!(argument_header_value(&json!(1.5)), None);
        assert!(header_matches("42", &json!(42)));
        assert!(header_matches("42.0", &json!(42)));
        assert!(!header_matches("43", &json!(42)));
        assert!(header_matches("false", &json!(false)));
        assert!(!header_matches("False", &json!(false)));
    }
}
