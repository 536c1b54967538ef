//! `tern discover`: a server's versions, capabilities, identity, tools,
//! prompts and resources (DIGEST §3.2, §6).

use std::process::ExitCode;

use serde_json::{Map, Value, json};
use tern::client::{Client, Error, NoInput};
use tern::types::{Prompt, Resource, ResourceTemplate, Tool, meta_keys};

use crate::DiscoverArgs;
use crate::call::runtime;
use crate::exit::usage;
use crate::target;
use crate::ui::{bold, dim, server_name};

/// The most pages read from one list, so a server cannot keep it going
/// forever.
const MAX_PAGES: usize = 100;

/// `tern discover`.
pub(crate) fn run(mut args: DiscoverArgs) -> Result<ExitCode, String> {
    if let Err(e) = target::settle(&mut args.target, None) {
        return Ok(usage(&e));
    }
    if let Err(e) = crate::servers::resolve(&mut args.target) {
        return Ok(usage(&e));
    }
    runtime()?.block_on(async move {
        // Discovery asks nothing of the person: declare nothing (META-A1).
        let conn = match target::connect(&args.target, NoInput).await {
            Ok(c) => c,
            Err(e) => return Ok(usage(&e)),
        };
        let r = discover(&conn.client, args.json).await;
        conn.close().await;
        match r {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(e) => {
                eprintln!(
                    "tern: {}",
                    crate::exit::explain(&e, args.target.url.as_deref())
                );
                let code = if e.is_remote() {
                    crate::exit::FAILED
                } else {
                    crate::exit::PROTOCOL
                };
                Ok(crate::exit::code(code))
            }
        }
    })
}

/// Whether an error is the server saying it has no such method.
fn not_found(e: &Error) -> bool {
    e.remote_error()
        .is_some_and(|o| o.code == tern::types::ErrorCode::METHOD_NOT_FOUND)
}

/// Every page of a list method, bounded by [`MAX_PAGES`]. Without
/// `server/discover` (`$guess`), a list the server does not answer is
/// empty.
macro_rules! all_pages {
    ($client:expr, $method:ident, $field:ident, $guess:expr) => {{
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let page = match $client.$method(cursor.as_deref()).await {
                Ok(p) => p,
                Err(e) if $guess && not_found(&e) => break,
                Err(e) => return Err(e),
            };
            items.extend(page.$field);
            match page.next_cursor {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        items
    }};
}

/// Fetches and prints everything the server offers.
async fn discover(client: &Client, as_json: bool) -> Result<(), Error> {
    let (d, guess) = match client.discover().await {
        Ok(d) => (d, false),
        // No server/discover: ask every list method, and show what answers.
        Err(e) if not_found(&e) => {
            eprintln!(
                "{}",
                dim("tern: the server has no server/discover; asking its list methods instead")
            );
            let mut d = tern::types::DiscoverResult::default();
            d.capabilities.tools = Some(Default::default());
            d.capabilities.prompts = Some(Default::default());
            d.capabilities.resources = Some(Default::default());
            (d, true)
        }
        Err(e) => return Err(e),
    };
    let caps = &d.capabilities;
    let tools: Vec<Tool> = if caps.tools.is_some() {
        all_pages!(client, list_tools, tools, guess)
    } else {
        Vec::new()
    };
    let prompts: Vec<Prompt> = if caps.prompts.is_some() {
        all_pages!(client, list_prompts, prompts, guess)
    } else {
        Vec::new()
    };
    let (resources, templates): (Vec<Resource>, Vec<ResourceTemplate>) = if caps.resources.is_some()
    {
        (
            all_pages!(client, list_resources, resources, guess),
            all_pages!(client, list_resource_templates, resource_templates, guess),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let info = d
        .meta
        .as_ref()
        .and_then(|m| m.get(meta_keys::SERVER_INFO))
        .cloned();
    // A legacy server is listed from its initialize answer (COMPAT-C5).
    let era = match client.era() {
        Some(tern::client::Era::Legacy) => "legacy",
        _ => "modern",
    };
    if as_json {
        let out = json!({
            "era": era,
            "serverInfo": info,
            "supportedVersions": d.supported_versions,
            "capabilities": d.capabilities,
            "instructions": d.instructions,
            "tools": tools,
            "prompts": prompts,
            "resources": resources,
            "resourceTemplates": templates,
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return Ok(());
    }
    println!(
        "{} {}",
        bold("server:"),
        server_name(info.as_ref()).unwrap_or_else(|| "(unnamed)".to_owned())
    );
    let session = if era == "legacy" {
        dim(" (a 2025-11-25 session opened with initialize)")
    } else {
        String::new()
    };
    println!(
        "{} {}{session}",
        bold("versions:"),
        d.supported_versions.join(", ")
    );
    let cap_names: Vec<String> = serde_json::to_value(&d.capabilities)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .map(|m| {
            m.into_iter()
                .map(|(k, v)| match v.as_object() {
                    Some(o) if !o.is_empty() => format!("{k} {}", Value::Object(o.clone())),
                    _ => k,
                })
                .collect()
        })
        .unwrap_or_default();
    println!("{} {}", bold("capabilities:"), cap_names.join(", "));
    if let Some(i) = &d.instructions {
        println!("{} {i}", bold("instructions:"));
    }
    println!();
    println!("{} ({})", bold("tools"), tools.len());
    for t in &tools {
        println!(
            "  {}  {}",
            bold(&t.name),
            t.description.as_deref().unwrap_or("")
        );
        for line in parameters(&t.input_schema) {
            println!("      {line}");
        }
    }
    println!();
    println!("{} ({})", bold("prompts"), prompts.len());
    for p in &prompts {
        println!(
            "  {}  {}",
            bold(&p.name),
            p.description.as_deref().unwrap_or("")
        );
        for a in p.arguments.iter().flatten() {
            let req = if a.required == Some(true) {
                ", required"
            } else {
                ""
            };
            println!(
                "      {}: string{req}  {}",
                a.name,
                dim(a.description.as_deref().unwrap_or(""))
            );
        }
    }
    println!();
    println!(
        "{} ({})",
        bold("resources"),
        resources.len() + templates.len()
    );
    for r in &resources {
        let mime = r
            .mime_type
            .as_deref()
            .map(|m| format!(" [{m}]"))
            .unwrap_or_default();
        println!(
            "  {}{mime}  {}",
            bold(&r.uri),
            r.description.as_deref().unwrap_or(&r.name)
        );
    }
    for t in &templates {
        println!(
            "  {} (template)  {}",
            bold(&t.uri_template),
            t.description.as_deref().unwrap_or(&t.name)
        );
    }
    Ok(())
}

/// One line per parameter of an input schema: name, type, required,
/// description.
fn parameters(schema: &Map<String, Value>) -> Vec<String> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, p)| {
            let ty = match p.get("type") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("|"),
                _ => "any".to_owned(),
            };
            let req = if required.contains(&name.as_str()) {
                ", required"
            } else {
                ""
            };
            let desc = p.get("description").and_then(Value::as_str).unwrap_or("");
            format!("{name}: {ty}{req}  {}", dim(desc))
        })
        .collect()
}
