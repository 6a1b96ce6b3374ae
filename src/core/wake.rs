//! `wake`'s decision (contract §3.6): should the end of this workflow run start a recovery pass?
//!
//! Two questions, answered in order, each from plain data:
//!
//! 1. [`judge_ended_run`]: is the run one klaud must react to? It must have ended (`completed`),
//!    be a run of the smoke or sweep workflow, belong to this repository with its head in this
//!    repository (a fork's branch may carry any name), and be the bot's (its actor or
//!    triggering actor) or run on a `<branch-prefix>` branch. Answered from the event alone, so
//!    a run that is not klaud's costs no request.
//! 2. [`covering_pass`]: will a planner pass that already exists see this ending? A pass that has
//!    not started yet (`queued`, `requested`, `waiting`, `pending`) recovers after the ending; a
//!    pass `in_progress` does only when it started at or after the ending (one that started
//!    earlier may have read its run listings before this run ended). Any planner pass counts, a
//!    wake pass or a wave: every planner pass recovers first, and a run listing cannot tell them
//!    apart anyway (dispatch inputs are not part of a run).
//!
//! Event text (branch names, logins, paths) is never trusted: it reaches messages only through
//! [`shown`], which percent-encodes everything but a small inert alphabet, so no branch name can
//! start a workflow command, break a log line or format the step summary.

use std::fmt::Write as _;

use chrono::{DateTime, SecondsFormat, Utc};

use super::github_state::{RunConclusion, RunStatus, WorkflowRunAction};
use super::policy::Policy;
use super::text::bounded;

/// The run whose `workflow_run` event woke this step, as the event describes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EndedRun {
    pub id: u64,
    /// The event's action: `completed` when the run ended (`requested`, `in_progress` otherwise).
    pub action: WorkflowRunAction,
    /// The workflow file's path, e.g. `.github/workflows/e2e-tests.yml`.
    pub workflow_path: String,
    /// `owner/name` of the repository the event was delivered for.
    pub repository: Option<String>,
    /// `owner/name` of the repository the run's head came from.
    pub head_repository: Option<String>,
    pub head_branch: Option<String>,
    pub actor: Option<String>,
    pub triggering_actor: Option<String>,
    pub conclusion: Option<RunConclusion>,
    /// When the run ended (its last update), by GitHub's clock.
    pub ended_at: Option<DateTime<Utc>>,
}

/// A run of the planner workflow that is not completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannerPass {
    pub id: u64,
    /// `queued`, `requested`, `waiting`, `pending` or `in_progress`.
    pub status: RunStatus,
    pub event: String,
    /// When the run (its latest attempt) started.
    pub started_at: Option<DateTime<Utc>>,
}

/// The run statuses of a planner pass that has not started yet, and of one that has.
pub const NOT_STARTED_STATUSES: [RunStatus; 4] = [
    RunStatus::Queued,
    RunStatus::Requested,
    RunStatus::Waiting,
    RunStatus::Pending,
];
pub const STARTED_STATUS: RunStatus = RunStatus::InProgress;

/// Why the step dispatches or not. `code()` is the public spelling (`wake-reason` output).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeReason {
    /// A klaud run ended and no pass will see it: dispatch a recovery pass.
    Dispatch,
    /// The event is not the end of the run (`requested`, `in_progress`).
    NotEnded,
    /// The run is not of the smoke or sweep workflow.
    NotSmokeOrSweep,
    /// The event is about another repository.
    OtherRepository,
    /// The run's head is in another repository (a fork), whatever its branch is called.
    ForkHead,
    /// Neither started by the bot nor on a `<branch-prefix>` branch.
    NotKlaudRun,
    /// A planner pass that will see this ending is already queued or started after it.
    PassPending,
}

impl WakeReason {
    pub fn code(self) -> &'static str {
        match self {
            WakeReason::Dispatch => "dispatch",
            WakeReason::NotEnded => "not-ended",
            WakeReason::NotSmokeOrSweep => "not-smoke-or-sweep",
            WakeReason::OtherRepository => "other-repository",
            WakeReason::ForkHead => "fork-head",
            WakeReason::NotKlaudRun => "not-klaud-run",
            WakeReason::PassPending => "pass-pending",
        }
    }
}

/// Why an ended run is klaud's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// Its actor or triggering actor is the bot.
    StartedByBot,
    /// It ran on a `<branch-prefix>` branch of this repository.
    CandidateBranch,
}

/// The decision, with a message safe to log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakeDecision {
    pub reason: WakeReason,
    pub message: String,
    /// The planner pass that will see the ending, when one already exists.
    pub covering_pass: Option<u64>,
}

impl WakeDecision {
    pub fn dispatches(&self) -> bool {
        self.reason == WakeReason::Dispatch
    }
}

/// Question 1: is this ended run one klaud reacts to? `repository` is this step's
/// `GITHUB_REPOSITORY`.
pub fn judge_ended_run(
    run: &EndedRun,
    repository: &str,
    policy: &Policy,
) -> Result<Ownership, WakeDecision> {
    if run.action != WorkflowRunAction::Completed {
        return Err(skip(
            WakeReason::NotEnded,
            format!(
                "the event reports run {} as {}, not completed",
                run.id,
                shown(run.action.as_str())
            ),
        ));
    }
    of_smoke_or_sweep(run, policy)?;
    of_this_repository(run, repository)?;
    owner(run, policy)
}

/// Nothing dispatched, for `reason`.
fn skip(reason: WakeReason, message: String) -> WakeDecision {
    WakeDecision {
        reason,
        message,
        covering_pass: None,
    }
}

/// The run is of the smoke or the sweep workflow.
fn of_smoke_or_sweep(run: &EndedRun, policy: &Policy) -> Result<(), WakeDecision> {
    let workflow = file_name(&run.workflow_path);
    let named = |configured: &Option<String>| {
        configured
            .as_deref()
            .is_some_and(|name| file_name(name) == workflow)
    };
    if !named(&policy.smoke_workflow) && !named(&policy.sweep_workflow) {
        return Err(skip(
            WakeReason::NotSmokeOrSweep,
            format!(
                "run {} is of {}, neither the smoke ({}) nor the sweep ({}) workflow",
                run.id,
                shown(workflow),
                shown(policy.smoke_workflow.as_deref().unwrap_or("none")),
                shown(policy.sweep_workflow.as_deref().unwrap_or("none"))
            ),
        ));
    }
    Ok(())
}

/// The run belongs to this repository, and so does its head (a fork's branch may carry any
/// name).
fn of_this_repository(run: &EndedRun, repository: &str) -> Result<(), WakeDecision> {
    if !same_repository(run.repository.as_deref(), repository) {
        return Err(skip(
            WakeReason::OtherRepository,
            format!(
                "run {} belongs to {}, not {}",
                run.id,
                shown_or_unknown(run.repository.as_deref()),
                shown(repository)
            ),
        ));
    }
    if !same_repository(run.head_repository.as_deref(), repository) {
        return Err(skip(
            WakeReason::ForkHead,
            format!(
                "run {} ran on a head from {}, not from {}",
                run.id,
                shown_or_unknown(run.head_repository.as_deref()),
                shown(repository)
            ),
        ));
    }
    Ok(())
}

/// Why the run is klaud's: the bot started it (actor or triggering actor), or it ran on a
/// candidate branch.
fn owner(run: &EndedRun, policy: &Policy) -> Result<Ownership, WakeDecision> {
    let by_bot = [&run.actor, &run.triggering_actor]
        .into_iter()
        .flatten()
        .any(|login| login.eq_ignore_ascii_case(&policy.bot));
    if by_bot {
        return Ok(Ownership::StartedByBot);
    }
    let on_candidate_branch = run
        .head_branch
        .as_deref()
        .and_then(|branch| policy.candidate_of_branch(branch))
        .is_some();
    if on_candidate_branch {
        return Ok(Ownership::CandidateBranch);
    }
    Err(skip(
        WakeReason::NotKlaudRun,
        format!(
            "run {} was started by {} on branch {}: neither the bot {} nor a {} branch",
            run.id,
            shown_or_unknown(run.actor.as_deref()),
            shown_or_unknown(run.head_branch.as_deref()),
            shown(&policy.bot),
            shown(&policy.branch_prefix)
        ),
    ))
}

/// Question 2: the existing planner pass that will see this ending, if any (the first one that
/// has not started, else the first that started at or after the ending).
pub fn covering_pass<'a>(run: &EndedRun, passes: &'a [PlannerPass]) -> Option<&'a PlannerPass> {
    passes
        .iter()
        .find(|pass| NOT_STARTED_STATUSES.contains(&pass.status))
        .or_else(|| {
            passes.iter().find(|pass| {
                pass.status == STARTED_STATUS
                    && matches!((pass.started_at, run.ended_at), (Some(started), Some(ended)) if started >= ended)
            })
        })
}

/// The whole decision for a run klaud owns, given the planner passes that are not completed.
pub fn decide_dispatch(
    run: &EndedRun,
    ownership: Ownership,
    passes: &[PlannerPass],
) -> WakeDecision {
    let owned = match ownership {
        Ownership::StartedByBot => "started by the bot",
        Ownership::CandidateBranch => "on a candidate branch",
    };
    let ended = format!(
        "{} run {} {owned} ended ({})",
        shown(file_name(&run.workflow_path)),
        run.id,
        shown_or_unknown(run.conclusion.as_ref().map(RunConclusion::as_str))
    );
    match covering_pass(run, passes) {
        Some(pass) => WakeDecision {
            reason: WakeReason::PassPending,
            message: format!(
                "{ended}; planner run {} ({}, {}) will see it, so nothing is dispatched",
                pass.id,
                shown(&pass.event),
                describe_pass_progress(pass)
            ),
            covering_pass: Some(pass.id),
        },
        None => WakeDecision {
            reason: WakeReason::Dispatch,
            message: format!("{ended}; no planner pass will see it, so one is dispatched"),
            covering_pass: None,
        },
    }
}

fn describe_pass_progress(pass: &PlannerPass) -> String {
    match (&pass.status, pass.started_at) {
        (status, Some(started)) if *status == STARTED_STATUS => format!(
            "started {}",
            started.to_rfc3339_opts(SecondsFormat::Secs, true)
        ),
        (status, _) => shown(status.as_str()),
    }
}

/// The file name of a workflow path: `.github/workflows/x.yml@refs/heads/main` → `x.yml`.
pub fn file_name(path: &str) -> &str {
    let without_ref = path.split('@').next().unwrap_or(path);
    without_ref.rsplit('/').next().unwrap_or(without_ref)
}

fn same_repository(candidate: Option<&str>, repository: &str) -> bool {
    candidate.is_some_and(|name| name.eq_ignore_ascii_case(repository))
}

/// Event text made inert for logs and Markdown: ASCII letters, digits and `-._/+=,@` stay,
/// every other byte becomes `%XX`; at most 200 characters.
pub fn shown(text: &str) -> String {
    let mut inert = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._/+=,@".contains(&byte) {
            inert.push(char::from(byte));
        } else {
            let _ = write!(inert, "%{byte:02X}");
        }
    }
    bounded(&inert, 200)
}

fn shown_or_unknown(text: Option<&str>) -> String {
    text.map_or_else(|| "(unknown)".to_string(), shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::policy::tests::inferencex_policy;
    use crate::core::test_support::at;

    const REPOSITORY: &str = "acme/bench";

    /// A smoke run of the bot on a candidate branch of this repository that just ended.
    fn ended_smoke_run() -> EndedRun {
        EndedRun {
            id: 501,
            action: "completed".into(),
            workflow_path: ".github/workflows/e2e-tests.yml".into(),
            repository: Some(REPOSITORY.into()),
            head_repository: Some(REPOSITORY.into()),
            head_branch: Some("klaud/auto-a".into()),
            actor: Some("Klaud-Cold".into()),
            triggering_actor: Some("Klaud-Cold".into()),
            conclusion: Some("failure".into()),
            ended_at: Some(at("2026-11-30T10:00:00Z")),
        }
    }

    fn pass(id: u64, status: &str, started_at: Option<&str>) -> PlannerPass {
        PlannerPass {
            id,
            status: status.into(),
            event: "workflow_dispatch".into(),
            started_at: started_at.map(at),
        }
    }

    fn judged(run: &EndedRun) -> Result<Ownership, WakeReason> {
        judge_ended_run(run, REPOSITORY, &inferencex_policy()).map_err(|skip| skip.reason)
    }

    #[test]
    fn the_bots_smoke_run_that_ended_is_klauds() {
        assert_eq!(judged(&ended_smoke_run()), Ok(Ownership::StartedByBot));
    }

    #[test]
    fn a_sweep_run_of_a_maintainer_on_a_candidate_branch_is_klauds() {
        let run = EndedRun {
            workflow_path: ".github/workflows/run-sweep.yml".into(),
            actor: Some("alice".into()),
            triggering_actor: Some("alice".into()),
            ..ended_smoke_run()
        };
        assert_eq!(judged(&run), Ok(Ownership::CandidateBranch));
    }

    #[test]
    fn logins_compare_without_case() {
        let run = EndedRun {
            head_branch: Some("main".into()),
            actor: Some("klaud-cold".into()),
            ..ended_smoke_run()
        };
        assert_eq!(judged(&run), Ok(Ownership::StartedByBot));
    }

    #[test]
    fn a_run_that_has_not_ended_is_not_a_reason_to_wake() {
        let run = EndedRun {
            action: "requested".into(),
            ..ended_smoke_run()
        };
        assert_eq!(judged(&run), Err(WakeReason::NotEnded));
    }

    #[test]
    fn other_workflows_are_ignored() {
        let run = EndedRun {
            workflow_path: ".github/workflows/ci.yml".into(),
            ..ended_smoke_run()
        };
        assert_eq!(judged(&run), Err(WakeReason::NotSmokeOrSweep));
    }

    #[test]
    fn a_fork_head_is_never_klauds_whatever_its_branch_and_actor() {
        let run = EndedRun {
            head_repository: Some("mallory/bench".into()),
            ..ended_smoke_run()
        };
        assert_eq!(judged(&run), Err(WakeReason::ForkHead));
        let unknown_head = EndedRun {
            head_repository: None,
            ..ended_smoke_run()
        };
        assert_eq!(judged(&unknown_head), Err(WakeReason::ForkHead));
    }

    #[test]
    fn an_event_of_another_repository_is_ignored() {
        let run = EndedRun {
            repository: Some("acme/other".into()),
            head_repository: Some("acme/other".into()),
            ..ended_smoke_run()
        };
        assert_eq!(judged(&run), Err(WakeReason::OtherRepository));
    }

    #[test]
    fn a_maintainers_run_on_another_branch_is_not_klauds() {
        let run = EndedRun {
            head_branch: Some("feature/klaud/auto-a".into()),
            actor: Some("alice".into()),
            triggering_actor: Some("alice".into()),
            ..ended_smoke_run()
        };
        assert_eq!(judged(&run), Err(WakeReason::NotKlaudRun));
        let bare_prefix = EndedRun {
            head_branch: Some("klaud/auto-".into()),
            ..run
        };
        assert_eq!(judged(&bare_prefix), Err(WakeReason::NotKlaudRun));
    }

    #[test]
    fn workflow_paths_compare_by_file_name() {
        assert_eq!(
            file_name(".github/workflows/e2e-tests.yml"),
            "e2e-tests.yml"
        );
        assert_eq!(
            file_name(".github/workflows/run-sweep.yml@refs/heads/main"),
            "run-sweep.yml"
        );
        assert_eq!(file_name("e2e-tests.yml"), "e2e-tests.yml");
    }

    #[test]
    fn no_planner_pass_means_dispatch() {
        let decision = decide_dispatch(&ended_smoke_run(), Ownership::StartedByBot, &[]);
        assert!(decision.dispatches());
        assert_eq!(decision.covering_pass, None);
    }

    #[test]
    fn a_queued_pass_will_see_the_ending_whenever_it_was_created() {
        let passes = [pass(9, "queued", Some("2026-11-30T08:00:00Z"))];
        let decision = decide_dispatch(&ended_smoke_run(), Ownership::StartedByBot, &passes);
        assert_eq!(decision.reason, WakeReason::PassPending);
        assert_eq!(decision.covering_pass, Some(9));
        for status in ["requested", "waiting", "pending"] {
            let passes = [pass(9, status, None)];
            let decision = decide_dispatch(&ended_smoke_run(), Ownership::StartedByBot, &passes);
            assert_eq!(decision.reason, WakeReason::PassPending, "{status}");
        }
    }

    #[test]
    fn a_pass_that_started_before_the_ending_may_have_missed_it() {
        let passes = [pass(9, "in_progress", Some("2026-11-30T09:59:00Z"))];
        let decision = decide_dispatch(&ended_smoke_run(), Ownership::StartedByBot, &passes);
        assert!(decision.dispatches());
    }

    #[test]
    fn a_pass_that_started_after_the_ending_will_see_it() {
        let passes = [
            pass(8, "in_progress", Some("2026-11-30T09:00:00Z")),
            pass(9, "in_progress", Some("2026-11-30T10:00:30Z")),
        ];
        let decision = decide_dispatch(&ended_smoke_run(), Ownership::StartedByBot, &passes);
        assert_eq!(decision.covering_pass, Some(9));
    }

    #[test]
    fn without_an_ending_time_only_a_pass_not_started_counts() {
        let run = EndedRun {
            ended_at: None,
            ..ended_smoke_run()
        };
        let started = [pass(9, "in_progress", Some("2026-11-30T11:00:00Z"))];
        assert!(decide_dispatch(&run, Ownership::StartedByBot, &started).dispatches());
    }

    #[test]
    fn event_text_is_made_inert_before_it_reaches_a_message() {
        assert_eq!(shown("klaud/auto-a.b_c"), "klaud/auto-a.b_c");
        assert_eq!(
            shown("x$(touch /tmp/p);`id`"),
            "x%24%28touch%20/tmp/p%29%3B%60id%60"
        );
        let hostile = "a\n::warning::pwned ##[set-output name=x;]y";
        let inert = shown(hostile);
        assert!(!inert.contains('\n') && !inert.contains("::") && !inert.contains("##["));
        assert_eq!(shown(&"é".repeat(300)).chars().count(), 201);
    }

    #[test]
    fn a_hostile_branch_name_reaches_the_message_only_escaped() {
        let run = EndedRun {
            head_branch: Some("feature\n::error::owned".into()),
            actor: Some("alice".into()),
            triggering_actor: None,
            ..ended_smoke_run()
        };
        let skip = judge_ended_run(&run, REPOSITORY, &inferencex_policy()).unwrap_err();
        assert!(skip.message.contains("feature%0A%3A%3Aerror%3A%3Aowned"));
        assert!(!skip.message.contains('\n'));
    }
}
