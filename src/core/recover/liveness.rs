//! What keeps a candidate alive (contract §5, "abandoned"): an active planner job for it, an
//! active sweep or candidate run on its branch (or naming it), or — for a live session — its
//! parent run still running. A resumed session runs in a dispatched candidate run; a candidate run
//! that names no candidate may be any resumed session's, so it keeps every live session whose
//! parent ended alive. When the active runs or a planner run's jobs could not be listed,
//! liveness is unknown and nothing that depends on it is done.

use std::collections::BTreeMap;

use super::{Facts, RunSeen, Seen, candidate_ids, title_names};
use crate::core::ledger::{Session, SessionState};
use crate::core::snapshot::RunFact;

/// Whether a candidate is alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Alive {
    Yes(String),
    No,
    /// Cannot tell this pass, and why.
    Unknown(String),
    /// A read about this candidate failed: a reconcile error.
    Unreadable(String),
}

pub(crate) struct Liveness {
    /// Why liveness of every candidate is unknown this pass.
    pub unknown: Option<String>,
    /// Candidate → the active planner job running it.
    planner_jobs: BTreeMap<String, String>,
    active_runs: Vec<RunFact>,
    /// Active candidate runs that name no known candidate.
    unattributed_candidate_runs: Vec<u64>,
}

impl Liveness {
    pub fn assess(facts: &Facts<'_>) -> Liveness {
        let snapshot = facts.snapshot;
        let policy = facts.policy;
        let mut unknown = snapshot
            .active_runs
            .gap
            .as_ref()
            .map(|gap| format!("the active workflow runs could not all be listed ({gap})"));
        let mut planner_jobs = BTreeMap::new();
        for run in snapshot
            .active_runs
            .items
            .iter()
            .filter(|run| run.workflow == policy.planner_workflow)
        {
            match facts.planner_jobs(run.id) {
                Seen::Known(jobs) => {
                    for job in jobs.iter().filter(|job| job.active) {
                        if let Some(candidate) = candidate_of_job(&policy.planner_job, &job.name) {
                            planner_jobs.insert(
                                candidate.to_string(),
                                format!("planner job '{}' of run {} is active", job.name, run.id),
                            );
                        }
                    }
                }
                Seen::Failed(error) => {
                    unknown.get_or_insert_with(|| {
                        format!(
                            "the jobs of planner run {} could not be read ({error})",
                            run.id
                        )
                    });
                }
                Seen::Unread => {
                    unknown.get_or_insert_with(|| {
                        format!("the jobs of planner run {} were not read", run.id)
                    });
                }
            }
        }
        let known = candidate_ids(facts);
        let unattributed_candidate_runs = snapshot
            .active_runs
            .items
            .iter()
            .filter(|run| run.workflow == policy.candidate_workflow)
            .filter(|run| {
                let on_candidate_branch = run
                    .head_branch
                    .as_deref()
                    .is_some_and(|branch| facts.candidate_of_branch(branch).is_some());
                let names_one = run.title.as_deref().is_some_and(|title| {
                    known
                        .iter()
                        .any(|id| title_names(title, id, &policy.candidate_branch(id)))
                });
                !on_candidate_branch && !names_one
            })
            .map(|run| run.id)
            .collect();
        Liveness {
            unknown,
            planner_jobs,
            active_runs: snapshot.active_runs.items.clone(),
            unattributed_candidate_runs,
        }
    }

    /// Whether `candidate` (with its open or latest session) is alive.
    pub fn of(&self, facts: &Facts<'_>, candidate: &str, session: Option<&Session>) -> Alive {
        if let Some(reason) = &self.unknown {
            return Alive::Unknown(reason.clone());
        }
        if let Some(job) = self.planner_jobs.get(candidate) {
            return Alive::Yes(job.clone());
        }
        let policy = facts.policy;
        let branch = policy.candidate_branch(candidate);
        for (workflow, what) in [
            (policy.sweep_workflow.as_ref(), "sweep"),
            (Some(&policy.candidate_workflow), "candidate"),
        ]
        .into_iter()
        .filter_map(|(workflow, what)| Some((workflow?, what)))
        {
            if let Some(run) = self
                .runs_of(workflow, candidate, &branch)
                .into_iter()
                .next()
            {
                return Alive::Yes(format!("{what} run {} is active", run.id));
            }
        }
        let Some(session) = session.filter(|session| session.state == SessionState::Live) else {
            return Alive::No;
        };
        match facts.run_state(session.parent_run) {
            RunSeen::Active => Alive::Yes(format!(
                "its parent run {} is still running",
                session.parent_run
            )),
            RunSeen::Failed(error) => Alive::Unreadable(format!(
                "the status of its parent run {} could not be read ({error})",
                session.parent_run
            )),
            RunSeen::Unread => Alive::Unknown(format!(
                "the status of its parent run {} was not read",
                session.parent_run
            )),
            RunSeen::Ended(_) => match self.unattributed_candidate_runs.first() {
                Some(run) => Alive::Yes(format!(
                    "candidate run {run} is active and names no candidate: it may be this session's"
                )),
                None => Alive::No,
            },
        }
    }

    /// Active runs of `workflow` on the candidate's branch or naming it in their title.
    pub fn runs_of(&self, workflow: &str, candidate: &str, branch: &str) -> Vec<&RunFact> {
        self.active_runs
            .iter()
            .filter(|run| run.workflow == workflow)
            .filter(|run| {
                run.head_branch.as_deref() == Some(branch)
                    || run
                        .title
                        .as_deref()
                        .is_some_and(|title| title_names(title, candidate, branch))
            })
            .collect()
    }
}

/// The candidate a planner job runs: the job name is the pattern with `{id}` replaced, possibly
/// followed by ` / <inner job>` when the job calls a reusable workflow.
pub(crate) fn candidate_of_job<'j>(pattern: &str, job_name: &'j str) -> Option<&'j str> {
    let (prefix, suffix) = pattern.split_once("{id}")?;
    let rest = job_name.strip_prefix(prefix)?;
    let id = if suffix.is_empty() {
        rest.split(" / ").next().unwrap_or(rest)
    } else {
        let end = rest.find(suffix)?;
        let after = &rest[end + suffix.len()..];
        if !after.is_empty() && !after.starts_with(" / ") {
            return None;
        }
        &rest[..end]
    };
    super::is_candidate_id(id).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::candidate_of_job;

    #[test]
    fn planner_jobs_name_their_candidate_also_inside_reusable_workflows() {
        let pattern = "Run candidate {id}";
        assert_eq!(candidate_of_job(pattern, "Run candidate a.b"), Some("a.b"));
        assert_eq!(
            candidate_of_job(pattern, "Run candidate a / agent"),
            Some("a")
        );
        // The planner caller's job calling the candidate workflow, which calls the session.
        assert_eq!(
            candidate_of_job(pattern, "Run candidate a / Session / Session"),
            Some("a")
        );
        assert_eq!(candidate_of_job(pattern, "select"), None);
        assert_eq!(candidate_of_job(pattern, "Run candidate "), None);
        assert_eq!(candidate_of_job("run ({id})", "run (x)"), Some("x"));
        assert_eq!(candidate_of_job("run ({id})", "run (x)y"), None);
    }
}
