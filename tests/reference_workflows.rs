//! The reference workflows (.github/workflows/klaud-plan.yml, klaud-candidate.yml,
//! klaud-wake.yml) are what users copy, so their structure is part of the interface: no default
//! token permissions, a grant per job, only real modes and declared inputs on the klaud steps, the
//! planner job name recovery looks for, no expressions inside `run:`, one recovery concurrency
//! group, and inert unless a repository opts in.

use std::collections::BTreeSet;

use klaud::shell::cli::Mode;
use klaud::shell::config::Config;
use serde_yaml_ng::Value;

const PLANNER: &str = "klaud-plan.yml";
const CANDIDATE: &str = "klaud-candidate.yml";
const WAKE: &str = "klaud-wake.yml";
const ALL: [&str; 3] = [PLANNER, CANDIDATE, WAKE];
const RECOVERY_GROUP: &str = "klaud-recovery";
const OPT_IN: &str = "vars.KLAUD_ENABLED == 'true'";

fn yaml(relative: &str) -> Value {
    let path = format!("{}/{relative}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{path} is not YAML: {e}"))
}

fn workflow(name: &str) -> Value {
    yaml(&format!(".github/workflows/{name}"))
}

fn jobs(workflow: &Value) -> Vec<(String, Value)> {
    workflow["jobs"]
        .as_mapping()
        .expect("jobs")
        .iter()
        .map(|(id, job)| (id.as_str().expect("job id").to_string(), job.clone()))
        .collect()
}

fn steps(job: &Value) -> Vec<Value> {
    job["steps"].as_sequence().cloned().unwrap_or_default()
}

/// The `with:` map of every step that runs this repository's action (`uses: ./`).
fn klaud_steps(workflow: &Value) -> Vec<(String, Value)> {
    jobs(workflow)
        .iter()
        .flat_map(|(id, job)| steps(job).into_iter().map(move |step| (id.clone(), step)))
        .filter(|(_, step)| step["uses"].as_str() == Some("./"))
        .collect()
}

fn action_inputs() -> BTreeSet<String> {
    yaml("action.yml")["inputs"]
        .as_mapping()
        .expect("action.yml inputs")
        .keys()
        .map(|key| key.as_str().expect("input name").to_string())
        .collect()
}

#[test]
fn no_default_permissions_and_every_job_grants_its_own() {
    for name in ALL {
        let workflow = workflow(name);
        assert_eq!(
            workflow["permissions"],
            Value::Mapping(Default::default()),
            "{name}: top-level permissions must be {{}}"
        );
        for (id, job) in jobs(&workflow) {
            let permissions = &job["permissions"];
            assert!(
                permissions.is_mapping(),
                "{name}: job {id} declares no permissions of its own"
            );
            for (scope, level) in permissions.as_mapping().unwrap() {
                assert!(
                    matches!(level.as_str(), Some("read" | "write" | "none")),
                    "{name}: job {id}: {scope:?} is {level:?}"
                );
            }
        }
    }
}

#[test]
fn every_job_runs_only_where_the_repository_opted_in() {
    for name in ALL {
        for (id, job) in jobs(&workflow(name)) {
            let condition = job["if"].as_str().unwrap_or_default();
            assert!(
                condition.starts_with(OPT_IN),
                "{name}: job {id} must start its if: with {OPT_IN}, has {condition:?}"
            );
        }
    }
}

/// The long flags of `klaud <mode>`.
fn mode_flags(mode: &str) -> BTreeSet<String> {
    use clap::CommandFactory;
    let command = klaud::shell::cli::Cli::command();
    let subcommand = command
        .get_subcommands()
        .find(|command| command.get_name() == mode)
        .unwrap_or_else(|| panic!("klaud has no mode {mode}"));
    subcommand
        .get_arguments()
        .filter_map(|argument| argument.get_long().map(str::to_string))
        .collect()
}

#[test]
fn klaud_steps_use_real_modes_and_declared_inputs() {
    let modes = Mode::names();
    let inputs = action_inputs();
    // `finish` is newer than the rest: until action.yml declares its inputs, a finish step's
    // inputs must at least be flags of `klaud finish` (and, before the binary has the mode, they
    // are the documented ones, unchecked). Once action.yml declares them the strict check applies.
    let finish_inputs_pending = !inputs.contains("agent-outcome");
    let mut seen_modes = BTreeSet::new();
    for name in ALL {
        for (job, step) in klaud_steps(&workflow(name)) {
            let with = step["with"].as_mapping().expect("a klaud step has with:");
            let mode = with
                .get("mode")
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("{name}: a klaud step in {job} has no mode"));
            seen_modes.insert(mode.to_string());
            let mode_known = modes.iter().any(|known| known == mode);
            if mode == "finish" && !mode_known {
                eprintln!("note: the binary has no finish mode yet; its inputs are unchecked");
                continue;
            }
            assert!(
                mode_known,
                "{name}: job {job} uses mode {mode}, not one of {modes:?}"
            );
            for key in with.keys() {
                let key = key.as_str().expect("input name");
                if inputs.contains(key) {
                    continue;
                }
                if mode == "finish" && finish_inputs_pending {
                    assert!(
                        mode_flags("finish").contains(key),
                        "{name}: job {job} passes {key}, which is no flag of klaud finish"
                    );
                    eprintln!("note: action.yml does not declare finish's input {key} yet");
                    continue;
                }
                panic!(
                    "{name}: job {job} (mode {mode}) passes {key}, which action.yml does not declare"
                );
            }
        }
    }
    for mode in [
        "recover",
        "verify-baselines",
        "prepare-review",
        "install-cli",
        "select",
        "finish",
        "wake",
    ] {
        assert!(
            seen_modes.contains(mode),
            "no reference workflow runs {mode}"
        );
    }
}

#[test]
fn no_expression_inside_run() {
    for name in ALL {
        for (id, job) in jobs(&workflow(name)) {
            for step in steps(&job) {
                if let Some(script) = step["run"].as_str() {
                    assert!(
                        !script.contains("${{"),
                        "{name}: a run: of job {id} contains an expression: {script}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_candidate_job_is_named_as_recovery_expects_and_calls_the_candidate_workflow() {
    let config = Config::default();
    assert_eq!(config.workflows.planner, PLANNER);
    assert_eq!(config.workflows.candidate, CANDIDATE);
    let pattern = &config.workflows.planner_job;
    let expected = pattern.replace("{id}", "${{ matrix.candidate }}");
    let planner = workflow(PLANNER);
    let (id, job) = jobs(&planner)
        .into_iter()
        .find(|(_, job)| job["uses"].as_str().is_some())
        .expect("the planner has a job that calls the candidate workflow");
    assert_eq!(job["name"].as_str(), Some(expected.as_str()), "job {id}");
    assert_eq!(
        job["uses"].as_str(),
        Some(format!("./.github/workflows/{CANDIDATE}").as_str())
    );
    assert_eq!(
        job["strategy"]["matrix"]["candidate"].as_str(),
        Some("${{ fromJSON(needs.select.outputs.candidates) }}")
    );
    assert_eq!(
        job["with"]["candidate"].as_str(),
        Some("${{ matrix.candidate }}")
    );
    let condition = job["if"].as_str().unwrap_or_default();
    assert!(
        condition.contains("inputs.wake != 'true'"),
        "job {id} must be skipped on a wake pass: {condition}"
    );

    // The candidate workflow is callable and dispatchable with exactly the input recovery sends.
    let candidate = workflow(CANDIDATE);
    let on = &candidate["on"];
    assert!(on["workflow_call"]["inputs"]["candidate"].is_mapping());
    assert!(on["workflow_dispatch"]["inputs"]["candidate"].is_mapping());
    // finish always runs, with the agent step's outcome.
    let session_steps: Vec<Value> = jobs(&candidate)
        .into_iter()
        .flat_map(|(_, job)| steps(&job))
        .collect();
    let finish = session_steps
        .iter()
        .find(|step| step["with"]["mode"].as_str() == Some("finish"))
        .expect("a finish step");
    assert_eq!(finish["if"].as_str(), Some("always()"));
    assert_eq!(
        finish["with"]["agent-outcome"].as_str(),
        Some("${{ steps.agent.outcome }}")
    );
    assert!(
        session_steps
            .iter()
            .any(|step| step["id"].as_str() == Some("agent"))
    );
}

#[test]
fn recovery_passes_share_one_concurrency_group_and_wake_dispatches_them() {
    let planner = workflow(PLANNER);
    let recovering: Vec<(String, Value)> = jobs(&planner)
        .into_iter()
        .filter(|(_, job)| {
            steps(job)
                .iter()
                .any(|step| step["with"]["mode"].as_str() == Some("recover"))
        })
        .collect();
    assert_eq!(recovering.len(), 1, "one recovering job");
    let (id, job) = &recovering[0];
    assert_eq!(
        job["concurrency"]["group"].as_str(),
        Some(RECOVERY_GROUP),
        "job {id}"
    );
    assert_eq!(
        job["concurrency"]["cancel-in-progress"].as_bool(),
        Some(false)
    );
    // The group is a constant, so schedules, backstops and wakes all queue in it.
    assert!(!RECOVERY_GROUP.contains("${{"));
    // The recovery-only passes: a wake dispatch and the hourly backstop schedule.
    let on = &planner["on"];
    assert!(on["workflow_dispatch"]["inputs"]["wake"].is_mapping());
    let crons: Vec<&str> = on["schedule"]
        .as_sequence()
        .expect("schedules")
        .iter()
        .map(|entry| entry["cron"].as_str().expect("cron"))
        .collect();
    assert_eq!(crons.len(), 2, "a wave schedule and a backstop schedule");
    let wave = job["outputs"]["wave"]
        .as_str()
        .expect("recover's wave output");
    assert!(wave.contains("inputs.wake == 'true'"), "{wave}");
    let backstop = crons
        .iter()
        .find(|cron| wave.contains(&format!("'{cron}'")))
        .expect("the wave output names the backstop schedule");
    assert!(
        backstop.split_whitespace().nth(1) == Some("*"),
        "the backstop runs hourly"
    );

    // wake: workflow_run completed, actions: write plus the checkout's contents: read.
    let wake = workflow(WAKE);
    assert_eq!(
        wake["on"]["workflow_run"]["types"],
        serde_yaml_ng::from_str::<Value>("[completed]").unwrap()
    );
    for (id, job) in jobs(&wake) {
        let mut scopes: Vec<(String, String)> = job["permissions"]
            .as_mapping()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.as_str().unwrap().into(), v.as_str().unwrap().into()))
            .collect();
        scopes.sort();
        assert_eq!(
            scopes,
            vec![
                ("actions".to_string(), "write".to_string()),
                ("contents".to_string(), "read".to_string())
            ],
            "wake job {id}"
        );
    }
}

#[test]
fn checkouts_persist_no_credentials_and_actions_are_pinned() {
    for name in ALL {
        for (id, job) in jobs(&workflow(name)) {
            for step in steps(&job) {
                let Some(uses) = step["uses"].as_str() else {
                    continue;
                };
                if uses.starts_with("./") {
                    continue;
                }
                let (_, reference) = uses.split_once('@').expect("a version");
                assert!(
                    reference.len() == 40 && reference.chars().all(|c| c.is_ascii_hexdigit()),
                    "{name}: job {id} uses {uses}, not pinned to a commit"
                );
                if uses.starts_with("actions/checkout@") {
                    assert_eq!(
                        step["with"]["persist-credentials"].as_bool(),
                        Some(false),
                        "{name}: job {id}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_review_is_read_only_and_structured_by_prepare_reviews_schema() {
    let planner = workflow(PLANNER);
    let (id, job) = jobs(&planner)
        .into_iter()
        .find(|(_, job)| {
            steps(job).iter().any(|step| {
                step["uses"]
                    .as_str()
                    .is_some_and(|uses| uses.starts_with("anthropics/claude-code-action@"))
            })
        })
        .expect("a review job");
    for (scope, level) in job["permissions"].as_mapping().unwrap() {
        assert_eq!(level.as_str(), Some("read"), "review job {id}: {scope:?}");
    }
    let review = steps(&job)
        .into_iter()
        .find(|step| step["id"].as_str() == Some("review"))
        .expect("the review step has id review");
    let arguments = review["with"]["claude_args"].as_str().expect("claude_args");
    assert!(
        arguments.contains("--json-schema '${{ needs.evidence.outputs.review-schema }}'"),
        "{arguments}"
    );
    assert_eq!(
        job["outputs"]["review"].as_str(),
        Some("${{ steps.review.outputs.structured_output }}")
    );
    let select = klaud_steps(&planner)
        .into_iter()
        .map(|(_, step)| step)
        .find(|step| step["with"]["mode"].as_str() == Some("select"))
        .expect("a select step");
    assert_eq!(
        select["with"]["review"].as_str(),
        Some("${{ needs.review.outputs.review }}")
    );
}
