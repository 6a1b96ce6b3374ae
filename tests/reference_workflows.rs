//! The reference workflows are what users copy or call, so their structure is part of the
//! interface. klaud's logic is in the reusable workflows (`reusable-plan.yml`,
//! `reusable-session.yml`, `reusable-wake.yml`, `reusable-dashboard.yml`, `on: workflow_call`);
//! an adopter keeps three short callers (`klaud-plan.yml`, `klaud-candidate.yml`,
//! `klaud-wake.yml`), which are this repository's own. Checked here: no default token
//! permissions, a grant per job and a caller's grant covering what the called jobs take, inputs
//! and secrets that the called workflow declares, callers under 40 lines that hold no steps, every
//! klaud step running klaud's action at the commit the reusable workflow was called at, only real
//! modes and declared inputs on the klaud steps, the planner job name recovery looks for, no
//! expressions inside `run:`, one recovery concurrency group, and inert unless a repository opts
//! in. The session (session → the agent → finish) and the agent's prompt file are checked too.

use std::collections::{BTreeMap, BTreeSet};

use klaud::core::outcome::Outcome;
use klaud::shell::cli::Mode;
use klaud::shell::config::Config;
use serde_yaml_ng::Value;

const PLANNER: &str = "klaud-plan.yml";
const CANDIDATE: &str = "klaud-candidate.yml";
const WAKE: &str = "klaud-wake.yml";
/// The callers an adopter keeps.
const CALLERS: [&str; 3] = [PLANNER, CANDIDATE, WAKE];
const REUSABLE_PLAN: &str = "reusable-plan.yml";
const REUSABLE_SESSION: &str = "reusable-session.yml";
const REUSABLE_WAKE: &str = "reusable-wake.yml";
const REUSABLE_DASHBOARD: &str = "reusable-dashboard.yml";
/// klaud's logic, called by the callers.
const REUSABLE: [&str; 4] = [
    REUSABLE_PLAN,
    REUSABLE_SESSION,
    REUSABLE_WAKE,
    REUSABLE_DASHBOARD,
];
const ALL: [&str; 7] = [
    PLANNER,
    CANDIDATE,
    WAKE,
    REUSABLE_PLAN,
    REUSABLE_SESSION,
    REUSABLE_WAKE,
    REUSABLE_DASHBOARD,
];
/// Where a reusable workflow's job checks out klaud's action, and what its klaud steps use.
const KLAUD_ACTION: &str = "./.klaud-action";
/// The longest a caller may be, in lines.
const CALLER_LINES: usize = 40;
const RECOVERY_GROUP: &str = "klaud-recovery";
const OPT_IN: &str = "vars.KLAUD_ENABLED == 'true'";
/// The agent's prompt, which the session hands to the agent unless its caller names another.
const PROMPT: &str = ".github/klaud-candidate-prompt.md";
/// What gates every step of the session job after `session`.
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

/// Every step that runs klaud's action (`uses: ./.klaud-action`), with its job's id.
fn klaud_steps(workflow: &Value) -> Vec<(String, Value)> {
    jobs(workflow)
        .iter()
        .flat_map(|(id, job)| steps(job).into_iter().map(move |step| (id.clone(), step)))
        .filter(|(_, step)| step["uses"].as_str() == Some(KLAUD_ACTION))
        .collect()
}

/// The file a caller's job calls by local path (`uses: ./.github/workflows/<file>`).
fn called(job: &Value) -> Option<&str> {
    job["uses"]
        .as_str()
        .and_then(|uses| uses.strip_prefix("./.github/workflows/"))
}

fn mapping_keys(value: &Value) -> BTreeSet<String> {
    value
        .as_mapping()
        .map(|mapping| {
            mapping
                .keys()
                .map(|key| key.as_str().expect("a name").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A job's permissions, scope → level.
fn permissions(job: &Value) -> BTreeMap<String, String> {
    job["permissions"]
        .as_mapping()
        .map(|mapping| {
            mapping
                .iter()
                .map(|(scope, level)| {
                    (
                        scope.as_str().expect("a scope").to_string(),
                        level.as_str().expect("a level").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn level_rank(level: &str) -> u8 {
    match level {
        "write" => 2,
        "read" => 1,
        _ => 0,
    }
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
    // A caller's job opts in itself or needs a job that does (and is skipped with it); the
    // reusable workflows run only when a caller calls them.
    for name in CALLERS {
        let all = jobs(&workflow(name));
        let mut opted_in = BTreeSet::new();
        for (id, job) in &all {
            let condition = job["if"].as_str().unwrap_or_default();
            if condition.starts_with(OPT_IN) {
                opted_in.insert(id.clone());
            }
        }
        for (id, job) in &all {
            let needs: Vec<String> = match &job["needs"] {
                Value::String(one) => vec![one.clone()],
                Value::Sequence(many) => many
                    .iter()
                    .map(|need| need.as_str().expect("a job id").to_string())
                    .collect(),
                _ => Vec::new(),
            };
            assert!(
                opted_in.contains(id) || needs.iter().any(|need| opted_in.contains(need)),
                "{name}: job {id} neither starts its if: with {OPT_IN} nor needs a job that does"
            );
        }
    }
}

#[test]
fn klaud_steps_use_real_modes_and_declared_inputs() {
    let modes = Mode::names();
    let inputs = action_inputs();
    let mut seen_modes = BTreeSet::new();
    for name in REUSABLE {
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
    // The planner's sessions run through the adopter's own candidate workflow, the one recovery
    // dispatches to resume a parked session.
    let (id, job) = jobs(&planner)
        .into_iter()
        .find(|(_, job)| called(job) == Some(CANDIDATE))
        .expect("the planner has a job that calls the candidate workflow");
    assert_eq!(job["name"].as_str(), Some(expected.as_str()), "job {id}");
    assert_eq!(
        job["strategy"]["matrix"]["candidate"].as_str(),
        Some("${{ fromJSON(needs.plan.outputs.candidates) }}")
    );
    assert_eq!(
        job["with"]["candidate"].as_str(),
        Some("${{ matrix.candidate }}")
    );
    assert_eq!(
        job["if"].as_str(),
        Some("needs.plan.outputs.selected == 'true'"),
        "job {id} runs only for what select claimed (never on a recovery-only pass)"
    );
    let plan = workflow(REUSABLE_PLAN);
    let outputs = &plan["on"]["workflow_call"]["outputs"];
    for output in ["selected", "candidates"] {
        assert_eq!(
            outputs[output]["value"].as_str(),
            Some(format!("${{{{ jobs.select.outputs.{output} }}}}").as_str()),
            "{REUSABLE_PLAN}'s output {output}"
        );
    }

    // The candidate workflow is callable and dispatchable with exactly the input recovery sends,
    // and calls the session with it.
    let candidate = workflow(CANDIDATE);
    let on = &candidate["on"];
    assert!(on["workflow_call"]["inputs"]["candidate"].is_mapping());
    assert!(on["workflow_dispatch"]["inputs"]["candidate"].is_mapping());
    let (_, session) = jobs(&candidate)
        .into_iter()
        .find(|(_, job)| called(job) == Some(REUSABLE_SESSION))
        .expect("the candidate workflow calls the session");
    assert_eq!(
        session["with"]["candidate"].as_str(),
        Some("${{ inputs.candidate }}")
    );
    // finish always runs once session proceeded, with the agent step's outcome.
    let session_steps: Vec<Value> = jobs(&workflow(REUSABLE_SESSION))
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
    let plan = workflow(REUSABLE_PLAN);
    let recovering: Vec<(String, Value)> = jobs(&plan)
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
    // Only recover runs on a recovery-only pass: every other job needs the wave.
    for (other, job) in jobs(&plan) {
        if other != *id {
            let condition = job["if"].as_str().unwrap_or_default();
            let needs_wave = condition.contains("inputs.wave")
                || condition.contains("needs.evidence.outputs.has-candidates");
            assert!(
                needs_wave,
                "{REUSABLE_PLAN}: job {other} runs on a recovery-only pass"
            );
        }
    }

    // The recovery-only passes: a wake dispatch and the hourly backstop schedule, told apart by
    // the caller in the wave input.
    let planner = workflow(PLANNER);
    let on = &planner["on"];
    assert!(on["workflow_dispatch"]["inputs"]["wake"].is_mapping());
    let crons: Vec<&str> = on["schedule"]
        .as_sequence()
        .expect("schedules")
        .iter()
        .map(|entry| entry["cron"].as_str().expect("cron"))
        .collect();
    assert_eq!(crons.len(), 2, "a wave schedule and a backstop schedule");
    let (_, plan_job) = jobs(&planner)
        .into_iter()
        .find(|(_, job)| called(job) == Some(REUSABLE_PLAN))
        .expect("the planner calls reusable-plan.yml");
    let wave = plan_job["with"]["wave"]
        .as_str()
        .expect("the planner's wave input");
    assert!(wave.contains("inputs.wake != 'true'"), "{wave}");
    let backstop = crons
        .iter()
        .find(|cron| wave.contains(&format!("'{cron}'")))
        .expect("the wave input names the backstop schedule");
    assert!(
        backstop.split_whitespace().nth(1) == Some("*"),
        "the backstop runs hourly"
    );

    // wake: workflow_run completed; its job takes actions: write plus the checkout's contents:
    // read, and its caller grants exactly that.
    let wake = workflow(WAKE);
    assert_eq!(
        wake["on"]["workflow_run"]["types"],
        serde_yaml_ng::from_str::<Value>("[completed]").unwrap()
    );
    let expected: BTreeMap<String, String> = [
        ("actions".to_string(), "write".to_string()),
        ("contents".to_string(), "read".to_string()),
    ]
    .into();
    for (id, job) in jobs(&wake)
        .into_iter()
        .chain(jobs(&workflow(REUSABLE_WAKE)))
    {
        assert_eq!(permissions(&job), expected, "wake job {id}");
    }
}

#[test]
fn callers_are_short_call_the_reusable_workflows_and_grant_what_their_jobs_take() {
    for name in CALLERS {
        let path = format!("{}/.github/workflows/{name}", env!("CARGO_MANIFEST_DIR"));
        let lines = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .lines()
            .count();
        assert!(
            lines < CALLER_LINES,
            "{name} has {lines} lines, a caller stays under {CALLER_LINES}"
        );
        for (id, job) in jobs(&workflow(name)) {
            assert!(job["steps"].is_null(), "{name}: job {id} runs steps itself");
            let file = called(&job)
                .unwrap_or_else(|| panic!("{name}: job {id} calls no workflow by local path"));
            let callee = workflow(file);
            let call = &callee["on"]["workflow_call"];
            assert!(
                call.is_mapping(),
                "{name}: job {id} calls {file}, not reusable"
            );
            // Inputs and secrets the callee declares; the required ones given.
            let given = mapping_keys(&job["with"]);
            let declared = mapping_keys(&call["inputs"]);
            assert!(
                given.is_subset(&declared),
                "{name}: job {id} passes {given:?} to {file}, which declares {declared:?}"
            );
            let given_secrets = mapping_keys(&job["secrets"]);
            let declared_secrets = mapping_keys(&call["secrets"]);
            assert!(
                given_secrets.is_subset(&declared_secrets),
                "{name}: job {id} passes the secrets {given_secrets:?} to {file}, which declares {declared_secrets:?}"
            );
            for (kind, section, passed) in [
                ("input", "inputs", &given),
                ("secret", "secrets", &given_secrets),
            ] {
                for (key, spec) in call[section].as_mapping().into_iter().flatten() {
                    let key = key.as_str().expect("a name");
                    if spec["required"].as_bool() == Some(true) && spec["default"].is_null() {
                        assert!(
                            passed.contains(key),
                            "{name}: job {id} does not pass {file}'s required {kind} {key}"
                        );
                    }
                }
            }
            // GitHub caps the called jobs' token at the calling job's grant: it covers each.
            let granted = permissions(&job);
            // (A called job that calls a workflow in turn takes what it grants.)
            for (called_id, called_job) in jobs(&callee) {
                for (scope, level) in permissions(&called_job) {
                    let covered = granted
                        .get(&scope)
                        .is_some_and(|given| level_rank(given) >= level_rank(&level));
                    assert!(
                        covered,
                        "{name}: job {id} grants {granted:?}, but {file}'s job {called_id} takes {scope}: {level}"
                    );
                }
            }
        }
    }
}

#[test]
fn every_reusable_job_runs_klaud_at_the_commit_it_was_called_at() {
    let pinned_checkout = "actions/checkout@";
    for name in REUSABLE {
        for (id, job) in jobs(&workflow(name)) {
            let steps = steps(&job);
            let first_klaud = steps
                .iter()
                .position(|step| step["uses"].as_str() == Some(KLAUD_ACTION))
                .unwrap_or_else(|| panic!("{name}: job {id} runs no klaud step"));
            // Every action step is klaud's checkout or a pinned action: never `./` (the caller's
            // repository) nor a moving reference to klaud.
            for step in &steps {
                if let Some(uses) = step["uses"].as_str() {
                    assert!(
                        uses == KLAUD_ACTION || !uses.starts_with("./"),
                        "{name}: job {id} uses {uses}"
                    );
                }
            }
            let before = &steps[..first_klaud];
            let checkouts: Vec<&Value> = before
                .iter()
                .filter(|step| {
                    step["uses"]
                        .as_str()
                        .is_some_and(|uses| uses.starts_with(pinned_checkout))
                        && step["with"]["path"].as_str() == Some(".klaud-action")
                })
                .collect();
            assert_eq!(
                checkouts.len(),
                2,
                "{name}: job {id}: klaud's two checkouts"
            );
            // Where GitHub names this workflow's repository and commit, exactly those.
            let named = checkouts[0];
            assert_eq!(
                named["if"].as_str(),
                Some("job.workflow_repository != ''"),
                "{name}: job {id}"
            );
            assert_eq!(
                named["with"]["repository"].as_str(),
                Some("${{ job.workflow_repository }}")
            );
            assert_eq!(
                named["with"]["ref"].as_str(),
                Some("${{ job.workflow_sha }}")
            );
            // Elsewhere the workflow's own repository at the event's commit, which the check
            // below holds to being klaud.
            let unnamed = checkouts[1];
            assert_eq!(
                unnamed["if"].as_str(),
                Some("job.workflow_repository == ''"),
                "{name}: job {id}"
            );
            assert_eq!(
                mapping_keys(&unnamed["with"]),
                BTreeSet::from(["path".to_string(), "persist-credentials".to_string()])
            );
            let check = before
                .iter()
                .find(|step| {
                    step["env"]["WORKFLOW_SHA"].as_str() == Some("${{ job.workflow_sha }}")
                })
                .unwrap_or_else(|| panic!("{name}: job {id} does not check .klaud-action"));
            let script = check["run"].as_str().expect("the check's script");
            for needle in [
                "grep -qx 'name: klaud' .klaud-action/action.yml",
                "git -C .klaud-action rev-parse HEAD",
                "'/.klaud-action/' >> .git/info/exclude",
            ] {
                assert!(
                    script.contains(needle),
                    "{name}: job {id}: the check lacks {needle}"
                );
            }
        }
    }
}

#[test]
fn checkouts_persist_no_credentials_and_actions_are_pinned() {
    for name in REUSABLE {
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
    let planner = workflow(REUSABLE_PLAN);
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

/// The session job's steps, each named by what it is: a checkout (of the repository, or klaud's
/// `klaud checkout`), a klaud step by its mode, any other step by its id (or its name when it has
/// none).
fn candidate_steps() -> (Value, Vec<(String, Value)>) {
    let session = workflow(REUSABLE_SESSION);
    let all = jobs(&session);
    assert_eq!(all.len(), 1, "the session workflow has one job");
    let (_, job) = all.into_iter().next().expect("a job");
    let named = steps(&job)
        .into_iter()
        .map(|step| {
            let uses = step["uses"].as_str().unwrap_or_default();
            let name = if uses.starts_with("actions/checkout@") {
                if step["with"]["path"].as_str() == Some(".klaud-action") {
                    "klaud checkout".to_string()
                } else {
                    "checkout".to_string()
                }
            } else if step["env"]["WORKFLOW_SHA"].is_string() {
                "klaud check".to_string()
            } else if uses == KLAUD_ACTION {
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
        .unwrap_or_else(|| panic!("the session job has no step {name}"))
}

#[test]
fn the_candidate_job_runs_session_then_the_agent_then_finish() {
    let (job, named) = candidate_steps();
    let order: Vec<&str> = named.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        order,
        vec![
            "checkout",
            "klaud checkout",
            "klaud checkout",
            "klaud check",
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
    for (name, step) in &named[6..] {
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
    let planner = workflow(REUSABLE_PLAN);
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
        ("PROMPT_FILE", "${{ inputs.prompt-file }}"),
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
    // The repository's prompt file unless the caller names another.
    let prompt_file = &workflow(REUSABLE_SESSION)["on"]["workflow_call"]["inputs"]["prompt-file"];
    assert_eq!(prompt_file["default"].as_str(), Some(PROMPT));
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
        // After-care: what each kind asks, and validated still on the new exact head.
        "`kind`",
        "## 9. After-care: `refresh` and `repair`",
        "git merge origin/<base.branch>",
        "append-only file",
        "`evidence` lists each one",
        "succeeds on the new exact",
        "open as a draft with its branch for a maintainer",
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
