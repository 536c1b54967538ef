//! A client that calls a tool and answers the server's questions through
//! its own [`InputProvider`]: here a program that fills the forms itself;
//! in an application, the dialogs of its user interface.
//!
//! ```sh
//! cargo run --release -p tern --example client_provider
//! ```
//!
//! It serves the `stdio_form_confirm` example's server over Streamable
//! HTTP on a loopback port, in the same process, and calls `book_room`.
//! The client does the rounds: each `input_required` result goes to the
//! provider, one question at a time, and the retry carries the answers
//! under the server's keys with the server's `requestState`, unchanged.

// An example prints what it did.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tern::client::{BoxFuture, Client, InputContext, InputKinds, InputProvider, Refusal};
use tern::types::{ElicitAction, ElicitRequestFormParams, ElicitResult, ElicitValue};

#[path = "stdio_form_confirm.rs"]
#[allow(dead_code)] // its `main`: this example serves it over HTTP instead
pub(crate) mod rooms;

/// Fills the booking forms as a person named Ada would, and notes what it
/// was asked.
#[derive(Clone, Default)]
pub(crate) struct Ada {
    /// `key: message` of every question, in order.
    pub(crate) asked: Arc<Mutex<Vec<String>>>,
}

impl InputProvider for Ada {
    fn kinds(&self) -> InputKinds {
        // Declared on every request: this client answers forms only, so a
        // server never asks it for a sample or its roots.
        InputKinds::NONE.with_form()
    }

    fn elicit_form(
        &self,
        cx: InputContext,
        params: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        if let Ok(mut asked) = self.asked.lock() {
            asked.push(format!("{}: {}", cx.key, params.message));
        }
        let content: BTreeMap<String, ElicitValue> = match cx.key.as_str() {
            "stay" => BTreeMap::from([
                ("guest".into(), ElicitValue::String("Ada".into())),
                ("nights".into(), ElicitValue::Number(2.into())),
            ]),
            "confirm" => BTreeMap::from([("confirm".into(), ElicitValue::Bool(true))]),
            // Anything else is not ours to answer: decline it.
            _ => return Box::pin(async { Ok(ElicitResult::new(ElicitAction::Decline)) }),
        };
        Box::pin(async move {
            Ok(ElicitResult {
                action: ElicitAction::Accept,
                content: Some(content),
            })
        })
    }
}

/// Serves `server` on a free loopback port, books a room through
/// `provider`, and returns the tool's text.
pub(crate) async fn book(
    server: tern::server::Server,
    provider: Ada,
) -> Result<String, Box<dyn std::error::Error>> {
    let (addr, _serving) = tern::http::spawn(
        "127.0.0.1:0".parse()?,
        server,
        tern::http::HttpOptions::default(),
    )
    .await?;
    let transport = tern::http::HttpTransport::new(&format!("http://{addr}/mcp"))?;
    let client = Client::builder(transport).provider(provider).build();
    let arguments = json!({"city": "Lisbon"});
    let result = client
        .call_tool(
            "book_room",
            arguments.as_object().cloned().unwrap_or_default(),
        )
        .await?;
    let text = serde_json::to_value(&result.content)?[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok(text)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ada = Ada::default();
    let text = book(rooms::builder().build()?, ada.clone()).await?;
    for question in ada.asked.lock().map(|a| a.clone()).unwrap_or_default() {
        println!("asked  {question}");
    }
    println!("result {text}");
    Ok(())
}
