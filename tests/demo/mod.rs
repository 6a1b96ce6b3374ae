//! The demo wave: a realistic repository seeded into the fake GitHub, then the real `klaud`
//! binary run step by step the way the reference workflows run it — recover → discover (the
//! families of a checkout's master configs, rendered by its generator and matched to an image
//! catalog) → select from what discover found → one simulated agent session per claimed
//! candidate → finish → wake on an ended smoke run → the recovery pass it dispatched → status —
//! with a short account of what klaud decided (its result files and outputs) and what it did (its
//! writes in the fake's request log) after every step.
//!
//! The checkout is `repository/` (nine real families of InferenceX's master configs at 843c6254f,
//! verbatim) with the real `configs/runners.yaml` of that commit, committed into a temporary git
//! repository; its generator is `tests/discovery_support/recorded_generator.py`, answering with
//! the real generator's recorded output for those families. The catalog is `latest-images.json`:
//! the rows of `tests/fixtures/discovery/latest-images-derived.json` for eight of the families,
//! and one row no family matches.
//!
//! `cargo run --example demo` prints the account; `tests/demo.rs` runs the same wave and checks
//! its key facts, so the demo cannot drift from what klaud does.

// The example prints the account; the test reads the facts.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use klaud::core::discovery::identity::candidate_id;
use klaud::core::discovery::observation::normalise_image;
use klaud::core::ledger::{Ledger, SessionState};
use serde_json::{Value, json};
use tempfile::TempDir;

use super::fake_github::clock::HOUR;
use super::fake_github::render;
use super::fake_github::{
    CommitSpec, FakeGitHubHandle, JobSpec, PullRequestSpec, PullState, RunSpec,
};
use super::github_mode_support::{self as steps, Step};
use super::recover_support::{
    self as world, BOT, BOT_TOKEN, LABEL_TOKEN, MAINTAINER, PLANNER, SMOKE, SWEEP, World, branch,
};

/// The repository's full name as the fake serves it.
const REPOSITORY: &str = "acme/bench";
/// The cap on concurrent sessions the wave runs with.
const MAX_CANDIDATES: u32 = 4;

/// A family of the demo's checkout and the image the catalog publishes for it.
#[derive(Debug, Clone, Copy)]
pub struct DemoFamily {
    /// `<master file>:<key>`.
    pub family: &'static str,
    pub image: &'static str,
}

impl DemoFamily {
    /// The key: how the account names the family and its candidates.
    pub fn key(&self) -> &'static str {
        self.family
            .rsplit_once(':')
            .map_or(self.family, |(_, key)| key)
    }

    /// The candidate its published image makes.
    pub fn id(&self) -> String {
        candidate_id(self.family, &normalise_image(self.image))
    }
}

// The families of the checkout (`repository/configs/`), by what becomes of them.
/// A maintainer closed the draft of its previous image's session: the whole family is held.
pub const HELD: DemoFamily = DemoFamily {
    family: "configs/nvidia-master.yaml:dsr1-fp8-h200-sglang",
    image: "lmsysorg/sglang:v0.5.12-cu130",
};
/// The image of that session, older than the one the catalog publishes now.
pub const HELD_SESSION_IMAGE: &str = "lmsysorg/sglang:v0.5.9-cu129";
/// Its candidate failed six hours ago: cooling down for a day.
pub const COOLING: DemoFamily = DemoFamily {
    family: "configs/amd-master.yaml:qwen3.5-fp8-mi300x-sglang",
    image: "lmsysorg/sglang:v0.5.12-rocm720-mi30x",
};
/// Its candidate's pull request was handed off to maintainers and is open: occupied.
pub const HANDED_OFF: DemoFamily = DemoFamily {
    family: "configs/nvidia-master.yaml:dsv4-fp4-b200-vllm",
    image: "vllm/vllm-openai:v0.25.0",
};
/// No catalog row publishes its observation (the demo's catalog leaves its row out).
pub const UNPUBLISHED: DemoFamily = DemoFamily {
    family: "configs/amd-master.yaml:dsv4-fp8-mi300x-vllm",
    image: "vllm/vllm-openai-rocm:nightly-09663abde0f50944a8d5ea30120666024b503faa",
};
/// The free families: discover proposes all five, select claims four (the cap) in discover's
/// order.
pub const FREE: [DemoFamily; 5] = [
    DemoFamily {
        family: "configs/nvidia-master.yaml:dsr1-fp8-b200-trt",
        // Enroot's spelling: the id is made from `nvcr.io/nvidia/…`.
        image: "nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14",
    },
    DemoFamily {
        family: "configs/nvidia-master.yaml:dsv4-fp8-h200-vllm",
        image: "vllm/vllm-openai:v0.25.1",
    },
    DemoFamily {
        family: "configs/nvidia-master.yaml:qwen3.5-fp4-b200-sglang",
        image: "lmsysorg/sglang:v0.5.14-cu130",
    },
    DemoFamily {
        family: "configs/nvidia-master.yaml:qwen3.5-fp8-h100-sglang",
        image: "lmsysorg/sglang:v0.5.14-cu130",
    },
    DemoFamily {
        family: "configs/amd-master.yaml:dsr1-fp8-mi355x-sglang",
        image: "lmsysorg/sglang:v0.5.12-rocm700-mi35x",
    },
];
/// The bot's abandoned draft: a family the checkout no longer has.
pub const ABANDONED: DemoFamily = DemoFamily {
    family: "configs/nvidia-master.yaml:dsr1-fp4-b200-sglang",
    image: "lmsysorg/sglang:v0.5.16-cu130",
};
/// An earlier wave's validated pull request, waiting for maintainers, whose full sweep they
/// started again: a family of an earlier checkout.
pub const WAITING: DemoFamily = DemoFamily {
    family: "configs/amd-master.yaml:gptoss-fp4-mi355x-vllm",
    image: "vllm/vllm-openai-rocm:v0.11.0",
};
/// A maintainer's own pull request, outside klaud's branches.
pub const MAINTAINER_BRANCH: &str = "feature/faster-kernels";

/// The candidate of the session a maintainer closed (the held family's previous image).
pub fn held_session() -> String {
    candidate_id(HELD.family, &normalise_image(HELD_SESSION_IMAGE))
}

/// What the agents of the claimed candidates end with, in select's order: an outcome written to
/// the outcome file, or `None` when its runner dies before `finish` runs.
pub const AGENT_ENDINGS: [Option<&str>; 4] =
    [Some("validated"), Some("failed"), Some("no-capacity"), None];

/// Pull request numbers of the seeded repository.
#[derive(Debug, Clone, Default)]
pub struct Seeded {
    pub abandoned: u64,
    pub closed_by_maintainer: u64,
    pub handed_off: u64,
    pub maintainers_own: u64,
    pub waiting: u64,
    pub wave_run: u64,
}

/// What the wave left behind, for the account's last lines and for the test.
pub struct Wave {
    pub server: FakeGitHubHandle,
    pub seeded: Seeded,
    /// The checkout discover read, and the directory of the feeds discover does not read.
    pub checkout: Checkout,
    _feeds: TempDir,
    /// `discovery.json`, `candidates.json` and the `discovered` output of discover.
    pub discovery: Value,
    pub candidates: Value,
    pub discovered: Vec<String>,
    /// Each candidate's decision in `selection.json`.
    pub selection: BTreeMap<String, String>,
    /// The claimed candidates, in candidates-file order.
    pub selected: Vec<String>,
    /// The claimed candidate whose agent ended each way (`"validated"`, `"failed"`,
    /// `"no-capacity"`; `"interrupted"` for the one whose runner died).
    pub endings: BTreeMap<&'static str, String>,
    /// The draft pull request each agent opened.
    pub agent_pulls: BTreeMap<String, u64>,
    /// `finish.json` of each finished session.
    pub finished: BTreeMap<String, Value>,
    /// `wake.json` and the `dispatched` output.
    pub wake: Value,
    pub wake_dispatched: bool,
    /// `recover.json` of the wave's first pass and of the dispatched pass.
    pub first_recover: Value,
    pub last_recover: Value,
    /// `status.json` of the wave's last step.
    pub status: Value,
    /// The account, line by line, as printed.
    pub lines: Vec<String>,
}

/// How the account names a candidate: its family's key (ids are long), the id itself when the
/// demo does not know it.
#[derive(Default)]
struct Names(BTreeMap<String, String>);

impl Names {
    fn add(&mut self, id: &str, name: &str) {
        self.0.insert(id.to_string(), name.to_string());
    }

    fn of(&self, id: &str) -> String {
        self.0.get(id).cloned().unwrap_or_else(|| id.to_string())
    }

    /// The name of the candidate a `klaud/auto-` branch belongs to, else the branch.
    fn of_branch(&self, head: &str) -> String {
        match head.strip_prefix("klaud/auto-") {
            Some(id) if self.0.contains_key(id) => self.of(id),
            _ => head.to_string(),
        }
    }
}

/// The demo's checkout: a git repository at one commit holding `repository/`, the real runners
/// file of 843c6254f and the recorded generator, with its recordings of the checkout's families.
pub struct Checkout {
    pub dir: TempDir,
}

impl Checkout {
    fn new() -> Checkout {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let root = dir.path();
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let fixtures = manifest.join("tests/fixtures");
        let configs = root.join("configs");
        std::fs::create_dir_all(&configs).unwrap();
        let mut families = Vec::new();
        for file in ["nvidia-master.yaml", "amd-master.yaml"] {
            let text =
                std::fs::read_to_string(manifest.join("tests/demo/repository/configs").join(file))
                    .expect("the demo's master configs");
            families.extend(top_level_keys(&text).map(|key| format!("configs/{file}:{key}")));
            std::fs::write(configs.join(file), text).unwrap();
        }
        std::fs::copy(
            fixtures.join("inferencex/configs/full-843c6254f/runners.yaml"),
            configs.join("runners.yaml"),
        )
        .expect("the real runners file");
        let generator = root.join("utils/matrix_logic");
        std::fs::create_dir_all(&generator).unwrap();
        std::fs::copy(
            manifest.join("tests/discovery_support/recorded_generator.py"),
            generator.join("generate_sweep_configs.py"),
        )
        .expect("the recorded generator");
        // The recordings of the checkout's families only, in the recording's shape.
        let mut recorded: Value = serde_json::from_str(
            &std::fs::read_to_string(fixtures.join("discovery/generator-843c6254f.json"))
                .expect("the recorded generator outputs"),
        )
        .expect("JSON");
        let all = recorded["families"]
            .as_object_mut()
            .expect("families")
            .clone();
        recorded["families"] = all
            .into_iter()
            .filter(|(name, _)| families.contains(name))
            .collect::<serde_json::Map<_, _>>()
            .into();
        std::fs::write(
            generator.join("recorded-outputs.json"),
            recorded.to_string(),
        )
        .unwrap();
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["add", "-A"],
            &[
                "commit",
                "-q",
                "-m",
                "Nine families of the InferenceX configs",
            ],
        ] {
            let status = std::process::Command::new("git")
                .args(["-c", "commit.gpgsign=false"])
                .args(args)
                .current_dir(root)
                .env("GIT_AUTHOR_NAME", MAINTAINER)
                .env("GIT_AUTHOR_EMAIL", "maintainer@example.com")
                .env("GIT_COMMITTER_NAME", MAINTAINER)
                .env("GIT_COMMITTER_EMAIL", "maintainer@example.com")
                .status()
                .expect("git runs");
            assert!(status.success(), "git {args:?}");
        }
        Checkout { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn head(&self) -> String {
        let output = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(self.root())
            .output()
            .expect("git runs");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// The families of each master file, in file order.
    pub fn families(&self) -> Vec<String> {
        let mut families = Vec::new();
        for file in ["amd-master.yaml", "nvidia-master.yaml"] {
            let text = std::fs::read_to_string(self.root().join("configs").join(file)).unwrap();
            families.extend(top_level_keys(&text).map(|key| format!("configs/{file}:{key}")));
        }
        families
    }
}

/// The top-level keys of a master file written as InferenceX writes them.
fn top_level_keys(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .filter(|line| !line.starts_with([' ', '#', '-']) && line.ends_with(':'))
        .map(|line| line.trim_end_matches(':'))
}

/// The catalog the wave's discover reads: `latest-images.json` beside this file.
pub fn catalog_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/demo/latest-images.json")
}

/// Collects the account, printing each line as it comes when `echo`.
struct Account {
    echo: bool,
    lines: Vec<String>,
    names: Names,
}

impl Account {
    fn line(&mut self, text: impl Into<String>) {
        let text = text.into();
        if self.echo {
            println!("{text}");
        }
        self.lines.push(text);
    }

    fn heading(&mut self, text: &str) {
        self.line("");
        self.line(format!("── {text}"));
    }

    fn name(&self, id: &str) -> String {
        self.names.of(id)
    }
}

/// The repository before the wave: earlier sessions in the ledger and their pull requests.
fn seed() -> (World, Seeded) {
    let mut world = World::new();
    world.state.add_token(steps::TOKEN, BOT);
    let planner = world.state.ensure_workflow(PLANNER);
    world.state.workflows.get_mut(&planner).unwrap().inputs = Some(vec!["wake".into()]);
    let held = held_session();
    let cooling = COOLING.id();
    let yesterday = world.finished_planner(30, &[&held, &cooling]);

    // A session a maintainer ended by closing its draft (and deleting its branch); its parent
    // run ended long ago.
    let closed = world.closed_bot_pull(&held, MAINTAINER, false);
    world.state.pulls.get_mut(&closed).unwrap().labels = vec!["klaud-in-progress".into()];
    world
        .session(&held, SessionState::Live, yesterday, Some(closed))
        .family = HELD.family.into();
    world.claim(&held, yesterday);
    world.ledger.claims.last_mut().unwrap().family = HELD.family.into();
    // A session that failed six hours ago: its candidate cools down for a day.
    world
        .session(&cooling, SessionState::Finished, yesterday, None)
        .family = COOLING.family.into();
    // The bot's draft that no session owns any more, its smoke run still going.
    let abandoned = world.bot_draft(&ABANDONED.id());
    world.smoke(&ABANDONED.id(), BOT, true);
    // A pull request of the bot that maintainers took over.
    let commits = vec![world.bot_commit(&HANDED_OFF.id(), 40)];
    let handed_off = world.bot_pull(&HANDED_OFF.id(), false, commits, &["klaud-handoff"]);
    // A maintainer's own work.
    let commits = vec![world.maintainer_commit("kernels", 5)];
    let created = world.ago(5 * HOUR);
    let maintainers_own = world.state.add_pull_request(PullRequestSpec {
        title: "Faster attention kernels".into(),
        author: MAINTAINER.into(),
        head_ref: MAINTAINER_BRANCH.into(),
        draft: false,
        commits,
        created_at: Some(created),
        ..PullRequestSpec::default()
    });
    // This wave's planner run, now at its first step.
    let wave_run = world.running_planner(&[]);
    // Maintainers ran the full sweep on it: one b200 job of it failed.
    let failed_sweep = sweep_jobs(&world, &[("b200", "success", 9), ("b200", "failure", 14)]);
    world.state.add_run(RunSpec {
        workflow: SWEEP.into(),
        head_branch: Some(branch(&HANDED_OFF.id())),
        event: "pull_request".into(),
        actor: Some(MAINTAINER.into()),
        conclusion: Some("failure".into()),
        jobs: failed_sweep,
        ..RunSpec::default()
    });
    // An earlier wave's validated pull request, ready for review; maintainers started its full
    // sweep again: two mi355x jobs done, four to go.
    let waiting_id = WAITING.id();
    let commits = vec![world.bot_commit(&waiting_id, 30)];
    let waiting = world.bot_pull(&waiting_id, false, commits, &["klaud-finished"]);
    let session = world.session(
        &waiting_id,
        SessionState::Finished,
        yesterday,
        Some(waiting),
    );
    session.family = WAITING.family.into();
    session.outcome = Some(klaud::core::outcome::Outcome::Validated);
    let mut jobs = sweep_jobs(
        &world,
        &[("mi355x", "success", 9), ("mi355x", "success", 11)],
    );
    jobs.extend((0..4).map(|shard| {
        let job = JobSpec::queued(&format!("sweep mi355x shard {}", shard + 3));
        match shard {
            0 => JobSpec {
                status: "in_progress".into(),
                ..job
            },
            _ => job,
        }
        .on(&["self-hosted", "mi355x"])
    }));
    world.state.add_run(RunSpec {
        workflow: SWEEP.into(),
        head_branch: Some(branch(&waiting_id)),
        event: "pull_request".into(),
        actor: Some(MAINTAINER.into()),
        status: "in_progress".into(),
        conclusion: None,
        jobs,
        ..RunSpec::default()
    });
    let seeded = Seeded {
        abandoned,
        closed_by_maintainer: closed,
        handed_off,
        maintainers_own,
        waiting,
        wave_run,
    };
    (world, seeded)
}

/// Completed sweep jobs, one per (pool, conclusion, minutes), started an hour ago.
fn sweep_jobs(world: &World, jobs: &[(&str, &str, i64)]) -> Vec<JobSpec> {
    jobs.iter()
        .enumerate()
        .map(|(shard, (pool, conclusion, minutes))| {
            JobSpec::completed(&format!("sweep {pool} shard {}", shard + 1), conclusion)
                .on(&["self-hosted", pool])
                .took(world.ago(HOUR), *minutes)
        })
        .collect()
}

/// The repository's `.github/klaud.yml`: the bot, and the catalog as a file (its sibling feeds,
/// which only `verify-baselines` reads, as files too).
fn configuration(feeds: &Path) -> String {
    let quoted = |path: &Path| Value::String(path.display().to_string()).to_string();
    format!(
        "bot: {BOT}\ndiscovery:\n  feeds:\n    images: {}\n    benchmarks: {}\n    workflow-info: {}\n",
        quoted(&catalog_path()),
        quoted(&feeds.join("benchmarks.json")),
        quoted(&feeds.join("workflow-info.json")),
    )
}

/// A step of this wave with the repository's configuration.
fn step(configuration: &str, run_id: u64) -> Step {
    let step = Step::new(run_id);
    step.write("klaud.yml", configuration);
    step
}

/// Runs `klaud <mode>` with `arguments`, expecting exit 0.
fn run(server: &FakeGitHubHandle, step: &Step, mode: &str, arguments: &[&str]) {
    let mut command = step.command(server, mode);
    command
        .env("KLAUD_LABEL_TOKEN", LABEL_TOKEN)
        .env("KLAUD_MAX_CANDIDATES", MAX_CANDIDATES.to_string())
        .args(arguments);
    step.run(command, 0);
}

/// Writes of the request log from position `from` on, as `METHOD path` without the
/// repository prefix, with GraphQL calls named by what klaud uses them for.
fn writes_since(server: &FakeGitHubHandle, from: usize) -> Vec<String> {
    let prefix = format!("/repos/{REPOSITORY}");
    server.request_log()[from..]
        .iter()
        .filter(|request| request.is_write())
        .map(|request| {
            let path = request.path.strip_prefix(&prefix).unwrap_or(&request.path);
            let path = path.split('?').next().unwrap_or(path);
            if let Some(operation) = request.graphql() {
                format!("POST graphql {}", operation.fields.join(", "))
            } else {
                format!("{} {path}", request.method)
            }
        })
        .collect()
}

/// One line (wrapped) of the writes since `from`: equal consecutive writes once with a count.
fn report_writes(account: &mut Account, server: &FakeGitHubHandle, from: usize) {
    let writes = writes_since(server, from);
    let mut grouped: Vec<(String, usize)> = Vec::new();
    for write in writes {
        match grouped.last_mut() {
            Some((last, count)) if *last == write => *count += 1,
            _ => grouped.push((write, 1)),
        }
    }
    let total: usize = grouped.iter().map(|(_, count)| count).sum();
    let items: Vec<String> = grouped
        .into_iter()
        .map(|(write, count)| match count {
            1 => write,
            _ => format!("{write} ×{count}"),
        })
        .collect();
    wrapped(account, &format!("writes ({total}): "), &items);
}

/// `items` joined by `, `, wrapped under `label` at 100 columns.
fn wrapped(account: &mut Account, label: &str, items: &[String]) {
    if items.is_empty() {
        account.line(format!("    {label}none"));
        return;
    }
    let indent = " ".repeat(4 + label.chars().count());
    let mut line = format!("    {label}");
    let mut first = true;
    for item in items {
        if !first && line.chars().count() + item.chars().count() + 2 > 100 {
            account.line(format!("{line},"));
            line = format!("{indent}{item}");
        } else {
            if !first {
                line.push_str(", ");
            }
            line.push_str(item);
        }
        first = false;
    }
    account.line(line);
}

/// `recover.json`: each candidate's verdict, what was applied, the ledger commits.
fn report_recover(account: &mut Account, record: &Value) {
    for candidate in record["plan"]["candidates"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let outcome = match &candidate["outcome"] {
            Value::Null => String::new(),
            outcome => format!(" → {}", text(outcome)),
        };
        let name = account.name(&text(&candidate["candidate"]));
        account.line(format!(
            "  {name:<25} #{:<3} {}{outcome}: {}",
            text(&candidate["pull-request"]),
            text(&candidate["verdict"]),
            text(&candidate["reason"]),
        ));
    }
    for note in record["plan"]["refs"]["notes"]
        .as_array()
        .into_iter()
        .flatten()
    {
        account.line(format!("  kept: {}", text(note)));
    }
    for group in record["applied"]["groups"].as_array().into_iter().flatten() {
        for action in group["actions"].as_array().into_iter().flatten() {
            account.line(format!(
                "    did: {} → {}",
                text(&action["description"]),
                text(&action["result"]["detail"]),
            ));
        }
    }
    for commit in record["applied"]["ledger-writes"]
        .as_array()
        .into_iter()
        .flatten()
    {
        account.line(format!("    ledger commit: {}", text(commit)));
    }
}

/// `status.json`: room under the cap, claims, the lease, running cooldowns and open pull
/// requests without a session.
fn report_status(account: &mut Account, record: &Value) {
    let claims: Vec<String> = record["claims"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|claim| account.name(&text(&claim["candidate"])))
        .collect();
    let lease = match &record["recovery-lease"] {
        Value::Null => "free".to_string(),
        lease => format!("held by run {}", text(&lease["owner-run"])),
    };
    account.line(format!(
        "  room {} of {} ({} live, {} parked); claims: {}; recovery lease: {lease}",
        text(&record["room"]),
        text(&record["max-candidates"]),
        text(&record["live-sessions"]),
        text(&record["parked-sessions"]),
        if claims.is_empty() {
            "none".to_string()
        } else {
            claims.join(", ")
        },
    ));
    for cooldown in record["cooldowns"].as_array().into_iter().flatten() {
        let until = text(&cooldown["until"]);
        let name = account.name(&text(&cooldown["candidate"]));
        account.line(format!(
            "  cooldown {name:<25} {:<20} holds the {:<9} until {}",
            text(&cooldown["outcome"]),
            text(&cooldown["holds"]),
            until.get(..16).unwrap_or(&until).replace('T', " "),
        ));
    }
    let pulls: Vec<String> = record["pull-requests-without-session"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|pull| {
            format!(
                "#{} {} ({})",
                text(&pull["number"]),
                account.name(&text(&pull["candidate"])),
                text(&pull["labels"][0]),
            )
        })
        .collect();
    wrapped(account, "open pull requests without a session: ", &pulls);
    report_health(account, record);
}

/// The dashboard issue's *Pull requests* section, as klaud wrote it.
fn report_dashboard_pulls(account: &mut Account, server: &FakeGitHubHandle) {
    let body = server.with_state(|state| {
        state
            .issues
            .values()
            .find(|issue| issue.labels.iter().any(|label| label == "klaud-dashboard"))
            .and_then(|issue| issue.body.clone())
            .unwrap_or_default()
    });
    let section = body
        .split("\n## ")
        .find(|section| section.starts_with("Pull requests"))
        .unwrap_or_default();
    account.line("  the dashboard's pull requests section:".to_string());
    for line in format!("## {section}")
        .lines()
        .filter(|line| !line.is_empty())
    {
        account.line(format!("    {line}"));
    }
}

/// The health of each open klaud pull request in `status.json`, and the almost ready ones.
fn report_health(account: &mut Account, record: &Value) {
    for pull in record["pull-requests"].as_array().into_iter().flatten() {
        let pending: Vec<String> = pull["pending"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(pool, count)| format!("{pool} {}", text(count)))
            .collect();
        let failed: Vec<String> = pull["failed"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|check| text(&check["name"]))
            .collect();
        let mut line = format!(
            "  health #{:<3} {:<25} {:<16}",
            text(&pull["number"]),
            account.name(&text(&pull["candidate"])),
            text(&pull["health"]),
        );
        if !pending.is_empty() {
            line.push_str(&format!(" pending {}", pending.join(", ")));
        }
        if let Some(minutes) = pull["eta-minutes"].as_u64() {
            line.push_str(&format!(", done in ~{minutes} min"));
        }
        if !failed.is_empty() {
            line.push_str(&format!(" failed: {}", failed.join(", ")));
        }
        account.line(line.trim_end().to_string());
    }
    let almost: Vec<String> = record["almost-ready"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|number| format!("#{}", text(number)))
        .collect();
    if !almost.is_empty() {
        account.line(format!("  almost ready: {}", almost.join(", ")));
    }
}

/// `finish.json`: the outcome, the reason and each applied step.
fn report_finish(account: &mut Account, record: &Value) {
    let plan = &record["plan"];
    account.line(format!(
        "    klaud finish: {} — {} (ledger {})",
        text(&plan["outcome"]),
        text(&plan["reason"]),
        text(&record["ledger"]),
    ));
    let groups = record["applied"]["groups"].as_array().into_iter().flatten();
    for action in groups.flat_map(|group| group["actions"].as_array().into_iter().flatten()) {
        account.line(format!(
            "    did: {} → {}",
            text(&action["description"]),
            text(&action["result"]["detail"]),
        ));
    }
}

fn log_position(server: &FakeGitHubHandle) -> usize {
    server.request_log().len()
}

/// The simulated agent of one session: pushes the bot's commit on its family's master file to
/// the candidate branch, opens the draft pull request through the REST API, runs the smoke (and,
/// for a validated result, the sweep) on it and writes its outcome file. Returns the pull
/// request's number and the smoke run, when one was started.
fn agent(
    server: &FakeGitHubHandle,
    step: &Step,
    candidate: &str,
    family: &str,
    ending: Option<&str>,
) -> (u64, Option<u64>) {
    let head = branch(candidate);
    let (file, key) = family.rsplit_once(':').expect("a family is <file>:<key>");
    server.with_state(|state| {
        state.push_commits(
            &head,
            vec![
                CommitSpec::by(BOT)
                    .message(&format!("klaud: tune {key}"))
                    .file(file, &format!("{key}:\n  # tuned\n")),
            ],
        )
    });
    let number = open_draft(server, candidate, key);
    let smoke_conclusion = match ending {
        Some("validated") => Some("success"),
        Some("no-capacity") => None,
        _ => Some("failure"),
    };
    let smoke = smoke_conclusion.map(|conclusion| {
        let smoke = add_run(server, SMOKE, &head, "workflow_dispatch", "smoke");
        // The interrupted session's smoke run outlives its runner and ends later.
        if ending.is_some() {
            server.with_state(|state| state.set_run_status(smoke, "completed", Some(conclusion)));
        }
        smoke
    });
    if ending == Some("validated") {
        let sweep = add_run(server, SWEEP, &head, "pull_request", "sweep shard 1");
        server.with_state(|state| {
            let now = state.now();
            for shard in 2..=3 {
                let job = JobSpec::completed(&format!("sweep shard {shard}"), "success")
                    .on(&["self-hosted", "b200"])
                    .took(now.minus(20 * 60), 8 + shard);
                state.add_job(sweep, job);
            }
            state.set_run_status(sweep, "completed", Some("success"))
        });
    }
    if let Some(outcome) = ending {
        step.write(
            "outcome.json",
            &json!({"outcome": outcome, "pull-request": number}).to_string(),
        );
    }
    (number, smoke)
}

/// An in-progress run of the bot on `head`.
fn add_run(server: &FakeGitHubHandle, workflow: &str, head: &str, event: &str, job: &str) -> u64 {
    server.with_state(|state| {
        state.add_run(RunSpec {
            workflow: workflow.into(),
            head_branch: Some(head.into()),
            event: event.into(),
            status: "in_progress".into(),
            conclusion: None,
            actor: Some(BOT.into()),
            jobs: vec![JobSpec::in_progress(job)],
            ..RunSpec::default()
        })
    })
}

/// `POST /repos/{owner}/{repo}/pulls` with the bot's token, as the agent's `gh pr create --draft`.
fn open_draft(server: &FakeGitHubHandle, candidate: &str, key: &str) -> u64 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the agent's request");
    let body = json!({
        "title": format!("klaud: tune {key}"),
        "head": branch(candidate),
        "base": "main",
        "draft": true,
        "body": format!("Candidate `{candidate}` of `{key}`."),
    });
    runtime.block_on(super::fake_github::create_pull_request_through_rest(
        server, REPOSITORY, BOT_TOKEN, &body,
    ))
}

fn ledger(server: &FakeGitHubHandle) -> Ledger {
    world::stored_ledger(server)
}

fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// A pull request: klaud's by the name of its candidate (`klaud/auto-<id>` is its branch), others
/// by their branch.
fn pull_line(server: &FakeGitHubHandle, names: &Names, number: u64) -> String {
    server.with_state(|state| {
        let pull = &state.pulls[&number];
        let state_text = match (pull.state, pull.draft) {
            (PullState::Open, true) => "open draft",
            (PullState::Open, false) => "open ready",
            (PullState::Closed, _) if pull.merged_at.is_some() => "merged",
            (PullState::Closed, _) => "closed",
        };
        let closed_by = pull
            .closed_by
            .as_deref()
            .map(|login| format!(" by {login}"))
            .unwrap_or_default();
        let branch_text = if state.branch_sha(&pull.head_ref).is_some() {
            "branch kept"
        } else {
            "branch deleted"
        };
        let labels = if pull.labels.is_empty() {
            "no label".to_string()
        } else {
            pull.labels.join(", ")
        };
        format!(
            "#{number:<2} {:<25} {:<26} {:<18} {branch_text:<14}",
            names.of_branch(&pull.head_ref),
            format!("{state_text}{closed_by}"),
            labels,
        )
    })
}

fn ledger_lines(account: &mut Account, server: &FakeGitHubHandle) {
    let ledger = ledger(server);
    for session in &ledger.sessions {
        let state = match session.state {
            SessionState::Live => "live".to_string(),
            SessionState::Parked => "parked".to_string(),
            SessionState::Finished => format!(
                "finished {}",
                session
                    .outcome
                    .map(|outcome| outcome.to_string())
                    .unwrap_or_default()
            ),
        };
        let name = account.name(&session.candidate);
        account.line(format!(
            "  session {name:<25} {state:<30} parent {}",
            session.parent_run
        ));
    }
    let claims: Vec<String> = ledger
        .claims
        .iter()
        .map(|claim| account.name(&claim.candidate))
        .collect();
    let lease = ledger
        .recovery_lease
        .as_ref()
        .map(|lease| format!("held by run {}", lease.owner_run))
        .unwrap_or_else(|| "free".into());
    account.line(format!(
        "  claims: {}; recovery lease: {lease}",
        if claims.is_empty() {
            "none".to_string()
        } else {
            claims.join(", ")
        }
    ));
}

/// `discovery.json` and discover's outputs: each family's fate (the candidates in the run's
/// order, with their ids), the counts and the outputs.
fn report_discovery(
    account: &mut Account,
    record: &Value,
    catalog: &Value,
    discovered: &[String],
    step: &Step,
) {
    let rendering = &record["rendering"];
    account.line(format!(
        "  {} families rendered at {}: {} generator runs, {} from the render cache, {} refused",
        text(&rendering["families"]),
        text(&record["base"]).get(..7).unwrap_or_default(),
        text(&rendering["generator-runs"]),
        text(&rendering["from-cache"]),
        text(&rendering["refused"]),
    ));
    let families: Vec<&Value> = record["families"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let key = |report: &Value| {
        let family = text(&report["family"]);
        family
            .rsplit_once(':')
            .map_or(family.clone(), |(_, key)| key.to_string())
    };
    for id in discovered {
        if let Some(report) = families.iter().find(|report| report["candidate"] == **id) {
            account.line(format!("  {:<25} candidate {id}", key(report)));
        }
    }
    for report in families
        .iter()
        .filter(|report| report["fate"] != "candidate")
    {
        account.line(format!(
            "  {:<25} {}: {}",
            key(report),
            text(&report["fate"]),
            text(&report["reason"]),
        ));
    }
    let counts = |counts: &Value| -> String {
        counts
            .as_object()
            .into_iter()
            .flatten()
            .map(|(fate, count)| format!("{fate} {count}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for row in record["rows"].as_array().into_iter().flatten() {
        if row["fate"] == "no-family" {
            let published = &catalog[row["index"].as_u64().unwrap_or_default() as usize];
            account.line(format!(
                "  catalog row {} ({} on {}, {} {}, {}/{}): no-family: {}",
                text(&row["index"]),
                text(&published["model"]),
                text(&published["hardware"]),
                text(&published["framework"]),
                text(&published["precision"]),
                text(&published["isl"]),
                text(&published["osl"]),
                text(&row["reason"])
            ));
        }
    }
    account.line(format!("  families: {}", counts(&record["family-counts"])));
    account.line(format!("  catalog rows: {}", counts(&record["row-counts"])));
    account.line(format!(
        "  outputs: has-candidates={} candidates={} discovered=[the {} ids above, in this order]",
        step.output("has-candidates"),
        step.output("candidates"),
        discovered.len(),
    ));
}

/// Runs the whole wave against a fresh fake GitHub; prints the account when `echo`.
pub fn run_wave(echo: bool) -> Wave {
    let mut names = Names::default();
    for family in [HELD, COOLING, HANDED_OFF, UNPUBLISHED, ABANDONED, WAITING]
        .iter()
        .chain(&FREE)
    {
        names.add(&family.id(), family.key());
    }
    names.add(&held_session(), HELD.key());
    let mut account = Account {
        echo,
        lines: Vec::new(),
        names,
    };
    let checkout = Checkout::new();
    let feeds = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(feeds.path().join("benchmarks.json"), "[]\n").unwrap();
    std::fs::write(
        feeds.path().join("workflow-info.json"),
        "{\"runConfigs\": []}\n",
    )
    .unwrap();
    let configuration = configuration(feeds.path());
    let (world, seeded) = seed();
    let server = world.start();
    account.line(format!(
        "klaud demo: one wave on {REPOSITORY}, served by a fake GitHub at {}",
        server.base_url()
    ));
    account.heading("The repository before the wave");
    let mut per_file: BTreeMap<String, usize> = BTreeMap::new();
    for family in checkout.families() {
        let file = family
            .rsplit_once(':')
            .map_or(family.clone(), |(file, _)| file.into());
        *per_file.entry(file).or_default() += 1;
    }
    let files: Vec<String> = per_file
        .iter()
        .map(|(file, count)| format!("{file} ({count} families)"))
        .collect();
    account.line(format!(
        "  checkout at {}: {},",
        checkout.head().get(..7).unwrap_or_default(),
        files.join(", "),
    ));
    account.line(
        "    configs/runners.yaml and the generator utils/matrix_logic/generate_sweep_configs.py",
    );
    let catalog: Value =
        serde_json::from_str(&std::fs::read_to_string(catalog_path()).expect("the demo's catalog"))
            .expect("JSON");
    account.line(format!(
        "  image catalog (discovery.feeds.images): {} published rows, tests/demo/latest-images.json",
        catalog.as_array().map_or(0, Vec::len)
    ));
    for (number, note) in [
        (
            seeded.closed_by_maintainer,
            "its session (an older image) is live, parent run ended",
        ),
        (seeded.abandoned, "no session; its smoke run is running"),
        (
            seeded.handed_off,
            "handed off to maintainers; their sweep failed a job",
        ),
        (seeded.maintainers_own, "a maintainer's own work"),
        (
            seeded.waiting,
            "validated earlier, waiting for review; maintainers re-run its sweep",
        ),
    ] {
        account.line(format!(
            "  {}  {note}",
            pull_line(&server, &account.names, number)
        ));
    }
    ledger_lines(&mut account, &server);
    account.line(format!(
        "  planner run {} (this wave) in progress; cap {MAX_CANDIDATES} sessions",
        seeded.wave_run
    ));
    account.line(
        "  (candidates are named by their family's key; klaud's branch of one is klaud/auto-<id>)",
    );

    // 1. The wave's first step.
    account.heading(&format!(
        "1. klaud recover: the wave's first step reconciles and sweeps (planner run {})",
        seeded.wave_run
    ));
    let from = log_position(&server);
    let first = step(&configuration, seeded.wave_run);
    run(&server, &first, "recover", &[]);
    let first_recover = first.result_file("recover.json");
    report_recover(&mut account, &first_recover);
    report_writes(&mut account, &server, from);

    // 2. Discovery.
    account.heading(&format!(
        "2. klaud discover: renders the checkout's families, matches them to the catalog (planner run {})",
        seeded.wave_run
    ));
    let from = log_position(&server);
    let discover = step(&configuration, seeded.wave_run);
    run(
        &server,
        &discover,
        "discover",
        &["--repo-path", checkout.root().to_str().unwrap()],
    );
    let discovery = discover.result_file("discovery.json");
    let candidates = discover.result_file("candidates.json");
    let discovered: Vec<String> =
        serde_json::from_str(&discover.output("discovered")).expect("a discovered output");
    let mut families = BTreeMap::new();
    for candidate in candidates.as_array().into_iter().flatten() {
        let (id, family) = (text(&candidate["id"]), text(&candidate["family"]));
        let key = family
            .rsplit_once(':')
            .map_or(family.as_str(), |(_, key)| key);
        account.names.add(&id, key);
        families.insert(id, family);
    }
    report_discovery(&mut account, &discovery, &catalog, &discovered, &discover);
    report_writes(&mut account, &server, from);

    // 3. Selection.
    account.heading(&format!(
        "3. klaud select: claims families for discover's candidates, under the cap (planner run {})",
        seeded.wave_run
    ));
    let from = log_position(&server);
    let select = step(&configuration, seeded.wave_run);
    let candidates_file = discover.output("candidates-file");
    run(
        &server,
        &select,
        "select",
        &["--candidates", &candidates_file],
    );
    let selection_file = select.result_file("selection.json");
    let mut selection = BTreeMap::new();
    for record in selection_file["candidates"].as_array().unwrap() {
        let id = text(&record["id"]);
        let decision = text(&record["decision"]);
        let why = match &record["reason"] {
            Value::Null => String::new(),
            reason => format!(": {}", text(&reason["message"])),
        };
        account.line(format!("  {:<25} {decision}{why}", account.name(&id)));
        selection.insert(id, decision);
    }
    let selected: Vec<String> =
        serde_json::from_str(&select.output("candidates")).expect("a candidates output");
    account.line(format!(
        "  outputs: selected={} candidates=[the ids of the {} selected]",
        select.output("selected"),
        selected.len(),
    ));
    report_writes(&mut account, &server, from);

    // 4. Sessions.
    account.heading("4. The sessions: a simulated agent per claimed candidate, then klaud finish");
    server.with_state(|state| {
        for id in &selected {
            state.add_job(
                seeded.wave_run,
                JobSpec::in_progress(&format!("Run candidate {id}")),
            );
        }
    });
    let mut endings = BTreeMap::new();
    let mut agent_pulls = BTreeMap::new();
    let mut finished = BTreeMap::new();
    let mut interrupted = None;
    for (candidate, ending) in selected.iter().zip(AGENT_ENDINGS) {
        let name = account.name(candidate);
        endings.insert(ending.unwrap_or("interrupted"), candidate.clone());
        let session = step(&configuration, seeded.wave_run);
        let (number, smoke) = agent(&server, &session, candidate, &families[candidate], ending);
        agent_pulls.insert(candidate.clone(), number);
        let Some(outcome) = ending else {
            account.line(format!(
                "  {name:<25} agent opened draft #{number}; its runner died before finish ran"
            ));
            interrupted = smoke.map(|smoke| (candidate.clone(), smoke));
            continue;
        };
        account.line(format!(
            "  {name:<25} agent opened draft #{number}, wrote outcome {outcome}"
        ));
        let from = log_position(&server);
        let outcome_path = session.path("outcome.json");
        run(
            &server,
            &session,
            "finish",
            &[
                "--candidate",
                candidate,
                "--outcome-file",
                outcome_path.to_str().unwrap(),
                "--agent-outcome",
                "success",
                "--cancel-wait",
                "0",
            ],
        );
        let record = session.result_file("finish.json");
        report_finish(&mut account, &record);
        report_writes(&mut account, &server, from);
        finished.insert(candidate.clone(), record);
    }
    let Some((interrupted, smoke)) = interrupted else {
        panic!(
            "fewer than {} candidates were selected, so no session's runner dies:\n{}",
            AGENT_ENDINGS.len(),
            account.lines.join("\n")
        );
    };
    let interrupted_name = account.name(&interrupted);
    server.with_state(|state| state.set_run_status(seeded.wave_run, "completed", Some("failure")));
    account.line(format!(
        "  planner run {} ended (the job of {interrupted_name} failed)",
        seeded.wave_run
    ));

    // 5. Wake: the interrupted session's smoke run ends.
    server.with_state(|state| state.set_run_status(smoke, "completed", Some("failure")));
    account.heading(&format!(
        "5. klaud wake: smoke run {smoke} on the branch of {interrupted_name} ended"
    ));
    let from = log_position(&server);
    let wake_step = step(&configuration, 9_000_001);
    wake_step.write(
        "event.json",
        &server
            .with_state(|state| render::workflow_run_completed_event(state, smoke))
            .to_string(),
    );
    run(&server, &wake_step, "wake", &[]);
    let wake = wake_step.result_file("wake.json");
    let wake_dispatched = wake_step.output("dispatched") == "true";
    account.line(format!(
        "  {}: {}",
        text(&wake["decision"]),
        text(&wake["message"])
    ));
    account.line(format!(
        "  outputs: dispatched={} planner-run={}",
        wake_step.output("dispatched"),
        wake_step.output("planner-run")
    ));
    report_writes(&mut account, &server, from);
    let dispatched_run: u64 = wake_step
        .output("planner-run")
        .parse()
        .expect("the dispatched planner run");

    // 6. The recovery pass the wake dispatched.
    account.heading(&format!(
        "6. klaud recover: the recovery-only pass wake dispatched (planner run {dispatched_run})"
    ));
    let from = log_position(&server);
    let last = step(&configuration, dispatched_run);
    run(&server, &last, "recover", &[]);
    let last_recover = last.result_file("recover.json");
    report_recover(&mut account, &last_recover);
    report_writes(&mut account, &server, from);

    // 7. What a maintainer sees.
    account.heading(
        "7. klaud status --dashboard: what a maintainer sees now, kept in the dashboard issue",
    );
    let from = log_position(&server);
    let status_step = step(&configuration, 9_000_002);
    run(&server, &status_step, "status", &["--dashboard"]);
    let status = status_step.result_file("status.json");
    report_status(&mut account, &status);
    report_dashboard_pulls(&mut account, &server);
    report_writes(&mut account, &server, from);

    // Final state.
    account.heading("The repository after the wave");
    let mut numbers: Vec<u64> = server.with_state(|state| state.pulls.keys().copied().collect());
    numbers.sort_unstable();
    for number in numbers {
        let line = pull_line(&server, &account.names, number);
        account.line(format!("  {}", line.trim_end()));
    }
    ledger_lines(&mut account, &server);

    Wave {
        server,
        seeded,
        checkout,
        _feeds: feeds,
        discovery,
        candidates,
        discovered,
        selection,
        selected,
        endings,
        agent_pulls,
        finished,
        wake,
        wake_dispatched,
        first_recover,
        last_recover,
        status,
        lines: account.lines,
    }
}
