//! The real agent CLI (npm `@anthropic-ai/claude-code`, the version the reference workflows
//! pin) run offline against a scripted model server on 127.0.0.1.
//!
//! - [`agent_cli`] installs the CLI once per target directory with `klaud install-cli`
//!   (`install.rs`; the npm registry is the only network these tests use),
//! - [`ModelServer`] answers the CLI's model requests from a script of [`Turn`]s (text, a
//!   `Bash` call, another tool's call such as `StructuredOutput`, or a turn made from the request
//!   it answers), or several CLI runs at once each from its own script ([`Conversations`]),
//!   and records them (`model_server.rs`),
//! - [`AgentRun`] runs `claude -p` with a hermetic environment and a time limit (`run.rs`).
//!
//! Include it as `#[path = "agent_support/mod.rs"] mod agent_support;`.
//!
//! # What CLI 2.1.282 does, as observed against this server
//!
//! Requests, with `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`, `DISABLE_TELEMETRY=1` and
//! `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` (and also without the last two):
//! - `HEAD /api/hello` once at start (a reachability probe; answered 200, empty);
//! - `POST /v1/messages?beta=true`, always `"stream": true`, one per model turn. No
//!   `count_tokens`, no title or quota call, no other path. Agent-loop requests offer every
//!   built-in tool (`Bash` among them, whatever `--allowedTools` says) and carry the same
//!   system prompt each time (a list of text blocks: a billing header, the SDK identity, the
//!   agent instructions).
//! - Side requests exist: a `"type": "prompt"` hook's evaluation is a `POST /v1/messages` with
//!   `"tools": []`, its own system prompt and `output_config.format` a JSON Schema; a subagent
//!   (the `Agent` tool) sends tools but its own system prompt (its billing header says
//!   `cc_is_subagent=true`). So a request is the agent loop's when it offers tools and has the
//!   first such request's system prompt ([`classify`]); the others get [`SIDE_REQUEST_ANSWER`]
//!   and leave the script alone.
//!
//! The conversation each request re-sends (`messages`): first a `user` message whose text
//! blocks are a `<system-reminder>` (commit attribution) and then the prompt; then a `system`
//! message (the CLI's mid-conversation system text: environment, agents, skills); then the
//! turns. The non-assistant side, as [`ModelRequest::user_texts`] reads it:
//! - a `Bash` call's result is a `user` message with one `tool_result` block
//!   (`"content": "(Bash completed with no output)"` for a silent command), followed by a
//!   `system` message `<total_tokens>N tokens left</total_tokens>`;
//! - a Stop hook's `{"decision":"block","reason":R}` becomes a `user` message whose content is
//!   the string `"Stop hook feedback:\nR"`, followed by a `system` message
//!   `Stop hook blocking error from command: "<command>": R`; the CLI then asks the model
//!   again (one more turn);
//! - a `PostToolUse` hook's `hookSpecificOutput.additionalContext` C reaches the model in the
//!   request right after the tool call, in the `system` message after the `tool_result`:
//!   `"PostToolUse:Bash hook additional context: C\n\n<total_tokens>…"` (not in the
//!   `tool_result` itself).
//!
//! A Stop hook's stdin is one JSON object: `session_id`, `transcript_path` (under `HOME`),
//! `cwd`, `prompt_id`, `permission_mode` (`default`), `effort`, `hook_event_name: "Stop"`,
//! `stop_hook_active` (false at the first stop, true at a stop that follows a block),
//! `last_assistant_message` (the text of the turn that ended), `background_tasks`,
//! `session_crons`.
//!
//! The result (`--output-format json`): `num_turns` is the number of agent-loop requests
//! (a block costs one); `subtype`, `is_error`, `terminal_reason`, `result` (the last text),
//! `permission_denials`. With `--output-format stream-json --verbose` (what
//! claude-code-action reads) stdout is one JSON message a line: `system`/`init` (its
//! `session_id`, the tools), the assistant and user messages (`tool_use`, `tool_result`), other
//! `system` messages (e.g. `notification`), and the `result` last. Every model request's
//! `metadata.user_id` is itself JSON and holds the same `session_id`
//! ([`ModelRequest::session_id`]), which tells runs sharing a server apart.
//!
//! Structured output (`--json-schema S`): a schema naming the 2020-12 meta-schema in `$schema`
//! is refused before any request (exit 1, "--json-schema is not a valid JSON Schema: no schema
//! with key or ref …"). The CLI offers a `StructuredOutput` tool. A turn that ends in text is
//! answered with a user text `[structured-output-enforce] You MUST call the StructuredOutput
//! tool …` (then the Stop hook's feedback, when it blocks). A `StructuredOutput` call ends the
//! run: the result holds `structured_output` (and `result` its JSON text), and the Stop hook,
//! run once more (no `last_assistant_message`), cannot keep the agent going — its block is not
//! honoured.
//!
//! Permissions: in print mode `--allowedTools Bash` is enough for `Bash` commands to run,
//! also ones writing outside the working directory; without it a write is denied (the
//! `tool_result` has `is_error: true` and the result lists the call in `permission_denials`,
//! yet `subtype` is `success`). `--permission-mode bypassPermissions` is refused when running
//! as root (exit 1, "--dangerously-skip-permissions cannot be used with root/sudo privileges
//! for security reasons"), so the harness does not use it.
//!
//! Processes: the CLI runs each `Bash` command as `/bin/bash -c …` in a new session (its own
//! process group), with the CLI's environment plus its own variables; killing the CLI's group
//! leaves such a command running, which is why [`AgentRun`] also kills every process carrying
//! its [`TRACKING_VARIABLE`]. The CLI writes its transcripts and shell snapshots under
//! `$HOME/.claude`.

#![allow(dead_code, unused_imports)] // each including test uses a part of it
#![allow(clippy::disallowed_methods)] // a test harness spawns the CLI and reads PATH

#[path = "../step_support/mod.rs"]
mod step_support;

mod install;
mod model_server;
mod run;

pub use install::{AGENT_CLI_VERSION, agent_cli, install_directory};
pub use model_server::{
    Conversations, LoggedRequest, ModelRequest, ModelServer, RequestKind, SCRIPT_EXHAUSTED_ANSWER,
    SIDE_REQUEST_ANSWER, Turn, classify,
};
pub use run::{
    AgentOutcome, AgentRun, DEFAULT_TIMEOUT, Finished, TRACKING_VARIABLE, kill_tracked, run_bounded,
};
