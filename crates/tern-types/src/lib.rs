//! The wire data of MCP revision 2026-07-28, as serde types.
//!
//! One module per page of the specification. The types are plain data: no
//! I/O, no validation beyond what serde's shape checks give, no clock. Rules
//! (which method may return what, which `_meta` keys are required) live in
//! `tern-proto`.
//!
//! Results are told apart by `resultType` explicitly (DIGEST BASE-A3): see
//! [`ResultType`] and [`Outcome`]. An absent `resultType` reads as complete
//! (BASE-C13); an unknown one is an error, never swallowed.
//!
//! Request `_meta` stays a raw JSON object in every params type; results and
//! notifications carry an optional raw `_meta`. Open objects (capabilities'
//! settings, tool schemas, `structuredContent`) are kept as raw JSON so that
//! nothing is lost.
//!
//! Deprecated features (sampling, roots, logging, `includeContext` values
//! other than `none`, `LegacyTitledEnumSchema`) are marked so in their docs,
//! not with `#[deprecated]`, and keep working (MIG-27).

mod capabilities;
mod completion;
mod content;
mod discover;
mod elicitation;
mod error;
mod jsonrpc;
pub mod legacy;
mod logging;
mod meta;
pub mod methods;
mod mrtr;
mod notifications;
mod pagination;
mod prompts;
mod resources;
mod result;
mod roots;
mod sampling;
mod subscriptions;
mod tools;

// Base protocol: envelopes, errors, `_meta`, results.
pub use error::{
    ApplicationCode, BusyData, ErrorCode, ErrorObject, MissingRequiredClientCapabilityData,
    TimeoutData, UnsupportedProtocolVersionData,
};
pub use jsonrpc::{
    ErrorResponse, JsonRpcVersion, Notification, Request, RequestId, ResultResponse,
};
pub use meta::{Icon, Implementation, meta_keys};
pub use result::{CacheScope, Outcome, ResultType};

// Capabilities and discovery.
pub use capabilities::{
    ClientCapabilities, ElicitationCapability, PromptsCapability, ResourcesCapability,
    RootsCapability, SamplingCapability, ServerCapabilities, ToolsCapability,
};
pub use discover::{DiscoverResult, RequestParams};

// Multi round-trip requests.
pub use mrtr::{
    InputRequest, InputRequests, InputRequiredResult, InputResponse, InputResponseRequestParams,
    InputResponses,
};

// Client features used through MRTR.
pub use elicitation::{
    BooleanSchema, ElicitAction, ElicitFormMode, ElicitRequestFormParams, ElicitRequestParams,
    ElicitRequestUrlParams, ElicitResult, ElicitValue, ElicitationSchema, EnumOption,
    LegacyTitledEnumSchema, NumberSchema, NumberType, PrimitiveSchemaDefinition, StringFormat,
    StringSchema, TitledEnumItems, TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema,
    UntitledEnumItems, UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
};
pub use roots::{ListRootsRequestParams, ListRootsResult, Root};
pub use sampling::{
    CreateMessageRequestParams, CreateMessageResult, IncludeContext, ModelHint, ModelPreferences,
    SamplingContent, SamplingMessage, SamplingMessageContentBlock, ToolChoice, ToolChoiceMode,
    ToolResultContent, ToolUseContent,
};

// Server features.
pub use completion::{
    CompleteRequestParams, CompleteResult, Completion, CompletionArgument, CompletionContext,
    CompletionReference,
};
pub use content::{
    Annotations, AudioContent, ContentBlock, EmbeddedResource, ImageContent, Role, TextContent,
};
pub use logging::LoggingLevel;
pub use notifications::{
    CancelledNotificationParams, LoggingMessageNotificationParams, NotificationParams,
    ProgressNotificationParams, ProgressToken, ResourceUpdatedNotificationParams,
};
pub use pagination::{Cursor, PaginatedRequestParams};
pub use prompts::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
    PromptMessage,
};
pub use resources::{
    BlobResourceContents, ListResourceTemplatesResult, ListResourcesResult,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    TextResourceContents,
};
pub use subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
pub use tools::{
    CallToolRequestParams, CallToolResult, ListToolsResult, Tool, ToolAnnotations, ToolExecution,
};

/// The protocol revision these types describe.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
