//! Integration tests: one binary (one link of the dependency tree) with a module per area.

mod support;

mod attack_credentials;
mod attack_git;
mod attack_misc;
mod attack_proc;
mod attack_review;
mod attack_round2;
mod attack_shell;
mod conversation;
mod cost_context;
mod exec_anthropic;
mod exec_openai;
mod hardening_defects;
mod hardening_modal;
mod hardening_panel;
mod hardening_restore;
mod hardening_session;
mod hardening_speed;
mod hardening_types;
mod hardening_ui;
mod input_validation;
mod lifecycle;
mod packages_format;
mod packages_model;
mod packages_runtime;
mod pipeline;
mod registry_client;
mod registry_s3;
mod registry_server;
mod scribiz_host;
mod tools_permissions;
mod tui_login;
mod tui_scribiz_login;
mod tui_tmux;
mod worktree;
