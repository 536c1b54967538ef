//! `#[form(...)]` attributes: parsed with spans so a misuse points at the
//! key that is wrong.

use proc_macro2::{Literal, Span, TokenStream};
use quote::quote;
use syn::meta::ParseNestedMeta;
use syn::punctuated::Punctuated;
use syn::{Attribute, Lit, LitInt, LitStr, Token};

/// The keys a field may carry; listed in the error for an unknown key.
const FIELD_KEYS: &str = "title, description, min_length, max_length, format, minimum, maximum, min_items, max_items, default";

/// A number as written: kept as its kind so `minimum = 1` stays an integer
/// in the JSON.
#[derive(Clone, Copy)]
pub(crate) enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            // Only compared for min <= max; precision past 2^53 is moot.
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// A `serde_json::Value` expression for the number.
    pub(crate) fn to_value(self, span: Span) -> syn::Result<TokenStream> {
        let lit = match self {
            Num::Int(i) if i >= 0 => match u64::try_from(i) {
                Ok(u) => Literal::u64_suffixed(u),
                Err(_) => {
                    return Err(syn::Error::new(
                        span,
                        "number does not fit in a JSON integer",
                    ));
                }
            },
            Num::Int(i) => match i64::try_from(i) {
                Ok(s) => Literal::i64_suffixed(s),
                Err(_) => {
                    return Err(syn::Error::new(
                        span,
                        "number does not fit in a JSON integer",
                    ));
                }
            },
            Num::Float(f) if f.is_finite() => Literal::f64_suffixed(f),
            Num::Float(_) => return Err(syn::Error::new(span, "number must be finite")),
        };
        let k = krate();
        Ok(quote!(#k::__private::serde_json::Value::from(#lit)))
    }
}

/// A `default = ...` literal.
pub(crate) enum DefaultValue {
    Str(String),
    Num(Num),
    Bool(bool),
    List(Vec<String>),
}

impl DefaultValue {
    pub(crate) fn to_value(&self, span: Span) -> syn::Result<TokenStream> {
        let k = krate();
        let v = quote!(#k::__private::serde_json::Value);
        Ok(match self {
            DefaultValue::Str(s) => quote!(#v::from(#s)),
            DefaultValue::Num(n) => n.to_value(span)?,
            DefaultValue::Bool(b) => quote!(#v::from(#b)),
            DefaultValue::List(items) => {
                quote!(#v::Array(::std::vec![#(#v::from(#items)),*]))
            }
        })
    }
}

/// A parsed value with the span of its key, for later errors.
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// Everything `#[form(...)]` can say about a field.
#[derive(Default)]
pub(crate) struct FieldAttrs {
    pub(crate) title: Option<Spanned<String>>,
    pub(crate) description: Option<Spanned<String>>,
    pub(crate) min_length: Option<Spanned<u64>>,
    pub(crate) max_length: Option<Spanned<u64>>,
    pub(crate) format: Option<Spanned<String>>,
    pub(crate) minimum: Option<Spanned<Num>>,
    pub(crate) maximum: Option<Spanned<Num>>,
    pub(crate) min_items: Option<Spanned<u64>>,
    pub(crate) max_items: Option<Spanned<u64>>,
    pub(crate) default: Option<Spanned<DefaultValue>>,
}

fn set<T>(slot: &mut Option<Spanned<T>>, meta: &ParseNestedMeta<'_>, value: T) -> syn::Result<()> {
    if slot.is_some() {
        return Err(meta.error("duplicate form attribute"));
    }
    *slot = Some(Spanned {
        value,
        span: meta
            .path
            .get_ident()
            .map_or_else(Span::call_site, |i| i.span()),
    });
    Ok(())
}

fn parse_num(meta: &ParseNestedMeta<'_>) -> syn::Result<Num> {
    let input = meta.value()?;
    let neg = input.parse::<Option<Token![-]>>()?.is_some();
    match input.parse::<Lit>()? {
        Lit::Int(i) => i
            .base10_parse::<i128>()
            .map(|n| Num::Int(if neg { -n } else { n })),
        Lit::Float(f) => f
            .base10_parse::<f64>()
            .map(|n| Num::Float(if neg { -n } else { n })),
        other => Err(syn::Error::new_spanned(other, "expected a number")),
    }
}

fn parse_default(meta: &ParseNestedMeta<'_>) -> syn::Result<DefaultValue> {
    let input = meta.value()?;
    if input.peek(syn::token::Bracket) {
        let content;
        syn::bracketed!(content in input);
        let items = Punctuated::<LitStr, Token![,]>::parse_terminated(&content)?;
        return Ok(DefaultValue::List(
            items.iter().map(LitStr::value).collect(),
        ));
    }
    if input.peek(Token![-]) {
        return parse_num(meta).map(DefaultValue::Num);
    }
    match input.parse::<Lit>()? {
        Lit::Str(s) => Ok(DefaultValue::Str(s.value())),
        Lit::Bool(b) => Ok(DefaultValue::Bool(b.value)),
        Lit::Int(i) => Ok(DefaultValue::Num(Num::Int(i.base10_parse()?))),
        Lit::Float(f) => Ok(DefaultValue::Num(Num::Float(f.base10_parse()?))),
        other => Err(syn::Error::new_spanned(
            other,
            "expected a string, number or boolean literal, or a list of strings",
        )),
    }
}

/// Reads every `#[form(...)]` on a field.
pub(crate) fn field(attrs: &[Attribute]) -> syn::Result<FieldAttrs> {
    let mut a = FieldAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("form")) {
        attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "title" => {
                    let v = meta.value()?.parse::<LitStr>()?.value();
                    set(&mut a.title, &meta, v)
                }
                "description" => {
                    let v = meta.value()?.parse::<LitStr>()?.value();
                    set(&mut a.description, &meta, v)
                }
                "format" => {
                    let lit = meta.value()?.parse::<LitStr>()?;
                    let v = lit.value();
                    // The only formats DIGEST §5.1 allows; others would be
                    // ignored or refused by clients.
                    if !matches!(v.as_str(), "email" | "uri" | "date" | "date-time") {
                        return Err(syn::Error::new_spanned(
                            lit,
                            "format must be one of \"email\", \"uri\", \"date\", \"date-time\"",
                        ));
                    }
                    set(&mut a.format, &meta, v)
                }
                "min_length" | "max_length" | "min_items" | "max_items" => {
                    let v = meta.value()?.parse::<LitInt>()?.base10_parse::<u64>()?;
                    let slot = match key.as_str() {
                        "min_length" => &mut a.min_length,
                        "max_length" => &mut a.max_length,
                        "min_items" => &mut a.min_items,
                        _ => &mut a.max_items,
                    };
                    set(slot, &meta, v)
                }
                "minimum" => {
                    let v = parse_num(&meta)?;
                    set(&mut a.minimum, &meta, v)
                }
                "maximum" => {
                    let v = parse_num(&meta)?;
                    set(&mut a.maximum, &meta, v)
                }
                "default" => {
                    let v = parse_default(&meta)?;
                    set(&mut a.default, &meta, v)
                }
                _ => Err(meta.error(format!(
                    "unknown form attribute; expected one of: {FIELD_KEYS}"
                ))),
            }
        })?;
    }
    check_bounds(&a.min_length, &a.max_length, "min_length", "max_length")?;
    check_bounds(&a.min_items, &a.max_items, "min_items", "max_items")?;
    if let (Some(lo), Some(hi)) = (&a.minimum, &a.maximum)
        && lo.value.as_f64() > hi.value.as_f64()
    {
        return Err(syn::Error::new(hi.span, "maximum is below minimum"));
    }
    Ok(a)
}

fn check_bounds(
    lo: &Option<Spanned<u64>>,
    hi: &Option<Spanned<u64>>,
    l: &str,
    h: &str,
) -> syn::Result<()> {
    if let (Some(lo), Some(hi)) = (lo, hi)
        && lo.value > hi.value
    {
        return Err(syn::Error::new(hi.span, format!("{h} is below {l}")));
    }
    Ok(())
}

/// Reads a variant's `#[form(title = "...")]`, the only key a variant has.
pub(crate) fn variant_title(attrs: &[Attribute]) -> syn::Result<Option<String>> {
    let mut title = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("form")) {
        attr.parse_nested_meta(|meta| {
            if !meta.path.is_ident("title") {
                return Err(meta.error("unknown form attribute on a variant; expected: title"));
            }
            let v = meta.value()?.parse::<LitStr>()?.value();
            if title.replace(v).is_some() {
                return Err(meta.error("duplicate form attribute"));
            }
            Ok(())
        })?;
    }
    Ok(title)
}

/// `#[form(...)]` where none is meaningful (on the struct or enum itself).
pub(crate) fn refuse(attrs: &[Attribute], why: &str) -> syn::Result<()> {
    let mut path: Option<syn::Path> = None;
    for a in attrs.iter().filter(|a| a.path().is_ident("form")) {
        a.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") && path.is_none() {
                let s: LitStr = meta.value()?.parse()?;
                path = Some(s.parse()?);
                Ok(())
            } else {
                Err(syn::Error::new_spanned(a, why))
            }
        })?;
    }
    KRATE.with(|k| {
        *k.borrow_mut() = match path {
            Some(p) => quote!(#p).to_string(),
            None => default_krate(),
        };
    });
    Ok(())
}

/// How the calling crate names tern-server when the type does not say:
/// `::tern_server` if it depends on it, else `::tern::server` if it depends
/// on the facade (under whatever name it gave either), read from its
/// manifest once per compilation.
fn default_krate() -> String {
    static FOUND: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let path = FOUND.get_or_init(|| {
        let pkg = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
        match pkg.as_str() {
            "tern-server" => return "::tern_server".into(),
            // The facade's own doc tests (the README) take the paved path.
            "tern" => return "::tern::server".into(),
            _ => {}
        }
        let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(|d| std::path::Path::new(&d).join("Cargo.toml"))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| t.parse::<toml::Table>().ok())
            .unwrap_or_default();
        let named = |wanted: &str| -> Option<String> {
            ["dependencies", "dev-dependencies"]
                .iter()
                .find_map(|section| {
                    let deps = manifest.get(*section)?.as_table()?;
                    deps.iter().find_map(|(key, spec)| {
                        let package = spec.get("package").and_then(toml::Value::as_str);
                        (package.unwrap_or(key) == wanted).then(|| key.replace('-', "_"))
                    })
                })
        };
        match (named("tern-server"), named("tern")) {
            (Some(k), _) => format!("::{k}"),
            (None, Some(k)) => format!("::{k}::server"),
            (None, None) => "::tern_server".into(),
        }
    });
    path.clone()
}

thread_local! {
    /// The path the expansion names tern-server by: what
    /// `#[form(crate = "...")]` says, or what the calling crate's manifest
    /// implies. Set once per derive, before anything expands.
    /// Kept as text: compiler tokens must not outlive the invocation that
    /// made them.
    static KRATE: std::cell::RefCell<String> =
        std::cell::RefCell::new("::tern_server".to_owned());
}

/// The tern-server path for the derive being expanded.
pub(crate) fn krate() -> TokenStream {
    KRATE
        .with(|k| k.borrow().parse())
        .unwrap_or_else(|_| quote!(::tern_server))
}

/// A field's or variant's doc comment as one string: lines trimmed,
/// paragraphs kept, so a rustdoc comment reads well in a client's form.
pub(crate) fn doc(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|s| s.lines().map(|l| l.trim().to_owned()).collect::<Vec<_>>())
        .collect();
    let mut out = String::new();
    let mut blank = false;
    for line in lines {
        if line.is_empty() {
            blank = !out.is_empty();
        } else {
            if blank {
                out.push_str("\n\n");
            } else if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&line);
            blank = false;
        }
    }
    (!out.is_empty()).then_some(out)
}
