//! The session's model: which provider and model a name picks (`/model`), and what to say
//! when the provider's key is missing.

use crate::provider::{ProviderConfig, ProviderKind, alias_owner};

/// What `/model NAME` comes to: the provider to use, or the message saying why not.
pub type ModelChoice = Result<ProviderConfig, String>;

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
            None => return Err(format!("unknown provider `{provider}`")),
        },
        None => match alias_owner(name) {
            Some(owner) if owner != current.kind && has_key(owner) => (owner, name),
            _ => (current.kind, name),
        },
    };
    ProviderConfig::from_env(kind, Some(model)).map_err(|error| {
        let hint = match alias_owner(model) {
            Some(owner) if owner != kind => format!(
                " ({} is not set; /model {}/{model} names the provider)",
                owner.key_var(),
                owner.name()
            ),
            _ => String::new(),
        };
        format!("{error}{hint}")
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
