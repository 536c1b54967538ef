//! `#[derive(ElicitEnum)]`.

use std::collections::HashSet;

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::{Data, DeriveInput, Fields};

use crate::{attr, serde_attr};

pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(ElicitEnum)] needs an enum of unit variants; for a form use #[derive(ElicitForm)]",
        ));
    };
    if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "#[derive(ElicitEnum)] does not support generics",
        ));
    }
    attr::refuse(
        &input.attrs,
        "#[form(...)] goes on variants, not on the enum",
    )?;
    let __k = attr::krate();
    let container = serde_attr::container(&input.attrs, "ElicitEnum")?;

    let mut seen = HashSet::new();
    let mut values = Vec::new();
    for v in &data.variants {
        if !matches!(v.fields, Fields::Unit) {
            return Err(syn::Error::new_spanned(
                &v.fields,
                "a select option cannot carry data: form mode sends each option as a plain string",
            ));
        }
        let title = attr::variant_title(&v.attrs)?;
        let serde = serde_attr::item(&v.attrs)?;
        if serde.skip {
            continue;
        }
        let name = v.ident.unraw().to_string();
        let value = serde.rename.unwrap_or_else(|| {
            container
                .rename_all
                .map_or_else(|| name.clone(), |r| r.variant(&name))
        });
        if !seen.insert(value.clone()) {
            return Err(syn::Error::new_spanned(
                &v.ident,
                format!("two options have the value {value:?}"),
            ));
        }
        let title = match title {
            Some(t) => quote!(::std::option::Option::Some(#t)),
            None => quote!(::std::option::Option::None),
        };
        values.push(quote!((#value, #title)));
    }
    if values.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "a select needs at least one option",
        ));
    }

    let ident = &input.ident;
    Ok(quote! {
        impl #__k::FormEnum for #ident {
            fn values() -> &'static [(&'static str, ::std::option::Option<&'static str>)] {
                &[#(#values),*]
            }
        }
    })
}
