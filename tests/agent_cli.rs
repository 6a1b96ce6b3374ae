//! The real agent CLI against the scripted model server (`agent_support/`): a scripted `Bash`
//! call runs, a Stop hook's block reaches the model and buys one more turn, a `PostToolUse`
//! hook's context reaches the next request, side requests leave the script alone, the
//! time limit kills the CLI and the commands it started, and `--max-budget-usd` stops a run
//! whose turns cost more.

#[path = "agent_support/mod.rs"]
mod agent_support;

use std::path::Path;
use std::time::{Duration, Instant};

use agent_support::{
    AgentOutcome, AgentRun, Conversations, ModelServer, RequestKind, Turn, agent_cli,
};
use serde_json::{Value, json};

/// A shell script at `path` (made executable).
fn write_script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `{"hooks": {EVENT: [{"matcher"?, "hooks": [{"type": "command", "command": …}]}]}}`.
fn command_hook(event: &str, matcher: Option<&str>, command: &Path) -> Value {
    let mut group = json!({"hooks": [{"type": "command", "command": command, "timeout": 30}]});
    if let Some(matcher) = matcher {
        group["matcher"] = json!(matcher);
    }
    json!({"hooks": {event: [group]}})
}

/// The run succeeded as `claude-code-action` counts success, in `turns` model turns.
fn assert_succeeded(outcome: &AgentOutcome, turns: u64) {
    let result = outcome.result();
    assert_eq!(result["subtype"], "success", "{}", outcome.describe());
    assert_eq!(result["is_error"], false, "{}", outcome.describe());
    assert_eq!(result["num_turns"], turns, "{}", outcome.describe());
    assert_eq!(
        outcome.finished.exit_code,
        Some(0),
        "{}",
        outcome.describe()
    );
    assert!(!outcome.finished.timed_out);
}

/// The server saw the probe and model requests only, and the script was used exactly.
fn assert_script_used_exactly(server: &ModelServer) {
    assert_eq!(server.unknown_requests(), Vec::<String>::new());
    assert_eq!(server.turns_left(), 0);
    assert_eq!(server.answers_after_script(), 0);
}

/// True while `pid` is a live (not zombie) process.
fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let (_, rest) = stat.rsplit_once(')')?;
            Some(!rest.trim_start().starts_with(['Z', 'X']))
        })
        .unwrap_or(false)
}

#[test]
fn a_scripted_bash_call_writes_a_file_and_the_run_succeeds() {
    let work = tempfile::tempdir().unwrap();
    let server = ModelServer::start([
        Turn::bash(
            "printf 'outcome: merged' > outcome.txt",
            "write the outcome",
        ),
        Turn::text("the outcome is written"),
    ]);

    let outcome = AgentRun::new(agent_cli())
        .model_server(&server)
        .prompt("write the outcome file")
        .cwd(work.path())
        .allowed_tools("Bash")
        .timeout(Duration::from_secs(30))
        .run();

    assert_succeeded(&outcome, 2);
    assert_eq!(outcome.result()["result"], "the outcome is written");
    assert_eq!(outcome.result()["permission_denials"], json!([]));
    assert_eq!(
        std::fs::read_to_string(work.path().join("outcome.txt")).unwrap(),
        "outcome: merged"
    );
    assert_script_used_exactly(&server);
    let requests = server.agent_loop_requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[0]
            .user_texts()
            .contains(&"write the outcome file".to_string())
    );
    let tool_use = &requests[1].tool_uses()[0];
    assert_eq!(tool_use["name"], "Bash");
    assert_eq!(
        tool_use["input"]["command"],
        "printf 'outcome: merged' > outcome.txt"
    );
    assert!(
        server
            .user_texts()
            .contains(&"(Bash completed with no output)".to_string()),
        "{:?}",
        server.user_texts()
    );
    assert!(
        server
            .request_log()
            .iter()
            .any(|request| request.kind == RequestKind::Probe && request.uri == "/api/hello")
    );
    assert_eq!(outcome.finished.stragglers, Vec::<u32>::new());
}

#[test]
fn a_stop_hook_that_blocks_once_gets_the_file_written_in_one_more_turn() {
    let world = tempfile::tempdir().unwrap();
    let (work, hook, hook_log) = (
        world.path().join("work"),
        world.path().join("stop-hook"),
        world.path().join("stop-hook.log"),
    );
    std::fs::create_dir(&work).unwrap();
    let target = work.join("X");
    write_script(
        &hook,
        &format!(
            "input=$(cat)\nprintf '%s\\n' \"$input\" >> '{}'\n\
             [ -f '{}' ] || printf '%s' '{{\"decision\":\"block\",\"reason\":\"write the file X\"}}'\n",
            hook_log.display(),
            target.display()
        ),
    );
    let server = ModelServer::start([
        Turn::text("I am done"),
        Turn::bash("printf written > X", "write X"),
        Turn::text("X is written"),
    ]);

    let outcome = AgentRun::new(agent_cli())
        .model_server(&server)
        .prompt("do the work")
        .settings_json(command_hook("Stop", None, &hook))
        .cwd(&work)
        .allowed_tools("Bash")
        .timeout(Duration::from_secs(30))
        .run();

    assert_succeeded(&outcome, 3);
    assert_eq!(outcome.result()["result"], "X is written");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "written");
    assert_script_used_exactly(&server);
    let requests = server.agent_loop_requests();
    assert_eq!(
        requests.len(),
        3,
        "num_turns counts the agent loop's requests"
    );
    let feedback = "Stop hook feedback:\nwrite the file X".to_string();
    assert!(!requests[0].user_texts().contains(&feedback));
    // The block reason is the user message right after the turn that tried to stop.
    let messages = requests[1].messages();
    let stopped = messages
        .iter()
        .position(|message| message["content"] == json!([{"type": "text", "text": "I am done"}]))
        .expect("the ended turn is sent back");
    assert_eq!(messages[stopped + 1]["role"], "user");
    assert_eq!(messages[stopped + 1]["content"], json!(feedback));
    assert!(server.user_texts().contains(&feedback));

    let stops: Vec<Value> = std::fs::read_to_string(&hook_log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(stops.len(), 2, "{stops:?}");
    assert_eq!(stops[0]["hook_event_name"], "Stop");
    assert_eq!(stops[0]["stop_hook_active"], false);
    assert_eq!(stops[0]["last_assistant_message"], "I am done");
    assert_eq!(stops[1]["stop_hook_active"], true);
    assert_eq!(stops[1]["last_assistant_message"], "X is written");
    assert_eq!(stops[0]["cwd"], json!(work));
}

#[test]
fn a_post_tool_use_hook_context_reaches_the_model_in_the_next_request() {
    let world = tempfile::tempdir().unwrap();
    let (hook, hook_log) = (
        world.path().join("post-tool-use-hook"),
        world.path().join("post-tool-use.log"),
    );
    write_script(
        &hook,
        &format!(
            "input=$(cat)\nprintf '%s\\n' \"$input\" >> '{}'\n\
             printf '%s' '{{\"hookSpecificOutput\": {{\"hookEventName\": \"PostToolUse\", \"additionalContext\": \"ctx-marker\"}}}}'\n",
            hook_log.display()
        ),
    );
    let server = ModelServer::start([Turn::bash("echo hello", "say hello"), Turn::text("seen")]);

    let outcome = AgentRun::new(agent_cli())
        .model_server(&server)
        .prompt("say hello")
        .settings_json(command_hook("PostToolUse", Some("Bash"), &hook))
        .allowed_tools("Bash")
        .timeout(Duration::from_secs(30))
        .run();

    assert_succeeded(&outcome, 2);
    assert_script_used_exactly(&server);
    let requests = server.agent_loop_requests();
    let mentions_marker = |texts: Vec<String>| texts.iter().any(|t| t.contains("ctx-marker"));
    assert!(!mentions_marker(requests[0].user_texts()));
    let texts = requests[1].user_texts();
    let result_at = texts
        .iter()
        .position(|text| text == "hello")
        .expect("the tool result");
    assert!(
        texts[result_at + 1].starts_with("PostToolUse:Bash hook additional context: ctx-marker"),
        "{texts:?}"
    );
    let last = requests[1].messages().last().unwrap();
    assert_eq!(last["role"], "system", "the context is a system message");

    let call: Value =
        serde_json::from_str(std::fs::read_to_string(&hook_log).unwrap().trim()).unwrap();
    assert_eq!(call["hook_event_name"], "PostToolUse");
    assert_eq!(call["tool_name"], "Bash");
    assert_eq!(call["tool_input"]["command"], "echo hello");
    assert_eq!(call["tool_response"]["stdout"], "hello");
}

#[test]
fn a_prompt_hook_evaluation_is_a_side_request_and_leaves_the_script_alone() {
    let server = ModelServer::start([Turn::text("finished")]);

    let outcome = AgentRun::new(agent_cli())
        .model_server(&server)
        .prompt("finish")
        .settings_json(json!({"hooks": {"Stop": [{"hooks": [
            {"type": "prompt", "prompt": "Is the work finished? $ARGUMENTS", "timeout": 30}
        ]}]}}))
        .allowed_tools("Bash")
        .timeout(Duration::from_secs(30))
        .run();

    assert_succeeded(&outcome, 1);
    assert_script_used_exactly(&server);
    assert_eq!(server.agent_loop_requests().len(), 1);
    let side = server.side_requests();
    assert_eq!(side.len(), 1);
    assert_eq!(side[0].body["tools"], json!([]));
    assert!(
        side[0]
            .system_text()
            .contains("evaluating a stop-condition hook"),
        "{}",
        side[0].system_text()
    );
    assert_eq!(
        side[0].body["output_config"]["format"]["type"],
        "json_schema"
    );
}

#[test]
fn a_model_answer_later_than_the_time_limit_kills_the_run() {
    let server = ModelServer::start([Turn::text("too late").delay(Duration::from_secs(120))]);

    let outcome = AgentRun::new(agent_cli())
        .model_server(&server)
        .prompt("wait for the model")
        .allowed_tools("Bash")
        // Long enough for the CLI to start and ask on a loaded machine, far below the delay.
        .timeout(Duration::from_secs(20))
        .run();

    assert!(outcome.finished.timed_out, "{}", outcome.describe());
    assert_eq!(outcome.finished.exit_code, None, "killed by a signal");
    assert!(outcome.result.is_none());
    assert!(
        outcome.finished.elapsed < Duration::from_secs(30),
        "{}",
        outcome.describe()
    );
    assert_eq!(server.agent_loop_requests().len(), 1);
    let stopping = Instant::now();
    drop(server);
    assert!(
        stopping.elapsed() < Duration::from_secs(5),
        "the server waited for its delayed answer"
    );
}

#[test]
fn a_bash_command_running_at_the_time_limit_is_killed_with_the_cli() {
    let work = tempfile::tempdir().unwrap();
    let server = ModelServer::start([Turn::bash(
        "echo $$ > shell.pid; sleep 300 & echo $! > sleep.pid; wait",
        "wait a long time",
    )]);

    let outcome = AgentRun::new(agent_cli())
        .model_server(&server)
        .prompt("wait")
        .cwd(work.path())
        .allowed_tools("Bash")
        .timeout(Duration::from_secs(5))
        .run();

    assert!(outcome.finished.timed_out, "{}", outcome.describe());
    let pid = |file: &str| -> u32 {
        let path = work.path().join(file);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|_| panic!("the command did not start in time: {}", outcome.describe()))
            .trim()
            .parse()
            .unwrap()
    };
    let (shell, sleep) = (pid("shell.pid"), pid("sleep.pid"));
    // The command ran in a session of its own: killing the CLI's group alone leaves it.
    assert!(
        outcome.finished.stragglers.contains(&shell),
        "{}",
        outcome.describe()
    );
    assert!(!is_running(shell), "the command's shell {shell} survived");
    assert!(!is_running(sleep), "the command's child {sleep} survived");
}

#[test]
fn the_cli_accepts_the_outcome_schema_session_gives_and_refuses_one_naming_draft_2020_12() {
    let session_schema = klaud::core::outcome_file::structured_output_schema();
    let server = ModelServer::start([Turn::tool(
        "StructuredOutput",
        json!({"outcome": "failed", "phase": "smoke"}),
    )]);
    let outcome = AgentRun::new(agent_cli())
        .model_server(&server)
        .prompt("report the outcome")
        .allowed_tools("Bash")
        .arg("--json-schema")
        .arg(session_schema.to_string())
        .timeout(Duration::from_secs(30))
        .run();
    assert_eq!(
        outcome.finished.exit_code,
        Some(0),
        "{}",
        outcome.describe()
    );
    assert_eq!(
        outcome.result()["structured_output"],
        json!({"outcome": "failed", "phase": "smoke"})
    );

    // The published schema names its draft; the CLI refuses to run with it.
    let published = klaud::core::outcome_file::outcome_schema();
    assert!(published.get("$schema").is_some());
    let server = ModelServer::start([]);
    let refused = AgentRun::new(agent_cli())
        .model_server(&server)
        .prompt("report the outcome")
        .arg("--json-schema")
        .arg(published.to_string())
        .timeout(Duration::from_secs(30))
        .run();
    assert_eq!(
        refused.finished.exit_code,
        Some(1),
        "{}",
        refused.describe()
    );
    assert!(
        refused
            .finished
            .stderr
            .contains("--json-schema is not a valid JSON Schema"),
        "{}",
        refused.describe()
    );
    assert!(server.agent_loop_requests().is_empty());
}

#[test]
fn with_a_json_schema_a_structured_output_call_ends_the_run_whatever_the_stop_hook_answers() {
    let world = tempfile::tempdir().unwrap();
    let (hook, hook_log) = (
        world.path().join("stop-hook"),
        world.path().join("stop-hook.log"),
    );
    // A hook that always blocks.
    write_script(
        &hook,
        &format!(
            "input=$(cat)\nprintf '%s\\n' \"$input\" >> '{}'\n\
             printf '%s' '{{\"decision\":\"block\",\"reason\":\"write the outcome file\"}}'\n",
            hook_log.display()
        ),
    );
    let schema = json!({"type": "object", "required": ["outcome"],
        "properties": {"outcome": {"type": "string"}}});
    let server = ModelServer::start([
        Turn::text("stopping"),
        Turn::tool("StructuredOutput", json!({"outcome": "validated"})),
        Turn::text("never asked for"),
    ]);

    let outcome = AgentRun::new(agent_cli())
        .model_server(&server)
        .prompt("do the work")
        .settings_json(command_hook("Stop", None, &hook))
        .allowed_tools("Bash")
        .arg("--json-schema")
        .arg(schema.to_string())
        .timeout(Duration::from_secs(30))
        .run();

    // A turn that ends in text is held twice: the CLI asks for the structured output, and the
    // hook's block reaches the model.
    let requests = server.agent_loop_requests();
    assert_eq!(requests.len(), 2, "{}", outcome.describe());
    let texts = requests[1].user_texts();
    let enforce = texts
        .iter()
        .position(|text| text.starts_with("[structured-output-enforce]"))
        .expect("the CLI asks for the structured output");
    assert_eq!(
        texts[enforce + 1],
        "Stop hook feedback:\nwrite the outcome file"
    );
    // The StructuredOutput call ends the run although the hook blocked it as well.
    let result = outcome.result();
    assert_eq!(
        (&result["subtype"], &result["is_error"]),
        (&json!("success"), &json!(false)),
        "{}",
        outcome.describe()
    );
    assert_eq!(result["structured_output"], json!({"outcome": "validated"}));
    assert_eq!(result["result"], "{\"outcome\":\"validated\"}");
    assert_eq!(
        server.turns_left(),
        1,
        "no turn after the structured output"
    );
    let stops: Vec<Value> = std::fs::read_to_string(&hook_log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(stops.len(), 2, "{stops:?}");
    assert_eq!(stops[1]["stop_hook_active"], true);
    assert!(
        stops[1].get("last_assistant_message").is_none(),
        "{stops:?}"
    );
}

#[test]
fn two_runs_at_once_are_answered_each_from_the_script_its_conversation_picks() {
    // Each run's prompt names a file; the opening turn, made from the prompt, prints the name;
    // the name picks the script.
    let opening = Turn::from_request(|request| {
        let name = request
            .user_texts()
            .iter()
            .find_map(|text| text.strip_prefix("write the file ").map(str::to_string))
            .expect("the prompt names a file");
        Turn::bash(format!("echo 'writing {name}'"), "say which file")
    });
    let server = ModelServer::start_conversations(
        Conversations::opening([opening])
            .script(
                "writing left",
                [
                    Turn::bash("printf left > left", "write left"),
                    Turn::text("left written"),
                ],
            )
            .script(
                "writing right",
                [
                    Turn::bash("printf right > right", "write right"),
                    Turn::text("right written"),
                ],
            ),
    );
    let work = tempfile::tempdir().unwrap();
    let outcomes: Vec<AgentOutcome> = std::thread::scope(|scope| {
        let runs: Vec<_> = ["left", "right"]
            .map(|name| {
                let (server, work) = (&server, work.path());
                scope.spawn(move || {
                    AgentRun::new(agent_cli())
                        .model_server(server)
                        .prompt(format!("write the file {name}"))
                        .cwd(work)
                        .allowed_tools("Bash")
                        .timeout(Duration::from_secs(60))
                        .run()
                })
            })
            .into_iter()
            .collect();
        runs.into_iter().map(|run| run.join().unwrap()).collect()
    });

    for (outcome, name) in outcomes.iter().zip(["left", "right"]) {
        assert_succeeded(outcome, 3);
        assert_eq!(outcome.result()["result"], format!("{name} written"));
        assert_eq!(
            std::fs::read_to_string(work.path().join(name)).unwrap(),
            name
        );
        let requests = server.conversation_requests(&format!("writing {name}"));
        assert_eq!(requests.len(), 3);
        let session = requests[0].session_id();
        assert!(!session.is_empty());
        assert!(
            requests
                .iter()
                .all(|request| request.session_id() == session)
        );
    }
    assert_ne!(
        server.conversation_requests("writing left")[0].session_id(),
        server.conversation_requests("writing right")[0].session_id()
    );
    assert_script_used_exactly(&server);
    assert_eq!(server.unmatched_conversations(), Vec::<String>::new());
}

/// `--max-budget-usd`, as the session workflow passes `session`'s `max-budget-usd`: a turn
/// whose answer reports a million output tokens costs dollars, more than the cap, and the CLI
/// stops the run right after it with `error_max_budget_usd` — before running the command that
/// turn asked for, and without asking for another turn; the result carries the cost.
#[test]
fn a_run_past_its_max_budget_usd_stops_with_error_max_budget_usd_and_its_cost() {
    let work = tempfile::tempdir().unwrap();
    let server = ModelServer::start([
        Turn::bash("printf spent > spent.txt", "spend the budget").usage(1_000, 1_000_000),
        Turn::text("never asked for"),
    ]);

    let outcome = AgentRun::new(agent_cli())
        .model_server(&server)
        .prompt("spend the budget")
        .cwd(work.path())
        .allowed_tools("Bash")
        .arg("--max-budget-usd")
        .arg("0.05")
        .timeout(Duration::from_secs(30))
        .run();

    let result = outcome.result();
    assert_eq!(
        result["subtype"],
        "error_max_budget_usd",
        "{}",
        outcome.describe()
    );
    assert_eq!(result["is_error"], true, "{}", outcome.describe());
    let cost = result["total_cost_usd"].as_f64().unwrap();
    assert!(cost > 0.05, "the cost is past the cap: {cost}");
    assert_ne!(
        outcome.finished.exit_code,
        Some(0),
        "{}",
        outcome.describe()
    );
    assert_eq!(
        server.agent_loop_requests().len(),
        1,
        "one turn, then the stop"
    );
    assert!(
        !work.path().join("spent.txt").exists(),
        "the CLI stops before running the command of the turn that passed the cap"
    );
    assert_eq!(server.turns_left(), 1);
    let record = klaud::core::execution::read_execution_file(&result.to_string()).unwrap();
    assert!(record.stopped_on_budget(), "{record:?}");
    assert_eq!(record.cost_usd, Some(cost));
}
