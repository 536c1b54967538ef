//! Method names of this revision (DIGEST §0.3).
//!
//! Client requests, notifications, and the input-request methods that travel
//! only inside `InputRequiredResult.inputRequests` (never as JSON-RPC
//! requests, MRTR-S13).

/// `server/discover`: versions, capabilities and identity (VER-S4).
pub const SERVER_DISCOVER: &str = "server/discover";
/// `tools/list`.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`. May be answered with an interim result (MRTR-S1).
pub const TOOLS_CALL: &str = "tools/call";
/// `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`. May be answered with an interim result (MRTR-S1).
pub const PROMPTS_GET: &str = "prompts/get";
/// `resources/list`.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`. May be answered with an interim result (MRTR-S1).
pub const RESOURCES_READ: &str = "resources/read";
/// `completion/complete`.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// `subscriptions/listen`: a long-lived notification stream (SUB-*).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// `notifications/cancelled`: client→server on stdio; server→client only to
/// end a listen stream (CANC-S6).
pub const NOTIFICATIONS_CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`.
pub const NOTIFICATIONS_PROGRESS: &str = "notifications/progress";
/// `notifications/message`: a log message. **Deprecated** with logging.
pub const NOTIFICATIONS_MESSAGE: &str = "notifications/message";
/// `notifications/subscriptions/acknowledged`: first message of a listen
/// stream (SUB-S2).
pub const NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";
/// `notifications/tools/list_changed` (listen streams only).
pub const NOTIFICATIONS_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/prompts/list_changed` (listen streams only).
pub const NOTIFICATIONS_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/resources/list_changed` (listen streams only).
pub const NOTIFICATIONS_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/resources/updated` (listen streams only).
pub const NOTIFICATIONS_RESOURCES_UPDATED: &str = "notifications/resources/updated";

/// `elicitation/create` (input request only).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `sampling/createMessage` (input request only). **Deprecated** with
/// sampling.
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `roots/list` (input request only). **Deprecated** with roots.
pub const ROOTS_LIST: &str = "roots/list";

/// Every client request method of this revision (`ClientRequest`).
pub const CLIENT_REQUESTS: &[&str] = &[
    SERVER_DISCOVER,
    TOOLS_LIST,
    TOOLS_CALL,
    PROMPTS_LIST,
    PROMPTS_GET,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
    COMPLETION_COMPLETE,
    SUBSCRIPTIONS_LISTEN,
];

/// The client requests that may be answered with an `InputRequiredResult`
/// (MRTR-S1); every other method must not be (MRTR-S2).
pub const INTERIM_CAPABLE: &[&str] = &[TOOLS_CALL, PROMPTS_GET, RESOURCES_READ];

/// Every notification method of this revision.
pub const NOTIFICATIONS: &[&str] = &[
    NOTIFICATIONS_CANCELLED,
    NOTIFICATIONS_PROGRESS,
    NOTIFICATIONS_MESSAGE,
    NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
    NOTIFICATIONS_TOOLS_LIST_CHANGED,
    NOTIFICATIONS_PROMPTS_LIST_CHANGED,
    NOTIFICATIONS_RESOURCES_LIST_CHANGED,
    NOTIFICATIONS_RESOURCES_UPDATED,
];

/// The input request methods (MRTR-S6).
pub const INPUT_REQUESTS: &[&str] = &[ELICITATION_CREATE, SAMPLING_CREATE_MESSAGE, ROOTS_LIST];

/// Methods of earlier revisions that no longer exist. A modern server treats
/// them as unknown methods (DIGEST §0.3).
pub const REMOVED: &[&str] = &[
    "initialize",
    "notifications/initialized",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "notifications/roots/list_changed",
    "notifications/elicitation/complete",
];
