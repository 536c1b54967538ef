//! The plain contract types that transports, the server and the client
//! share: what arrives, who sent it, and the mirrored HTTP headers.

use std::borrow::Cow;

use bytes::Bytes;

/// Who sent a request, as the transport's authentication hook saw it
/// (SECURITY.md §3.6). The server binds every sealed state to a fingerprint
/// of this value and re-checks authorization with it on every round.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Principal {
    /// No authentication. Binding adds nothing across users.
    #[default]
    Anonymous,
    /// An OAuth access token's identity.
    OAuth {
        /// The validated issuer.
        issuer: String,
        /// The subject (`client_id` for client-credentials tokens).
        subject: String,
        /// The client the token was issued to.
        client_id: String,
        /// This server's canonical URI, the token's audience.
        resource: String,
    },
    /// A static bearer secret from a token file, named by its id (never the
    /// secret itself).
    Static {
        /// The id of the matched secret.
        secret_id: String,
    },
    /// The parent process of a stdio server.
    Stdio {
        /// 128 random bits chosen when the server process started.
        instance_id: [u8; 16],
        /// The effective uid of the server process.
        uid: u32,
        /// A stable id of the account behind an environment credential,
        /// empty when there is none.
        credential_identity: String,
    },
}

impl Principal {
    /// The fields that identify this principal, tagged by kind, for the
    /// fingerprint of SECURITY.md §3.6.
    pub fn identity_fields(&self) -> Vec<Cow<'_, [u8]>> {
        let b = |s: &'static [u8]| Cow::Borrowed(s);
        let s = |s: &str| -> Cow<'_, [u8]> { Cow::Owned(s.as_bytes().to_vec()) };
        match self {
            Principal::Anonymous => vec![b(b"anonymous")],
            Principal::OAuth {
                issuer,
                subject,
                client_id,
                resource,
            } => {
                vec![
                    b(b"oauth"),
                    s(issuer),
                    s(subject),
                    s(client_id),
                    s(resource),
                ]
            }
            Principal::Static { secret_id } => vec![b(b"static"), s(secret_id)],
            Principal::Stdio {
                instance_id,
                uid,
                credential_identity,
            } => vec![
                b(b"stdio"),
                Cow::Borrowed(&instance_id[..]),
                Cow::Owned(uid.to_be_bytes().to_vec()),
                s(credential_identity),
            ],
        }
    }

    /// Whether a real identity stands behind the request.
    pub fn is_authenticated(&self) -> bool {
        !matches!(self, Principal::Anonymous)
    }
}

/// The MCP headers of an HTTP request, raw (only surrounding whitespace
/// trimmed, HTTP-9). `None` on stdio, which has no header layer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpHeaders {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// `Mcp-Method`.
    pub method: Option<String>,
    /// `Mcp-Name`, possibly Base64-wrapped (HTTP-C17).
    pub name: Option<String>,
    /// Every `Mcp-Param-{Name}` header: the `{Name}` part as sent and the
    /// raw value. Names compare case-insensitively (HTTP-9).
    pub params: Vec<(String, String)>,
}

impl McpHeaders {
    /// The value of `Mcp-Param-{name}`, compared case-insensitively.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One message as a transport received it.
#[derive(Clone, Debug, Default)]
pub struct Inbound {
    /// The body: exactly one JSON-RPC message.
    pub body: Bytes,
    /// The mirrored headers (HTTP only).
    pub headers: Option<McpHeaders>,
    /// Who sent it.
    pub principal: Principal,
}
