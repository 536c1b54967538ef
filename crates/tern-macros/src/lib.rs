//! Derive macros for Tern.
//!
//! `#[derive(ElicitForm)]` turns a flat Rust struct into the restricted JSON
//! Schema that form-mode elicitation accepts (DIGEST §5.1), and refuses at
//! compile time any shape form mode cannot express.
//! `#[derive(ElicitEnum)]` turns a fieldless enum into the options of a
//! single- or multi-select field.
//!
//! Both are re-exported by `tern-server`. The expansions name tern-server
//! (and its re-exported `serde_json`) as the calling crate does: as
//! `::tern_server` when it depends on tern-server, as `::tern::server` when
//! it depends on the `tern` facade (read from its manifest), or as
//! `#[form(crate = "...")]` on the type says.

use proc_macro::TokenStream;

mod attr;
mod case;
mod enums;
mod form;
mod serde_attr;

/// Derives `tern_server::ElicitForm` for a struct with named fields.
///
/// Every field type must implement `tern_server::FormField`; field
/// attributes `#[form(title, description, min_length, max_length, format,
/// minimum, maximum, min_items, max_items, default)]` refine the property,
/// and a doc comment becomes its description. Property names follow
/// `#[serde(rename)]` and `#[serde(rename_all)]`.
#[proc_macro_derive(ElicitForm, attributes(form, serde))]
pub fn derive_elicit_form(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    form::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `tern_server::FormEnum` for an enum of unit variants: the
/// options of a select field. Values follow `#[serde(rename)]` and
/// `#[serde(rename_all)]`; `#[form(title = "...")]` on a variant gives the
/// option a title.
#[proc_macro_derive(ElicitEnum, attributes(form, serde))]
pub fn derive_elicit_enum(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    enums::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
