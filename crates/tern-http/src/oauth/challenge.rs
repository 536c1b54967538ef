//! The `WWW-Authenticate: Bearer` challenge of a `401` or `403` (RFC 6750
//! §3, RFC 9728 §5.1).

use http::HeaderMap;

/// A `WWW-Authenticate: Bearer` challenge's parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`.
    pub resource_metadata: Option<String>,
    /// `scope`, space-separated.
    pub scope: Option<String>,
    /// `error`, e.g. `insufficient_scope`.
    pub error: Option<String>,
}

impl Challenge {
    /// The Bearer challenge among `headers`' `WWW-Authenticate` values.
    pub fn from_headers(headers: &HeaderMap) -> Option<Challenge> {
        headers
            .get_all(http::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(Challenge::parse)
    }

    /// Parses `Bearer k="v", k2=v2`; `None` for another scheme.
    pub fn parse(value: &str) -> Option<Challenge> {
        let value = value.trim_start();
        let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let mut c = Challenge::default();
        let mut rest = rest.trim();
        while !rest.is_empty() {
            let Some((key, after)) = rest.split_once('=') else {
                break;
            };
            let key = key
                .trim()
                .trim_start_matches(',')
                .trim()
                .to_ascii_lowercase();
            let after = after.trim_start();
            let (val, next) = if let Some(quoted) = after.strip_prefix('"') {
                let mut out = String::new();
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((i, ch)) = chars.next() {
                    match ch {
                        '\\' => {
                            if let Some((_, esc)) = chars.next() {
                                out.push(esc);
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        _ => out.push(ch),
                    }
                }
                (out, &quoted[end.min(quoted.len())..])
            } else {
                let end = after.find(',').unwrap_or(after.len());
                (after[..end].trim().to_owned(), &after[end..])
            };
            match key.as_str() {
                "resource_metadata" => c.resource_metadata = Some(val),
                "scope" => c.scope = Some(val),
                "error" => c.error = Some(val),
                _ => {}
            }
            rest = next.trim_start().trim_start_matches(',').trim_start();
        }
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_quoted_and_bare_values() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp""#,
        )
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
        let c = Challenge::parse(r#"bearer scope=read,error="x\"y""#).unwrap();
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(c.error.as_deref(), Some("x\"y"));
        assert_eq!(Challenge::parse("Basic realm=\"x\""), None);
        assert_eq!(Challenge::parse("Bearer"), Some(Challenge::default()));
    }
}
