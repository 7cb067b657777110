//! What a session offers the client to choose: Splice's permission modes as the session's
//! modes, the model as a session option, and the slash commands.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, SessionMode, SessionModeState, UnstructuredCommandInput,
};

use splice_core::permissions::PermissionMode;
use splice_core::provider::pricing::PriceTable;
use splice_core::provider::{ProviderConfig, ProviderKind};

/// The id of the model option.
pub(crate) const MODEL_OPTION: &str = "model";

/// The session's modes: `ask`, `accept-edits`, `auto`, `read-only`.
pub(crate) fn modes(current: PermissionMode) -> SessionModeState {
    let described = |mode: PermissionMode| match mode {
        PermissionMode::Ask => ("Ask", "Reads run; writes and commands ask first"),
        PermissionMode::AcceptEdits => ("Accept edits", "Writes run; commands ask first"),
        PermissionMode::Auto => ("Auto", "Everything runs, commands inside the sandbox"),
        PermissionMode::ReadOnly => ("Read-only", "Writes and commands are denied"),
    };
    let available = PermissionMode::NAMES
        .iter()
        .filter_map(|name| PermissionMode::parse(name))
        .map(|mode| {
            let (name, description) = described(mode);
            SessionMode::new(mode.as_str(), name).description(description.to_string())
        })
        .collect();
    SessionModeState::new(current.as_str(), available)
}

/// The model a session runs, and the ones it could switch to.
pub(crate) struct Models {
    pub(crate) provider: ProviderConfig,
    pub(crate) pricing: PriceTable,
}

impl Models {
    pub(crate) fn set(&mut self, provider: ProviderConfig) {
        self.provider = provider;
    }

    /// The context window of the model now.
    pub(crate) fn window(&self) -> u64 {
        self.pricing
            .context_window(self.provider.kind.name(), &self.provider.api_model)
    }

    /// The model as `provider/model`, the option's value.
    pub(crate) fn current(&self) -> String {
        format!("{}/{}", self.provider.kind.name(), self.provider.model)
    }

    /// The model option: the model now, each provider's default model whose key is set, and
    /// the aliases of those providers.
    pub(crate) fn options(&self) -> Vec<SessionConfigOption> {
        let mut values = vec![self.current()];
        for kind in [
            ProviderKind::Anthropic,
            ProviderKind::OpenAi,
            ProviderKind::Gemini,
        ] {
            if kind == self.provider.kind || kind.has_key() {
                values.push(format!("{}/{}", kind.name(), kind.default_model()));
            }
        }
        for (alias, kind) in [
            ("sonnet", ProviderKind::Anthropic),
            ("opus", ProviderKind::Anthropic),
            ("haiku", ProviderKind::Anthropic),
            ("gpt", ProviderKind::OpenAi),
            ("mini", ProviderKind::OpenAi),
        ] {
            if kind == self.provider.kind || kind.has_key() {
                values.push(format!("{}/{alias}", kind.name()));
            }
        }
        let mut seen = std::collections::HashSet::new();
        values.retain(|v| seen.insert(v.clone()));
        let choices: Vec<SessionConfigSelectOption> = values
            .into_iter()
            .map(|v| SessionConfigSelectOption::new(v.clone(), v))
            .collect();
        vec![
            SessionConfigOption::select(MODEL_OPTION, "Model", self.current(), choices)
                .category(SessionConfigOptionCategory::Model)
                .description("The model the next requests use".to_string()),
        ]
    }
}

/// The built-in commands a prompt may start with, and the project's and user's custom ones.
pub(crate) fn commands(root: &Path) -> Vec<AvailableCommand> {
    let hint = |text: &str| {
        Some(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new(text),
        ))
    };
    let mut list = vec![
        AvailableCommand::new(
            "compact",
            "Summarise the older conversation to free context",
        ),
        AvailableCommand::new("clear", "Forget the conversation and start afresh"),
        AvailableCommand::new("model", "Switch the model the next requests use")
            .input(hint("MODEL or PROVIDER/MODEL")),
        AvailableCommand::new("tier", "Choose the pipeline tier of the next requests")
            .input(hint("auto, light, standard or full")),
    ];
    let user = splice_core::slash::user_commands_dir();
    let catalog = splice_core::slash::Catalog::load(root, user.as_deref());
    for command in catalog.commands {
        let mut available = AvailableCommand::new(command.name.clone(), command.help());
        if let Some(text) = &command.matter.argument_hint {
            available = available.input(hint(text));
        }
        list.push(available);
    }
    list
}
