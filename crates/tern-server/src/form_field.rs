//! The pieces a form is built from: primitive fields and enums (DIGEST
//! §5.1). `#[derive(ElicitForm)]` asks every field type for its schema
//! through [`FormField`]; a type without an impl is a compile-time error.

use serde_json::{Map, Value, json};

/// A type that can be one property of a form-mode schema.
///
/// Implemented for the shapes form mode can express: strings, numbers,
/// integers, booleans, single-select enums (every [`FormEnum`]), `Vec` of
/// such an enum (multi-select) and `Option` of any of them. Everything else
/// (nested structs, `Vec<String>`, maps) has no impl on purpose, so a form
/// the client could not render fails to compile rather than at run time.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a form field",
    note = "form mode allows only strings, numbers, integers, booleans, single-select enums (#[derive(ElicitEnum)]), Vec of such an enum (multi-select), and Option of those"
)]
pub trait FormField {
    /// The property's `PrimitiveSchemaDefinition`, before the field's
    /// `#[form(...)]` attributes (title, bounds, default) are merged in.
    fn field_schema() -> Value;

    /// Whether the property is listed in the form's `required`; `Option`
    /// clears it because serde accepts a missing key for it.
    const REQUIRED: bool = true;
}

/// A closed set of string values: the options of a single- or multi-select
/// field. Implemented by `#[derive(ElicitEnum)]`.
pub trait FormEnum: Sized {
    /// `(value, title)` per variant in declaration order. `value` is what
    /// serde deserialises (after `rename`/`rename_all`); a `title` switches
    /// the select to its titled shape (`oneOf`/`anyOf` of `{const, title}`).
    fn values() -> &'static [(&'static str, Option<&'static str>)];
}

/// Titled options as `[{const, title}]`; a variant without a title shows
/// its value, since the titled shapes require a title on every option.
fn titled_options(values: &[(&str, Option<&str>)]) -> Value {
    values
        .iter()
        .map(|(v, t)| json!({"const": v, "title": t.unwrap_or(v)}))
        .collect()
}

fn is_titled(values: &[(&str, Option<&str>)]) -> bool {
    values.iter().any(|(_, t)| t.is_some())
}

fn plain_values(values: &[(&str, Option<&str>)]) -> Value {
    values.iter().map(|(v, _)| Value::from(*v)).collect()
}

impl<E: FormEnum> FormField for E {
    fn field_schema() -> Value {
        let values = E::values();
        if is_titled(values) {
            json!({"type": "string", "oneOf": titled_options(values)})
        } else {
            json!({"type": "string", "enum": plain_values(values)})
        }
    }
}

impl<E: FormEnum> FormField for Vec<E> {
    fn field_schema() -> Value {
        let values = E::values();
        let items = if is_titled(values) {
            json!({"anyOf": titled_options(values)})
        } else {
            json!({"type": "string", "enum": plain_values(values)})
        };
        json!({"type": "array", "items": items})
    }
}

impl<T: FormField> FormField for Option<T> {
    fn field_schema() -> Value {
        T::field_schema()
    }
    const REQUIRED: bool = false;
}

impl FormField for String {
    fn field_schema() -> Value {
        json!({"type": "string"})
    }
}

impl FormField for bool {
    fn field_schema() -> Value {
        json!({"type": "boolean"})
    }
}

impl FormField for f32 {
    fn field_schema() -> Value {
        json!({"type": "number"})
    }
}

impl FormField for f64 {
    fn field_schema() -> Value {
        json!({"type": "number"})
    }
}

/// Integers narrower than 64 bits carry their range, so an out-of-range
/// answer is refused by schema validation with a pointer to the field
/// instead of failing later in serde.
macro_rules! bounded_integer {
    ($($t:ty),*) => {$(
        impl FormField for $t {
            fn field_schema() -> Value {
                let mut m = Map::new();
                m.insert("type".into(), "integer".into());
                m.insert("minimum".into(), <$t>::MIN.into());
                m.insert("maximum".into(), <$t>::MAX.into());
                Value::Object(m)
            }
        }
    )*};
}
bounded_integer!(i8, i16, i32, u8, u16, u32);

/// 64-bit and wider integers: only unsigned ones get a bound (`minimum:
/// 0`); their upper ends are beyond what JSON numbers carry reliably.
macro_rules! wide_integer {
    ($($t:ty => $schema:tt),*) => {$(
        impl FormField for $t {
            fn field_schema() -> Value {
                json!($schema)
            }
        }
    )*};
}
wide_integer!(
    i64 => {"type": "integer"},
    i128 => {"type": "integer"},
    isize => {"type": "integer"},
    u64 => {"type": "integer", "minimum": 0},
    u128 => {"type": "integer", "minimum": 0},
    usize => {"type": "integer", "minimum": 0}
);
