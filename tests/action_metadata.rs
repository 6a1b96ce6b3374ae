//! action.yml is the public interface: every input must reach the binary through `env:`
//! (GitHub's runner sets no `INPUT_*` for composite actions, so a missing mapping would silently
//! drop an input), no `${{ }}` may appear inside `run:`, and every declared output must be one
//! the binary writes.
//!
//! action.yml may declare the interface of contract §9 and §10 (the `session` mode's outputs,
//! finish's `execution-file`) before the binary implements it, and only that: each such name is
//! listed here, and the list fails as soon as the binary has the name, so it cannot outlive the
//! gap.

use std::collections::BTreeSet;

use clap::CommandFactory;
use klaud::shell::cli::Cli;
use klaud::shell::github::RequestReport;
use klaud::shell::modes::discover::DiscoverOutputs;
use klaud::shell::modes::finish::FinishOutputs;
use klaud::shell::modes::install_cli::InstallCliOutputs;
use klaud::shell::modes::prepare_review::PrepareReviewOutputs;
use klaud::shell::modes::recover::RecoverOutputs;
use klaud::shell::modes::select::SelectOutputs;
use klaud::shell::modes::session::SessionOutputs;
use klaud::shell::modes::status::StatusOutputs;
use klaud::shell::modes::verify_baselines::VerifyBaselinesOutputs;
use klaud::shell::modes::wake::WakeOutputs;
use klaud::shell::outputs::output_pairs;
use serde_yaml_ng::Value;

/// Variables the run step sets that are not flags: the mode argument and the resolved binary.
const NON_FLAG_VARIABLES: [&str; 2] = ["KLAUD_MODE", "KLAUD_EXECUTABLE"];

/// The outputs of the `session` mode (contract §9), in the order action.yml declares them.
const SESSION_OUTPUTS: [&str; 10] = [
    "proceed",
    "context-file",
    "outcome-file",
    "outcome-schema",
    "agent-settings",
    "deadline",
    "time-limit-minutes",
    "attempt",
    "resume",
    "max-budget-usd",
];

fn action() -> Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/action.yml"))
        .expect("action.yml is readable");
    serde_yaml_ng::from_str(&text).expect("action.yml is YAML")
}

fn steps(action: &Value) -> Vec<Value> {
    action["runs"]["steps"]
        .as_sequence()
        .expect("composite steps")
        .clone()
}

fn step(action: &Value, id: &str) -> Value {
    steps(action)
        .into_iter()
        .find(|step| step["id"].as_str() == Some(id))
        .unwrap_or_else(|| panic!("a step with id {id}"))
}

fn mapping_keys(value: &Value) -> Vec<String> {
    value
        .as_mapping()
        .map(|mapping| {
            mapping
                .keys()
                .map(|key| key.as_str().expect("string key").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn flag_variables() -> BTreeSet<String> {
    let command = Cli::command();
    let mut commands = vec![command.clone()];
    commands.extend(command.get_subcommands().cloned());
    commands
        .iter()
        .flat_map(|command| command.get_arguments().cloned().collect::<Vec<_>>())
        .filter_map(|argument| {
            argument
                .get_env()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .collect()
}

fn variable_for(input: &str) -> String {
    format!("KLAUD_{}", input.replace('-', "_").to_ascii_uppercase())
}

#[test]
fn the_action_is_a_composite_with_branding() {
    let action = action();
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    assert!(action["branding"]["icon"].is_string());
    assert!(action["branding"]["color"].is_string());
    assert!(action["description"].is_string());
}

#[test]
fn every_input_reaches_the_binary_through_its_environment_variable() {
    let action = action();
    let run = step(&action, "run");
    for input in mapping_keys(&action["inputs"]) {
        let variable = variable_for(&input);
        let value = run["env"][variable.as_str()]
            .as_str()
            .unwrap_or_else(|| panic!("input {input} is not mapped to {variable}"));
        assert!(
            value.contains(&format!("inputs.{input}")),
            "{variable} does not carry inputs.{input}: {value}"
        );
    }
}

#[test]
fn every_variable_the_run_step_sets_is_a_flag_of_the_binary() {
    let action = action();
    let flags = flag_variables();
    for variable in mapping_keys(&step(&action, "run")["env"]) {
        if NON_FLAG_VARIABLES.contains(&variable.as_str()) {
            continue;
        }
        assert!(
            flags.contains(&variable),
            "{variable} is set by action.yml but no flag reads it"
        );
    }
}

#[test]
fn no_expression_is_pasted_into_a_shell_script() {
    for step in steps(&action()) {
        if let Some(script) = step["run"].as_str() {
            assert!(
                !script.contains("${{"),
                "step {:?} interpolates an expression into run:",
                step["name"]
            );
        }
    }
}

#[test]
fn every_input_and_output_is_described() {
    let action = action();
    for section in ["inputs", "outputs"] {
        for name in mapping_keys(&action[section]) {
            let description = action[section][name.as_str()]["description"].as_str();
            assert!(
                description.is_some_and(|text| !text.trim().is_empty()),
                "{section}.{name} has no description"
            );
        }
    }
}

#[test]
fn every_declared_output_is_one_the_binary_writes() {
    let action = action();
    let sample = InstallCliOutputs {
        cli_path: String::new(),
        cli_version: String::new(),
        attempts: 0,
    };
    let verify_baselines = VerifyBaselinesOutputs {
        verified: Vec::new(),
        deferred: Vec::new(),
        producer_runs: 0,
        deferred_reasons: Default::default(),
        feed_requests: 0,
    };
    let select = SelectOutputs {
        selected: false,
        candidates: Vec::new(),
        requests: RequestReport {
            counts: Default::default(),
            max_operations: 100,
            max_reads: 1000,
        },
    };
    let requests = RequestReport {
        counts: Default::default(),
        max_operations: 100,
        max_reads: 1000,
    };
    let wake = WakeOutputs {
        dispatched: true,
        wake_reason: "dispatch".into(),
        planner_run: Some(1),
        requests,
    };
    let prepare_review = PrepareReviewOutputs {
        has_candidates: true,
        review_schema: serde_json::json!({}),
        requests,
    };
    let status = StatusOutputs {
        live_sessions: 0,
        requests,
    };
    let recover = RecoverOutputs {
        reconciled: Vec::new(),
        swept: Vec::new(),
        left_alone: Vec::new(),
        needs_inspection: Vec::new(),
        resumed: Vec::new(),
        aftercare_started: 0,
        refs_deleted: 0,
        requests,
    };
    let finish = FinishOutputs {
        outcome: "failed".into(),
        cleanup: "done".into(),
        pull_request: "7".into(),
        cancelled: Vec::new(),
        pending_runs: Vec::new(),
        superseded: Vec::new(),
        requests,
    };
    let session = SessionOutputs {
        proceed: false,
        context_file: String::new(),
        outcome_file: String::new(),
        outcome_schema: String::new(),
        agent_settings: String::new(),
        deadline: String::new(),
        time_limit_minutes: "330".into(),
        attempt: String::new(),
        resume: false,
        max_budget_usd: String::new(),
        requests,
    };
    let discover = DiscoverOutputs {
        has_candidates: false,
        candidates: 0,
        discovered: Vec::new(),
        candidates_file: String::new(),
        requests,
    };
    let written: BTreeSet<String> = output_pairs(&sample)
        .expect("outputs serialize")
        .into_iter()
        .chain(output_pairs(&verify_baselines).expect("outputs serialize"))
        .chain(output_pairs(&select).expect("outputs serialize"))
        .chain(output_pairs(&finish).expect("outputs serialize"))
        .chain(output_pairs(&wake).expect("outputs serialize"))
        .chain(output_pairs(&prepare_review).expect("outputs serialize"))
        .chain(output_pairs(&status).expect("outputs serialize"))
        .chain(output_pairs(&recover).expect("outputs serialize"))
        .chain(output_pairs(&session).expect("outputs serialize"))
        .chain(output_pairs(&discover).expect("outputs serialize"))
        .map(|(name, _)| name)
        .collect();
    for name in mapping_keys(&action["outputs"]) {
        let value = action["outputs"][name.as_str()]["value"]
            .as_str()
            .expect("output value");
        // Where the binary came from: the resolve step (dist/) or the build step (cache, source).
        if value == format!("${{{{ steps.build.outputs.{name} || steps.resolve.outputs.{name} }}}}")
        {
            continue;
        }
        assert_eq!(value, format!("${{{{ steps.run.outputs.{name} }}}}"));
        assert!(written.contains(&name), "output {name} is never written");
    }
    for name in &written {
        assert!(
            action["outputs"][name.as_str()].is_mapping(),
            "the binary writes {name} but action.yml does not declare it"
        );
    }
}

#[test]
fn the_session_outputs_of_the_contract_are_declared_for_the_session_mode() {
    let action = action();
    let declared: Vec<String> = mapping_keys(&action["outputs"])
        .into_iter()
        .filter(|name| {
            action["outputs"][name.as_str()]["description"]
                .as_str()
                .is_some_and(|text| text.starts_with("session - "))
        })
        .collect();
    assert_eq!(
        declared, SESSION_OUTPUTS,
        "the outputs described as session's"
    );
    let mode = action["inputs"]["mode"]["description"]
        .as_str()
        .expect("the mode input's description");
    assert!(mode.contains(" session,"), "{mode}");
}

#[test]
fn finish_takes_the_agents_execution_record() {
    let action = action();
    let input = &action["inputs"]["execution-file"];
    assert!(
        input["description"]
            .as_str()
            .is_some_and(|text| text.starts_with("finish - ")),
        "{input:?}"
    );
    assert_eq!(input["default"].as_str(), Some(""), "empty means no record");
    assert_eq!(
        step(&action, "run")["env"]["KLAUD_EXECUTION_FILE"].as_str(),
        Some("${{ inputs.execution-file }}")
    );
}

#[test]
fn every_action_the_composite_uses_is_pinned_by_a_full_commit_sha_with_its_version() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/action.yml"))
        .expect("action.yml is readable");
    let uses: Vec<&str> = text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("uses: "))
        .collect();
    assert!(!uses.is_empty(), "the cache steps use actions/cache");
    for line in uses {
        let (reference, comment) = line.split_once(" # ").unwrap_or((line, ""));
        let (_, commit) = reference.split_once('@').expect("uses: owner/repo@ref");
        assert!(
            commit.len() == 40 && commit.bytes().all(|byte| byte.is_ascii_hexdigit()),
            "{line}: not pinned by a full commit sha"
        );
        assert!(
            comment.starts_with('v'),
            "{line}: the version the sha is of belongs in a comment"
        );
    }
}

#[test]
fn the_cache_steps_run_only_when_dist_is_not_used() {
    let action = action();
    let steps = steps(&action);
    let uses: Vec<&Value> = steps
        .iter()
        .filter(|step| step["uses"].is_string())
        .collect();
    assert_eq!(uses.len(), 2, "a restore and a save step");
    for step in uses {
        let condition = step["if"].as_str().expect("a cache step has a condition");
        assert!(
            condition.contains("steps.resolve.outputs.cache-key")
                || condition.contains("steps.build.outputs.save == 'true'"),
            "{condition}"
        );
    }
    assert_eq!(
        step(&action, "run")["env"]["KLAUD_EXECUTABLE"].as_str(),
        Some("${{ steps.build.outputs.binary || steps.resolve.outputs.binary }}")
    );
}
