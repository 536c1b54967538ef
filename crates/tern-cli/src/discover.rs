//! `tern discover`: a server's versions, capabilities, identity, tools,
//! prompts and resources (DIGEST §3.2, §6). All of it is the server's
//! text: every name and description is shown safe (one line each), and
//! `--json` escapes what a terminal could obey.

use std::process::ExitCode;

use serde_json::{Map, Value, json};
use tern::client::{Client, Error, NoInput};
use tern::types::{Prompt, Resource, ResourceTemplate, Tool, meta_keys};

use crate::DiscoverArgs;
use crate::call::runtime;
use crate::exit::usage;
use crate::ui::{bold, dim, server_name};
use crate::{safe, target};

/// The most pages read from one list, so a server cannot keep it going
/// forever.
pub(crate) const MAX_PAGES: usize = 100;

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
    // A legacy server is listed from its initialize answer (COMPAT-C5).
    let era = match client.era() {
        Some(tern::client::Era::Legacy) => "legacy",
        _ => "modern",
    };
    let found = Found {
        era,
        d,
        tools,
        prompts,
        resources,
        templates,
    };
    if as_json {
        let out = json!({
            "era": found.era,
            "serverInfo": found.info(),
            "supportedVersions": found.d.supported_versions,
            "capabilities": found.d.capabilities,
            "instructions": found.d.instructions,
            "tools": found.tools,
            "prompts": found.prompts,
            "resources": found.resources,
            "resourceTemplates": found.templates,
        });
        println!("{}", safe::json(&out));
    } else {
        print_found(&found);
    }
    Ok(())
}

/// What a server offers, as discovered.
struct Found {
    era: &'static str,
    d: tern::types::DiscoverResult,
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
}

impl Found {
    /// The server's `serverInfo`, if it gave one.
    fn info(&self) -> Option<Value> {
        self.d
            .meta
            .as_ref()
            .and_then(|m| m.get(meta_keys::SERVER_INFO))
            .cloned()
    }
}

/// Prints what the server offers for a person, every string safe.
fn print_found(found: &Found) {
    let Found {
        era,
        d,
        tools,
        prompts,
        resources,
        templates,
    } = found;
    let era = *era;
    let info = found.info();
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
        safe::line(&d.supported_versions.join(", "))
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
    println!(
        "{} {}",
        bold("capabilities:"),
        safe::line(&cap_names.join(", "))
    );
    if let Some(i) = &d.instructions {
        println!("{} {}", bold("instructions:"), safe::text(i));
    }
    println!();
    println!("{} ({})", bold("tools"), tools.len());
    for t in tools.iter() {
        println!(
            "  {}  {}",
            bold(&safe::line(&t.name)),
            safe::line(t.description.as_deref().unwrap_or(""))
        );
        for line in parameters(&t.input_schema) {
            println!("      {line}");
        }
    }
    println!();
    println!("{} ({})", bold("prompts"), prompts.len());
    for p in prompts.iter() {
        println!(
            "  {}  {}",
            bold(&safe::line(&p.name)),
            safe::line(p.description.as_deref().unwrap_or(""))
        );
        for a in p.arguments.iter().flatten() {
            let req = if a.required == Some(true) {
                ", required"
            } else {
                ""
            };
            println!(
                "      {}: string{req}  {}",
                safe::line(&a.name),
                dim(&safe::line(a.description.as_deref().unwrap_or("")))
            );
        }
    }
    println!();
    println!(
        "{} ({})",
        bold("resources"),
        resources.len() + templates.len()
    );
    for r in resources.iter() {
        let mime = r
            .mime_type
            .as_deref()
            .map(|m| format!(" [{m}]"))
            .unwrap_or_default();
        println!(
            "  {}{}  {}",
            bold(&safe::line(&r.uri)),
            safe::line(&mime),
            safe::line(r.description.as_deref().unwrap_or(&r.name))
        );
    }
    for t in templates.iter() {
        println!(
            "  {} (template)  {}",
            bold(&safe::line(&t.uri_template)),
            safe::line(t.description.as_deref().unwrap_or(&t.name))
        );
    }
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
            format!(
                "{}  {}",
                safe::line(&format!("{name}: {ty}{req}")),
                dim(&safe::line(desc))
            )
        })
        .collect()
}
