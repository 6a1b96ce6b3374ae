//! What the after-care session tests share: a validated pull request of the bot whose sweep on
//! its head failed, with the failed jobs' logs kept by the fake, and the ledger as `recover`
//! leaves it when it starts a `repair` (or `refresh`) session — the pull request watched, one
//! after-care session used, the live session of that kind with its work and evidence, resumed
//! for one dispatched job, and the family claimed by the recovery run.

#![allow(dead_code)] // each including test uses a part of it

use chrono::{DateTime, TimeZone, Utc};
use klaud::core::aftercare::{AftercareWork, FailedJob, SessionKind};
use klaud::core::github_state::CheckConclusion;
use klaud::core::ledger::{Resuming, SessionState};
use klaud::core::outcome::Outcome;

use super::fake_github::JobSpec;
use super::fake_github::RunSpec;
use super::fake_github::Timestamp;
use super::fake_github::clock::{HOUR, MINUTE};
use super::recover_support::*;

/// What was seeded for one after-care session.
pub struct Seeded {
    pub pull: u64,
    /// The head the session started at (the validated one).
    pub head: String,
    /// The recovery run that started the session (its parent).
    pub recover_run: u64,
    /// The failed sweep run and its jobs, in order.
    pub sweep_run: u64,
    pub failed_jobs: Vec<u64>,
}

fn time(timestamp: Timestamp) -> DateTime<Utc> {
    Utc.timestamp_opt(timestamp.0, 0).single().unwrap()
}

/// A validated, ready pull request of `candidate` whose sweep on its head failed in one job per
/// `logs` entry (the job's log kept when `Some`), and the ledger as `recover` writes it when it
/// starts an after-care session of `kind`: the earlier session finished `validated`, the pull
/// request watched with one session used, the live session resumed for a dispatched job of the
/// candidate workflow.
pub fn aftercare_started(
    world: &mut World,
    candidate: &str,
    kind: SessionKind,
    logs: &[Option<&str>],
) -> Seeded {
    let commits = vec![world.bot_commit(candidate, 20)];
    let pull = world.bot_pull(candidate, false, commits, &["klaud-finished"]);
    let head = world.state.pulls[&pull].head_sha.clone();
    let jobs: Vec<JobSpec> = (0..logs.len())
        .map(|index| JobSpec::completed(&format!("sweep shard {}", index + 1), "failure"))
        .collect();
    let sweep_run = world.state.add_run(RunSpec {
        workflow: SWEEP.into(),
        head_branch: Some(branch(candidate)),
        head_sha: Some(head.clone()),
        event: "pull_request".into(),
        status: "completed".into(),
        conclusion: Some("failure".into()),
        actor: Some(BOT.into()),
        created_at: Some(world.ago(2 * HOUR)),
        jobs,
        ..RunSpec::default()
    });
    let failed_jobs: Vec<u64> = world
        .state
        .jobs_of_run(sweep_run)
        .iter()
        .map(|job| job.id)
        .collect();
    for (job, log) in failed_jobs.iter().zip(logs) {
        if let Some(log) = log {
            world.state.set_job_log(*job, log);
        }
    }
    let recover_run = world.finished_planner(0, &[]);

    let validating = world.finished_planner(30, &[candidate]);
    let earlier = world.session(candidate, SessionState::Finished, validating, Some(pull));
    earlier.outcome = Some(Outcome::Validated);
    world.ledger.record_validated(
        candidate,
        &family(candidate),
        pull,
        Some(&head),
        time(world.ago(6 * HOUR)),
    );
    let started = time(world.ago(5 * MINUTE));
    let record = &mut world.ledger.aftercare[0];
    record.sessions_used = 1;
    record.last_started_at = Some(started);
    let failed = failed_jobs
        .iter()
        .enumerate()
        .map(|(index, job)| FailedJob {
            name: format!("sweep shard {}", index + 1),
            run_id: Some(sweep_run),
            job_id: Some(*job),
            url: Some(format!(
                "https://github.com/acme/bench/actions/runs/{sweep_run}/job/{job}"
            )),
            conclusion: Some(CheckConclusion::Failure),
        })
        .collect();
    let session = world.session(candidate, SessionState::Live, recover_run, Some(pull));
    session.kind = kind;
    session.started_at = started;
    session.aftercare = Some(AftercareWork {
        pull_request: pull,
        head_sha: head.clone(),
        failed: if kind == SessionKind::Repair {
            failed
        } else {
            Vec::new()
        },
    });
    session.resuming = Some(Resuming {
        by_run: recover_run,
        at: started,
    });
    world.claim(candidate, recover_run);
    world.state.put_file(
        STATE_BRANCH,
        &format!("records/{candidate}.json"),
        &format!(
            r#"{{"id": "{candidate}", "family": "{}"}}"#,
            family(candidate)
        ),
    );
    world.ledger.claims.last_mut().unwrap().claimed_at = started;
    Seeded {
        pull,
        head,
        recover_run,
        sweep_run,
        failed_jobs,
    }
}
