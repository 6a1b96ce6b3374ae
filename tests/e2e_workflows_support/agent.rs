//! The model behind the real agent CLI in `tests/e2e_workflows.rs`: scripted turns for the
//! scripted model server (`agent_support/`), written as a model that follows the candidate
//! prompt would answer. Every conversation first reads the context file the prompt names (so a
//! server serving several jobs at once tells them apart by the candidate id in it); then its
//! script works on the candidate with real `Bash` calls — a commit pushed as the bot
//! (`fixtures/e2e-workflows/bin/e2e-push`; an after-care `refresh` pushes the merge of the base),
//! the draft pull request, smoke and sweep runs
//! (`fixtures/e2e-workflows/bin/gh` against the fake GitHub), a note through the context's
//! `note-command`, the outcome file — and ends with the `StructuredOutput` call the outcome
//! schema (`--json-schema`) asks for, holding what it wrote to the outcome file.

use std::time::Duration;

use serde_json::{Value, json};

use super::agent_support::{Conversations, ModelRequest, Turn};

/// What the prompt says before the context file's path.
const CONTEXT_LABEL: &str = "The context file (read it first): ";

/// The text an agent that stops at once gives as its answer (klaud's Stop hook blocks it).
pub const EARLY_STOP: &str = "I have read the context file; stopping here.";

/// The context file's path, as the prompt (the first user message) gives it.
pub fn context_path(request: &ModelRequest) -> String {
    request
        .user_texts()
        .iter()
        .find_map(|text| {
            text.lines()
                .find_map(|line| line.trim_start_matches("- ").strip_prefix(CONTEXT_LABEL))
                .map(|path| path.trim().to_string())
        })
        .unwrap_or_else(|| {
            panic!(
                "the prompt names no context file: {:?}",
                request.user_texts()
            )
        })
}

/// A `Bash` call whose command may use `$ctx` (the context file) and `$branch` (the session's
/// branch, read from it); `command` is run after those are set.
pub fn in_session(command: &str, description: &str) -> Turn {
    let (command, description) = (command.to_string(), description.to_string());
    Turn::from_request(move |request| {
        let context = context_path(request).replace('\'', r"'\''");
        Turn::bash(
            format!(
                "set -euo pipefail\nctx='{context}'\nbranch=\"$(jq -r .branch \"$ctx\")\"\n{command}"
            ),
            description.clone(),
        )
    })
}

/// The turn every conversation starts with: the context file, read.
pub fn read_the_context() -> Turn {
    in_session("cat \"$ctx\"", "Read the session's context file")
}

/// The key of a candidate's script: how its context file names it.
pub fn candidate_key(candidate: &str) -> String {
    format!("\"candidate-id\": \"{candidate}\"")
}

/// Conversations that open by reading the context, each candidate then following its script.
pub fn conversations(scripts: Vec<(&str, Vec<Turn>)>) -> Conversations {
    scripts.into_iter().fold(
        Conversations::opening([read_the_context()]),
        |conversations, (candidate, turns)| conversations.script(candidate_key(candidate), turns),
    )
}

/// One commit on the session's branch (created from the default branch), pushed as the bot.
pub fn push_a_commit(candidate: &str) -> Turn {
    in_session(
        &format!(
            "mkdir -p configs\nprintf 'tuned: true\\n' > configs/{candidate}.yaml\n\
             e2e-push \"$branch\" -m 'Tune {candidate}' configs/{candidate}.yaml"
        ),
        "Commit the change and push the branch",
    )
}

/// The one draft pull request of the session.
pub fn open_the_draft(candidate: &str) -> Turn {
    in_session(
        &format!(
            "gh pr create --draft --base main --head \"$branch\" --title 'klaud: tune {candidate}' \
             --body 'Tunes {candidate} as the candidate asks.'"
        ),
        "Open the draft pull request",
    )
}

/// The session's pull request as GitHub shows it now (its number, whether it is a draft, its
/// label names), printed.
pub fn look_at_the_pull_request() -> Turn {
    in_session(
        "gh pr list --head \"$branch\" --json number,isDraft,labels \
           --jq '.[0] | {number, isDraft, labels: [.labels[].name]}'",
        "Look at the pull request",
    )
}

/// An after-care `refresh`'s merge of the base (`base.branch` in the context) into the branch,
/// its conflict on the candidate's file resolved (the base's line kept, the branch's tuning
/// after it), pushed as the bot: one merge commit whose parents are the branch's head and the
/// base's.
pub fn merge_the_base() -> Turn {
    in_session(
        "base=\"$(jq -r .base.branch \"$ctx\")\"\n\
         id=\"$(jq -r '.\"candidate-id\"' \"$ctx\")\"\n\
         mkdir -p configs\n\
         printf 'engine: 3\\ntuned: true\\n' > \"configs/$id.yaml\"\n\
         e2e-push \"$branch\" --merge \"$base\" -m \"Merge $base into $branch\" \"configs/$id.yaml\"",
        "Merge the base into the branch, resolve the conflict and push",
    )
}

/// A run of the context's `smoke` or `sweep` workflow on the branch.
pub fn start_a_run(kind: &str) -> Turn {
    in_session(
        &format!("gh workflow run \"$(jq -r .workflows.{kind} \"$ctx\")\" --ref \"$branch\""),
        &format!("Start a {kind} run on the pushed head"),
    )
}

/// Waits until the newest sweep on the branch ended, and prints how.
pub fn wait_for_the_sweep() -> Turn {
    in_session(
        "sweep=\"$(jq -r .workflows.sweep \"$ctx\")\"\n\
         for _ in $(seq 1 120); do\n\
           state=\"$(gh run list --workflow \"$sweep\" --branch \"$branch\" --json status,conclusion \
             --jq '.[0] | .status + \" \" + .conclusion')\"\n\
           [ \"${state%% *}\" = completed ] && break\n\
           sleep 0.5\n\
         done\n\
         echo \"sweep: $state\"",
        "Wait for the sweep",
    )
}

/// A note through the context's `note-command`, its text in a file beside the outcome file.
pub fn leave_a_note(text: &str) -> Turn {
    let quoted = text.replace('\'', r"'\''");
    in_session(
        &format!(
            "note=\"$(dirname \"$(jq -r '.\"outcome-file\"' \"$ctx\")\")/note.md\"\n\
             printf '%s\\n' '{quoted}' > \"$note\"\n\
             command=\"$(jq -r '.\"note-command\"' \"$ctx\")\"\n\
             eval \"${{command% FILE}} \\\"\\$note\\\"\""
        ),
        "Leave a note in the session log",
    )
}

/// The outcome file: `outcome` with the pull request and the newest run of `run_workflow`
/// (`smoke` or `sweep`) on the branch, also printed.
pub fn write_the_outcome(outcome: &str, run_workflow: &str) -> Turn {
    in_session(
        &format!(
            "pull=\"$(gh pr list --head \"$branch\" --state open --json number --jq '.[0].number')\"\n\
             run=\"$(gh run list --workflow \"$(jq -r .workflows.{run_workflow} \"$ctx\")\" \
               --branch \"$branch\" --json databaseId --jq '.[0].databaseId')\"\n\
             jq -n --arg outcome {outcome} --argjson pull \"$pull\" --argjson run \"$run\" \
               '{{outcome: $outcome, phase: \"{run_workflow}\", \"pull-request\": $pull, \"run-ids\": [$run]}}' \
               | tee \"$(jq -r '.\"outcome-file\"' \"$ctx\")\""
        ),
        "Write the outcome file",
    )
}

/// The `StructuredOutput` call with what the previous command printed (the outcome file).
pub fn answer_the_outcome() -> Turn {
    Turn::from_request(|request| {
        let printed = request.last_tool_result();
        let outcome: Value = serde_json::from_str(printed.trim()).unwrap_or_else(
            |_| json!({"outcome": "no-outcome", "reason-code": "outcome-not-printed"}),
        );
        Turn::tool("StructuredOutput", outcome)
    })
}

/// A session that ends `validated`: commit, draft, sweep, wait, note, outcome. With
/// `stops_early`, the agent first tries to stop with no outcome.
pub fn validated(candidate: &str, stops_early: bool, note: &str) -> Vec<Turn> {
    let mut turns = Vec::new();
    if stops_early {
        turns.push(Turn::text(EARLY_STOP));
    }
    turns.extend([
        push_a_commit(candidate),
        open_the_draft(candidate),
        start_a_run("sweep"),
        wait_for_the_sweep(),
        leave_a_note(note),
        write_the_outcome("validated", "sweep"),
        answer_the_outcome(),
    ]);
    turns
}

/// A session that ends `failed` after a smoke run it started (left running).
pub fn failed(candidate: &str) -> Vec<Turn> {
    vec![
        push_a_commit(candidate),
        open_the_draft(candidate),
        start_a_run("smoke"),
        write_the_outcome("failed", "smoke"),
        answer_the_outcome(),
    ]
}

/// A session whose time runs out: commit, draft, a smoke run, a note, and then a model answer
/// later than `silence`.
pub fn runs_out_of_time(candidate: &str, note: &str, silence: Duration) -> Vec<Turn> {
    vec![
        push_a_commit(candidate),
        open_the_draft(candidate),
        start_a_run("smoke"),
        leave_a_note(note),
        Turn::text("The smoke run is going; the sweep comes next.").delay(silence),
    ]
}

/// A resumed session that ends `validated`: the branch and the draft exist, so a sweep, the
/// wait and the outcome.
pub fn resumed_validated() -> Vec<Turn> {
    vec![
        start_a_run("sweep"),
        wait_for_the_sweep(),
        write_the_outcome("validated", "sweep"),
        answer_the_outcome(),
    ]
}

/// An after-care `refresh` that ends `validated`: it looks at its pull request, merges the base
/// into the branch and pushes, then sweeps the new head, waits and reports.
pub fn refreshed() -> Vec<Turn> {
    vec![
        look_at_the_pull_request(),
        merge_the_base(),
        start_a_run("sweep"),
        wait_for_the_sweep(),
        write_the_outcome("validated", "sweep"),
        answer_the_outcome(),
    ]
}
