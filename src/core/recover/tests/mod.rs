//! The recovery decision on hand-built snapshots: each guard of contract §5, the reference bug,
//! reconciled outcomes and labels here; claims, the lease, legacy refs, resuming under the cap
//! and the ledger decisions re-run on a ledger another pass changed in `ledger_and_refs.rs`.

mod aftercare;
mod issues;
mod ledger_and_refs;
mod properties;

use chrono::{DateTime, Duration, Utc};

use super::ledger_plan::{WriteSettings, decide_first_write, decide_second_write};
use super::*;
use crate::core::ledger::{
    Claim, Kept, KeptObject, KeptVerdict, Lease, Ledger, Session, SessionState,
};
use crate::core::outcome::Outcome;
use crate::core::plan::LedgerExpectation;
use crate::core::policy::tests::inferencex_policy;
use crate::core::snapshot::{
    CandidateIssue, CommitFact, CommitsFact, IssueFact, JobFact, Listed, PullRequestFact, RefFact,
    RunFact, RunState, Snapshot,
};

const BOT: &str = "Klaud-Cold";
const MAINTAINER: &str = "maintainer-ada";
const OWN_RUN: u64 = 9_000;
const FINISHED_PARENT: u64 = 1_000;
const RUNNING_PARENT: u64 = 2_000;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn hours_ago(hours: i64) -> DateTime<Utc> {
    now() - Duration::hours(hours)
}

fn branch(candidate: &str) -> String {
    format!("klaud/auto-{candidate}")
}

fn sha(candidate: &str, which: &str) -> String {
    format!("{candidate}-{which}-0000000000")
}

/// A snapshot built fact by fact; every listing complete unless a test says otherwise.
struct World {
    snapshot: Snapshot,
    policy: Policy,
}

impl World {
    fn new() -> Self {
        let mut snapshot = Snapshot {
            open_pull_requests: Listed::complete(Vec::new()),
            refs: Listed::complete(Vec::new()),
            active_runs: Listed::complete(Vec::new()),
            ..Snapshot::default()
        };
        snapshot.runs.insert(
            FINISHED_PARENT,
            Ok(RunState::Finished {
                ended_at: hours_ago(3),
            }),
        );
        World {
            snapshot,
            policy: inferencex_policy(),
        }
    }

    /// An open draft by the bot with one bot commit, its branch at the head, no sweeps.
    fn bot_draft(&mut self, candidate: &str, number: u64) -> &mut Self {
        let head = sha(candidate, "head");
        self.snapshot
            .open_pull_requests
            .items
            .push(PullRequestFact {
                number,
                node_id: format!("PR_{number}"),
                head_branch: branch(candidate),
                head_sha: head.clone(),
                from_this_repository: true,
                author: Some(BOT.into()),
                open: true,
                draft: true,
                merged: false,
                labels: vec!["klaud-in-progress".into()],
                created_at: hours_ago(10),
            });
        self.snapshot.commits.insert(
            number,
            Ok(CommitsFact {
                commits: vec![commit(&head, BOT)],
                complete: true,
            }),
        );
        self.snapshot.refs.items.push(RefFact {
            name: branch(candidate),
            sha: head,
        });
        self.snapshot
            .sweeps
            .insert(branch(candidate), Ok(Listed::complete(Vec::new())));
        self
    }

    fn pull(&mut self, number: u64) -> &mut PullRequestFact {
        self.snapshot
            .open_pull_requests
            .items
            .iter_mut()
            .find(|pull| pull.number == number)
            .unwrap()
    }

    fn session(
        &mut self,
        candidate: &str,
        state: SessionState,
        parent: u64,
        pull: Option<u64>,
    ) -> &mut Session {
        self.snapshot.ledger.sessions.push(Session {
            candidate: candidate.into(),
            family: format!("family-{candidate}"),
            parent_run: parent,
            parent_attempt: None,
            state,
            started_at: hours_ago(8),
            finished_at: (state == SessionState::Finished).then(|| hours_ago(4)),
            outcome: None,
            agent_ran: true,
            pull_request: pull,
            pending_outcome: None,
            attempts: Vec::new(),
            resuming: None,
            unadopted_jobs: Vec::new(),
            kind: Default::default(),
            aftercare: None,
        });
        self.snapshot.ledger.sessions.last_mut().unwrap()
    }

    fn claim(&mut self, candidate: &str, parent: u64) {
        self.snapshot.ledger.claims.push(Claim {
            family: format!("family-{candidate}"),
            candidate: candidate.into(),
            parent_run: parent,
            claimed_at: hours_ago(8),
        });
    }

    fn active_run(&mut self, id: u64, workflow: &str, branch: &str, actor: &str) -> &mut Self {
        self.snapshot
            .active_runs
            .items
            .push(run(id, workflow, branch, actor, true));
        self
    }

    fn running_planner(&mut self, id: u64, jobs: &[&str]) {
        self.active_run(id, "klaud-plan.yml", "main", BOT);
        self.snapshot.planner_jobs.insert(
            id,
            Ok(jobs
                .iter()
                .map(|name| JobFact {
                    name: name.to_string(),
                    active: true,
                })
                .collect()),
        );
    }

    fn sweep(&mut self, candidate: &str, run: RunFact) {
        let Some(Ok(listed)) = self.snapshot.sweeps.get_mut(&branch(candidate)) else {
            panic!("no sweeps of {candidate}")
        };
        listed.items.push(run);
    }

    fn plan(&self) -> RecoveryPlan {
        recover(&self.snapshot, &self.policy, &context())
    }
}

fn context() -> RecoveryContext {
    RecoveryContext {
        own_run: OWN_RUN,
        now: now(),
        inspections: 10,
    }
}

fn commit(sha: &str, login: &str) -> CommitFact {
    CommitFact {
        sha: sha.into(),
        author: Some(login.into()),
        committer: Some(login.into()),
    }
}

fn run(id: u64, workflow: &str, branch: &str, actor: &str, active: bool) -> RunFact {
    RunFact {
        id,
        workflow: workflow.into(),
        head_branch: Some(branch.into()),
        head_sha: String::new(),
        title: None,
        actor: Some(actor.into()),
        triggering_actor: Some(actor.into()),
        active,
        conclusion: (!active).then(|| "success".into()),
        created_at: hours_ago(1),
        updated_at: hours_ago(1),
    }
}

fn report<'p>(plan: &'p RecoveryPlan, candidate: &str) -> &'p CandidateReport {
    plan.candidates
        .iter()
        .find(|report| report.candidate == candidate)
        .unwrap_or_else(|| panic!("no verdict for {candidate}: {:#?}", plan.candidates))
}

fn actions(plan: &RecoveryPlan, candidate: &str) -> Vec<String> {
    report(plan, candidate)
        .group
        .map(|index| {
            plan.groups[index]
                .actions
                .iter()
                .map(ToString::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn write_settings() -> WriteSettings {
    WriteSettings {
        own_run: OWN_RUN,
        now: now(),
        max_live: 5,
        prune_after: Duration::days(7),
    }
}

#[test]
fn an_abandoned_bot_only_draft_is_swept_in_contract_order() {
    let mut world = World::new();
    world.bot_draft("a", 7);
    world.pull(7).labels.push("full-sweep-enabled".into());
    world.active_run(50, "e2e-tests.yml", &branch("a"), BOT);
    world.active_run(51, "e2e-tests.yml", &branch("a"), MAINTAINER);

    let plan = world.plan();

    let verdict = report(&plan, "a");
    assert_eq!(verdict.verdict, Verdict::Swept, "{}", verdict.reason);
    assert_eq!(
        actions(&plan, "a"),
        [
            "cancel run 50 (e2e-tests.yml)",
            "set status label klaud-error on #7",
            "remove label full-sweep-enabled from #7",
            "close #7",
            "delete branch klaud/auto-a (if still at a-head-)",
        ],
        "the maintainer's smoke run is not cancelled"
    );
    let group = &plan.groups[verdict.group.unwrap()];
    assert!(group.destructive);
    assert_eq!(group.ledger_expectation, LedgerExpectation::NoOpenSession);
    let check = group.pull_request_check.as_ref().unwrap();
    assert_eq!(check.head_sha.as_deref(), Some(sha("a", "head").as_str()));
    assert_eq!(check.draft, Some(true));
}

#[test]
fn reference_bug_a_candidate_that_needs_inspection_is_not_swept_in_the_same_pass() {
    let mut world = World::new();
    world.bot_draft("a", 7);
    world.session("a", SessionState::Live, FINISHED_PARENT, Some(7));
    world.claim("a", FINISHED_PARENT);
    let mut maintainer_sweep = run(60, "run-sweep.yml", &branch("a"), MAINTAINER, false);
    maintainer_sweep.created_at = hours_ago(1);
    world.sweep("a", maintainer_sweep);

    let plan = world.plan();

    let verdict = report(&plan, "a");
    assert_eq!(verdict.verdict, Verdict::NeedsInspection);
    assert!(
        verdict.reason.contains("maintainer-ada"),
        "{}",
        verdict.reason
    );
    assert!(
        plan.groups
            .iter()
            .all(|group| group.candidate.as_deref() != Some("a"))
    );
    assert!(plan.ledger.outcomes.is_empty(), "its session stays live");
    assert!(plan.ledger.claim_releases.is_empty(), "its claim stays");
}

#[test]
fn a_head_moved_to_a_maintainer_commit_needs_inspection_and_is_remembered() {
    let mut world = World::new();
    world.bot_draft("a", 7);
    let head = sha("a", "head");
    world.snapshot.commits.insert(
        7,
        Ok(CommitsFact {
            commits: vec![commit("first", BOT), commit(&head, MAINTAINER)],
            complete: true,
        }),
    );

    let plan = world.plan();

    assert_eq!(report(&plan, "a").verdict, Verdict::NeedsInspection);
    assert!(plan.groups.is_empty());
    assert_eq!(plan.ledger.kept_added[0].object, KeptObject::PullRequest(7));
    assert_eq!(
        plan.ledger.kept_added[0].verdict,
        KeptVerdict::NeedsInspection
    );

    world.snapshot.ledger.kept = plan.ledger.kept_added.clone();
    world.snapshot.commits.clear();
    let again = world.plan();
    assert_eq!(report(&again, "a").verdict, Verdict::NeedsInspection);
    assert!(
        details_needed(&world.snapshot, &world.policy, &context())
            .commits
            .is_empty(),
        "remembered: its commits are not read again"
    );
}

#[test]
fn a_draft_with_a_maintainer_commit_below_a_bot_head_is_left_alone() {
    let mut world = World::new();
    world.bot_draft("a", 7);
    let head = sha("a", "head");
    world.snapshot.commits.insert(
        7,
        Ok(CommitsFact {
            commits: vec![commit("fix", MAINTAINER), commit(&head, BOT)],
            complete: true,
        }),
    );
    let plan = world.plan();
    assert_eq!(report(&plan, "a").verdict, Verdict::LeftAlone);
    assert!(plan.groups.is_empty());
}

#[test]
fn ready_pull_requests_are_never_closed() {
    let mut world = World::new();
    world.bot_draft("a", 7).bot_draft("b", 8);
    world.pull(7).draft = false;
    world.pull(8).draft = false;
    world
        .session("b", SessionState::Finished, FINISHED_PARENT, Some(8))
        .outcome = Some(Outcome::Validated);

    let plan = world.plan();

    assert_eq!(report(&plan, "a").verdict, Verdict::NeedsInspection);
    assert_eq!(report(&plan, "b").verdict, Verdict::LeftAlone);
    assert!(plan.groups.is_empty());
}

#[test]
fn a_handed_off_pull_request_is_never_changed() {
    let mut world = World::new();
    world.bot_draft("a", 7).bot_draft("b", 8);
    world.pull(7).labels.push("klaud-handoff".into());
    world.pull(8).labels.push("klaud-handoff".into());
    world.session("b", SessionState::Live, FINISHED_PARENT, Some(8));

    let plan = world.plan();

    assert_eq!(report(&plan, "a").verdict, Verdict::LeftAlone);
    assert_eq!(report(&plan, "b").verdict, Verdict::Reconciled);
    assert_eq!(report(&plan, "b").outcome, Some(Outcome::Handoff));
    assert!(plan.groups.is_empty(), "{:#?}", plan.groups);
}

#[test]
fn an_active_planner_job_or_sweep_keeps_a_candidate_alive() {
    let mut world = World::new();
    world.bot_draft("a", 7).bot_draft("b", 8).bot_draft("c", 9);
    world.running_planner(RUNNING_PARENT, &["select", "Run candidate a / agent"]);
    world.active_run(61, "run-sweep.yml", &branch("b"), BOT);

    let plan = world.plan();

    assert_eq!(report(&plan, "a").verdict, Verdict::Live);
    assert_eq!(report(&plan, "b").verdict, Verdict::Live);
    assert_eq!(report(&plan, "c").verdict, Verdict::Swept);
}

#[test]
fn an_incomplete_run_listing_skips_the_sweep_and_keeps_everything() {
    let mut world = World::new();
    world.bot_draft("a", 7);
    world.session("b", SessionState::Live, FINISHED_PARENT, None);
    world.snapshot.active_runs.gap = Some("GitHub listed 999 of 1200 runs".into());
    world.snapshot.refs.items.push(RefFact {
        name: format!("klaud/recovery-{FINISHED_PARENT}0-a"),
        sha: "x".into(),
    });

    let plan = world.plan();

    assert_eq!(report(&plan, "a").verdict, Verdict::Skipped);
    assert_eq!(report(&plan, "b").verdict, Verdict::Skipped);
    assert!(plan.groups.is_empty());
    assert!(plan.ledger.outcomes.is_empty());
    assert!(
        plan.skipped
            .iter()
            .any(|line| line.contains("active workflow runs"))
    );
}

#[test]
fn unreadable_planner_jobs_make_liveness_unknown() {
    let mut world = World::new();
    world.bot_draft("a", 7);
    world.active_run(RUNNING_PARENT, "klaud-plan.yml", "main", BOT);
    world
        .snapshot
        .planner_jobs
        .insert(RUNNING_PARENT, Err("HTTP 502".into()));
    let plan = world.plan();
    assert_eq!(report(&plan, "a").verdict, Verdict::Skipped);
    assert!(plan.groups.is_empty());
}

#[test]
fn a_successful_final_sweep_on_the_exact_head_reconciles_as_validated() {
    let mut world = World::new();
    world.bot_draft("a", 7).bot_draft("b", 8);
    world.session("a", SessionState::Live, FINISHED_PARENT, Some(7));
    world
        .session("b", SessionState::Live, FINISHED_PARENT, Some(8))
        .pending_outcome = Some(Outcome::Incompatible);
    let mut on_head = run(70, "run-sweep.yml", &branch("a"), BOT, false);
    on_head.head_sha = sha("a", "head");
    world.sweep("a", on_head);
    let mut on_older_head = run(71, "run-sweep.yml", &branch("b"), BOT, false);
    on_older_head.head_sha = "older".into();
    on_older_head.created_at = hours_ago(5);
    world.sweep("b", on_older_head);

    let plan = world.plan();

    assert_eq!(report(&plan, "a").outcome, Some(Outcome::Validated));
    assert_eq!(
        actions(&plan, "a"),
        [
            "set status label klaud-finished on #7",
            "mark #7 ready for review"
        ]
    );
    assert_eq!(report(&plan, "b").outcome, Some(Outcome::Incompatible));
    assert!(actions(&plan, "b").contains(&"close #8".to_string()));
    assert!(actions(&plan, "b").contains(&"set status label klaud-incompatible on #8".to_string()));
    assert_eq!(plan.ledger.outcomes.len(), 2);
}

#[test]
fn a_pull_request_closed_by_a_maintainer_ends_the_session_and_keeps_its_branch() {
    let mut world = World::new();
    world.session("a", SessionState::Live, FINISHED_PARENT, Some(7));
    world.snapshot.refs.items.push(RefFact {
        name: branch("a"),
        sha: sha("a", "head"),
    });
    world.snapshot.issues.insert(
        7,
        Ok(IssueFact {
            number: 7,
            open: false,
            closed_by: Some(MAINTAINER.into()),
            merged: false,
            labels: vec!["klaud-in-progress".into()],
        }),
    );

    let plan = world.plan();

    assert_eq!(
        report(&plan, "a").outcome,
        Some(Outcome::ClosedByMaintainer)
    );
    // `closed-by-maintainer` shows no status label; the branch stays.
    assert_eq!(actions(&plan, "a"), ["remove the status labels of #7"]);

    // Handed off before it was closed: not even its labels change.
    world.snapshot.issues.insert(
        7,
        Ok(IssueFact {
            number: 7,
            open: false,
            closed_by: Some(MAINTAINER.into()),
            merged: false,
            labels: vec!["klaud-in-progress".into(), "klaud-handoff".into()],
        }),
    );
    let plan = world.plan();
    assert!(actions(&plan, "a").is_empty());
}

#[test]
fn a_reconciled_pull_request_the_bot_closed_shows_its_outcome_label() {
    let mut world = World::new();
    world.session("a", SessionState::Live, FINISHED_PARENT, Some(7));
    world.snapshot.issues.insert(
        7,
        Ok(IssueFact {
            number: 7,
            open: false,
            closed_by: Some(BOT.into()),
            merged: false,
            labels: vec!["klaud-in-progress".into()],
        }),
    );
    world
        .snapshot
        .sweeps
        .insert(branch("a"), Ok(Listed::complete(Vec::new())));

    let plan = world.plan();

    assert_eq!(
        report(&plan, "a").outcome,
        Some(Outcome::NoOutcome),
        "{:?}",
        report(&plan, "a")
    );
    assert!(
        actions(&plan, "a").contains(&"set status label klaud-error on #7".to_string()),
        "{:?}",
        actions(&plan, "a")
    );
}

#[test]
fn a_pull_request_closed_by_the_bot_loses_its_leftover_branch() {
    let mut world = World::new();
    world
        .session("a", SessionState::Finished, FINISHED_PARENT, Some(7))
        .outcome = Some(Outcome::Failed);
    let head = sha("a", "head");
    world.snapshot.refs.items.push(RefFact {
        name: branch("a"),
        sha: head.clone(),
    });
    world.snapshot.issues.insert(
        7,
        Ok(IssueFact {
            number: 7,
            open: false,
            closed_by: Some(BOT.into()),
            merged: false,
            labels: Vec::new(),
        }),
    );
    world.snapshot.commits.insert(
        7,
        Ok(CommitsFact {
            commits: vec![commit(&head, BOT)],
            complete: true,
        }),
    );

    let plan = world.plan();

    assert_eq!(report(&plan, "a").verdict, Verdict::Swept);
    assert_eq!(
        actions(&plan, "a"),
        ["delete branch klaud/auto-a (if still at a-head-)"]
    );

    world.snapshot.issues.insert(
        7,
        Ok(IssueFact {
            number: 7,
            open: false,
            closed_by: Some(MAINTAINER.into()),
            merged: false,
            labels: Vec::new(),
        }),
    );
    let kept = world.plan();
    assert!(kept.groups.is_empty());
    assert_eq!(kept.refs.branches_kept, 1);
    assert_eq!(
        kept.ledger.kept_added[0].object,
        KeptObject::Branch("klaud/auto-a".into())
    );
}

#[test]
fn a_verdict_has_one_spelling_in_logs_and_files() {
    for verdict in Verdict::ALL {
        assert_eq!(
            serde_json::to_value(verdict).unwrap(),
            serde_json::json!(verdict.name())
        );
        assert_eq!(verdict.to_string(), verdict.name());
    }
}

#[test]
fn a_reconciled_session_whose_issue_was_closed_ends_retired_and_its_draft_is_cleaned_up() {
    let mut world = World::new();
    world.bot_draft("issue-4", 7);
    world.session("issue-4", SessionState::Live, FINISHED_PARENT, Some(7));
    let unread = world.plan();
    assert_eq!(
        report(&unread, "issue-4").verdict,
        Verdict::Skipped,
        "waits for the issue it came from"
    );
    assert!(
        details_needed(&world.snapshot, &world.policy, &context())
            .candidate_issues
            .contains("issue-4")
    );

    world
        .snapshot
        .candidate_issues
        .insert("issue-4".into(), Ok(CandidateIssue::Closed(4)));
    let plan = world.plan();
    assert_eq!(report(&plan, "issue-4").outcome, Some(Outcome::Retired));
    assert!(
        report(&plan, "issue-4")
            .reason
            .contains("its issue #4 was closed")
    );
    assert!(actions(&plan, "issue-4").contains(&"close #7".to_string()));

    // Open, or unreadable: not retired.
    for read in [Ok(CandidateIssue::Open(4)), Err("HTTP 502".into())] {
        world
            .snapshot
            .candidate_issues
            .insert("issue-4".into(), read);
        assert_eq!(
            report(&world.plan(), "issue-4").outcome,
            Some(Outcome::NoOutcome)
        );
    }
}
