//! What a front end that asks is to ask the person before the first request.

use crate::hooks::ProjectHooks;
use crate::settings::RunSettings;

/// The project's hooks when the person is to be asked about them: there are some, and they
/// are neither trusted (`--trust-project-hooks`) nor approved as they are now.
pub fn project_hooks_to_ask(settings: &RunSettings) -> Option<&ProjectHooks> {
    let hooks = &settings.hooks;
    let project = hooks.project.as_ref().filter(|_| !hooks.trust_project)?;
    let root = crate::mcp::approval::canonical_root(&settings.cwd);
    let approved =
        crate::hooks::approval::is_approved(&settings.layout, &root, &project.fingerprint);
    (!approved).then_some(project)
}
