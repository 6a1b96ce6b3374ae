//! Properties of the recovery decision on generated worlds: whatever the sessions, pull
//! requests, commits, sweeps, closures and branches, the plan never touches a protected pull
//! request. Protected (contract §5) means opened by anyone but the bot or from a fork, handed
//! off, ready for review, carrying or moved to a commit that is not the bot's, with a commit
//! listing that is cut short or unreadable, or with a sweep started by anyone but the bot since
//! the session ended; and a branch whose pull request a maintainer closed is never deleted.
//! Protection is computed from the generated facts, not through the decision's guards.

use proptest::collection::vec;
use proptest::prelude::*;

use super::*;
use crate::core::plan::Action;

/// Who a GitHub account is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Bot,
    Maintainer,
    /// A deleted account (GitHub shows no login).
    Nobody,
}

impl Who {
    fn login(self) -> Option<String> {
        match self {
            Who::Bot => Some(BOT.into()),
            Who::Maintainer => Some(MAINTAINER.into()),
            Who::Nobody => None,
        }
    }
}

/// Mostly the bot, as in the field.
fn who() -> impl Strategy<Value = Who> {
    prop_oneof![8 => Just(Who::Bot), 3 => Just(Who::Maintainer), 1 => Just(Who::Nobody)]
}

/// Who made a commit: nearly always the bot, so that bot-only pull requests are common.
fn committer() -> impl Strategy<Value = Who> {
    prop_oneof![16 => Just(Who::Bot), 2 => Just(Who::Maintainer), 1 => Just(Who::Nobody)]
}

#[derive(Debug, Clone)]
enum Commits {
    Listed {
        /// (author, committer), oldest first.
        commits: Vec<(Who, Who)>,
        complete: bool,
        /// The last listed commit is the pull request's head.
        ends_at_head: bool,
    },
    Failed,
}

fn commits() -> impl Strategy<Value = Commits> {
    prop_oneof![
        9 => (vec((committer(), committer()), 0..4), proptest::bool::weighted(0.9), proptest::bool::weighted(0.9))
            .prop_map(|(commits, complete, ends_at_head)| Commits::Listed { commits, complete, ends_at_head }),
        1 => Just(Commits::Failed),
    ]
}

#[derive(Debug, Clone)]
struct SweepRun {
    actor: Who,
    triggering_actor: Who,
    active: bool,
    success: bool,
    on_head: bool,
    hours_ago: i64,
}

#[derive(Debug, Clone)]
enum Sweeps {
    Listed { runs: Vec<SweepRun>, complete: bool },
    Failed,
}

fn sweeps() -> impl Strategy<Value = Sweeps> {
    let run = (
        committer(),
        committer(),
        proptest::bool::weighted(0.2),
        any::<bool>(),
        any::<bool>(),
        0i64..12,
    )
        .prop_map(
            |(actor, triggering_actor, active, success, on_head, hours_ago)| SweepRun {
                actor,
                triggering_actor,
                active,
                success,
                on_head,
                hours_ago,
            },
        );
    prop_oneof![
        9 => (vec(run, 0..3), proptest::bool::weighted(0.9))
            .prop_map(|(runs, complete)| Sweeps::Listed { runs, complete }),
        1 => Just(Sweeps::Failed),
    ]
}

/// The candidate's open pull request.
#[derive(Debug, Clone)]
struct OpenPull {
    author: Who,
    draft: bool,
    handed_off: bool,
    from_fork: bool,
    commits: Commits,
    sweeps: Sweeps,
}

fn open_pull() -> impl Strategy<Value = OpenPull> {
    (
        who(),
        proptest::bool::weighted(0.7),
        proptest::bool::weighted(0.2),
        proptest::bool::weighted(0.1),
        commits(),
        sweeps(),
    )
        .prop_map(
            |(author, draft, handed_off, from_fork, commits, sweeps)| OpenPull {
                author,
                draft,
                handed_off,
                from_fork,
                commits,
                sweeps,
            },
        )
}

/// The candidate's pull request that is no longer open.
#[derive(Debug, Clone)]
struct ClosedPull {
    closed_by: Who,
    merged: bool,
    /// The session recorded its number (else it is found among the branch's pull requests).
    recorded: bool,
}

fn closed_pull() -> impl Strategy<Value = ClosedPull> {
    (who(), proptest::bool::weighted(0.2), any::<bool>()).prop_map(
        |(closed_by, merged, recorded)| ClosedPull {
            closed_by,
            merged,
            recorded,
        },
    )
}

#[derive(Debug, Clone)]
enum SessionSpec {
    None,
    Live {
        parent_running: bool,
        pending: Option<usize>,
    },
    Parked,
    Finished {
        outcome: Option<usize>,
    },
}

fn session() -> impl Strategy<Value = SessionSpec> {
    let outcome = proptest::option::of(0..Outcome::ALL.len());
    prop_oneof![
        Just(SessionSpec::None),
        (any::<bool>(), outcome.clone()).prop_map(|(parent_running, pending)| SessionSpec::Live {
            parent_running,
            pending
        }),
        Just(SessionSpec::Parked),
        outcome.prop_map(|outcome| SessionSpec::Finished { outcome }),
    ]
}

#[derive(Debug, Clone)]
struct CandidateSpec {
    open: Option<OpenPull>,
    /// Only used when there is no open pull request.
    closed: Option<ClosedPull>,
    session: SessionSpec,
    claim: bool,
    /// The branch exists, at the head (true) or moved elsewhere (false).
    branch: Option<bool>,
    /// A bot smoke run on the branch is active.
    smoke: bool,
}

fn candidate() -> impl Strategy<Value = CandidateSpec> {
    (
        proptest::option::weighted(0.7, open_pull()),
        proptest::option::of(closed_pull()),
        session(),
        any::<bool>(),
        proptest::option::of(proptest::bool::weighted(0.8)),
        proptest::bool::weighted(0.2),
    )
        .prop_map(
            |(open, closed, session, claim, branch, smoke)| CandidateSpec {
                open,
                closed,
                session,
                claim,
                branch,
                smoke,
            },
        )
}

fn id(index: usize) -> String {
    format!("c{index}")
}

fn number(index: usize) -> u64 {
    100 + index as u64
}

/// Builds the world of the generated candidates.
fn build(specs: &[CandidateSpec]) -> World {
    let mut world = World::new();
    world.running_planner(RUNNING_PARENT, &[]);
    for (index, spec) in specs.iter().enumerate() {
        let id = id(index);
        let number = number(index);
        let head = sha(&id, "head");
        if let Some(open) = &spec.open {
            world.bot_draft(&id, number);
            let pull = world.pull(number);
            pull.author = open.author.login();
            pull.draft = open.draft;
            pull.from_this_repository = !open.from_fork;
            if open.handed_off {
                pull.labels.push("klaud-handoff".into());
            }
            let commits = match &open.commits {
                Commits::Failed => Err("GET /pulls/commits: HTTP 502".into()),
                Commits::Listed {
                    commits,
                    complete,
                    ends_at_head,
                } => {
                    let count = commits.len();
                    let commits = commits
                        .iter()
                        .enumerate()
                        .map(|(at, (author, committer))| CommitFact {
                            sha: if at + 1 == count && *ends_at_head {
                                head.clone()
                            } else {
                                sha(&id, &format!("c{at}"))
                            },
                            author: author.login(),
                            committer: committer.login(),
                        })
                        .collect();
                    Ok(CommitsFact {
                        commits,
                        complete: *complete,
                    })
                }
            };
            world.snapshot.commits.insert(number, commits);
            let sweeps = match &open.sweeps {
                Sweeps::Failed => Err("GET /runs: HTTP 502".into()),
                Sweeps::Listed { runs, complete } => {
                    let runs = runs
                        .iter()
                        .enumerate()
                        .map(|(at, sweep)| {
                            let mut fact = run(
                                5_000 + 10 * index as u64 + at as u64,
                                "run-sweep.yml",
                                &branch(&id),
                                BOT,
                                sweep.active,
                            );
                            fact.actor = sweep.actor.login();
                            fact.triggering_actor = sweep.triggering_actor.login();
                            fact.conclusion = (!sweep.active)
                                .then(|| if sweep.success { "success" } else { "failure" }.into());
                            fact.head_sha = if sweep.on_head {
                                head.clone()
                            } else {
                                sha(&id, "old")
                            };
                            fact.created_at = hours_ago(sweep.hours_ago);
                            fact.updated_at = hours_ago(sweep.hours_ago);
                            fact
                        })
                        .collect();
                    Ok(if *complete {
                        Listed::complete(runs)
                    } else {
                        Listed::incomplete(runs, "the 1000-result cap")
                    })
                }
            };
            world.snapshot.sweeps.insert(branch(&id), sweeps);
            // `bot_draft` placed the branch at the head; the spec decides.
            world
                .snapshot
                .refs
                .items
                .retain(|reference| reference.name != branch(&id));
        } else {
            world
                .snapshot
                .sweeps
                .insert(branch(&id), Ok(Listed::complete(Vec::new())));
            world
                .snapshot
                .branch_pull_requests
                .insert(branch(&id), Ok(Vec::new()));
        }
        if let Some(at_head) = spec.branch {
            world.snapshot.refs.items.push(RefFact {
                name: branch(&id),
                sha: if at_head {
                    head.clone()
                } else {
                    sha(&id, "moved")
                },
            });
        }
        let closed = spec.closed.as_ref().filter(|_| spec.open.is_none());
        if let Some(closed) = closed {
            let pull = PullRequestFact {
                number,
                node_id: format!("PR_{number}"),
                head_branch: branch(&id),
                head_sha: head.clone(),
                from_this_repository: true,
                author: Some(BOT.into()),
                open: false,
                draft: true,
                merged: closed.merged,
                labels: Vec::new(),
                created_at: hours_ago(6),
            };
            world
                .snapshot
                .branch_pull_requests
                .insert(branch(&id), Ok(vec![pull]));
            world.snapshot.issues.insert(
                number,
                Ok(IssueFact {
                    number,
                    open: false,
                    closed_by: closed.closed_by.login(),
                    merged: closed.merged,
                    labels: Vec::new(),
                }),
            );
            world.snapshot.commits.insert(
                number,
                Ok(CommitsFact {
                    commits: vec![commit(&head, BOT)],
                    complete: true,
                }),
            );
        }
        let recorded_pull = match (&spec.open, closed) {
            (Some(_), _) => Some(number),
            (None, Some(closed)) if closed.recorded => Some(number),
            _ => None,
        };
        match spec.session {
            SessionSpec::None => {}
            SessionSpec::Live {
                parent_running,
                pending,
            } => {
                let parent = if parent_running {
                    RUNNING_PARENT
                } else {
                    FINISHED_PARENT
                };
                let session = world.session(&id, SessionState::Live, parent, recorded_pull);
                session.pending_outcome = pending.map(|at| Outcome::ALL[at]);
            }
            SessionSpec::Parked => {
                world.session(&id, SessionState::Parked, FINISHED_PARENT, recorded_pull);
            }
            SessionSpec::Finished { outcome } => {
                let session =
                    world.session(&id, SessionState::Finished, FINISHED_PARENT, recorded_pull);
                session.outcome = outcome.map(|at| Outcome::ALL[at]);
            }
        }
        if spec.claim {
            let parent = match spec.session {
                SessionSpec::Live {
                    parent_running: true,
                    ..
                } => RUNNING_PARENT,
                _ => FINISHED_PARENT,
            };
            world.claim(&id, parent);
        }
        if spec.smoke {
            world.active_run(6_000 + index as u64, "e2e-tests.yml", &branch(&id), BOT);
        }
    }
    world
}

/// Answers every detail the decision asks for that the world does not hold, the way GitHub
/// answers for things that are not there, until it asks for nothing more.
fn answer_details(world: &mut World) {
    for _ in 0..6 {
        let needed = details_needed(&world.snapshot, &world.policy, &context());
        if needed.is_empty() {
            return;
        }
        let snapshot = &mut world.snapshot;
        for id in needed.runs {
            snapshot.runs.insert(id, Ok(RunState::Missing));
        }
        for id in needed.planner_jobs {
            snapshot.planner_jobs.insert(id, Ok(Vec::new()));
        }
        for number in needed.commits {
            snapshot.commits.insert(number, Err("not found".into()));
        }
        for branch in needed.sweeps {
            snapshot
                .sweeps
                .insert(branch, Ok(Listed::complete(Vec::new())));
        }
        for number in needed.issues {
            snapshot.issues.insert(number, Err("not found".into()));
        }
        for branch in needed.branch_pull_requests {
            snapshot.branch_pull_requests.insert(branch, Ok(Vec::new()));
        }
        for sha in needed.commit_messages {
            snapshot.commit_messages.insert(sha, Ok(String::new()));
        }
        if needed.default_branch {
            snapshot.default_branch = Some(Ok("main".into()));
        }
    }
}

/// Why the candidate's open pull request must not be changed, if it must not.
fn protection(spec: &OpenPull) -> Option<&'static str> {
    if spec.from_fork {
        return Some("it comes from a fork");
    }
    if spec.author != Who::Bot {
        return Some("the bot did not open it");
    }
    if spec.handed_off {
        return Some("it is handed off");
    }
    if !spec.draft {
        return Some("it is ready for review");
    }
    match &spec.commits {
        Commits::Failed => return Some("its commits could not be read"),
        Commits::Listed {
            commits,
            complete,
            ends_at_head,
        } => {
            if !complete {
                return Some("its commit listing is cut short");
            }
            if commits.is_empty() || !ends_at_head {
                return Some("its commits do not end at its head");
            }
            if commits
                .iter()
                .any(|(author, committer)| *author != Who::Bot || *committer != Who::Bot)
            {
                return Some("it has a commit that is not the bot's");
            }
        }
    }
    match &spec.sweeps {
        Sweeps::Failed => Some("its sweeps could not be read"),
        Sweeps::Listed {
            complete: false, ..
        } => Some("its sweeps are not all listed"),
        // Sessions end 4 hours ago, parents 3 hours ago, pull requests open 10 hours ago: a
        // sweep of the last 3 hours by anyone else is a maintainer acting after all of them.
        Sweeps::Listed { runs, .. } => runs
            .iter()
            .any(|run| {
                // Started by anyone but the bot (an unnamed account included), or its latest
                // attempt run by someone else (GitHub leaves that account out of older runs).
                run.hours_ago < 3
                    && (run.actor != Who::Bot || run.triggering_actor == Who::Maintainer)
            })
            .then_some("a maintainer started a sweep on it"),
    }
}

proptest! {
    // The layout has no place for a regressions directory: a failure prints its shrunk case,
    // which becomes a unit test.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn recovery_never_touches_a_protected_pull_request(specs in vec(candidate(), 1..5)) {
        let mut world = build(&specs);
        answer_details(&mut world);
        let plan = world.plan();
        let actions: Vec<&Action> = plan.groups.iter().flat_map(|group| &group.actions).collect();

        for (index, spec) in specs.iter().enumerate() {
            let number = number(index);
            let branch = branch(&id(index));
            let deletes_branch = actions.iter().any(|action| {
                matches!(action, Action::DeleteBranch { branch: deleted, .. } if *deleted == branch)
            });
            if let Some(open) = &spec.open
                && let Some(why) = protection(open)
            {
                let changes: Vec<String> = actions
                    .iter()
                    .filter(|action| match action {
                        // A status label is display only, except on a handed-off pull request
                        // and on one that is not klaud's.
                        Action::SetStatusLabel { pull_request, .. } => {
                            *pull_request == number
                                && (open.handed_off || open.from_fork || open.author != Who::Bot)
                        }
                        Action::DeleteBranch { branch: deleted, .. } => *deleted == branch,
                        other => other.pull_request() == Some(number),
                    })
                    .map(ToString::to_string)
                    .collect();
                prop_assert!(
                    changes.is_empty(),
                    "#{number} is protected ({why}) but the plan {changes:?}; verdict {:?}",
                    plan.candidates.iter().find(|report| report.candidate == id(index))
                );
            }
            if spec.open.is_none()
                && let Some(closed) = &spec.closed
                && !closed.merged
                && closed.closed_by != Who::Bot
            {
                prop_assert!(
                    !deletes_branch,
                    "{branch} is deleted although a maintainer closed #{number}"
                );
            }
            if spec.open.is_none() && spec.branch == Some(false) {
                prop_assert!(!deletes_branch, "{branch} moved from the head but is deleted");
            }
        }
    }
}
