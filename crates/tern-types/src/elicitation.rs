//! Elicitation: asking the user through the client (DIGEST §5.1).
//!
//! Used only inside MRTR input requests (`elicitation/create`).

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Number, Value};

/// Params of an `elicitation/create` input request: form mode or URL mode,
/// told apart by `mode` (absent means form, ELIC-4).
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitRequestParams {
    /// Form mode: the client shows a form built from a restricted schema.
    Form(ElicitRequestFormParams),
    /// URL mode: the client asks the user to open a URL (ELIC-10).
    Url(ElicitRequestUrlParams),
}

impl Serialize for ElicitRequestParams {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitRequestParams::Form(p) => p.serialize(s),
            ElicitRequestParams::Url(p) => Tagged {
                tag_name: "url",
                inner: p,
            }
            .serialize(s),
        }
    }
}

/// Writes `"mode": "url"` next to the URL params.
#[derive(Serialize)]
struct Tagged<'a, T> {
    #[serde(rename = "mode")]
    tag_name: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let mode = match map.get("mode") {
            None => "form",
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(de::Error::custom(format_args!(
                    "elicitation mode must be a string, found {other}"
                )));
            }
        };
        match mode {
            "form" => ElicitRequestFormParams::deserialize(Value::Object(map))
                .map(ElicitRequestParams::Form)
                .map_err(de::Error::custom),
            "url" => ElicitRequestUrlParams::deserialize(Value::Object(map))
                .map(ElicitRequestParams::Url)
                .map_err(de::Error::custom),
            other => Err(de::Error::custom(format_args!(
                "unknown elicitation mode {other:?}"
            ))),
        }
    }
}

/// The explicit `"mode": "form"` marker. Absent means form too (ELIC-4); the
/// field is kept so that messages round-trip as they were written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElicitFormMode {
    /// `"form"`.
    #[default]
    #[serde(rename = "form")]
    Form,
}

/// Form-mode elicitation params. Never for secrets (ELIC-S8).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// `Some` when `"mode": "form"` was written; `None` means form as well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ElicitFormMode>,
    /// What is being asked, for the user.
    pub message: String,
    /// The form: a flat object schema of primitive fields.
    pub requested_schema: ElicitationSchema,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// URL-mode elicitation params (`"mode": "url"`, written by
/// [`ElicitRequestParams`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitRequestUrlParams {
    /// Why the user should open the URL.
    pub message: String,
    /// The URL to open; no secrets or personal data in it.
    pub url: String,
    /// Extension metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// The restricted schema of a form (`requestedSchema`): `type: "object"`
/// with flat primitive properties.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawElicitationSchema", into = "RawElicitationSchema")]
pub struct ElicitationSchema {
    /// The `$schema` dialect, when named.
    pub schema: Option<String>,
    /// The fields, by property name.
    pub properties: BTreeMap<String, PrimitiveSchemaDefinition>,
    /// The names of the fields that must be filled.
    pub required: Option<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
struct RawElicitationSchema {
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    schema: Option<String>,
    #[serde(rename = "type")]
    kind: String,
    properties: BTreeMap<String, PrimitiveSchemaDefinition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    required: Option<Vec<String>>,
}

impl TryFrom<RawElicitationSchema> for ElicitationSchema {
    type Error = String;
    fn try_from(raw: RawElicitationSchema) -> Result<Self, String> {
        if raw.kind != "object" {
            return Err(format!(
                "requestedSchema type must be \"object\", found {:?}",
                raw.kind
            ));
        }
        Ok(ElicitationSchema {
            schema: raw.schema,
            properties: raw.properties,
            required: raw.required,
        })
    }
}

impl From<ElicitationSchema> for RawElicitationSchema {
    fn from(s: ElicitationSchema) -> Self {
        RawElicitationSchema {
            schema: s.schema,
            kind: "object".to_owned(),
            properties: s.properties,
            required: s.required,
        }
    }
}

/// One field of a form: exactly one of the restricted kinds (DIGEST §5.1).
/// The variant writes and reads `type`; the kind is recognised from `type`
/// and the keywords present (`oneOf`, `enum`, `enumNames`, `items.anyOf`).
#[derive(Clone, Debug, PartialEq)]
pub enum PrimitiveSchemaDefinition {
    /// `type: "string"`, free text.
    String(StringSchema),
    /// `type: "number"` or `"integer"`.
    Number(NumberSchema),
    /// `type: "boolean"`.
    Boolean(BooleanSchema),
    /// `type: "string"` with `enum`.
    UntitledSingleSelect(UntitledSingleSelectEnumSchema),
    /// `type: "string"` with `oneOf` of `{const, title}`.
    TitledSingleSelect(TitledSingleSelectEnumSchema),
    /// `type: "array"` with `items: {type: "string", enum}`.
    UntitledMultiSelect(UntitledMultiSelectEnumSchema),
    /// `type: "array"` with `items: {anyOf: [{const, title}]}`.
    TitledMultiSelect(TitledMultiSelectEnumSchema),
    /// `type: "string"` with `enum` and `enumNames`. **Deprecated**: use
    /// [`PrimitiveSchemaDefinition::TitledSingleSelect`] (MIG-27).
    LegacyTitledEnum(LegacyTitledEnumSchema),
}

/// Writes `"type": <kind>` next to a schema struct that has no `type` field.
#[derive(Serialize)]
struct Typed<'a, T> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

impl Serialize for PrimitiveSchemaDefinition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PrimitiveSchemaDefinition::String(x) => Typed {
                kind: "string",
                inner: x,
            }
            .serialize(s),
            PrimitiveSchemaDefinition::Number(x) => x.serialize(s),
            PrimitiveSchemaDefinition::Boolean(x) => Typed {
                kind: "boolean",
                inner: x,
            }
            .serialize(s),
            PrimitiveSchemaDefinition::UntitledSingleSelect(x) => Typed {
                kind: "string",
                inner: x,
            }
            .serialize(s),
            PrimitiveSchemaDefinition::TitledSingleSelect(x) => Typed {
                kind: "string",
                inner: x,
            }
            .serialize(s),
            PrimitiveSchemaDefinition::UntitledMultiSelect(x) => Typed {
                kind: "array",
                inner: x,
            }
            .serialize(s),
            PrimitiveSchemaDefinition::TitledMultiSelect(x) => Typed {
                kind: "array",
                inner: x,
            }
            .serialize(s),
            PrimitiveSchemaDefinition::LegacyTitledEnum(x) => Typed {
                kind: "string",
                inner: x,
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        fn parse<T: de::DeserializeOwned, E: de::Error>(
            map: Map<String, Value>,
            wrap: fn(T) -> PrimitiveSchemaDefinition,
        ) -> Result<PrimitiveSchemaDefinition, E> {
            T::deserialize(Value::Object(map))
                .map(wrap)
                .map_err(E::custom)
        }
        let map = Map::<String, Value>::deserialize(d)?;
        let kind = match map.get("type") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(de::Error::custom(format_args!(
                    "field schema type must be a string, found {other}"
                )));
            }
            None => return Err(de::Error::missing_field("type")),
        };
        match kind.as_str() {
            "string" if map.contains_key("oneOf") => {
                parse(map, PrimitiveSchemaDefinition::TitledSingleSelect)
            }
            "string" if map.contains_key("enumNames") => {
                parse(map, PrimitiveSchemaDefinition::LegacyTitledEnum)
            }
            "string" if map.contains_key("enum") => {
                parse(map, PrimitiveSchemaDefinition::UntitledSingleSelect)
            }
            "string" => parse(map, PrimitiveSchemaDefinition::String),
            "number" | "integer" => parse(map, PrimitiveSchemaDefinition::Number),
            "boolean" => parse(map, PrimitiveSchemaDefinition::Boolean),
            "array" => {
                let titled = map
                    .get("items")
                    .and_then(Value::as_object)
                    .is_some_and(|items| items.contains_key("anyOf"));
                if titled {
                    parse(map, PrimitiveSchemaDefinition::TitledMultiSelect)
                } else {
                    parse(map, PrimitiveSchemaDefinition::UntitledMultiSelect)
                }
            }
            other => Err(de::Error::custom(format_args!(
                "unsupported field schema type {other:?} (only string, number, integer, boolean, array)"
            ))),
        }
    }
}

/// A free-text field (`type: "string"`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The minimum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// The maximum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// A format the value must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// A value to pre-fill (ELIC-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// The formats a string field may require.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StringFormat {
    /// `"email"`.
    Email,
    /// `"uri"`.
    Uri,
    /// `"date"`.
    Date,
    /// `"date-time"`.
    DateTime,
}

/// A numeric field (`type: "number"` or `"integer"`). Numbers are kept as
/// written (`50` stays an integer).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumberSchema {
    /// `"number"` or `"integer"`.
    #[serde(rename = "type")]
    pub number_type: NumberType,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The smallest allowed value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Number>,
    /// The largest allowed value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Number>,
    /// A value to pre-fill (ELIC-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Number>,
}

/// The `type` of a numeric field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberType {
    /// Any number.
    #[default]
    Number,
    /// A whole number.
    Integer,
}

/// A yes/no field (`type: "boolean"`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BooleanSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A value to pre-fill (ELIC-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
}

/// A single choice among plain strings (`type: "string"`, `enum`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UntitledSingleSelectEnumSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The allowed values.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// A value to pre-fill (ELIC-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A single choice among titled options (`type: "string"`, `oneOf`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options.
    pub one_of: Vec<EnumOption>,
    /// A value to pre-fill (ELIC-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A titled option: `{const, title}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value sent back when chosen.
    #[serde(rename = "const")]
    pub value: String,
    /// The label shown.
    pub title: String,
}

/// Several choices among plain strings (`type: "array"`,
/// `items: {type: "string", enum}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest choices allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// The most choices allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The allowed values.
    pub items: UntitledEnumItems,
    /// Values to pre-select (ELIC-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

/// The `items` of an untitled multi-select: `{type: "string", enum}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawUntitledEnumItems", into = "RawUntitledEnumItems")]
pub struct UntitledEnumItems {
    /// The allowed values.
    pub values: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct RawUntitledEnumItems {
    #[serde(rename = "type")]
    kind: String,
    #[serde(rename = "enum")]
    values: Vec<String>,
}

impl TryFrom<RawUntitledEnumItems> for UntitledEnumItems {
    type Error = String;
    fn try_from(raw: RawUntitledEnumItems) -> Result<Self, String> {
        if raw.kind != "string" {
            return Err(format!(
                "multi-select items type must be \"string\", found {:?}",
                raw.kind
            ));
        }
        Ok(UntitledEnumItems { values: raw.values })
    }
}

impl From<UntitledEnumItems> for RawUntitledEnumItems {
    fn from(items: UntitledEnumItems) -> Self {
        RawUntitledEnumItems {
            kind: "string".to_owned(),
            values: items.values,
        }
    }
}

/// Several choices among titled options (`type: "array"`,
/// `items: {anyOf: [{const, title}]}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest choices allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// The most choices allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The options.
    pub items: TitledEnumItems,
    /// Values to pre-select (ELIC-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

/// The `items` of a titled multi-select: `{anyOf: [{const, title}]}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledEnumItems {
    /// The options.
    pub any_of: Vec<EnumOption>,
}

/// A single choice with parallel `enumNames` labels. **Deprecated**: use
/// [`TitledSingleSelectEnumSchema`] (MIG-27); still parsed and served.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The allowed values.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Labels, parallel to `values`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// A value to pre-fill (ELIC-C5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// The answer to an `elicitation/create` input request. Not a `Result`: it
/// has no `resultType` and travels only in `inputResponses`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values, by field name: for `accept` in form mode.
    /// `null` reads as absent (ELIC-A1) and is never written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<BTreeMap<String, ElicitValue>>,
}

impl ElicitResult {
    /// An answer with this action and no content.
    pub fn new(action: ElicitAction) -> Self {
        ElicitResult {
            action,
            content: None,
        }
    }
}

/// What the user did with an elicitation. `Decline` and `Cancel` are answers
/// too (MRTR-C3); servers handle them gracefully (ELIC-S12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted (form) or agreed to open the URL (URL mode, ELIC-10).
    Accept,
    /// Explicitly said no.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// One submitted form value.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitValue {
    /// A string or single-select field.
    String(String),
    /// A `number` or `integer` field: any JSON number, fractions included
    /// (DIGEST §11 A6; `schema.json` allows integers only).
    Number(Number),
    /// A boolean field.
    Bool(bool),
    /// A multi-select field.
    StringArray(Vec<String>),
}

impl Serialize for ElicitValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ElicitValue::String(v) => s.serialize_str(v),
            ElicitValue::Number(v) => v.serialize(s),
            ElicitValue::Bool(v) => s.serialize_bool(*v),
            ElicitValue::StringArray(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ElicitValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => Ok(ElicitValue::String(s)),
            Value::Number(n) => Ok(ElicitValue::Number(n)),
            Value::Bool(b) => Ok(ElicitValue::Bool(b)),
            Value::Array(items) => items
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s),
                    other => Err(de::Error::custom(format_args!(
                        "multi-select values must be strings, found {other}"
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(ElicitValue::StringArray),
            other => Err(de::Error::custom(format_args!(
                "an elicitation value must be a string, number, boolean or string array, found {other}"
            ))),
        }
    }
}
