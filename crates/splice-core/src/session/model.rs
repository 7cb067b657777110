//! The session's model: which provider and model a name picks (`/model`), and what to say
//! when the provider's key is missing.

use thiserror::Error;

use crate::provider::{InvalidSetting, ProviderConfig, ProviderKind, alias_owner};

/// What `/model NAME` comes to: the provider to use, or why not.
pub type ModelChoice = Result<ProviderConfig, ModelError>;

/// Why `/model NAME` changes nothing; its text is the message to show.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ModelError {
    #[error("unknown provider `{0}`")]
    UnknownProvider(String),
    /// The provider cannot be set up; `owner` is the other provider that `model` (an alias)
    /// belongs to, whose key is not set.
    #[error("{error}{}", owner_hint(*owner, model))]
    Unusable {
        error: InvalidSetting,
        owner: Option<ProviderKind>,
        model: String,
    },
}

/// How to name the provider an alias belongs to, when its key is what is missing.
fn owner_hint(owner: Option<ProviderKind>, model: &str) -> String {
    match owner {
        Some(owner) => format!(
            " ({} is not set; /model {}/{model} names the provider)",
            owner.key_var(),
            owner.name()
        ),
        None => String::new(),
    }
}

/// The provider for `name` (`MODEL`, an alias, or `PROVIDER/MODEL`) from `current`: an alias
/// of another provider switches to it when `has_key` says its key is set, and is refused with
/// the reason otherwise. The error is the message to show.
pub fn resolve_model(
    current: &ProviderConfig,
    name: &str,
    has_key: impl Fn(ProviderKind) -> bool,
) -> ModelChoice {
    // `provider/model` switches the provider too.
    let (kind, model) = match name.split_once('/') {
        Some((provider, model)) => match ProviderKind::parse(provider) {
            Some(kind) => (kind, model),
            None => return Err(ModelError::UnknownProvider(provider.to_string())),
        },
        None => match alias_owner(name) {
            Some(owner) if owner != current.kind && has_key(owner) => (owner, name),
            _ => (current.kind, name),
        },
    };
    ProviderConfig::from_env(kind, Some(model)).map_err(|error| ModelError::Unusable {
        error,
        owner: alias_owner(model).filter(|owner| *owner != kind),
        model: model.to_string(),
    })
}

/// [`resolve_model`] with the keys set in the environment.
pub fn resolve_model_from_env(current: &ProviderConfig, name: &str) -> ModelChoice {
    resolve_model(current, name, ProviderKind::has_key)
}

/// What to do about a provider without its key, when its own service is the target (a server
/// at another base URL may need none); `None` when nothing is missing.
pub fn missing_key_hint(provider: &ProviderConfig) -> Option<String> {
    if provider.api_key.is_some() || !provider.is_vendor_host() {
        return None;
    }
    let var = provider.kind.key_var();
    let others: Vec<String> = [
        ProviderKind::OpenAi,
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
    ]
    .into_iter()
    .filter(|k| *k != provider.kind)
    .map(|k| format!("--provider {} with {}", k.name(), k.key_var()))
    .collect();
    Some(format!(
        "{var} is not set, so every request to {} will fail. Set {var} and start Splice again, \
         or use {}; for an OpenAI-compatible server, set OPENAI_BASE_URL (a local one needs no \
         key).",
        provider.kind.name(),
        others.join(" or ")
    ))
}
