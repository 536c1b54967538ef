//! The few `#[serde(...)]` attributes that change which keys or values serde
//! accepts; the schema has to follow them or the form would ask for keys
//! the struct never reads.

use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, ExprLit, Lit, Meta, Token};

use crate::case::Rule;

/// What serde does to a struct or an enum as a whole.
#[derive(Default)]
pub(crate) struct Container {
    pub(crate) rename_all: Option<Rule>,
    /// `#[serde(default)]` on the struct: every field may be missing.
    pub(crate) default: bool,
}

/// What serde does to one field or variant.
#[derive(Default)]
pub(crate) struct Item {
    pub(crate) rename: Option<String>,
    /// Never deserialised (`skip`, `skip_deserializing`, `other`): not
    /// part of the form.
    pub(crate) skip: bool,
    /// `#[serde(default)]`: serde accepts the key missing.
    pub(crate) default: bool,
}

fn serde_metas(attrs: &[Attribute]) -> syn::Result<Vec<Meta>> {
    let mut out = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        out.extend(attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)?);
    }
    Ok(out)
}

fn lit_str(expr: &Expr) -> syn::Result<String> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.value()),
        other => Err(syn::Error::new_spanned(other, "expected a string literal")),
    }
}

/// The deserialize-side name of `rename = "x"` or
/// `rename(deserialize = "x")`; `None` when only `serialize` is renamed.
fn deserialize_name(meta: &Meta) -> syn::Result<Option<String>> {
    match meta {
        Meta::NameValue(nv) => lit_str(&nv.value).map(Some),
        Meta::List(list) => {
            let inner = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)?;
            for m in inner {
                if let Meta::NameValue(nv) = &m
                    && nv.path.is_ident("deserialize")
                {
                    return lit_str(&nv.value).map(Some);
                }
            }
            Ok(None)
        }
        Meta::Path(_) => Ok(None),
    }
}

/// Reads the container attributes; `what` names the derive for errors.
pub(crate) fn container(attrs: &[Attribute], what: &str) -> syn::Result<Container> {
    let mut c = Container::default();
    for meta in serde_metas(attrs)? {
        let path = meta.path();
        if path.is_ident("rename_all") {
            if let Some(name) = deserialize_name(&meta)? {
                c.rename_all = Some(Rule::parse(&name).ok_or_else(|| {
                    syn::Error::new_spanned(&meta, format!("unknown rename_all rule {name:?}"))
                })?);
            }
        } else if path.is_ident("default") {
            c.default = true;
        } else if [
            "transparent",
            "from",
            "try_from",
            "untagged",
            "tag",
            "content",
        ]
        .iter()
        .any(|k| path.is_ident(k))
        {
            // These change what serde reads so much that a derived schema
            // would describe a different shape than the one deserialised.
            return Err(syn::Error::new_spanned(
                &meta,
                format!(
                    "#[derive({what})] does not support this serde attribute: the schema would not match what serde reads"
                ),
            ));
        }
    }
    Ok(c)
}

/// Reads a field's or variant's attributes.
pub(crate) fn item(attrs: &[Attribute]) -> syn::Result<Item> {
    let mut it = Item::default();
    for meta in serde_metas(attrs)? {
        let path = meta.path();
        if path.is_ident("rename") {
            if let Some(name) = deserialize_name(&meta)? {
                it.rename = Some(name);
            }
        } else if path.is_ident("skip")
            || path.is_ident("skip_deserializing")
            || path.is_ident("other")
        {
            it.skip = true;
        } else if path.is_ident("default") {
            it.default = true;
        } else if path.is_ident("flatten") {
            return Err(syn::Error::new_spanned(
                &meta,
                "form mode is flat: #[serde(flatten)] fields cannot be part of a form",
            ));
        }
    }
    Ok(it)
}
