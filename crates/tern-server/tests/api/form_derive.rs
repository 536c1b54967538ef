//! `#[derive(ElicitForm)]` and `#[derive(ElicitEnum)]`: exact schemas, the
//! server's own form check, a serde round trip, and the compile errors.

use serde::Deserialize;
use serde_json::{Value, json};
use tern_server::{ElicitEnum, ElicitForm, FormEnum, FormField, check_form_schema};

#[derive(Debug, PartialEq, Deserialize, ElicitEnum)]
#[serde(rename_all = "snake_case")]
enum Plan {
    Free,
    ProTeam,
    #[serde(rename = "ent")]
    Enterprise,
}

#[derive(Debug, PartialEq, Deserialize, ElicitEnum)]
#[serde(rename_all = "kebab-case")]
enum Topic {
    #[form(title = "Release notes")]
    ReleaseNotes,
    #[form(title = "Security advisories")]
    Security,
    // Untitled next to titled ones: its value doubles as its title.
    Misc,
}

#[derive(Debug, PartialEq, Deserialize, ElicitEnum)]
enum Color {
    Red,
    Green,
}

/// Every field kind form mode has.
#[derive(Debug, PartialEq, Deserialize, ElicitForm)]
struct Signup {
    /// The name shown
    /// to other users.
    #[form(title = "Name", min_length = 1, max_length = 64)]
    name: String,
    #[form(format = "email", description = "Where we write to")]
    email: String,
    #[form(minimum = 13, maximum = 130)]
    age: u8,
    #[form(minimum = -1.5, maximum = 2.5, default = 0.5)]
    ratio: f64,
    big: i64,
    count: u64,
    #[form(default = true)]
    newsletter: bool,
    #[form(default = "free")]
    plan: Plan,
    topic: Topic,
    #[form(min_items = 1, max_items = 2, default = ["red"])]
    colors: Vec<Color>,
    topics: Vec<Topic>,
    nickname: Option<String>,
    #[form(format = "date")]
    birthday: Option<String>,
    favourite: Option<Color>,
    #[serde(default)]
    extras: Vec<Color>,
    #[serde(skip)]
    internal: u32,
    r#type: String,
}

#[test]
fn every_field_kind_has_its_exact_schema() {
    let want = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 1, "maxLength": 64,
                     "description": "The name shown to other users."},
            "email": {"type": "string", "format": "email", "description": "Where we write to"},
            "age": {"type": "integer", "minimum": 13, "maximum": 130},
            "ratio": {"type": "number", "minimum": -1.5, "maximum": 2.5, "default": 0.5},
            "big": {"type": "integer"},
            "count": {"type": "integer", "minimum": 0},
            "newsletter": {"type": "boolean", "default": true},
            "plan": {"type": "string", "enum": ["free", "pro_team", "ent"], "default": "free"},
            "topic": {"type": "string", "oneOf": [
                {"const": "release-notes", "title": "Release notes"},
                {"const": "security", "title": "Security advisories"},
                {"const": "misc", "title": "misc"}]},
            "colors": {"type": "array", "minItems": 1, "maxItems": 2, "default": ["red"],
                       "items": {"type": "string", "enum": ["Red", "Green"]}},
            "topics": {"type": "array", "items": {"anyOf": [
                {"const": "release-notes", "title": "Release notes"},
                {"const": "security", "title": "Security advisories"},
                {"const": "misc", "title": "misc"}]}},
            "nickname": {"type": "string"},
            "birthday": {"type": "string", "format": "date"},
            "favourite": {"type": "string", "enum": ["Red", "Green"]},
            "extras": {"type": "array", "items": {"type": "string", "enum": ["Red", "Green"]}},
            "type": {"type": "string"},
        },
        "required": ["name", "email", "age", "ratio", "big", "count", "newsletter", "plan",
                     "topic", "colors", "topics", "type"],
    });
    assert_eq!(Signup::requested_schema(), want);
    check_form_schema(&Signup::requested_schema()).expect("passes the server's form check");
}

#[derive(Debug, PartialEq, Deserialize, ElicitForm)]
#[serde(rename_all = "camelCase")]
struct Contact {
    first_name: String,
    #[serde(rename = "surname")]
    last_name: String,
    phone_number: Option<String>,
}

#[test]
fn rename_all_and_rename_follow_serde() {
    let want = json!({
        "type": "object",
        "properties": {
            "firstName": {"type": "string"},
            "surname": {"type": "string"},
            "phoneNumber": {"type": "string"},
        },
        "required": ["firstName", "surname"],
    });
    assert_eq!(Contact::requested_schema(), want);
    check_form_schema(&want).expect("passes the server's form check");
    let c: Contact =
        serde_json::from_value(json!({"firstName": "Ada", "surname": "Lovelace"})).unwrap();
    assert_eq!(c.phone_number, None);
}

macro_rules! rename_case {
    ($name:ident, $rule:literal, $want:literal) => {
        #[derive(Deserialize, ElicitForm)]
        #[serde(rename_all = $rule)]
        #[allow(dead_code)]
        struct $name {
            home_page: String,
        }
        assert_eq!(
            $name::requested_schema()["required"],
            json!([$want]),
            "rename_all = {}",
            $rule
        );
        let _: $name = serde_json::from_value(json!({$want: "x"})).expect($rule);
    };
}

#[test]
fn every_rename_all_rule_matches_serde() {
    rename_case!(Lower, "lowercase", "home_page");
    rename_case!(Upper, "UPPERCASE", "HOME_PAGE");
    rename_case!(Pascal, "PascalCase", "HomePage");
    rename_case!(Camel, "camelCase", "homePage");
    rename_case!(Snake, "snake_case", "home_page");
    rename_case!(Screaming, "SCREAMING_SNAKE_CASE", "HOME_PAGE");
    rename_case!(Kebab, "kebab-case", "home-page");
    rename_case!(ScreamingKebab, "SCREAMING-KEBAB-CASE", "HOME-PAGE");
}

#[test]
fn enum_values_follow_serde() {
    assert_eq!(
        Plan::values(),
        &[("free", None), ("pro_team", None), ("ent", None)]
    );
    for (value, _) in Plan::values().iter().chain(Topic::values()) {
        let v = Value::from(*value);
        assert!(
            serde_json::from_value::<Plan>(v.clone()).is_ok()
                || serde_json::from_value::<Topic>(v).is_ok(),
            "{value} deserialises"
        );
    }
    assert_eq!(
        <Option<Plan> as FormField>::field_schema(),
        Plan::field_schema()
    );
    const { assert!(!<Option<Plan> as FormField>::REQUIRED) };
    const { assert!(<Vec<Plan> as FormField>::REQUIRED) };
}

#[derive(Debug, PartialEq, Deserialize, ElicitForm)]
#[serde(default)]
struct AllOptional {
    note: String,
}

impl Default for AllOptional {
    fn default() -> Self {
        AllOptional {
            note: "none".into(),
        }
    }
}

#[derive(Debug, PartialEq, Deserialize, ElicitForm)]
struct Confirm {}

#[test]
fn no_required_keys_leaves_required_out() {
    let want = json!({"type": "object", "properties": {"note": {"type": "string"}}});
    assert_eq!(AllOptional::requested_schema(), want);
    assert_eq!(
        Confirm::requested_schema(),
        json!({"type": "object", "properties": {}})
    );
    check_form_schema(&Confirm::requested_schema()).unwrap();
}

#[test]
fn primitive_schemas() {
    assert_eq!(String::field_schema(), json!({"type": "string"}));
    assert_eq!(bool::field_schema(), json!({"type": "boolean"}));
    assert_eq!(f32::field_schema(), json!({"type": "number"}));
    assert_eq!(
        i16::field_schema(),
        json!({"type": "integer", "minimum": -32768, "maximum": 32767})
    );
    assert_eq!(
        u32::field_schema(),
        json!({"type": "integer", "minimum": 0, "maximum": 4294967295u32})
    );
    assert_eq!(
        usize::field_schema(),
        json!({"type": "integer", "minimum": 0})
    );
    assert_eq!(isize::field_schema(), json!({"type": "integer"}));
}

#[test]
fn a_fitting_answer_validates_and_deserialises() {
    let schema = Signup::requested_schema();
    let answer = json!({
        "name": "Ada", "email": "ada@example.com", "age": 36, "ratio": 1.25, "big": -7,
        "count": 3, "newsletter": false, "plan": "pro_team", "topic": "release-notes",
        "colors": ["Green", "Red"], "topics": [], "birthday": "1815-12-10",
        "favourite": "Red", "type": "admin",
    });
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the schema compiles");
    assert!(validator.is_valid(&answer));
    let got: Signup = serde_json::from_value(answer).expect("deserialises");
    assert_eq!(
        got,
        Signup {
            name: "Ada".into(),
            email: "ada@example.com".into(),
            age: 36,
            ratio: 1.25,
            big: -7,
            count: 3,
            newsletter: false,
            plan: Plan::ProTeam,
            topic: Topic::ReleaseNotes,
            colors: vec![Color::Green, Color::Red],
            topics: vec![],
            nickname: None,
            birthday: Some("1815-12-10".into()),
            favourite: Some(Color::Red),
            extras: vec![],
            internal: 0,
            r#type: "admin".into(),
        }
    );

    // What the schema refuses, serde would have refused or misread too.
    for bad in [
        json!({"age": 300}),
        json!({"plan": "gold"}),
        json!({"colors": []}),
        json!({"colors": ["Blue"]}),
        json!({"email": "not an address"}),
        json!({"name": ""}),
    ] {
        let mut a = validator_answer();
        a.as_object_mut()
            .unwrap()
            .extend(bad.as_object().unwrap().clone());
        assert!(!validator.is_valid(&a), "{bad} is refused");
    }
}

fn validator_answer() -> Value {
    json!({
        "name": "Ada", "email": "ada@example.com", "age": 36, "ratio": 1.0, "big": 1,
        "count": 0, "newsletter": true, "plan": "free", "topic": "misc", "colors": ["Red"],
        "topics": ["security"], "type": "t",
    })
}

#[test]
fn ui() {
    trybuild::TestCases::new().compile_fail("tests/ui/fail/*.rs");
}
