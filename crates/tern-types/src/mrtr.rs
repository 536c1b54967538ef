//! Multi Round-Trip Requests: input requests, input responses and the
//! interim result (DIGEST §4).

use std::collections::BTreeMap;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::elicitation::{ElicitRequestParams, ElicitResult};
use crate::methods;
use crate::result::ResultType;
use crate::roots::{ListRootsRequestParams, ListRootsResult};
use crate::sampling::{CreateMessageRequestParams, CreateMessageResult};

/// A request from the server to the client, embedded in an interim result
/// (`{method, params}`, no `jsonrpc`, no `id`; MRTR-S6). Tagged by
/// `method`; an unknown method fails to parse. An `id` member is tolerated
/// and dropped (DIGEST §11 A25).
#[derive(Clone, Debug, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create`: ask the user (ELIC-*).
    Elicitation(ElicitRequestParams),
    /// `sampling/createMessage`: ask the client's model. **Deprecated**.
    Sampling(CreateMessageRequestParams),
    /// `roots/list`: ask for the client's roots; `params` is optional.
    /// **Deprecated**.
    ListRoots(Option<ListRootsRequestParams>),
}

impl InputRequest {
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            InputRequest::Elicitation(_) => methods::ELICITATION_CREATE,
            InputRequest::Sampling(_) => methods::SAMPLING_CREATE_MESSAGE,
            InputRequest::ListRoots(_) => methods::ROOTS_LIST,
        }
    }
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let params_present = !matches!(self, InputRequest::ListRoots(None));
        let mut map = s.serialize_map(Some(1 + usize::from(params_present)))?;
        map.serialize_entry("method", self.method())?;
        match self {
            InputRequest::Elicitation(p) => map.serialize_entry("params", p)?,
            InputRequest::Sampling(p) => map.serialize_entry("params", p)?,
            InputRequest::ListRoots(Some(p)) => map.serialize_entry("params", p)?,
            InputRequest::ListRoots(None) => {}
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(InputRequestVisitor)
    }
}

/// Reads `method` and `params` in either order. With `method` first, as
/// this crate writes it, the params are read straight into their type;
/// params that come first are held as a value until the method is known.
struct InputRequestVisitor;

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum InputRequestField {
    Method,
    Params,
    #[serde(other)]
    Other,
}

impl<'de> de::Visitor<'de> for InputRequestVisitor {
    type Value = InputRequest;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an input request (`method` and `params`)")
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<InputRequest, A::Error> {
        let mut method: Option<String> = None;
        let mut read: Option<InputRequest> = None;
        let mut held: Option<Value> = None;
        while let Some(field) = map.next_key()? {
            match field {
                InputRequestField::Method if method.is_some() => {
                    return Err(de::Error::duplicate_field("method"));
                }
                InputRequestField::Method => method = Some(map.next_value()?),
                InputRequestField::Params if read.is_some() || held.is_some() => {
                    return Err(de::Error::duplicate_field("params"));
                }
                InputRequestField::Params => match &method {
                    Some(m) => read = Some(map.next_value_seed(ParamsOf(m))?),
                    None => held = Some(map.next_value()?),
                },
                InputRequestField::Other => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let method = method.ok_or_else(|| de::Error::missing_field("method"))?;
        match read {
            Some(request) => Ok(request),
            // Absent and `null` params read alike.
            None => {
                de::DeserializeSeed::deserialize(ParamsOf(&method), held.unwrap_or(Value::Null))
                    .map_err(de::Error::custom)
            }
        }
    }
}

/// The params of an input request whose method is known, read as that
/// method's type: required for elicitation and sampling, optional for
/// roots.
struct ParamsOf<'a>(&'a str);

impl<'de> de::DeserializeSeed<'de> for ParamsOf<'_> {
    type Value = InputRequest;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<InputRequest, D::Error> {
        fn required<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
            method: &str,
            d: D,
        ) -> Result<T, D::Error> {
            Option::<T>::deserialize(d)?.ok_or_else(|| {
                de::Error::custom(format_args!("input request {method} has no params"))
            })
        }
        match self.0 {
            methods::ELICITATION_CREATE => required(self.0, d).map(InputRequest::Elicitation),
            methods::SAMPLING_CREATE_MESSAGE => required(self.0, d).map(InputRequest::Sampling),
            methods::ROOTS_LIST => Option::deserialize(d).map(InputRequest::ListRoots),
            other => {
                de::IgnoredAny::deserialize(d)?;
                Err(de::Error::custom(format_args!(
                    "unknown input request method {other:?}"
                )))
            }
        }
    }
}

/// The input requests of an interim result, by key. The server picks the
/// keys; the client answers under the same keys (MRTR-C3). Ordered by key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InputRequests(pub BTreeMap<String, InputRequest>);

impl InputRequests {
    /// No requests.
    pub fn new() -> Self {
        InputRequests(BTreeMap::new())
    }

    /// Adds a request under `key`, replacing any earlier one.
    pub fn insert(&mut self, key: impl Into<String>, request: InputRequest) {
        self.0.insert(key.into(), request);
    }

    /// The request under `key`.
    pub fn get(&self, key: &str) -> Option<&InputRequest> {
        self.0.get(key)
    }

    /// The number of requests.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none (treated as absent, MRTR-S-A3).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The requests in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &InputRequest)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl FromIterator<(String, InputRequest)> for InputRequests {
    fn from_iter<I: IntoIterator<Item = (String, InputRequest)>>(iter: I) -> Self {
        InputRequests(iter.into_iter().collect())
    }
}

/// The client's answer to one input request (no `resultType`).
///
/// The wire form has no tag. [`InputResponse::parse_for`] parses an answer
/// as the type the asked method calls for (MRTR-C3, MRTR-E-A2); the
/// `Deserialize` impl guesses from the members present (`action` →
/// elicitation, `roots` → roots, `model`/`role` → sampling) and is meant for
/// logs and tests.
#[derive(Clone, Debug, PartialEq)]
pub enum InputResponse {
    /// Answer to `elicitation/create`.
    Elicit(ElicitResult),
    /// Answer to `sampling/createMessage` (deprecated).
    Sampling(CreateMessageResult),
    /// Answer to `roots/list` (deprecated).
    ListRoots(ListRootsResult),
}

impl InputResponse {
    /// Parses `value` as the answer to an input request with this `method`.
    pub fn parse_for(method: &str, value: Value) -> Result<Self, serde_json::Error> {
        match method {
            methods::ELICITATION_CREATE => {
                ElicitResult::deserialize(value).map(InputResponse::Elicit)
            }
            methods::SAMPLING_CREATE_MESSAGE => {
                CreateMessageResult::deserialize(value).map(InputResponse::Sampling)
            }
            methods::ROOTS_LIST => {
                ListRootsResult::deserialize(value).map(InputResponse::ListRoots)
            }
            other => Err(de::Error::custom(format_args!(
                "unknown input request method {other:?}"
            ))),
        }
    }
}

impl Serialize for InputResponse {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            InputResponse::Elicit(r) => r.serialize(s),
            InputResponse::Sampling(r) => r.serialize(s),
            InputResponse::ListRoots(r) => r.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let method = if map.contains_key("action") {
            methods::ELICITATION_CREATE
        } else if map.contains_key("roots") {
            methods::ROOTS_LIST
        } else if map.contains_key("model") || map.contains_key("role") {
            methods::SAMPLING_CREATE_MESSAGE
        } else {
            return Err(de::Error::custom(
                "not an input response: no `action`, `roots` or `model`",
            ));
        };
        InputResponse::parse_for(method, Value::Object(map)).map_err(de::Error::custom)
    }
}

/// The answers of a retry, by the keys of the input requests they answer.
///
/// Entries are kept as raw JSON: the server parses only the keys it asked
/// for, each as the type its method calls for ([`InputResponses::parse_for`]),
/// so that an entry it never asked for is ignored rather than failing the
/// whole request (MRTR-E2), and a malformed answer can be reported by key
/// (MRTR-E-A2).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InputResponses(BTreeMap<String, Value>);

impl InputResponses {
    /// No answers.
    pub fn new() -> Self {
        InputResponses(BTreeMap::new())
    }

    /// Adds the answer under `key`, replacing any earlier one.
    pub fn insert(&mut self, key: impl Into<String>, response: &InputResponse) {
        // Cannot fail: every map in these types has string keys and no
        // Serialize impl among them returns an error.
        let value = serde_json::to_value(response).expect("an InputResponse serialises to JSON");
        self.0.insert(key.into(), value);
    }

    /// The raw answer under `key`.
    pub fn get_raw(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Parses the answer under `key` as the answer to `request`; `None` when
    /// there is no such key.
    pub fn parse_for(
        &self,
        key: &str,
        request: &InputRequest,
    ) -> Option<Result<InputResponse, serde_json::Error>> {
        self.0
            .get(key)
            .map(|v| InputResponse::parse_for(request.method(), v.clone()))
    }

    /// Parses the answer under `key` as `T`; `None` when there is no such
    /// key.
    pub fn parse<T: DeserializeOwned>(&self, key: &str) -> Option<Result<T, serde_json::Error>> {
        self.0.get(key).map(|v| T::deserialize(v))
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The number of answers.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The raw answers in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// An interim result (`resultType: "input_required"`, MRTR-S3): what the
/// server needs before it can finish, and state to echo. Has at least one of
/// `inputRequests` and `requestState` (MRTR-S4); carries no cache hints
/// (MRTR-S12).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// `input_required`; written always. [`crate::Outcome`] routes only
    /// `"input_required"` results here.
    #[serde(default = "input_required")]
    pub result_type: ResultType,
    /// What the client should answer, by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client echoes unchanged (MRTR-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Result metadata (`io.modelcontextprotocol/serverInfo`, META-S12).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

fn input_required() -> ResultType {
    ResultType::InputRequired
}

impl InputRequiredResult {
    /// An interim result with these requests and this state.
    pub fn new(input_requests: Option<InputRequests>, request_state: Option<String>) -> Self {
        InputRequiredResult {
            result_type: ResultType::InputRequired,
            input_requests,
            request_state,
            meta: None,
        }
    }
}

impl Default for InputRequiredResult {
    fn default() -> Self {
        InputRequiredResult::new(None, None)
    }
}

/// The MRTR retry fields that `tools/call`, `prompts/get` and
/// `resources/read` params carry next to their own (`inputResponses`,
/// `requestState`, `_meta`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputResponseRequestParams {
    /// The request `_meta`, kept raw; `tern-proto` reads the reserved keys
    /// (META-C6). Always written; a missing one reads as empty.
    #[serde(rename = "_meta", default)]
    pub meta: Map<String, Value>,
    /// Answers to the previous round's input requests (MRTR-C3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The previous round's `requestState`, echoed unchanged (MRTR-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}
