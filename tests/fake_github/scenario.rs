//! The standard benchmark scenario (`BENCH-SCENARIO.md`): repository `acme/bench` with bot
//! `klaud-bot`, 60 families and candidates, 120 open and 300 closed pull requests, legacy lock
//! and claim refs, leftover candidate branches, 5,000 planner, 2,000 smoke and 400 sweep runs with
//! 1–5 jobs each, and 50 ledger sessions as plain data. The same seed and "now" give the same
//! state. The ledger document itself is written by [`write_ledger`] from its serialized text.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::builder::{ClosedSpec, CommitSpec, JobSpec, PullRequestSpec, RunSpec};
use super::clock::{DAY, HOUR, MINUTE, Timestamp};
use super::prng::SplitMix64;
pub use super::scenario_big::generate_big;
use super::scenario_ledger::sessions;
pub use super::scenario_ledger::{ScenarioSession, SessionState, write_ledger};
use super::state::RepoState;

pub const OWNER: &str = "acme";
pub const REPOSITORY: &str = "bench";
pub const BOT: &str = "klaud-bot";
pub const BOT_TOKEN: &str = "bench-bot-token";
/// The workflow token's identity (status labels are written with it).
pub const LABEL_TOKEN: &str = "bench-label-token";
pub const LABEL_LOGIN: &str = "github-actions[bot]";
pub const MAINTAINER_TOKEN: &str = "bench-maintainer-token";
pub const MAINTAINERS: [&str; 2] = ["maintainer-ada", "maintainer-lin"];
pub const PLANNER_WORKFLOW: &str = "klaud-plan.yml";
pub const CANDIDATE_WORKFLOW: &str = "klaud-candidate.yml";
pub const SMOKE_WORKFLOW: &str = "e2e-tests.yml";
pub const SWEEP_WORKFLOW: &str = "run-sweep.yml";
pub const STATE_BRANCH: &str = "klaud/state";
pub const LEDGER_PATH: &str = "ledger.json";
pub const BRANCH_PREFIX: &str = "klaud/auto-";

const FAMILIES: usize = 60;
/// The people of the standard scenario (the big one adds more).
pub const HUMANS: [&str; 10] = [
    "alice-dev",
    "bob-ml",
    "carol-perf",
    "dan-infra",
    "erin-bench",
    "frank-ops",
    "grace-kernels",
    "heidi-eval",
    "ivan-quant",
    "judy-docs",
];
const STATUS_LABELS: [&str; 7] = [
    "klaud-in-progress",
    "klaud-parked",
    "klaud-finished",
    "klaud-infra",
    "klaud-incompatible",
    "klaud-error",
    "klaud-handoff",
];
const OTHER_LABELS: [&str; 5] = [
    "full-sweep-fail-fast",
    "full-sweep-enabled",
    "bug",
    "enhancement",
    "documentation",
];

/// One candidate of the candidates file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioCandidate {
    pub id: String,
    pub family: String,
}

/// The generated scenario.
#[derive(Clone, Debug)]
pub struct BenchScenario {
    pub seed: u64,
    pub now: Timestamp,
    pub state: RepoState,
    pub candidates: Vec<ScenarioCandidate>,
    pub sessions: Vec<ScenarioSession>,
    /// Candidates whose draft PR is abandoned (its parent finished, no session recorded).
    pub abandoned_candidates: Vec<String>,
}

impl BenchScenario {
    /// The candidates file (`[{"id", "family"}]`).
    pub fn candidates_json(&self) -> String {
        serde_json::to_string_pretty(&self.candidates).unwrap_or_default()
    }

    /// Writes the serialized ledger onto the state branch (see [`write_ledger`]).
    pub fn write_ledger(&mut self, serialized_ledger: &str) -> String {
        write_ledger(&mut self.state, STATE_BRANCH, serialized_ledger)
    }
}

pub fn candidate_id(index: usize) -> String {
    format!("cand-{index:02}")
}

pub fn family_of(index: usize) -> String {
    format!("configs/x-master.yaml:family-{index:02}")
}

pub fn candidate_branch(index: usize) -> String {
    format!("{BRANCH_PREFIX}{}", candidate_id(index))
}

/// What a planned run is, so the generator can find it again after ids are assigned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunRole {
    Plain,
    LiveParent(usize),
}

/// Generates the scenario for `seed`, with every time relative to `now`.
pub fn generate(seed: u64, now: Timestamp) -> BenchScenario {
    let mut random = SplitMix64::new(seed);
    let mut state = RepoState::new(OWNER, REPOSITORY).with_now(now);
    state.add_token(BOT_TOKEN, BOT);
    state.add_token(LABEL_TOKEN, LABEL_LOGIN);
    state.add_token(MAINTAINER_TOKEN, MAINTAINERS[0]);
    for label in STATUS_LABELS.iter().chain(OTHER_LABELS.iter()) {
        state.ensure_label(label);
    }
    for (file, name) in [
        (PLANNER_WORKFLOW, "Klaud plan"),
        (CANDIDATE_WORKFLOW, "Klaud candidate"),
        (SMOKE_WORKFLOW, "E2E tests"),
        (SWEEP_WORKFLOW, "Run sweep"),
    ] {
        let id = state.ensure_workflow(file);
        if let Some(workflow) = state.workflows.get_mut(&id) {
            workflow.name = name.to_string();
        }
    }
    let start = now.minus(30 * DAY);
    let mut main_commits = Vec::new();
    for day in (0..30).step_by(5) {
        main_commits.push(
            CommitSpec::by(MAINTAINERS[day % 2])
                .message(&format!("Update configs (day {day})"))
                .file("configs/x-master.yaml", &format!("# revision {day}\n"))
                .at(start.plus(day as i64 * DAY)),
        );
    }
    state.push_commits("main", main_commits);
    let candidates: Vec<ScenarioCandidate> = (0..FAMILIES)
        .map(|index| ScenarioCandidate {
            id: candidate_id(index),
            family: family_of(index),
        })
        .collect();

    add_closed_pull_requests(&mut state, &mut random, now);
    let open_numbers = add_open_pull_requests(&mut state, &mut random, now);
    let (live_parents, completed_waves) = add_runs(&mut state, &mut random, now);
    add_lock_refs(&mut state, &mut random, &live_parents, &completed_waves);
    let sessions = sessions(&state, &mut random, now, &live_parents, &open_numbers);
    BenchScenario {
        seed,
        now,
        state,
        candidates,
        sessions,
        abandoned_candidates: (12..15).map(candidate_id).collect(),
    }
}

fn klaud_pull(index: usize, created_at: Timestamp, commits: Vec<CommitSpec>) -> PullRequestSpec {
    PullRequestSpec {
        title: format!("klaud: {} ({})", candidate_id(index), family_of(index)),
        body: Some(format!(
            "Automated session for candidate {}.",
            candidate_id(index)
        )),
        author: BOT.to_string(),
        head_ref: candidate_branch(index),
        draft: true,
        commits,
        created_at: Some(created_at),
        ..PullRequestSpec::default()
    }
}

fn bot_commit(index: usize, at: Timestamp) -> CommitSpec {
    CommitSpec::by(BOT)
        .message(&format!("klaud: update family-{index:02}"))
        .file(
            &format!("configs/x-master/family-{index:02}.yaml"),
            &format!("tuned: {at}\n"),
        )
        .at(at)
}

/// 300 closed pull requests: 60 of the bot (40 closed by it, 20 by maintainers; 25 branches
/// left behind) and 240 of people.
fn add_closed_pull_requests(state: &mut RepoState, random: &mut SplitMix64, now: Timestamp) {
    let bot_outcome_labels = ["klaud-error", "klaud-infra", "klaud-incompatible"];
    // (candidates, closed by the bot, branch kept)
    let groups: [(std::ops::Range<usize>, bool, bool); 5] = [
        (0..10, true, false),
        (10..20, false, false),
        (20..35, true, true),
        (35..45, false, true),
        (45..60, true, false),
    ];
    for (range, by_bot, branch_kept) in groups {
        for index in range {
            let created_at = now.minus(random.range(20, 45) as i64 * DAY);
            let mut spec = klaud_pull(index, created_at, vec![bot_commit(index, created_at)]);
            let closer = if by_bot {
                BOT
            } else {
                *random.pick(&MAINTAINERS)
            };
            if by_bot {
                spec.labels = vec![random.pick(&bot_outcome_labels).to_string()];
            }
            spec.closed = Some(ClosedSpec {
                by: closer.to_string(),
                at: Some(created_at.plus(random.range(2, 48) as i64 * HOUR)),
                merged: false,
                delete_branch: !branch_kept,
            });
            state.add_pull_request(spec);
        }
    }
    for index in 0..240 {
        let author = *random.pick(&HUMANS);
        let created_at = now.minus(random.range(1, 60 * 24) as i64 * HOUR + 30 * DAY);
        let merged = random.chance(0.7);
        let closer = if merged || random.chance(0.5) {
            *random.pick(&MAINTAINERS)
        } else {
            author
        };
        state.add_pull_request(PullRequestSpec {
            title: format!("Closed change {index:03}"),
            author: author.to_string(),
            head_ref: format!("feature/closed-{index:03}"),
            commits: vec![human_commit(author, index, created_at)],
            created_at: Some(created_at),
            closed: Some(ClosedSpec {
                by: closer.to_string(),
                at: Some(created_at.plus(random.range(1, 96) as i64 * HOUR)),
                merged,
                delete_branch: random.chance(0.8),
            }),
            ..PullRequestSpec::default()
        });
    }
}

fn human_commit(author: &str, index: usize, at: Timestamp) -> CommitSpec {
    CommitSpec::by(author)
        .message(&format!("Change {index}"))
        .file(
            &format!("src/module_{:02}.rs", index % 40),
            &format!("// change {index} at {at}\n"),
        )
        .at(at)
}

/// 120 open pull requests: the bot's 20 (cand-00..19) and 100 of people. Returns the bot's PR
/// number per candidate index.
fn add_open_pull_requests(
    state: &mut RepoState,
    random: &mut SplitMix64,
    now: Timestamp,
) -> BTreeMap<usize, u64> {
    let mut numbers = BTreeMap::new();
    for index in 0..20 {
        let created_at = now.minus(random.range(2, 13 * 24) as i64 * HOUR);
        let mut commits = vec![bot_commit(index, created_at)];
        let mut labels = vec!["klaud-in-progress".to_string()];
        let mut draft = true;
        match index {
            0..=7 | 12..=14 => {}
            8..=11 => labels = vec!["klaud-parked".to_string()],
            15 | 16 => commits.push(
                CommitSpec::by(MAINTAINERS[index % 2])
                    .message("maintainer fix-up")
                    .file(
                        &format!("configs/x-master/family-{index:02}.yaml"),
                        "fixed: by hand\n",
                    )
                    .at(created_at.plus(HOUR)),
            ),
            17 => labels = vec!["klaud-handoff".to_string()],
            _ => {
                labels = vec![
                    "klaud-finished".to_string(),
                    "full-sweep-enabled".to_string(),
                ];
                draft = false;
            }
        }
        let mut spec = klaud_pull(index, created_at, commits);
        spec.labels = labels;
        spec.draft = draft;
        numbers.insert(index, state.add_pull_request(spec));
    }
    let topic_labels = ["bug", "enhancement", "documentation"];
    for index in 0..100 {
        let author = *random.pick(&HUMANS);
        let created_at = now.minus(random.range(1, 90 * 24) as i64 * HOUR);
        let labels = if random.chance(0.4) {
            vec![random.pick(&topic_labels).to_string()]
        } else {
            Vec::new()
        };
        state.add_pull_request(PullRequestSpec {
            title: format!("Open change {index:03}"),
            author: author.to_string(),
            head_ref: format!("feature/topic-{index:03}"),
            draft: random.chance(0.2),
            labels,
            commits: vec![human_commit(author, index + 1000, created_at)],
            created_at: Some(created_at),
            ..PullRequestSpec::default()
        });
    }
    numbers
}

fn jobs_for(random: &mut SplitMix64, prefix: &str, active: bool) -> Vec<JobSpec> {
    let count = random.range(1, 5) as usize;
    (0..count)
        .map(|index| {
            let name = format!("{prefix} {}", index + 1);
            match (active, index) {
                (true, 0) => JobSpec::in_progress(&name),
                (true, _) => JobSpec {
                    status: "queued".to_string(),
                    ..JobSpec::in_progress(&name)
                },
                (false, _) => JobSpec::completed(&name, "success"),
            }
        })
        .collect()
}

fn run_spec(workflow: &str, branch: &str, event: &str, actor: &str, at: Timestamp) -> RunSpec {
    RunSpec {
        workflow: workflow.to_string(),
        head_branch: Some(branch.to_string()),
        event: event.to_string(),
        actor: Some(actor.to_string()),
        created_at: Some(at),
        updated_at: Some(at.plus(10 * MINUTE)),
        ..RunSpec::default()
    }
}

fn active(mut spec: RunSpec, status: &str) -> RunSpec {
    spec.status = status.to_string();
    spec.conclusion = None;
    spec
}

/// 5,000 planner runs (2,880 scheduled waves every 15 minutes and 2,120 wakes, 50 of them
/// cancelled; the two waves that started the live sessions still running), 2,000 smoke runs
/// (12 active, 3 of them orphaned) and 400 sweep runs (2 active). Returns the live parents' run
/// ids and the completed waves' (id, created_at).
fn add_runs(
    state: &mut RepoState,
    random: &mut SplitMix64,
    now: Timestamp,
) -> ([u64; 2], Vec<(u64, Timestamp)>) {
    let start = now.minus(30 * DAY);
    let mut planned: Vec<(RunSpec, RunRole)> = Vec::new();
    let live_slots = [2880 - 12, 2880 - 4];
    for slot in 0..2880usize {
        let at = start.plus(slot as i64 * 15 * MINUTE + random.range(0, 59) as i64);
        let mut spec = run_spec(PLANNER_WORKFLOW, "main", "schedule", MAINTAINERS[0], at);
        spec.triggering_actor = Some(MAINTAINERS[0].to_string());
        if let Some(which) = live_slots.iter().position(|live| *live == slot) {
            spec = active(spec, "in_progress");
            spec.jobs = vec![JobSpec::completed("select", "success")];
            for candidate in (which * 4)..(which * 4 + 4) {
                spec.jobs.push(JobSpec::in_progress(&format!(
                    "Run candidate {}",
                    candidate_id(candidate)
                )));
            }
            planned.push((spec, RunRole::LiveParent(which)));
        } else {
            if random.chance(0.03) {
                spec.conclusion = Some("failure".to_string());
            }
            spec.jobs = jobs_for(random, "wave", false);
            planned.push((spec, RunRole::Plain));
        }
    }
    for wake in 0..2120usize {
        let at = start.plus(random.range(0, (30 * DAY - HOUR) as u64) as i64);
        let mut spec = run_spec(PLANNER_WORKFLOW, "main", "workflow_dispatch", BOT, at);
        if wake < 50 {
            spec.conclusion = Some("cancelled".to_string());
        }
        spec.jobs = jobs_for(random, "recover", false);
        planned.push((spec, RunRole::Plain));
    }
    for smoke in 0..1988usize {
        let at = start.plus(random.range(0, (30 * DAY - 6 * HOUR) as u64) as i64);
        let mut spec = if random.chance(0.7) {
            let index = random.range(20, 59) as usize;
            run_spec(
                SMOKE_WORKFLOW,
                &candidate_branch(index),
                "workflow_dispatch",
                BOT,
                at,
            )
        } else {
            let author = *random.pick(&HUMANS);
            run_spec(
                SMOKE_WORKFLOW,
                &format!("feature/topic-{:03}", smoke % 100),
                "pull_request",
                author,
                at,
            )
        };
        if random.chance(0.1) {
            spec.conclusion = Some("failure".to_string());
        }
        spec.jobs = jobs_for(random, "smoke", false);
        planned.push((spec, RunRole::Plain));
    }
    // The 12 active smoke runs: 9 of live sessions, 3 orphaned on abandoned candidates.
    for (slot, index) in [0, 1, 2, 3, 4, 5, 6, 7, 0, 12, 13, 14]
        .into_iter()
        .enumerate()
    {
        let at = now.minus((slot as i64 + 1) * 7 * MINUTE);
        let status = if slot % 3 == 0 {
            "queued"
        } else {
            "in_progress"
        };
        let mut spec = active(
            run_spec(
                SMOKE_WORKFLOW,
                &candidate_branch(index),
                "workflow_dispatch",
                BOT,
                at,
            ),
            status,
        );
        spec.jobs = jobs_for(random, "smoke", true);
        planned.push((spec, RunRole::Plain));
    }
    for _ in 0..398usize {
        let at = start.plus(random.range(0, (30 * DAY - 6 * HOUR) as u64) as i64);
        let index = random.range(18, 59) as usize;
        let actor = if random.chance(0.85) {
            BOT
        } else {
            *random.pick(&MAINTAINERS)
        };
        let mut spec = run_spec(
            SWEEP_WORKFLOW,
            &candidate_branch(index),
            "pull_request",
            actor,
            at,
        );
        spec.jobs = jobs_for(random, "sweep shard", false);
        planned.push((spec, RunRole::Plain));
    }
    for index in [18, 19] {
        let at = now.minus(random.range(30, 120) as i64 * MINUTE);
        let mut spec = active(
            run_spec(
                SWEEP_WORKFLOW,
                &candidate_branch(index),
                "pull_request",
                BOT,
                at,
            ),
            "in_progress",
        );
        spec.jobs = jobs_for(random, "sweep shard", true);
        planned.push((spec, RunRole::Plain));
    }
    // Ids grow with creation time, as on GitHub.
    planned.sort_by_key(|(spec, _)| spec.created_at);
    let mut live_parents = [0u64; 2];
    let mut completed_waves = Vec::new();
    for (spec, role) in planned {
        let is_wave = spec.workflow == PLANNER_WORKFLOW && spec.event == "schedule";
        let is_done = spec.status == "completed";
        let created_at = spec.created_at.unwrap_or(now);
        let id = state.add_run(spec);
        match role {
            RunRole::LiveParent(which) => live_parents[which] = id,
            RunRole::Plain if is_wave && is_done => completed_waves.push((id, created_at)),
            RunRole::Plain => {}
        }
    }
    (live_parents, completed_waves)
}

/// 600 legacy lock refs (560 of finished parents, 40 of the running ones), 30 legacy claim
/// refs (each on its own commit) — all `klaud/recovery-<parent>-<cand>` / `klaud/claim-<cand>`.
fn add_lock_refs(
    state: &mut RepoState,
    random: &mut SplitMix64,
    live_parents: &[u64; 2],
    completed_waves: &[(u64, Timestamp)],
) {
    let main = state.branch_sha("main").unwrap_or_default().to_string();
    let mut names = BTreeSet::new();
    for (which, parent) in live_parents.iter().enumerate() {
        for candidate in 0..20 {
            names.insert(format!(
                "klaud/recovery-{parent}-{}",
                candidate_id(which * 20 + candidate)
            ));
        }
    }
    while names.len() < 600 {
        let (parent, _) = random.pick(completed_waves);
        let candidate = random.range(0, FAMILIES as u64 - 1) as usize;
        names.insert(format!(
            "klaud/recovery-{parent}-{}",
            candidate_id(candidate)
        ));
    }
    for name in names {
        state.set_branch(&name, &main);
    }
    for index in 30..60 {
        let (parent, at) = *random.pick(completed_waves);
        let commit = state.add_commit(
            Some(&main),
            CommitSpec::by(BOT)
                .message(&format!("claim {} for run {parent}", candidate_id(index)))
                .at(at),
        );
        state.set_branch(&format!("klaud/claim-{}", candidate_id(index)), &commit);
    }
}
