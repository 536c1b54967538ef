//! Input providers for tests: [`Ada`] fills every form's `name` with
//! "Ada"; [`Canned`] answers every kind from fixed data and records what
//! it was asked; [`Panicky`] panics, to show a provider bug stays inside its
//! call.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tern_client::{BoxFuture, InputContext, InputKinds, InputProvider, Refusal};
use tern_types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestFormParams,
    ElicitRequestUrlParams, ElicitResult, ElicitValue, ListRootsResult, Role, Root,
};

/// Accepts every form with `{"name": "Ada"}`; declares forms only.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ada;

impl InputProvider for Ada {
    fn kinds(&self) -> InputKinds {
        InputKinds::NONE.with_form()
    }

    fn elicit_form(
        &self,
        _cx: InputContext,
        _p: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        Box::pin(async {
            Ok(ElicitResult {
                action: ElicitAction::Accept,
                content: Some(BTreeMap::from([(
                    "name".to_owned(),
                    ElicitValue::String("Ada".into()),
                )])),
            })
        })
    }
}

/// Declares every kind and panics when asked anything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Panicky;

impl InputProvider for Panicky {
    fn kinds(&self) -> InputKinds {
        InputKinds::ALL
    }

    fn elicit_form(
        &self,
        _cx: InputContext,
        _p: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        Box::pin(async { panic!("a provider bug") })
    }
}

/// A provider that answers forms with the given fields, samples with a
/// fixed text, and lists one root; it can be told to decline or refuse.
#[derive(Clone, Default)]
pub struct Canned {
    /// The kinds it declares (default: form, sampling, roots).
    pub kinds: Option<InputKinds>,
    /// The form fields it accepts with.
    pub form: Vec<(String, ElicitValue)>,
    /// Decline every form instead.
    pub decline: bool,
    /// Refuse every sampling request.
    pub refuse_sampling: bool,
    /// Every request it was asked, in order.
    pub asked: Arc<Mutex<Vec<InputContext>>>,
    /// How long the person takes before listing the roots.
    pub think: std::time::Duration,
}

impl Canned {
    /// A provider that accepts forms with `fields`.
    pub fn accepting(fields: &[(&str, ElicitValue)]) -> Self {
        Canned {
            form: fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
            ..Canned::default()
        }
    }
}

impl InputProvider for Canned {
    fn kinds(&self) -> InputKinds {
        self.kinds
            .unwrap_or(InputKinds::NONE.with_form().with_sampling().with_roots())
    }

    fn elicit_form(
        &self,
        cx: InputContext,
        _params: ElicitRequestFormParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        self.asked.lock().unwrap().push(cx);
        let answer = if self.decline {
            ElicitResult::new(ElicitAction::Decline)
        } else {
            ElicitResult {
                action: ElicitAction::Accept,
                content: Some(self.form.iter().cloned().collect()),
            }
        };
        Box::pin(async move { Ok(answer) })
    }

    fn elicit_url(
        &self,
        cx: InputContext,
        _params: ElicitRequestUrlParams,
    ) -> BoxFuture<'_, Result<ElicitResult, Refusal>> {
        self.asked.lock().unwrap().push(cx);
        let action = if self.decline {
            ElicitAction::Decline
        } else {
            ElicitAction::Accept
        };
        Box::pin(async move { Ok(ElicitResult::new(action)) })
    }

    fn sample(
        &self,
        cx: InputContext,
        _params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, Refusal>> {
        self.asked.lock().unwrap().push(cx);
        let refuse = self.refuse_sampling;
        Box::pin(async move {
            if refuse {
                return Err(Refusal::new("the user rejected the sampling request"));
            }
            Ok(CreateMessageResult {
                role: Role::Assistant,
                content: serde_json::from_value(json!({"type": "text", "text": "Paris"})).unwrap(),
                model: "test-model".into(),
                stop_reason: Some("endTurn".into()),
                meta: None,
            })
        })
    }

    fn list_roots(&self, cx: InputContext) -> BoxFuture<'_, Result<ListRootsResult, Refusal>> {
        self.asked.lock().unwrap().push(cx);
        let think = self.think;
        Box::pin(async move {
            if !think.is_zero() {
                tokio::time::sleep(think).await;
            }
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///work".into(),
                    name: None,
                    meta: None,
                }],
            })
        })
    }
}
