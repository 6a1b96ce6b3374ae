//! The big benchmark scenario: the standard scenario ([`super::scenario::generate`], klaud's part
//! identical for the same seed) inside a busy repository. On top of it, from their own seeded
//! stream:
//!
//! - 10,000 open and 40,000 closed pull requests by 40 people over the last year (labels, drafts
//!   and ready ones): 1,500 open and 6,000 closed from branches of this repository (300 of the
//!   closed ones keep their branch), the rest from forks (`<person>/bench`); among the forks' 8
//!   whose head branch starts with klaud's prefix `klaud/auto-`, 5 of them named exactly like a
//!   branch klaud has here (GitHub allows it; they are never klaud's);
//! - 2,000 branches of people (not under `klaud/`): the heads above and 200 without a pull
//!   request, each with its commits;
//! - 100,000 runs of five other workflows over the last 30 days ([`OTHER_WORKFLOWS`]), each
//!   queued, in progress or completed as its start, queueing time and duration put it at "now";
//!   only the runs still queued or in progress carry jobs, since klaud reads the jobs of its own
//!   workflows' runs only.
//!
//! Pull request numbers and run ids of the additions follow the standard scenario's (and grow
//! with creation time among themselves), so klaud's pull requests, runs and ledger are the same.

use super::builder::{ClosedSpec, CommitSpec, JobSpec, PullRequestSpec, RunSpec};
use super::clock::{DAY, HOUR, MINUTE, Timestamp};
use super::prng::SplitMix64;
use super::scenario::{BRANCH_PREFIX, BenchScenario, HUMANS, OWNER, REPOSITORY, generate};
use super::state::RepoState;

/// Open pull requests by people, from branches of this repository.
pub const PEOPLE_OPEN_SAME_REPOSITORY: usize = 1_500;
/// Open pull requests by people, from forks (klaud-prefixed heads not included).
pub const PEOPLE_OPEN_FORKS: usize = 8_494;
/// Closed pull requests by people from branches of this repository whose branch is kept.
pub const PEOPLE_CLOSED_BRANCH_KEPT: usize = 300;
/// Closed pull requests by people from branches of this repository, branch deleted.
pub const PEOPLE_CLOSED_BRANCH_DELETED: usize = 5_700;
/// Closed pull requests by people, from forks (klaud-prefixed heads not included).
pub const PEOPLE_CLOSED_FORKS: usize = 33_998;
/// Branches of people with no pull request.
pub const PEOPLE_BRANCHES_WITHOUT_PULL: usize = 200;
/// Forks' pull requests whose head branch starts with klaud's prefix: (branch, open). The
/// `cand-00`, `cand-09`, `cand-18`, `cand-25` and `cand-03` branches exist in this repository
/// (open, parked, ready, leftover and open again); the others do not.
pub const FORK_PULLS_UNDER_KLAUD_PREFIX: [(&str, bool); 8] = [
    ("cand-00", true),
    ("cand-09", true),
    ("cand-18", true),
    ("cand-25", true),
    ("cand-61", true),
    ("speedup", true),
    ("cand-03", false),
    ("tuning", false),
];

/// A workflow of people's: its file and name, its runs over 30 days, the shortest and longest
/// of them in minutes, and its jobs.
pub struct OtherWorkflow {
    pub file: &'static str,
    pub name: &'static str,
    pub runs: usize,
    pub minutes: (u64, u64),
    pub jobs: &'static [&'static str],
}

/// The other workflows.
pub const OTHER_WORKFLOWS: [OtherWorkflow; 5] = [
    OtherWorkflow {
        file: "ci.yml",
        name: "CI",
        runs: 45_000,
        minutes: (4, 30),
        jobs: &["build", "test", "integration"],
    },
    OtherWorkflow {
        file: "lint.yml",
        name: "Lint",
        runs: 25_000,
        minutes: (1, 4),
        jobs: &["lint"],
    },
    OtherWorkflow {
        file: "docs.yml",
        name: "Docs",
        runs: 15_000,
        minutes: (2, 8),
        jobs: &["docs"],
    },
    OtherWorkflow {
        file: "codeql.yml",
        name: "CodeQL",
        runs: 14_970,
        minutes: (8, 25),
        jobs: &["analyze"],
    },
    OtherWorkflow {
        file: "nightly.yml",
        name: "Nightly",
        runs: 30,
        minutes: (120, 240),
        jobs: &["nightly build", "nightly test"],
    },
];

const CONTRIBUTORS: usize = 30;
const TOPIC_LABELS: [&str; 6] = [
    "bug",
    "enhancement",
    "documentation",
    "performance",
    "needs-review",
    "wip",
];
/// Keeps the additions' randomness apart from the standard scenario's stream.
const STREAM: u64 = 0xB165_CA1E_0000_0001;

/// The 40 people who open pull requests: the standard scenario's ten and 30 more.
pub fn people() -> Vec<String> {
    HUMANS
        .iter()
        .map(|login| login.to_string())
        .chain((0..CONTRIBUTORS).map(|index| format!("contributor-{index:02}")))
        .collect()
}

/// The fork a person opens pull requests from.
pub fn fork_of(person: &str) -> String {
    format!("{person}/{REPOSITORY}")
}

/// Generates the big scenario for `seed`, every time relative to `now`.
pub fn generate_big(seed: u64, now: Timestamp) -> BenchScenario {
    let mut scenario = generate(seed, now);
    let mut random = SplitMix64::new(seed ^ STREAM);
    let people = people();
    for label in TOPIC_LABELS {
        scenario.state.ensure_label(label);
    }
    add_people_branches(&mut scenario.state, &mut random, &people, now);
    add_people_pull_requests(&mut scenario.state, &mut random, &people, now);
    add_other_runs(&mut scenario.state, &mut random, &people, now);
    scenario
}

/// Where a person's pull request comes from, and what became of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    OpenSameRepository,
    OpenFork,
    ClosedBranchKept,
    ClosedBranchDeleted,
    ClosedFork,
}

fn add_people_pull_requests(
    state: &mut RepoState,
    random: &mut SplitMix64,
    people: &[String],
    now: Timestamp,
) {
    let mut planned: Vec<PullRequestSpec> = Vec::with_capacity(50_000);
    for (kind, count) in [
        (Kind::OpenSameRepository, PEOPLE_OPEN_SAME_REPOSITORY),
        (Kind::OpenFork, PEOPLE_OPEN_FORKS),
        (Kind::ClosedBranchKept, PEOPLE_CLOSED_BRANCH_KEPT),
        (Kind::ClosedBranchDeleted, PEOPLE_CLOSED_BRANCH_DELETED),
        (Kind::ClosedFork, PEOPLE_CLOSED_FORKS),
    ] {
        for index in 0..count {
            planned.push(people_pull(random, people, now, kind, index));
        }
    }
    for (index, (name, open)) in FORK_PULLS_UNDER_KLAUD_PREFIX.into_iter().enumerate() {
        let kind = if open {
            Kind::OpenFork
        } else {
            Kind::ClosedFork
        };
        let mut spec = people_pull(random, people, now, kind, index);
        spec.head_ref = format!("{BRANCH_PREFIX}{name}");
        spec.title = format!("Try {name} from my fork");
        planned.push(spec);
    }
    // Numbers grow with creation time, as on GitHub.
    planned.sort_by_key(|spec| spec.created_at);
    state.add_pull_requests(planned);
}

fn people_pull(
    random: &mut SplitMix64,
    people: &[String],
    now: Timestamp,
    kind: Kind,
    index: usize,
) -> PullRequestSpec {
    let author = random.pick(people).clone();
    let open = matches!(kind, Kind::OpenSameRepository | Kind::OpenFork);
    let created_at = now.minus(random.range(HOUR as u64, 365 * DAY as u64) as i64);
    let (head_ref, head_repo) = match kind {
        Kind::OpenFork | Kind::ClosedFork => (
            format!("{}-{index:05}", fork_branch_stem(random)),
            Some(fork_of(&author)),
        ),
        Kind::OpenSameRepository => (format!("people/{author}/topic-{index:05}"), None),
        Kind::ClosedBranchKept => (format!("people/{author}/kept-{index:05}"), None),
        Kind::ClosedBranchDeleted => (format!("people/{author}/merged-{index:05}"), None),
    };
    let labels = match random.range(0, 9) {
        0..=4 => Vec::new(),
        5..=8 => vec![random.pick(&TOPIC_LABELS).to_string()],
        _ => vec![
            random.pick(&TOPIC_LABELS[..3]).to_string(),
            random.pick(&TOPIC_LABELS[3..]).to_string(),
        ],
    };
    let commit_count = if random.chance(0.2) { 2 } else { 1 };
    let commits = (0..commit_count)
        .map(|number| people_commit(&author, &head_ref, number, created_at.plus(number * HOUR)))
        .collect();
    let closed = (!open).then(|| {
        let latest = now.minus(MINUTE).0 - created_at.0;
        let at =
            created_at.plus((random.range(10 * MINUTE as u64, 30 * DAY as u64) as i64).min(latest));
        let merged = random.chance(0.6);
        let by = if merged || random.chance(0.5) {
            random.pick(&super::scenario::MAINTAINERS).to_string()
        } else {
            author.clone()
        };
        ClosedSpec {
            by,
            at: Some(at),
            merged,
            delete_branch: kind == Kind::ClosedBranchDeleted,
        }
    });
    PullRequestSpec {
        title: format!("{} {index:05}", random.pick(&PULL_TITLES)),
        body: Some(format!("Change {index} by {author}.")),
        author,
        head_ref,
        draft: open && random.chance(0.25),
        labels,
        commits,
        head_repo,
        created_at: Some(created_at),
        closed,
        ..PullRequestSpec::default()
    }
}

const PULL_TITLES: [&str; 6] = [
    "Fix flaky test",
    "Tune kernel launch",
    "Update dependency",
    "Add benchmark config",
    "Refactor loader",
    "Document option",
];

const FORK_BRANCH_STEMS: [&str; 6] = ["patch", "fix", "feature/perf", "main", "docs/typo", "wip"];

fn fork_branch_stem(random: &mut SplitMix64) -> &'static str {
    FORK_BRANCH_STEMS[random.range(0, FORK_BRANCH_STEMS.len() as u64 - 1) as usize]
}

fn people_commit(author: &str, branch: &str, number: i64, at: Timestamp) -> CommitSpec {
    CommitSpec::by(author)
        .message(&format!("Work on {branch} ({number})"))
        .file(
            &format!("src/people/{}.rs", branch.replace('/', "_")),
            &format!("// {branch} {number} at {at}\n"),
        )
        .at(at)
}

fn add_people_branches(
    state: &mut RepoState,
    random: &mut SplitMix64,
    people: &[String],
    now: Timestamp,
) {
    for index in 0..PEOPLE_BRANCHES_WITHOUT_PULL {
        let author = random.pick(people).clone();
        let branch = format!("people/{author}/wip-{index:05}");
        let at = now.minus(random.range(HOUR as u64, 365 * DAY as u64) as i64);
        let commits = (0..random.range(1, 3) as i64)
            .map(|number| people_commit(&author, &branch, number, at.plus(number * HOUR)))
            .collect();
        state.push_commits(&branch, commits);
    }
}

/// A head a run of another workflow ran on: branch, commit, and fork (`None`: this repository).
struct RunHead {
    branch: String,
    sha: String,
    fork: Option<String>,
    author: String,
}

fn add_other_runs(
    state: &mut RepoState,
    random: &mut SplitMix64,
    people: &[String],
    now: Timestamp,
) {
    let full_name = format!("{OWNER}/{REPOSITORY}");
    let heads: Vec<RunHead> = state
        .pulls
        .values()
        .filter(|pull| pull.author != super::scenario::BOT)
        .map(|pull| RunHead {
            branch: pull.head_ref.clone(),
            sha: pull.head_sha.clone(),
            fork: pull.head_repo.clone().filter(|repo| *repo != full_name),
            author: pull.author.clone(),
        })
        .collect();
    let main_sha = state.branch_sha("main").unwrap_or_default().to_string();
    let start = now.minus(30 * DAY);
    let mut planned: Vec<RunSpec> = Vec::with_capacity(100_000);
    for OtherWorkflow {
        file,
        name,
        runs: count,
        minutes: (shortest, longest),
        jobs,
    } in OTHER_WORKFLOWS
    {
        let id = state.ensure_workflow(file);
        if let Some(workflow) = state.workflows.get_mut(&id) {
            workflow.name = name.to_string();
        }
        for index in 0..count {
            let created_at = if file == "nightly.yml" {
                start.plus(index as i64 * DAY + 2 * HOUR + random.range(0, 300) as i64)
            } else {
                start.plus(random.range(0, 30 * DAY as u64) as i64)
            };
            let queued_for = random.range(5, 120) as i64;
            let duration = random.range(shortest * MINUTE as u64, longest * MINUTE as u64) as i64;
            let started_at = created_at.plus(queued_for);
            let ended_at = started_at.plus(duration);
            let (event, head) = match (file, random.range(0, 9)) {
                ("nightly.yml", _) => ("schedule", None),
                ("docs.yml", _) | (_, 0..=2) => ("push", None),
                _ => ("pull_request", Some(random.pick(&heads))),
            };
            let actor = match head {
                Some(head) => head.author.clone(),
                None => random.pick(people).clone(),
            };
            let mut spec = RunSpec {
                workflow: file.to_string(),
                head_branch: Some(head.map_or("main".to_string(), |head| head.branch.clone())),
                head_sha: Some(head.map_or(main_sha.clone(), |head| head.sha.clone())),
                head_repository: head.and_then(|head| head.fork.clone()),
                event: event.to_string(),
                actor: Some(actor),
                created_at: Some(created_at),
                updated_at: Some(ended_at.min(now)),
                ..RunSpec::default()
            };
            if now < started_at {
                spec.status = "queued".to_string();
                spec.conclusion = None;
                spec.updated_at = Some(created_at);
                spec.jobs = jobs.iter().map(|job| queued_job(job)).collect();
            } else if now < ended_at {
                spec.status = "in_progress".to_string();
                spec.conclusion = None;
                spec.updated_at = Some(started_at);
                spec.jobs = jobs
                    .iter()
                    .enumerate()
                    .map(|(position, job)| match position {
                        0 => JobSpec {
                            started_at: Some(started_at),
                            ..JobSpec::in_progress(job)
                        },
                        _ => queued_job(job),
                    })
                    .collect();
            } else {
                let conclusion = match random.range(0, 99) {
                    0..=89 => "success",
                    90..=97 => "failure",
                    _ => "cancelled",
                };
                spec.conclusion = Some(conclusion.to_string());
            }
            planned.push(spec);
        }
    }
    // Ids grow with creation time among these runs, as on GitHub.
    planned.sort_by_key(|spec| spec.created_at);
    for spec in planned {
        state.add_run(spec);
    }
}

fn queued_job(name: &str) -> JobSpec {
    JobSpec {
        status: "queued".to_string(),
        ..JobSpec::in_progress(name)
    }
}
