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
/// `tasks/get` (the `io.modelcontextprotocol/tasks` extension).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/update` (the `io.modelcontextprotocol/tasks` extension).
pub const TASKS_UPDATE: &str = "tasks/update";
/// `tasks/cancel` (the `io.modelcontextprotocol/tasks` extension).
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// The identifier of the tasks extension, under `extensions` in both
/// sides' capabilities (EXT-1).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

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

/// A client request method of this revision: the one list of what each
/// method is (DIGEST §0.3). Which methods may take several rounds is
/// [`Method::flow`], and nowhere else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Method {
    /// `server/discover`.
    ServerDiscover,
    /// `tools/list`.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `prompts/list`.
    PromptsList,
    /// `prompts/get`.
    PromptsGet,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourcesTemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// `completion/complete`.
    CompletionComplete,
    /// `subscriptions/listen`.
    SubscriptionsListen,
    /// `tasks/get` (an extension method, [`Method::EXTENSIONS`]).
    TasksGet,
    /// `tasks/update` (an extension method).
    TasksUpdate,
    /// `tasks/cancel` (an extension method).
    TasksCancel,
}

/// The client requests that may be answered with an `InputRequiredResult`
/// (MRTR-S1); every other method must not be (MRTR-S2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowMethod {
    /// `tools/call`: the target is `params.name`.
    ToolsCall,
    /// `prompts/get`: the target is `params.name`.
    PromptsGet,
    /// `resources/read`: the target is `params.uri`.
    ResourcesRead,
}

impl Method {
    /// Every client request method, in the order of [`CLIENT_REQUESTS`].
    pub const ALL: [Method; 10] = [
        Method::ServerDiscover,
        Method::ToolsList,
        Method::ToolsCall,
        Method::PromptsList,
        Method::PromptsGet,
        Method::ResourcesList,
        Method::ResourcesTemplatesList,
        Method::ResourcesRead,
        Method::CompletionComplete,
        Method::SubscriptionsListen,
    ];

    /// The extension methods a server may offer besides the core ones: the
    /// tasks extension's (`tasks/result` and `tasks/list` are not among
    /// them; that extension removed them).
    pub const EXTENSIONS: [Method; 3] =
        [Method::TasksGet, Method::TasksUpdate, Method::TasksCancel];

    /// The method named `name`, if this revision or one of its extensions
    /// has it.
    pub fn parse(name: &str) -> Option<Method> {
        Method::ALL
            .into_iter()
            .chain(Method::EXTENSIONS)
            .find(|m| m.as_str() == name)
    }

    /// The params field `Mcp-Name` mirrors for this method, if any
    /// (HTTP-S11; `taskId` on the tasks methods).
    pub const fn target_field(self) -> Option<&'static str> {
        match self {
            Method::ToolsCall | Method::PromptsGet => Some("name"),
            Method::ResourcesRead => Some("uri"),
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => Some("taskId"),
            _ => None,
        }
    }

    /// Whether this is one of the tasks extension's methods.
    pub const fn is_task(self) -> bool {
        matches!(
            self,
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel
        )
    }

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::ServerDiscover => SERVER_DISCOVER,
            Method::ToolsList => TOOLS_LIST,
            Method::ToolsCall => TOOLS_CALL,
            Method::PromptsList => PROMPTS_LIST,
            Method::PromptsGet => PROMPTS_GET,
            Method::ResourcesList => RESOURCES_LIST,
            Method::ResourcesTemplatesList => RESOURCES_TEMPLATES_LIST,
            Method::ResourcesRead => RESOURCES_READ,
            Method::CompletionComplete => COMPLETION_COMPLETE,
            Method::SubscriptionsListen => SUBSCRIPTIONS_LISTEN,
            Method::TasksGet => TASKS_GET,
            Method::TasksUpdate => TASKS_UPDATE,
            Method::TasksCancel => TASKS_CANCEL,
        }
    }

    /// The multi round-trip method this is, if it is one (MRTR-S1).
    pub const fn flow(self) -> Option<FlowMethod> {
        match self {
            Method::ToolsCall => Some(FlowMethod::ToolsCall),
            Method::PromptsGet => Some(FlowMethod::PromptsGet),
            Method::ResourcesRead => Some(FlowMethod::ResourcesRead),
            _ => None,
        }
    }

    /// Whether this method may answer `input_required` (MRTR-S1, MRTR-S2).
    pub const fn may_require_input(self) -> bool {
        self.flow().is_some()
    }
}

impl FlowMethod {
    /// The method.
    pub const fn method(self) -> Method {
        match self {
            FlowMethod::ToolsCall => Method::ToolsCall,
            FlowMethod::PromptsGet => Method::PromptsGet,
            FlowMethod::ResourcesRead => Method::ResourcesRead,
        }
    }

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        self.method().as_str()
    }

    /// The params field that names the target, which `Mcp-Name` mirrors
    /// (HTTP-S11).
    pub const fn target_field(self) -> &'static str {
        match self.method().target_field() {
            Some(f) => f,
            None => "name",
        }
    }

    /// The flow method named `name`, if it is one.
    pub fn parse(name: &str) -> Option<FlowMethod> {
        Method::parse(name).and_then(Method::flow)
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for FlowMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_list_names_every_request_method() {
        let names: Vec<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(names, CLIENT_REQUESTS);
        for m in Method::ALL {
            assert_eq!(Method::parse(m.as_str()), Some(m));
        }
        assert_eq!(Method::parse("initialize"), None);
        let flows: Vec<&str> = Method::ALL
            .iter()
            .filter_map(|m| m.flow())
            .map(FlowMethod::as_str)
            .collect();
        // MRTR-S1: exactly these three.
        assert_eq!(flows, [TOOLS_CALL, PROMPTS_GET, RESOURCES_READ]);
        assert_eq!(FlowMethod::ResourcesRead.target_field(), "uri");
        assert_eq!(FlowMethod::parse("tools/list"), None);
    }
}
