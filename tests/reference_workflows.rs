//! The reference workflows (.github/workflows/klaud-plan.yml, klaud-candidate.yml,
//! klaud-wake.yml) are what users copy, so their structure is part of the interface: no default
//! token permissions, a grant per job, only real modes and declared inputs on the klaud steps, the
//! planner job name recovery looks for, no expressions inside `run:`, one recovery concurrency
//! group, and inert unless a repository opts in. The candidate workflow's session (session →
//! the agent → finish) and the agent's prompt file are checked here too.

use std::collections::BTreeSet;

use klaud::core::outcome::Outcome;
use klaud::shell::cli::Mode;
use klaud::shell::config::Config;
use serde_yaml_ng::Value;

const PLANNER: &str = "klaud-plan.yml";
const CANDIDATE: &str = "klaud-candidate.yml";
const WAKE: &str = "klaud-wake.yml";
const ALL: [&str; 3] = [PLANNER, CANDIDATE, WAKE];
const RECOVERY_GROUP: &str = "klaud-recovery";
const OPT_IN: &str = "vars.KLAUD_ENABLED == 'true'";
/// The agent's prompt, which the candidate workflow hands to the agent.
const PROMPT: &str = ".github/klaud-candidate-prompt.md";
/// What gates every step of the candidate job after `session`.
const PROCEEDS: &str = "steps.session.outputs.proceed == 'true'";
const BOT_TOKEN: &str = "${{ secrets.KLAUD_BOT_TOKEN || github.token }}";
const CLAUDE_CODE_ACTION: &str = "anthropics/claude-code-action@";

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

#[test]
fn klaud_steps_use_real_modes_and_declared_inputs() {
    let modes = Mode::names();
    let inputs = action_inputs();
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
            // `session` (contract §9) may be newer than the binary this test is built with; its
            // inputs are held to action.yml's all the same.
            if mode == "session" && !mode_known {
                eprintln!("note: the binary has no session mode yet");
            } else {
                assert!(
                    mode_known,
                    "{name}: job {job} uses mode {mode}, not one of {modes:?}"
                );
            }
            for key in with.keys() {
                let key = key.as_str().expect("input name");
                assert!(
                    inputs.contains(key),
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
        "session",
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
    // finish always runs once session proceeded, with the agent step's outcome.
    let session_steps: Vec<Value> = jobs(&candidate)
        .into_iter()
        .flat_map(|(_, job)| steps(&job))
        .collect();
    let finish = session_steps
        .iter()
        .find(|step| step["with"]["mode"].as_str() == Some("finish"))
        .expect("a finish step");
    assert_eq!(
        finish["if"].as_str(),
        Some(format!("always() && {PROCEEDS}").as_str())
    );
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

/// The candidate job's steps, each named by what it is: the checkout, a klaud step by its mode,
/// any other step by its id (or its name when it has none).
fn candidate_steps() -> (Value, Vec<(String, Value)>) {
    let candidate = workflow(CANDIDATE);
    let all = jobs(&candidate);
    assert_eq!(all.len(), 1, "the candidate workflow has one job");
    let (_, job) = all.into_iter().next().expect("a job");
    let named = steps(&job)
        .into_iter()
        .map(|step| {
            let uses = step["uses"].as_str().unwrap_or_default();
            let name = if uses.starts_with("actions/checkout@") {
                "checkout".to_string()
            } else if uses == "./" {
                format!(
                    "klaud {}",
                    step["with"]["mode"].as_str().unwrap_or_default()
                )
            } else if let Some(id) = step["id"].as_str() {
                id.to_string()
            } else {
                step["name"].as_str().unwrap_or_default().to_string()
            };
            (name, step)
        })
        .collect();
    (job, named)
}

fn candidate_step(named: &[(String, Value)], name: &str) -> Value {
    named
        .iter()
        .find(|(step, _)| step == name)
        .map(|(_, step)| step.clone())
        .unwrap_or_else(|| panic!("the candidate job has no step {name}"))
}

#[test]
fn the_candidate_job_runs_session_then_the_agent_then_finish() {
    let (job, named) = candidate_steps();
    let order: Vec<&str> = named.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        order,
        vec![
            "checkout",
            "klaud install-cli",
            "klaud session",
            "bot",
            "prompt",
            "agent",
            "Put the checkout back at the workflow's commit",
            "klaud finish",
        ]
    );
    assert_eq!(job["timeout-minutes"].as_u64(), Some(360));
    assert_eq!(
        job["concurrency"]["group"].as_str(),
        Some("klaud-candidate-${{ inputs.candidate }}")
    );

    // session runs for every job; it decides whether this one may run the session.
    let session = candidate_step(&named, "klaud session");
    assert!(session["if"].is_null(), "{session:?}");
    assert_eq!(session["id"].as_str(), Some("session"));
    assert_eq!(
        session["with"]["candidate"].as_str(),
        Some("${{ inputs.candidate }}")
    );
    assert_eq!(session["with"]["github-token"].as_str(), Some(BOT_TOKEN));

    // Nothing after it runs for a session it refused: a refused session writes nothing, so
    // finish must not run either.
    for (name, step) in &named[3..] {
        let condition = step["if"].as_str().unwrap_or_default();
        let expected = if ["bot", "prompt", "agent"].contains(&name.as_str()) {
            PROCEEDS.to_string()
        } else {
            format!("always() && {PROCEEDS}")
        };
        assert_eq!(condition, expected, "step {name}");
    }

    // finish reads the repository's own .github/klaud.yml, not what the agent's branch holds.
    let put_back = candidate_step(&named, "Put the checkout back at the workflow's commit");
    assert!(
        put_back["run"].as_str().is_some_and(
            |script| script.contains("git checkout --quiet --force --detach \"$GITHUB_SHA\"")
        ),
        "{put_back:?}"
    );

    let finish = candidate_step(&named, "klaud finish");
    for (input, value) in [
        ("candidate", "${{ inputs.candidate }}"),
        ("outcome-file", "${{ steps.session.outputs.outcome-file }}"),
        ("agent-outcome", "${{ steps.agent.outcome }}"),
        (
            "execution-file",
            "${{ steps.agent.outputs.execution_file }}",
        ),
        ("github-token", BOT_TOKEN),
        ("label-token", "${{ github.token }}"),
    ] {
        assert_eq!(
            finish["with"][input].as_str(),
            Some(value),
            "finish's {input}"
        );
    }
}

#[test]
fn the_agent_is_claude_code_action_with_the_sessions_settings_schema_and_deadline() {
    let (_, named) = candidate_steps();
    let agent = candidate_step(&named, "agent");
    let uses = agent["uses"].as_str().expect("the agent uses an action");
    assert!(uses.starts_with(CLAUDE_CODE_ACTION), "{uses}");
    // The same pinned commit as the planner's review, so one version of the action is vetted.
    let planner = workflow(PLANNER);
    let review: Vec<String> = jobs(&planner)
        .iter()
        .flat_map(|(_, job)| steps(job))
        .filter_map(|step| step["uses"].as_str().map(str::to_string))
        .filter(|uses| uses.starts_with(CLAUDE_CODE_ACTION))
        .collect();
    assert_eq!(
        review,
        vec![uses.to_string()],
        "the planner's review pins it the same"
    );

    assert_eq!(
        agent["timeout-minutes"].as_str(),
        Some("${{ fromJSON(steps.session.outputs.time-limit-minutes) }}")
    );
    let with = &agent["with"];
    for (input, value) in [
        ("settings", "${{ steps.session.outputs.agent-settings }}"),
        ("prompt", "${{ steps.prompt.outputs.prompt }}"),
        (
            "path_to_claude_code_executable",
            "${{ steps.cli.outputs.cli-path }}",
        ),
        ("github_token", BOT_TOKEN),
        ("anthropic_api_key", "${{ secrets.ANTHROPIC_API_KEY }}"),
        ("bot_name", "${{ steps.bot.outputs.login }}"),
        ("bot_id", "${{ steps.bot.outputs.id }}"),
        ("allowed_bots", "${{ steps.bot.outputs.login }}"),
    ] {
        assert_eq!(with[input].as_str(), Some(value), "the agent's {input}");
    }
    assert_eq!(agent["env"]["GH_TOKEN"].as_str(), Some(BOT_TOKEN));
    let arguments = with["claude_args"].as_str().expect("claude_args");
    for argument in [
        "--json-schema '${{ steps.prompt.outputs.outcome-schema }}'",
        "--add-dir '${{ steps.prompt.outputs.context-directory }}' '${{ steps.prompt.outputs.outcome-directory }}'",
    ] {
        assert!(arguments.contains(argument), "{arguments}");
    }

    // The prompt step quotes session's schema and hands over the repository's prompt file
    // with this session's files.
    let prompt = candidate_step(&named, "prompt");
    for (variable, value) in [
        ("PROMPT_FILE", PROMPT),
        ("CONTEXT_FILE", "${{ steps.session.outputs.context-file }}"),
        ("OUTCOME_FILE", "${{ steps.session.outputs.outcome-file }}"),
        (
            "OUTCOME_SCHEMA",
            "${{ steps.session.outputs.outcome-schema }}",
        ),
    ] {
        assert_eq!(prompt["env"][variable].as_str(), Some(value), "{variable}");
    }
    let script = prompt["run"].as_str().expect("the prompt step's script");
    for needle in [
        "echo \"prompt<<$delimiter\"",
        "/dev/urandom",
        "cat \"$PROMPT_FILE\"",
        "$CONTEXT_FILE",
        "$OUTCOME_FILE",
        "outcome-schema=$schema",
    ] {
        assert!(script.contains(needle), "the prompt step lacks {needle}");
    }
    let bot = candidate_step(&named, "bot");
    assert_eq!(bot["env"]["GH_TOKEN"].as_str(), Some(BOT_TOKEN));
}

#[test]
fn the_prompt_file_covers_what_a_session_must_know() {
    let path = format!("{}/{PROMPT}", env!("CARGO_MANIFEST_DIR"));
    let prompt = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // Every outcome an agent may report is listed with its meaning; the two klaud decides from
    // GitHub are named as not the agent's.
    for outcome in Outcome::ALL {
        let listed = prompt.contains(&format!("\n- `{}`: ", outcome.name()));
        match outcome {
            Outcome::ClosedByMaintainer | Outcome::Handoff => {
                assert!(!listed, "{} is klaud's to decide", outcome.name());
                assert!(prompt.contains(&format!("`{}`", outcome.name())));
            }
            _ => assert!(listed, "the prompt does not list {}", outcome.name()),
        }
    }
    for topic in [
        // The context file first, and resuming from it.
        "Read the context file first",
        "never start over",
        "earlier-attempts",
        // One draft pull request from the candidate's branch.
        "ONE pull request, a draft",
        "gh pr create --draft",
        // Smoke and sweep runs, identified by head branch and sha.
        "gh workflow run <workflow> --ref <branch>",
        "head sha",
        "exact current head",
        // Notes, and the outcome file.
        "note-command",
        "A note is mandatory before you stop near the deadline",
        "outcome file",
        "\"reason-code\"",
        "\"run-ids\"",
        "\"phase\"",
        "\"pull-request\"",
        // The deadline.
        "wrap-up-at",
        "stop without writing an outcome",
    ] {
        assert!(prompt.contains(topic), "the prompt does not cover: {topic}");
    }
    let never = prompt
        .split("## 7. Never")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a Never section");
    for forbidden in [
        "any other pull request, branch",
        "Force-push",
        "Mark the pull request ready for review",
        "close or reopen it, merge it",
        "labels",
        "Change workflows",
        "klaud's config",
        "secret",
    ] {
        assert!(
            never.contains(forbidden),
            "the Never list lacks: {forbidden}"
        );
    }
    let specific: Vec<&str> = prompt
        .lines()
        .filter(|line| line.starts_with("## ") && line.contains("REPOSITORY-SPECIFIC"))
        .collect();
    assert_eq!(specific.len(), 1, "one REPOSITORY-SPECIFIC section");
    let section = prompt.split(specific[0]).nth(1).expect("its text");
    assert!(
        section.contains("Adopters: replace this section"),
        "{section}"
    );
}
