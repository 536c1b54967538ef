//! `#[derive(ElicitForm)]`.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::token::Comma;
use syn::{Data, DeriveInput, Field, Fields, GenericArgument, PathArguments, Type};

use crate::attr::{self, DefaultValue, FieldAttrs};
use crate::serde_attr;

/// What a field type is, as far as its spelling tells. Only used to reject
/// attributes that cannot apply; the schema itself always comes from the
/// type's `FormField` impl, which sees through aliases.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Str,
    Int,
    Num,
    Bool,
    Multi,
    /// An enum, an alias or a hand-written `FormField`: anything goes.
    Unknown,
}

fn shape(ty: &Type) -> Shape {
    match ty {
        Type::Group(g) => shape(&g.elem),
        Type::Paren(p) => shape(&p.elem),
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return Shape::Unknown;
            };
            let name = last.ident.to_string();
            match name.as_str() {
                "Option" => match &last.arguments {
                    PathArguments::AngleBracketed(a) => match a.args.first() {
                        Some(GenericArgument::Type(inner)) if a.args.len() == 1 => shape(inner),
                        _ => Shape::Unknown,
                    },
                    _ => Shape::Unknown,
                },
                "String" => Shape::Str,
                "bool" => Shape::Bool,
                "f32" | "f64" => Shape::Num,
                "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64"
                | "u128" | "usize" => Shape::Int,
                "Vec" => Shape::Multi,
                _ => Shape::Unknown,
            }
        }
        _ => Shape::Unknown,
    }
}

fn misuse(span: Span, key: &str, applies_to: &str) -> syn::Error {
    syn::Error::new(span, format!("`{key}` applies only to {applies_to} fields"))
}

/// Refuses keys that cannot apply to the field's shape, where the spelling
/// of the type makes the shape known.
fn check_applicable(a: &FieldAttrs, shape: Shape) -> syn::Result<()> {
    use Shape::*;
    // (key, where it was written, the shapes it cannot apply to, what it fits)
    let rules = [
        (
            "min_length",
            (a.min_length.as_ref().map(|s| s.span)),
            [Int, Num, Bool, Multi],
            "string",
        ),
        (
            "max_length",
            (a.max_length.as_ref().map(|s| s.span)),
            [Int, Num, Bool, Multi],
            "string",
        ),
        (
            "format",
            (a.format.as_ref().map(|s| s.span)),
            [Int, Num, Bool, Multi],
            "string",
        ),
        (
            "minimum",
            (a.minimum.as_ref().map(|s| s.span)),
            [Str, Bool, Multi, Multi],
            "number and integer",
        ),
        (
            "maximum",
            (a.maximum.as_ref().map(|s| s.span)),
            [Str, Bool, Multi, Multi],
            "number and integer",
        ),
        (
            "min_items",
            (a.min_items.as_ref().map(|s| s.span)),
            [Str, Int, Num, Bool],
            "multi-select (Vec)",
        ),
        (
            "max_items",
            (a.max_items.as_ref().map(|s| s.span)),
            [Str, Int, Num, Bool],
            "multi-select (Vec)",
        ),
    ];
    for (key, at, refused, fits) in rules {
        if let Some(at) = at
            && refused.contains(&shape)
        {
            return Err(misuse(at, key, fits));
        }
    }
    if let Some(d) = &a.default {
        let fits = matches!(
            (shape, &d.value),
            (Unknown, _)
                | (Str, DefaultValue::Str(_))
                | (Int, DefaultValue::Num(attr::Num::Int(_)))
                | (Num, DefaultValue::Num(_))
                | (Bool, DefaultValue::Bool(_))
                | (Multi, DefaultValue::List(_))
        );
        let want = match shape {
            Str => "a string",
            Int => "an integer",
            Num => "a number",
            Bool => "a boolean",
            Multi => "a list of strings, like [\"a\", \"b\"]",
            Unknown => "",
        };
        if !fits {
            return Err(syn::Error::new(
                d.span,
                format!("the default of this field must be {want}"),
            ));
        }
    }
    Ok(())
}

/// Statements that put the attributes' keywords into the property object
/// `__tern_m`; the type's own schema is built first, so attributes win.
fn overrides(a: &FieldAttrs, doc: Option<String>) -> syn::Result<Vec<TokenStream>> {
    let __k = attr::krate();
    let v = quote!(#__k::__private::serde_json::Value);
    let mut out = Vec::new();
    let mut put = |key: &str, value: TokenStream| {
        out.push(quote!(__tern_m.insert(::std::string::String::from(#key), #value);));
    };
    if let Some(t) = &a.title {
        let t = &t.value;
        put("title", quote!(#v::from(#t)));
    }
    if let Some(d) = a.description.as_ref().map(|d| d.value.clone()).or(doc) {
        put("description", quote!(#v::from(#d)));
    }
    for (key, slot) in [
        ("minLength", &a.min_length),
        ("maxLength", &a.max_length),
        ("minItems", &a.min_items),
        ("maxItems", &a.max_items),
    ] {
        if let Some(n) = slot {
            let n = n.value;
            put(key, quote!(#v::from(#n)));
        }
    }
    if let Some(f) = &a.format {
        let f = &f.value;
        put("format", quote!(#v::from(#f)));
    }
    for (key, slot) in [("minimum", &a.minimum), ("maximum", &a.maximum)] {
        if let Some(n) = slot {
            put(key, n.value.to_value(n.span)?);
        }
    }
    if let Some(d) = &a.default {
        put("default", d.value.to_value(d.span)?);
    }
    Ok(out)
}

/// The struct's named fields, or why the derive cannot apply: each field is
/// one form property, so tuple structs, enums, unions and generics are
/// refused.
fn named_fields(input: &DeriveInput) -> syn::Result<&Punctuated<Field, Comma>> {
    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => &named.named,
            Fields::Unnamed(_) | Fields::Unit => {
                return Err(syn::Error::new_spanned(
                    &input.ident,
                    "#[derive(ElicitForm)] needs a struct with named fields: each field is one form property",
                ));
            }
        },
        Data::Enum(_) => {
            return Err(syn::Error::new_spanned(
                &input.ident,
                "#[derive(ElicitForm)] needs a struct with named fields; for select options use #[derive(ElicitEnum)]",
            ));
        }
        Data::Union(_) => {
            return Err(syn::Error::new_spanned(
                &input.ident,
                "#[derive(ElicitForm)] needs a struct with named fields",
            ));
        }
    };
    if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "#[derive(ElicitForm)] does not support generics",
        ));
    }
    Ok(fields)
}

/// The block adding one field's property (and its `required` entry) to the
/// schema; `None` for a field serde skips.
fn property(
    field: &Field,
    container: &serde_attr::Container,
    names: &mut HashSet<String>,
    krate: &TokenStream,
) -> syn::Result<Option<TokenStream>> {
    let v = quote!(#krate::__private::serde_json::Value);
    let serde = serde_attr::item(&field.attrs)?;
    let attrs = attr::field(&field.attrs)?;
    if serde.skip {
        // serde never reads it, so the form must not ask for it.
        return Ok(None);
    }
    let ty = &field.ty;
    check_applicable(&attrs, shape(ty))?;
    let ident = field
        .ident
        .as_ref()
        .map(|i| i.unraw().to_string())
        .unwrap_or_default();
    let name = serde.rename.unwrap_or_else(|| {
        container
            .rename_all
            .map_or_else(|| ident.clone(), |r| r.field(&ident))
    });
    if !names.insert(name.clone()) {
        return Err(syn::Error::new_spanned(
            field,
            format!("two fields have the property name {name:?}"),
        ));
    }
    let sets = overrides(&attrs, attr::doc(&field.attrs))?;
    // Spanned on the type so a missing `FormField` impl points at it.
    let schema = quote_spanned!(ty.span()=> <#ty as #krate::FormField>::field_schema());
    let required = quote_spanned!(ty.span()=> <#ty as #krate::FormField>::REQUIRED);
    let merge = (!sets.is_empty()).then(|| {
        quote! {
            if let #v::Object(__tern_m) = &mut __tern_p {
                #(#sets)*
            }
        }
    });
    // A serde default makes the key optional whatever the type says.
    let require = (!serde.default && !container.default).then(|| {
        quote! {
            if #required {
                __tern_required.push(#v::from(#name));
            }
        }
    });
    let bind = if merge.is_some() {
        quote!(let mut __tern_p)
    } else {
        quote!(let __tern_p)
    };
    Ok(Some(quote! {
        {
            #bind = #schema;
            #merge
            __tern_properties.insert(::std::string::String::from(#name), __tern_p);
            #require
        }
    }))
}

pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let fields = named_fields(input)?;
    attr::refuse(
        &input.attrs,
        "#[form(...)] goes on fields, not on the struct",
    )?;
    let __k = attr::krate();
    let container = serde_attr::container(&input.attrs, "ElicitForm")?;

    let v = quote!(#__k::__private::serde_json::Value);
    let mut names = HashSet::new();
    let mut blocks = Vec::new();
    for field in fields {
        if let Some(block) = property(field, &container, &mut names, &__k)? {
            blocks.push(block);
        }
    }

    let ident = &input.ident;
    Ok(quote! {
        impl #__k::ElicitForm for #ident {
            fn requested_schema() -> #v {
                let mut __tern_properties = #__k::__private::serde_json::Map::new();
                #[allow(unused_mut)]
                let mut __tern_required: ::std::vec::Vec<#v> = ::std::vec::Vec::new();
                #(#blocks)*
                let mut __tern_schema = #__k::__private::serde_json::Map::new();
                __tern_schema.insert(::std::string::String::from("type"), #v::from("object"));
                __tern_schema.insert(::std::string::String::from("properties"), #v::Object(__tern_properties));
                // `required` may be omitted (DIGEST §5.1); an empty list is
                // left out since older JSON Schema drafts refuse it.
                if !__tern_required.is_empty() {
                    __tern_schema.insert(::std::string::String::from("required"), #v::Array(__tern_required));
                }
                #v::Object(__tern_schema)
            }

            // One per type (generics are refused above, so a static in
            // this impl is this type's alone).
            fn __typed() -> &'static #__k::__private::TypedSchema {
                static TYPED: ::std::sync::OnceLock<#__k::__private::TypedSchema> =
                    ::std::sync::OnceLock::new();
                TYPED.get_or_init(|| {
                    #__k::__private::TypedSchema::of(<Self as #__k::ElicitForm>::requested_schema())
                })
            }
        }
    })
}
