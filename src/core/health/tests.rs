use std::collections::BTreeMap;

use chrono::Duration;

use super::*;
use crate::core::test_support::at;

const SWEEP: Option<&str> = Some("run-sweep.yml");

fn sweep_check(run: u64, job: u64, status: &str, conclusion: Option<&str>) -> Check {
    workflow_check(
        ".github/workflows/run-sweep.yml",
        run,
        job,
        status,
        conclusion,
    )
}

fn workflow_check(path: &str, run: u64, job: u64, status: &str, conclusion: Option<&str>) -> Check {
    let completed = status == "COMPLETED";
    Check::Run(CheckRun {
        name: format!("job {job}"),
        id: Some(job),
        status: CheckStatus::from(status),
        conclusion: conclusion.map(CheckConclusion::from),
        url: Some(format!(
            "https://github.com/acme/bench/actions/runs/{run}/job/{job}"
        )),
        workflow_run: Some(CheckWorkflowRun {
            id: run,
            path: path.to_string(),
            status: CheckStatus::from(if completed {
                "COMPLETED"
            } else {
                "IN_PROGRESS"
            }),
            conclusion: conclusion.filter(|_| completed).map(CheckConclusion::from),
        }),
    })
}

fn status(context: &str, state: &str) -> Check {
    Check::Status(CommitStatus {
        context: context.to_string(),
        state: StatusState::from(state),
        target_url: Some(format!("https://ci.example/{context}")),
    })
}

fn pull(number: u64, checks: Vec<Check>) -> PullRequestChecks {
    PullRequestChecks {
        number,
        candidate: format!("c{number}"),
        created_at: at("2026-12-01T00:00:00Z") + Duration::hours(number as i64),
        draft: false,
        head_sha: "a".repeat(40),
        mergeable: Mergeable::Mergeable,
        merge_state: MergeStateStatus::Clean,
        checks: Listed::complete(checks),
    }
}

fn job(run: u64, id: u64, status: &str, conclusion: Option<&str>, labels: &[&str]) -> SweepJob {
    SweepJob {
        id,
        run_id: run,
        name: format!("job {id}"),
        status: RunStatus::from(status),
        conclusion: conclusion.map(RunConclusion::from),
        labels: labels.iter().map(|label| label.to_string()).collect(),
        started_at: None,
        completed_at: None,
    }
}

/// A completed job that took `seconds`.
fn took(run: u64, id: u64, conclusion: &str, labels: &[&str], seconds: i64) -> SweepJob {
    let started = at("2026-12-01T10:00:00Z");
    SweepJob {
        started_at: Some(started),
        completed_at: Some(started + Duration::seconds(seconds)),
        ..job(run, id, "completed", Some(conclusion), labels)
    }
}

fn report(
    pulls: Vec<PullRequestChecks>,
    jobs: BTreeMap<u64, Listed<SweepJob>>,
    settings: &HealthSettings,
) -> HealthReport {
    let pulls = Listed::complete(pulls);
    health_report(
        HealthFacts {
            pulls: &pulls,
            jobs: &jobs,
            sweep_workflow: SWEEP,
        },
        settings,
    )
}

fn row(report: &HealthReport, number: u64) -> &PullRequestHealth {
    report
        .pull_requests
        .iter()
        .find(|row| row.number == number)
        .unwrap()
}

#[test]
fn every_health_is_the_first_row_that_applies() {
    let ok = |job| sweep_check(1, job, "COMPLETED", Some("SUCCESS"));
    let cases = [
        (
            vec![ok(1), sweep_check(1, 2, "COMPLETED", Some("FAILURE"))],
            Health::Failing,
        ),
        (
            vec![ok(1), sweep_check(1, 2, "COMPLETED", Some("TIMED_OUT"))],
            Health::Failing,
        ),
        (
            vec![ok(1), sweep_check(1, 2, "COMPLETED", Some("CANCELLED"))],
            Health::Failing,
        ),
        (
            vec![
                ok(1),
                sweep_check(1, 2, "COMPLETED", Some("STARTUP_FAILURE")),
            ],
            Health::Failing,
        ),
        (
            vec![
                ok(1),
                sweep_check(1, 2, "COMPLETED", Some("ACTION_REQUIRED")),
            ],
            Health::Failing,
        ),
        (
            vec![
                sweep_check(2, 3, "COMPLETED", Some("FAILURE")),
                sweep_check(2, 4, "QUEUED", None),
            ],
            Health::FailingRunning,
        ),
        (
            vec![ok(1), sweep_check(2, 5, "IN_PROGRESS", None)],
            Health::Running,
        ),
        (
            vec![ok(1), sweep_check(2, 5, "WAITING", None)],
            Health::Running,
        ),
        (
            vec![ok(1), sweep_check(2, 5, "REQUESTED", None)],
            Health::Running,
        ),
        (
            vec![ok(1), sweep_check(2, 5, "PENDING", None)],
            Health::Running,
        ),
        (
            vec![workflow_check(
                ".github/workflows/e2e-tests.yml",
                3,
                6,
                "COMPLETED",
                Some("SUCCESS"),
            )],
            Health::NoSweep,
        ),
        (Vec::new(), Health::NoSweep),
        (
            vec![
                sweep_check(4, 7, "COMPLETED", Some("SKIPPED")),
                sweep_check(4, 8, "COMPLETED", Some("NEUTRAL")),
            ],
            Health::SweepSkipped,
        ),
        (vec![ok(1)], Health::Passing),
    ];
    for (checks, expected) in cases {
        assert_eq!(health_of(&checks, SWEEP), expected, "{checks:?}");
    }
}

#[test]
fn a_sweep_run_whose_jobs_were_all_skipped_swept_nothing() {
    // The run concluded `SUCCESS` as GitHub concludes a run whose jobs were skipped by `if:`.
    let mut skipped = sweep_check(5, 9, "COMPLETED", Some("SKIPPED"));
    if let Check::Run(run) = &mut skipped {
        run.workflow_run.as_mut().unwrap().conclusion = Some(CheckConclusion::Success);
    }
    assert_eq!(health_of(&[skipped], SWEEP), Health::SweepSkipped);
    assert_eq!(sweep_runs_on_head(&[], "run-sweep.yml"), vec![]);
}

#[test]
fn a_commit_status_counts_next_to_check_runs() {
    let ok = sweep_check(1, 1, "COMPLETED", Some("SUCCESS"));
    for (state, expected) in [
        ("FAILURE", Health::Failing),
        ("ERROR", Health::Failing),
        ("PENDING", Health::Running),
        ("EXPECTED", Health::Running),
        ("SUCCESS", Health::Passing),
    ] {
        let checks = vec![ok.clone(), status("ci/external", state)];
        assert_eq!(health_of(&checks, SWEEP), expected, "{state}");
    }
    let report = report(
        vec![pull(1, vec![ok, status("ci/external", "ERROR")])],
        BTreeMap::new(),
        &HealthSettings::default(),
    );
    let row = row(&report, 1);
    assert_eq!(
        row.failed,
        vec![FailedCheck {
            name: "ci/external".into(),
            run_id: None,
            job_id: None,
            url: Some("https://ci.example/ci/external".into()),
        }]
    );
    assert_eq!(
        row.checks,
        BTreeMap::from([("ERROR".to_string(), 1), ("SUCCESS".to_string(), 1)])
    );
}

#[test]
fn a_failed_check_run_names_its_run_job_and_link() {
    let checks = vec![sweep_check(7, 70, "COMPLETED", Some("FAILURE"))];
    let report = report(
        vec![pull(3, checks)],
        BTreeMap::new(),
        &HealthSettings::default(),
    );
    assert_eq!(
        row(&report, 3).failed,
        vec![FailedCheck {
            name: "job 70".into(),
            run_id: Some(7),
            job_id: Some(70),
            url: Some("https://github.com/acme/bench/actions/runs/7/job/70".into()),
        }]
    );
}

#[test]
fn conflicting_and_behind_are_flags_and_unknown_mergeability_sets_neither() {
    let passing = vec![sweep_check(1, 1, "COMPLETED", Some("SUCCESS"))];
    let mut conflicting = pull(1, passing.clone());
    conflicting.mergeable = Mergeable::Conflicting;
    conflicting.merge_state = MergeStateStatus::Dirty;
    let mut behind = pull(2, passing.clone());
    behind.merge_state = MergeStateStatus::Behind;
    let mut unknown = pull(3, passing);
    unknown.mergeable = Mergeable::Unknown;
    unknown.merge_state = MergeStateStatus::Unknown;
    let report = report(
        vec![conflicting, behind, unknown],
        BTreeMap::new(),
        &HealthSettings::default(),
    );
    let flags = |number| {
        let row = row(&report, number);
        (
            row.conflicting,
            row.behind,
            row.mergeable.as_str().to_string(),
        )
    };
    assert_eq!(flags(1), (true, false, "CONFLICTING".into()));
    assert_eq!(flags(2), (false, true, "MERGEABLE".into()));
    assert_eq!(flags(3), (false, false, "UNKNOWN".into()));
    // The health is the checks' whatever the mergeability.
    assert!(
        report
            .pull_requests
            .iter()
            .all(|row| row.health == Health::Passing)
    );
}

#[test]
fn checks_not_all_read_make_the_health_unknown_never_passing() {
    let mut partly = pull(4, vec![sweep_check(1, 1, "COMPLETED", Some("SUCCESS"))]);
    partly.checks.gap = Some("page 2 of the checks could not be read: HTTP 502".into());
    let report = report(vec![partly], BTreeMap::new(), &HealthSettings::default());
    let row = row(&report, 4);
    assert_eq!(row.health, Health::Unknown);
    assert_eq!(
        row.unknown_because.as_deref(),
        Some("page 2 of the checks could not be read: HTTP 502")
    );
}

/// The worked example: pools b200 (2 runners) and mi355x (3), 7 minutes by default, pool
/// `other` with 4 runners.
///
/// Pull request #1 (run 10): b200 jobs — two queued, one in progress, and three completed in
/// 10 min 30 s (success), 12 min (failure) and 50 min (cancelled: not measured); one mi355x job
/// queued whose labels name mi355x before b200.
/// Pull request #2 (run 20): one b200 job queued, two jobs on an unnamed `cpu-large` runner.
///
/// b200: 4 pending ÷ 2 runners = 2 waves × median(10.5, 12) = 11.25 min → 22.5 → 23 min.
/// mi355x: 1 pending ÷ 3 = 1 wave × 7 (nothing measured) = 7 min.
/// other: 2 pending ÷ 4 = 1 wave × 7 = 7 min.
/// #1 waits on b200 and mi355x: 23 min; #2 on b200 and other: 23 min. With almost-ready at 3
/// jobs, #2 (3 pending) is almost ready and #1 (4 pending) is not.
#[test]
fn the_estimate_of_the_worked_example() {
    let settings = HealthSettings {
        pools: BTreeMap::from([("b200".into(), 2), ("mi355x".into(), 3)]),
        default_runners: 4,
        job_minutes: 7.0,
        almost_ready_jobs: 3,
        max_run_reads: 20,
    };
    let running = |run, job| sweep_check(run, job, "IN_PROGRESS", None);
    let pulls = vec![
        pull(1, vec![running(10, 100)]),
        pull(2, vec![running(20, 200)]),
    ];
    let b200 = &["self-hosted", "b200"][..];
    let jobs = BTreeMap::from([
        (
            10,
            Listed::complete(vec![
                job(10, 101, "queued", None, b200),
                job(10, 102, "queued", None, b200),
                job(10, 103, "in_progress", None, b200),
                took(10, 104, "success", b200, 630),
                took(10, 105, "failure", b200, 720),
                took(10, 106, "cancelled", b200, 3000),
                job(10, 107, "queued", None, &["gpu", "mi355x", "b200"]),
            ]),
        ),
        (
            20,
            Listed::complete(vec![
                job(20, 201, "queued", None, b200),
                job(20, 202, "queued", None, &["cpu-large"]),
                job(20, 203, "in_progress", None, &["cpu-large"]),
            ]),
        ),
    ]);
    let report = report(pulls, jobs, &settings);
    let first = row(&report, 1);
    assert_eq!(
        first.pending,
        BTreeMap::from([("b200".into(), 3), ("mi355x".into(), 1)])
    );
    assert_eq!(first.eta_minutes, Some(23));
    assert!(!first.eta_partial);
    let second = row(&report, 2);
    assert_eq!(
        second.pending,
        BTreeMap::from([("b200".into(), 1), ("other".into(), 2)])
    );
    assert_eq!(second.eta_minutes, Some(23));
    assert_eq!(report.almost_ready, vec![2]);
    let pools: Vec<(&str, u32, usize, f64, usize)> = report
        .pools
        .iter()
        .map(|p| {
            (
                p.pool.as_str(),
                p.runners,
                p.pending,
                p.job_minutes,
                p.measured_jobs,
            )
        })
        .collect();
    assert_eq!(
        pools,
        vec![
            ("b200", 2, 4, 11.25, 2),
            ("other", 4, 2, 7.0, 0),
            ("mi355x", 3, 1, 7.0, 0)
        ]
    );
}

#[test]
fn almost_ready_puts_the_soonest_first() {
    let settings = HealthSettings {
        pools: BTreeMap::from([("h100".into(), 1), ("h200".into(), 10)]),
        ..HealthSettings::default()
    };
    let running = |run, job| sweep_check(run, job, "QUEUED", None);
    let pulls = vec![
        pull(1, vec![running(10, 100)]),
        pull(2, vec![running(20, 200)]),
    ];
    let jobs = BTreeMap::from([
        (
            10,
            Listed::complete(vec![job(10, 101, "queued", None, &["h200"])]),
        ),
        (
            20,
            Listed::complete(vec![
                job(20, 201, "queued", None, &["h100"]),
                job(20, 202, "queued", None, &["h100"]),
            ]),
        ),
    ]);
    let report = report(pulls, jobs, &settings);
    assert_eq!(row(&report, 1).eta_minutes, Some(7));
    assert_eq!(row(&report, 2).eta_minutes, Some(14));
    assert_eq!(report.almost_ready, vec![1, 2]);
}

#[test]
fn runs_past_the_read_bound_make_their_pull_requests_estimates_partial() {
    let settings = HealthSettings {
        max_run_reads: 1,
        ..HealthSettings::default()
    };
    let running = |run, job| sweep_check(run, job, "IN_PROGRESS", None);
    let pulls = vec![
        pull(1, vec![running(10, 100)]),
        pull(2, vec![running(20, 200)]),
    ];
    assert_eq!(runs_to_read(&pulls, SWEEP, &settings), vec![10]);
    let jobs = BTreeMap::from([(
        10,
        Listed::complete(vec![job(10, 101, "queued", None, &["b200"])]),
    )]);
    let report = report(pulls, jobs, &settings);
    assert!(!row(&report, 1).eta_partial);
    assert_eq!(row(&report, 1).eta_minutes, Some(7));
    let beyond = row(&report, 2);
    assert!(beyond.eta_partial);
    assert_eq!(beyond.eta_minutes, None);
    assert_eq!(
        report.almost_ready,
        vec![1],
        "a partial estimate is not almost ready"
    );
    assert_eq!((report.sweep_runs_active, report.sweep_runs_read), (2, 1));
}

#[test]
fn a_job_listing_cut_at_one_page_makes_the_estimate_partial() {
    let pulls = vec![pull(1, vec![sweep_check(10, 100, "IN_PROGRESS", None)])];
    let jobs = BTreeMap::from([(
        10,
        Listed::incomplete(
            vec![job(10, 101, "queued", None, &["b200"])],
            "run 10 has 140 jobs and one page of 100 was read",
        ),
    )]);
    let report = report(pulls, jobs, &HealthSettings::default());
    let row = row(&report, 1);
    assert!(row.eta_partial);
    assert_eq!(row.pending, BTreeMap::from([("b200".into(), 1)]));
}

#[test]
fn pull_requests_are_grouped_by_health_newest_first_in_each() {
    let failing = vec![sweep_check(1, 1, "COMPLETED", Some("FAILURE"))];
    let passing = vec![sweep_check(2, 2, "COMPLETED", Some("SUCCESS"))];
    let pulls = vec![
        pull(1, passing.clone()),
        pull(2, failing.clone()),
        pull(3, passing),
        pull(4, Vec::new()),
        pull(5, failing),
    ];
    let report = report(pulls, BTreeMap::new(), &HealthSettings::default());
    let order: Vec<(u64, Health)> = report
        .pull_requests
        .iter()
        .map(|row| (row.number, row.health))
        .collect();
    assert_eq!(
        order,
        vec![
            (5, Health::Failing),
            (2, Health::Failing),
            (4, Health::NoSweep),
            (3, Health::Passing),
            (1, Health::Passing)
        ]
    );
}

#[test]
fn a_pull_request_listing_that_is_not_whole_makes_every_estimate_partial() {
    let pulls = Listed::incomplete(
        vec![pull(1, vec![sweep_check(10, 100, "IN_PROGRESS", None)])],
        "the branches could not be listed",
    );
    let jobs = BTreeMap::from([(
        10,
        Listed::complete(vec![job(10, 101, "queued", None, &["b200"])]),
    )]);
    let report = health_report(
        HealthFacts {
            pulls: &pulls,
            jobs: &jobs,
            sweep_workflow: SWEEP,
        },
        &HealthSettings::default(),
    );
    let row = row(&report, 1);
    assert_eq!((row.eta_minutes, row.eta_partial), (Some(7), true));
    assert!(report.almost_ready.is_empty());
}

#[test]
fn without_a_sweep_workflow_nothing_failed_or_pending_is_passing() {
    let ci = workflow_check(
        ".github/workflows/ci.yml",
        1,
        1,
        "COMPLETED",
        Some("SUCCESS"),
    );
    assert_eq!(health_of(std::slice::from_ref(&ci), None), Health::Passing);
    assert_eq!(health_of(&[], None), Health::Passing);
    let running = workflow_check(".github/workflows/ci.yml", 2, 2, "QUEUED", None);
    assert_eq!(health_of(&[ci, running], None), Health::Running);
    let pulls = vec![pull(1, vec![sweep_check(10, 100, "IN_PROGRESS", None)])];
    assert!(runs_to_read(&pulls, None, &HealthSettings::default()).is_empty());
}
