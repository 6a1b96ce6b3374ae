//! The repository profile in `.github/klaud.yml`: names, prefixes, labels, workflow files, the
//! producer command and per-outcome cooldowns. Every key is optional and defaults to the
//! InferenceX profile (contract §1–§4); an unknown key is bad input naming the key.
//!
//! YAML is read with `serde_yaml_ng`, a maintained fork of the archived `serde_yaml` with the
//! same API (`serde_yml`, the other fork, had soundness problems and is unmaintained).

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::core::outcome::{DefaultCooldown, Outcome, StatusLabel};
use crate::core::policy::{
    AftercareSettings, DashboardSettings, HealthSettings, Policy, SessionLimits,
};

/// `.github/klaud.yml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
#[schemars(title = "klaud configuration")]
pub struct Config {
    /// Login that authors the agent's commits and pull requests; ownership tests use it.
    pub bot: String,
    /// Candidate branches are `<branch-prefix><candidate id>`.
    pub branch_prefix: String,
    /// Orphan branch holding `ledger.json`.
    pub state_branch: String,
    /// Workflow files and job names klaud looks for.
    pub workflows: WorkflowNames,
    /// Label names klaud reads (handoff) and writes (sweep and status labels).
    pub labels: LabelNames,
    /// Glob patterns (`*` matches any run of characters) of legacy lock refs under `refs/heads/`.
    pub legacy_lock_refs: Vec<String>,
    /// Cooldown in days per outcome name, overriding the contract's defaults. `closed-by-maintainer`
    /// holds the whole family; `handoff` has no cooldown (it is held while its PR is open).
    pub cooldowns: BTreeMap<String, f64>,
    /// The program that produced the published baselines.
    pub producer: ProducerSettings,
    /// Optional gate deciding which candidate targets can run now.
    pub capacity: CapacitySettings,
    /// The time limit of one candidate job and how many jobs a session may take (contract §9).
    pub session: SessionLimits,
    /// What the agent runs may cost (contract §10).
    pub budget: BudgetSettings,
    /// The dashboard issue `status --dashboard` and `recover` keep (contract §10).
    pub dashboard: DashboardSettings,
    /// Where `discover` finds candidates: the master configs, the generator's arguments, the
    /// public feeds and the publisher's spellings (contract §11).
    pub discovery: DiscoverySettings,
    /// How the health of klaud's open pull requests is read and their sweeps' end estimated
    /// (contract §12).
    pub health: HealthSettings,
    /// How klaud keeps its validated pull requests mergeable and current: refresh, repair and
    /// supersede (contract §12).
    pub aftercare: AftercareSettings,
}

/// `discovery` (contract §11, §13).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct DiscoverySettings {
    /// Where candidates come from: the InferenceX master configs and the public catalog, or the
    /// open issues maintainers labelled.
    pub source: DiscoverySource,
    /// The labelled issues (`source: issues`).
    pub issues: IssueDiscoverySettings,
    /// Glob patterns of the master configs, relative to the repository (`*` matches within one
    /// path segment); every top-level key of a matching file is a family. A file under a
    /// `deprecated/` folder is never matched.
    pub configs: Vec<String>,
    /// The runners file the generator is given (`--runner-config`).
    pub runner_config: String,
    /// The public feeds.
    pub feeds: FeedSettings,
    /// Per field (`model`, `hardware`, `framework`, `precision`, `spec_method`), a generator
    /// value and the value the catalog publishes for it; a null `spec_method` is looked up as "".
    pub published_as: BTreeMap<String, BTreeMap<String, String>>,
    /// An entry without its own `disagg` is disaggregated when its framework is published with
    /// one of these prefixes.
    pub disagg_framework_prefixes: Vec<String>,
    /// The publisher's display model per model prefix (`dsr1: DeepSeek-R1-0528`), used to look a
    /// discovered candidate's baseline up when its review names none (`baseline-model`).
    pub models: BTreeMap<String, String>,
    /// How many candidates one planner run proposes for review (1–256).
    pub review_batch_size: usize,
    /// Earlier branch prefixes whose branches and pull requests still occupy their family.
    pub legacy_branch_prefixes: Vec<String>,
}

/// `discovery.source`: `inferencex-configs`, every family of the master configs proposed when
/// the catalog publishes a newer image (contract §11), or `issues`, the open issues carrying
/// `discovery.issues.label`, applied last by a writer (contract §13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DiscoverySource {
    #[default]
    InferencexConfigs,
    Issues,
}

/// `discovery.issues` (contract §13).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct IssueDiscoverySettings {
    /// The label that hands an issue to the agent; it counts only when its latest application
    /// was made by an account with write, maintain or admin permission.
    pub label: String,
    /// A glob (`*` any run of characters, `?` one) of the labels that name an issue's family:
    /// the alphabetically first match; an issue without one is its own family.
    pub family_labels: String,
    /// Labels that put an issue first, earlier ones first (compared without case); then the
    /// oldest issues.
    pub priority_labels: Vec<String>,
}

impl Default for IssueDiscoverySettings {
    fn default() -> Self {
        IssueDiscoverySettings {
            label: "klaud".into(),
            family_labels: "area:*".into(),
            priority_labels: Vec::new(),
        }
    }
}

impl IssueDiscoverySettings {
    /// The settings as the decision reads them.
    pub fn settings(&self) -> crate::core::discovery::issues::IssueSettings {
        crate::core::discovery::issues::IssueSettings {
            label: self.label.clone(),
            family_labels: self.family_labels.clone(),
            priority_labels: self.priority_labels.clone(),
        }
    }
}

/// `discovery.feeds`: an `https://` URL (or `http://127.0.0.1…` for tests) or a local file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct FeedSettings {
    /// The newest published image per observation (`latest-images`).
    pub images: String,
    /// Published result rows [default: `/api/v1/benchmarks` on the images feed's origin;
    /// required when the images feed is a file].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub benchmarks: Option<String>,
    /// Which commit each producing run ran [default: `/api/v1/workflow-info` on the images
    /// feed's origin; required when the images feed is a file].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_info: Option<String>,
}

impl Default for FeedSettings {
    fn default() -> Self {
        FeedSettings {
            images: "https://inferencex.semianalysis.com/api/v1/latest-images".into(),
            benchmarks: None,
            workflow_info: None,
        }
    }
}

impl Default for DiscoverySettings {
    fn default() -> Self {
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(from, to)| (from.to_string(), to.to_string()))
                .collect()
        };
        DiscoverySettings {
            source: DiscoverySource::default(),
            issues: IssueDiscoverySettings::default(),
            configs: vec!["configs/*-master.yaml".into()],
            runner_config: "configs/runners.yaml".into(),
            feeds: FeedSettings::default(),
            published_as: BTreeMap::from([
                (
                    "framework".to_string(),
                    map(&[
                        ("sglang-disagg", "mori-sglang"),
                        ("atom-disagg", "mooncake-atom"),
                        ("dynamo-trtllm", "dynamo-trt"),
                        ("trtllm", "trt"),
                    ]),
                ),
                (
                    "precision".to_string(),
                    map(&[("nvfp4", "fp4"), ("mxfp4", "fp4")]),
                ),
                (
                    "model".to_string(),
                    map(&[("gptoss", "gptoss120b"), ("dsv4pro", "dsv4")]),
                ),
                ("spec_method".to_string(), map(&[("", "none")])),
            ]),
            disagg_framework_prefixes: vec!["mori-".into()],
            // The publisher's own table (InferenceX-app, packages/constants/src/models.ts,
            // `DB_MODEL_TO_DISPLAY`): every model prefix of the InferenceX configs at 843c6254f
            // and the earlier ones still published. Point releases share a display model.
            models: map(&[
                ("dsr1", "DeepSeek-R1-0528"),
                ("dsv4", "DeepSeek-V4-Pro"),
                ("glm5", "GLM-5"),
                ("glm5.1", "GLM-5"),
                ("glm5.2", "GLM-5.2"),
                ("gptoss120b", "gpt-oss-120b"),
                ("kimik2.5", "Kimi-K2.5"),
                ("kimik2.6", "Kimi-K2.5"),
                ("kimik2.7-code", "Kimi-K2.5"),
                ("kimik3", "Kimi-K3"),
                ("llama70b", "Llama-3.3-70B-Instruct-FP8"),
                ("minimaxm2.5", "MiniMax-M2.5"),
                ("minimaxm2.7", "MiniMax-M2.5"),
                ("minimaxm3", "MiniMax-M3"),
                ("qwen3.5", "Qwen-3.5-397B-A17B"),
            ]),
            review_batch_size: crate::core::discovery::DEFAULT_REVIEW_BATCH_SIZE,
            legacy_branch_prefixes: vec!["klaude/auto-".into()],
        }
    }
}

/// The fields `discovery.published-as` may name.
pub const PUBLISHED_FIELDS: [&str; 5] =
    ["model", "hardware", "framework", "precision", "spec_method"];

impl DiscoverySettings {
    /// The publisher's spellings, for the decision.
    pub fn spellings(&self) -> crate::core::discovery::observation::PublishedSpellings {
        crate::core::discovery::observation::PublishedSpellings {
            fields: self.published_as.clone(),
            disagg_framework_prefixes: self.disagg_framework_prefixes.clone(),
        }
    }
}

/// Whether `text` may name a feed: an `https://` URL with a host, `http://127.0.0.1…` (tests),
/// or a path (its existence is checked by the mode that reads it).
pub fn feed_shape_problem(text: &str) -> Option<&'static str> {
    if text.trim().is_empty() {
        return Some("must not be empty");
    }
    if let Some(rest) = text.strip_prefix("https://") {
        return (rest.is_empty() || rest.starts_with('/')).then_some("names no host");
    }
    if let Some(rest) = text.strip_prefix("http://") {
        let loopback =
            rest == "127.0.0.1" || rest.starts_with("127.0.0.1:") || rest.starts_with("127.0.0.1/");
        return (!loopback).then_some("must be an https:// URL (http:// only for 127.0.0.1)");
    }
    text.contains("://")
        .then_some("must be an https:// URL or a file path")
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct BudgetSettings {
    /// US dollars the agent runs may cost in 24 hours: once the cost recorded in the last 24
    /// hours reaches it, `select` starts nothing and `recover` resumes nothing. No limit when
    /// absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub daily_usd: Option<f64>,
    /// US dollars one agent run may cost: `session` gives the agent CLI the least of it and what
    /// is left of `daily-usd` as its `--max-budget-usd`. No cap of its own when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub session_usd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct WorkflowNames {
    /// The planner workflow file (dispatched by `wake`).
    pub planner: String,
    /// Name of the planner job running one candidate; `{id}` is the candidate id.
    pub planner_job: String,
    /// The workflow file of one candidate session.
    pub candidate: String,
    /// The smoke-test workflow file; `null` for a repository without one.
    pub smoke: Option<String>,
    /// The sweep workflow file; `null` for a repository without one: a `validated` outcome then
    /// needs no successful sweep run on the pull request's head.
    pub sweep: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct LabelNames {
    /// A PR with this label belongs to maintainers: klaud never mutates it again.
    pub handoff: String,
    /// Labels that start sweeps; removed when a session is cleaned up.
    pub sweep: Vec<String>,
    /// Display-only status labels.
    pub status: StatusLabelNames,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct StatusLabelNames {
    pub in_progress: String,
    pub parked: String,
    pub finished: String,
    pub infra: String,
    pub incompatible: String,
    pub error: String,
    /// Shown for `duplicate`, `retired` and `already-updated`.
    pub retired: String,
    /// An after-care pull request that waits for a maintainer.
    pub needs_maintainer: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProducerSettings {
    /// Paths tried in order inside the checkout of the producer head.
    pub entrypoints: Vec<String>,
    /// Program that runs the entrypoint.
    pub interpreter: String,
    /// Flag appended after the candidate's arguments to skip evaluation rows.
    pub no_evals_flag: String,
    /// Seconds one producer run may take before it is killed.
    pub timeout_seconds: u64,
    /// Extra environment variables passed to the producer (besides PATH, HOME, LANG, TMPDIR).
    pub pass_env: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct CapacitySettings {
    /// Command (argv) given the candidates' targets as JSON on stdin; prints the eligible
    /// targets as a JSON array.
    pub command: Option<Vec<String>>,
    /// Seconds the command may take.
    pub timeout_seconds: Option<u64>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bot: "Klaud-Cold".into(),
            branch_prefix: "klaud/auto-".into(),
            state_branch: "klaud/state".into(),
            workflows: WorkflowNames::default(),
            labels: LabelNames::default(),
            legacy_lock_refs: vec!["klaud/recovery-*".into(), "klaud/claim-*".into()],
            cooldowns: BTreeMap::new(),
            producer: ProducerSettings::default(),
            capacity: CapacitySettings::default(),
            session: SessionLimits::default(),
            budget: BudgetSettings::default(),
            dashboard: DashboardSettings::default(),
            discovery: DiscoverySettings::default(),
            health: HealthSettings::default(),
            aftercare: AftercareSettings::default(),
        }
    }
}

impl Default for WorkflowNames {
    fn default() -> Self {
        WorkflowNames {
            planner: "klaud-plan.yml".into(),
            planner_job: "Run candidate {id}".into(),
            candidate: "klaud-candidate.yml".into(),
            smoke: Some("e2e-tests.yml".into()),
            sweep: Some("run-sweep.yml".into()),
        }
    }
}

impl Default for LabelNames {
    fn default() -> Self {
        LabelNames {
            handoff: "klaud-handoff".into(),
            sweep: vec!["full-sweep-fail-fast".into(), "full-sweep-enabled".into()],
            status: StatusLabelNames::default(),
        }
    }
}

impl Default for StatusLabelNames {
    fn default() -> Self {
        StatusLabelNames {
            in_progress: "klaud-in-progress".into(),
            parked: "klaud-parked".into(),
            finished: "klaud-finished".into(),
            infra: "klaud-infra".into(),
            incompatible: "klaud-incompatible".into(),
            error: "klaud-error".into(),
            retired: "klaud-retired".into(),
            needs_maintainer: "klaud-needs-maintainer".into(),
        }
    }
}

impl Default for ProducerSettings {
    fn default() -> Self {
        ProducerSettings {
            entrypoints: vec![
                "utils/matrix_logic/generate_sweep_configs.py".into(),
                "utils/matrix-logic/generate_sweep_configs.py".into(),
            ],
            interpreter: "python3".into(),
            no_evals_flag: "--no-evals".into(),
            timeout_seconds: 300,
            pass_env: Vec::new(),
        }
    }
}

impl Config {
    /// The typed policy decisions read, with the cap and default cooldown from the inputs.
    /// The configuration must have been validated (outcome names in `cooldowns` are known).
    pub fn policy(&self, max_candidates: u32, default_cooldown_days: f64) -> Policy {
        let labels = &self.labels.status;
        let status_labels = [
            (StatusLabel::InProgress, &labels.in_progress),
            (StatusLabel::Parked, &labels.parked),
            (StatusLabel::Finished, &labels.finished),
            (StatusLabel::Infra, &labels.infra),
            (StatusLabel::Incompatible, &labels.incompatible),
            (StatusLabel::Error, &labels.error),
            (StatusLabel::Retired, &labels.retired),
            (StatusLabel::NeedsMaintainer, &labels.needs_maintainer),
        ]
        .into_iter()
        .map(|(label, name)| (label, name.clone()))
        .collect();
        Policy {
            bot: self.bot.clone(),
            branch_prefix: self.branch_prefix.clone(),
            state_branch: self.state_branch.clone(),
            planner_job: self.workflows.planner_job.clone(),
            planner_workflow: self.workflows.planner.clone(),
            candidate_workflow: self.workflows.candidate.clone(),
            smoke_workflow: self.workflows.smoke.clone(),
            sweep_workflow: self.workflows.sweep.clone(),
            handoff_label: self.labels.handoff.clone(),
            sweep_labels: self.labels.sweep.clone(),
            status_labels,
            legacy_lock_patterns: self.legacy_lock_refs.clone(),
            max_candidates,
            default_cooldown_days,
            cooldown_overrides: self
                .cooldowns
                .iter()
                .filter_map(|(name, days)| Outcome::parse(name).map(|outcome| (outcome, *days)))
                .collect(),
            session: self.session,
            daily_budget_usd: self.budget.daily_usd,
            session_budget_usd: self.budget.session_usd,
            dashboard: self.dashboard.clone(),
            health: self.health.clone(),
            aftercare: self.aftercare,
        }
    }
}

/// A configuration problem: `key` is the dotted path of the offending key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

/// Where the configuration came from, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    File,
    MissingFileDefaults,
}

/// Reads the configuration at `path`; a missing file means all defaults.
pub fn load_config(path: &Path) -> Result<(Config, ConfigSource), ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_config(&text).map(|config| (config, ConfigSource::File)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Ok((Config::default(), ConfigSource::MissingFileDefaults))
        }
        Err(error) => Err(ConfigError {
            key: "config".into(),
            message: format!("cannot read {}: {error}", path.display()),
        }),
    }
}

/// Parses and validates configuration text. An empty document means all defaults.
pub fn parse_config(text: &str) -> Result<Config, ConfigError> {
    let document: Option<Config> = serde_yaml_ng::from_str(text).map_err(describe_yaml_error)?;
    let config = document.unwrap_or_default();
    validate(&config)?;
    Ok(config)
}

fn describe_yaml_error(error: serde_yaml_ng::Error) -> ConfigError {
    let text = error.to_string();
    // serde names the key as "unknown field `x`" and prefixes the path of its parent ("labels.status: ");
    // an unknown word of a choice is "discovery.source: unknown variant `x`".
    let key = unknown_field_path(&text)
        .or_else(|| unknown_variant_path(&text))
        .unwrap_or_else(|| "config".to_string());
    ConfigError { key, message: text }
}

fn unknown_variant_path(message: &str) -> Option<String> {
    let (path, _) = message.split_once(": unknown variant `")?;
    let path = path.trim();
    (!path.is_empty() && !path.contains(' ')).then(|| path.to_string())
}

fn unknown_field_path(message: &str) -> Option<String> {
    let start = message.find("unknown field `")?;
    let rest = &message[start + "unknown field `".len()..];
    let field = &rest[..rest.find('`')?];
    let parent = message[..start]
        .trim_end()
        .strip_suffix(':')
        .map(str::trim)
        .filter(|parent| !parent.is_empty() && !parent.contains(' '));
    // An empty key (`"": 1`, or a tag with no scalar) is named by the mapping that holds it.
    Some(match (parent, field) {
        (Some(parent), "") => parent.to_string(),
        (None, "") => "config".to_string(),
        (Some(parent), field) => format!("{parent}.{field}"),
        (None, field) => field.to_string(),
    })
}

fn validate(config: &Config) -> Result<(), ConfigError> {
    let non_empty = [
        ("bot", &config.bot),
        ("branch-prefix", &config.branch_prefix),
        ("state-branch", &config.state_branch),
        ("workflows.planner", &config.workflows.planner),
        ("workflows.planner-job", &config.workflows.planner_job),
        ("workflows.candidate", &config.workflows.candidate),
        ("labels.handoff", &config.labels.handoff),
        ("producer.interpreter", &config.producer.interpreter),
    ];
    for (key, value) in non_empty {
        if value.trim().is_empty() {
            return Err(invalid(key, "must not be empty"));
        }
    }
    for (key, value) in [
        ("workflows.smoke", &config.workflows.smoke),
        ("workflows.sweep", &config.workflows.sweep),
    ] {
        if value.as_ref().is_some_and(|name| name.trim().is_empty()) {
            return Err(invalid(key, "must not be empty (null: no such workflow)"));
        }
    }
    if !config.workflows.planner_job.contains("{id}") {
        return Err(invalid(
            "workflows.planner-job",
            "must contain {id}, the place of the candidate id",
        ));
    }
    if config.producer.entrypoints.is_empty() {
        return Err(invalid("producer.entrypoints", "needs at least one path"));
    }
    if config.producer.timeout_seconds == 0 {
        return Err(invalid("producer.timeout-seconds", "must be at least 1"));
    }
    if config.legacy_lock_refs.iter().any(|p| p.trim().is_empty()) {
        return Err(invalid("legacy-lock-refs", "patterns must not be empty"));
    }
    if config.legacy_lock_refs.iter().any(|p| {
        p.trim_end_matches('*').is_empty()
            || config.branch_prefix.starts_with(p.trim_end_matches('*'))
    }) {
        return Err(invalid(
            "legacy-lock-refs",
            "a pattern must not match every branch or the candidate branches",
        ));
    }
    if let Some(command) = &config.capacity.command
        && command
            .first()
            .is_none_or(|program| program.trim().is_empty())
    {
        return Err(invalid(
            "capacity.command",
            "needs a program as its first element",
        ));
    }
    let session = &config.session;
    if session.time_limit_minutes == 0 || session.time_limit_minutes > 355 {
        return Err(invalid(
            "session.time-limit-minutes",
            "must be from 1 to 355: a job lives at most 360 minutes and finish needs some of them",
        ));
    }
    if session.wrap_up_minutes >= session.time_limit_minutes {
        return Err(invalid(
            "session.wrap-up-minutes",
            "must be less than session.time-limit-minutes",
        ));
    }
    if session.max_attempts == 0 {
        return Err(invalid("session.max-attempts", "must be at least 1"));
    }
    for (key, amount) in [
        ("budget.daily-usd", config.budget.daily_usd),
        ("budget.session-usd", config.budget.session_usd),
    ] {
        if let Some(amount) = amount
            && !(amount.is_finite() && amount > 0.0)
        {
            return Err(invalid(key, "must be a positive number of US dollars"));
        }
    }
    let dashboard = &config.dashboard;
    if dashboard.title.trim().is_empty() || dashboard.title.chars().count() > 256 {
        return Err(invalid(
            "dashboard.title",
            "must be 1 to 256 characters, not all blank",
        ));
    }
    if dashboard.label.trim().is_empty()
        || dashboard.label.chars().count() > 50
        || dashboard.label.contains(',')
    {
        return Err(invalid(
            "dashboard.label",
            "must be a label name of 1 to 50 characters without a comma",
        ));
    }
    validate_discovery(&config.discovery)?;
    validate_health(&config.health)?;
    validate_aftercare(&config.aftercare)?;
    for (name, days) in &config.cooldowns {
        let key = format!("cooldowns.{name}");
        let Some(outcome) = Outcome::parse(name) else {
            return Err(invalid(&key, &format!("'{name}' is not an outcome")));
        };
        if outcome.default_cooldown() == DefaultCooldown::WhilePullRequestOpen {
            return Err(invalid(
                &key,
                "handoff has no cooldown: it is held while its pull request is open",
            ));
        }
        if !days.is_finite() || *days < 0.0 {
            return Err(invalid(&key, "must be a number of days of at least 0"));
        }
    }
    Ok(())
}

fn validate_health(health: &HealthSettings) -> Result<(), ConfigError> {
    for (pool, runners) in &health.pools {
        if pool.trim().is_empty() || pool == "other" {
            return Err(invalid(
                "health.pools",
                "a pool is named by a non-empty runs-on label other than `other`",
            ));
        }
        if *runners == 0 {
            return Err(invalid(
                &format!("health.pools.{pool}"),
                "must be a positive whole number of runners",
            ));
        }
    }
    if health.default_runners == 0 {
        return Err(invalid(
            "health.default-runners",
            "must be a positive whole number of runners",
        ));
    }
    if !(health.job_minutes.is_finite() && health.job_minutes > 0.0 && health.job_minutes <= 1440.0)
    {
        return Err(invalid(
            "health.job-minutes",
            "must be a number of minutes above 0 and at most 1440",
        ));
    }
    if health.max_run_reads > 100 {
        return Err(invalid("health.max-run-reads", "must be from 0 to 100"));
    }
    Ok(())
}

fn validate_aftercare(aftercare: &AftercareSettings) -> Result<(), ConfigError> {
    if aftercare.max_sessions > 10 {
        return Err(invalid("aftercare.max-sessions", "must be from 0 to 10"));
    }
    if aftercare.cooldown_hours > 168 {
        return Err(invalid("aftercare.cooldown-hours", "must be from 0 to 168"));
    }
    if !(1..=10_000).contains(&aftercare.log_lines) {
        return Err(invalid("aftercare.log-lines", "must be from 1 to 10000"));
    }
    if !(1..=1_048_576).contains(&aftercare.max_log_bytes) {
        return Err(invalid(
            "aftercare.max-log-bytes",
            "must be from 1 to 1048576 bytes",
        ));
    }
    Ok(())
}

fn validate_issue_discovery(issues: &IssueDiscoverySettings) -> Result<(), ConfigError> {
    if issues.label.trim().is_empty() || issues.label.chars().count() > 50 {
        return Err(invalid(
            "discovery.issues.label",
            "must be a label name of 1 to 50 characters, not all blank",
        ));
    }
    if issues.family_labels.trim().is_empty() {
        return Err(invalid(
            "discovery.issues.family-labels",
            "must be a non-empty pattern",
        ));
    }
    let mut seen: Vec<String> = Vec::new();
    for label in &issues.priority_labels {
        if label.trim().is_empty() {
            return Err(invalid(
                "discovery.issues.priority-labels",
                "a label must not be empty",
            ));
        }
        let folded = label.to_lowercase();
        if seen.contains(&folded) {
            return Err(invalid(
                "discovery.issues.priority-labels",
                &format!("'{label}' is listed twice (label names are compared without case)"),
            ));
        }
        seen.push(folded);
    }
    Ok(())
}

fn validate_discovery(discovery: &DiscoverySettings) -> Result<(), ConfigError> {
    validate_issue_discovery(&discovery.issues)?;
    if discovery.configs.is_empty() {
        return Err(invalid("discovery.configs", "needs at least one pattern"));
    }
    for pattern in &discovery.configs {
        if pattern.trim().is_empty()
            || pattern.starts_with('/')
            || pattern.split('/').any(|part| part == "..")
        {
            return Err(invalid(
                "discovery.configs",
                &format!("'{pattern}' must be a non-empty path inside the repository"),
            ));
        }
    }
    if discovery.runner_config.trim().is_empty() {
        return Err(invalid("discovery.runner-config", "must not be empty"));
    }
    let feeds = [
        ("discovery.feeds.images", Some(&discovery.feeds.images)),
        (
            "discovery.feeds.benchmarks",
            discovery.feeds.benchmarks.as_ref(),
        ),
        (
            "discovery.feeds.workflow-info",
            discovery.feeds.workflow_info.as_ref(),
        ),
    ];
    for (key, value) in feeds {
        if let Some(problem) = value.and_then(|text| feed_shape_problem(text)) {
            return Err(invalid(key, problem));
        }
    }
    let images_is_url = discovery.feeds.images.contains("://");
    if !images_is_url {
        for (key, value) in &feeds[1..] {
            if value.is_none() {
                return Err(invalid(
                    key,
                    "must be given when discovery.feeds.images is a file",
                ));
            }
        }
    }
    for field in discovery.published_as.keys() {
        if !PUBLISHED_FIELDS.contains(&field.as_str()) {
            return Err(invalid(
                &format!("discovery.published-as.{field}"),
                &format!(
                    "is not a field that is spelled ({})",
                    PUBLISHED_FIELDS.join(", ")
                ),
            ));
        }
    }
    if discovery
        .disagg_framework_prefixes
        .iter()
        .any(|p| p.is_empty())
    {
        return Err(invalid(
            "discovery.disagg-framework-prefixes",
            "a prefix must not be empty",
        ));
    }
    for (prefix, model) in &discovery.models {
        if model.trim().is_empty() {
            return Err(invalid(
                &format!("discovery.models.{prefix}"),
                "must not be empty",
            ));
        }
    }
    let (low, high) = crate::core::discovery::REVIEW_BATCH_LIMITS;
    if !(low..=high).contains(&discovery.review_batch_size) {
        return Err(invalid(
            "discovery.review-batch-size",
            &format!("must be from {low} to {high}"),
        ));
    }
    if discovery
        .legacy_branch_prefixes
        .iter()
        .any(|p| p.trim().is_empty())
    {
        return Err(invalid(
            "discovery.legacy-branch-prefixes",
            "a prefix must not be empty",
        ));
    }
    Ok(())
}

fn invalid(key: &str, message: &str) -> ConfigError {
    ConfigError {
        key: key.to_string(),
        message: message.to_string(),
    }
}

/// The published JSON Schema of the configuration file.
pub fn config_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Config)).expect("schema serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_document_is_the_inferencex_profile() {
        let config = parse_config("").unwrap();
        assert_eq!(config, Config::default());
        assert_eq!(config.bot, "Klaud-Cold");
        assert_eq!(config.branch_prefix, "klaud/auto-");
        assert_eq!(config.state_branch, "klaud/state");
        assert_eq!(config.workflows.planner_job, "Run candidate {id}");
        assert_eq!(config.workflows.smoke.as_deref(), Some("e2e-tests.yml"));
        assert_eq!(config.workflows.sweep.as_deref(), Some("run-sweep.yml"));
        assert_eq!(config.labels.handoff, "klaud-handoff");
        assert_eq!(
            config.labels.sweep,
            ["full-sweep-fail-fast", "full-sweep-enabled"]
        );
        assert_eq!(
            config.legacy_lock_refs,
            ["klaud/recovery-*", "klaud/claim-*"]
        );
        assert_eq!(config.producer.no_evals_flag, "--no-evals");
    }

    #[test]
    fn a_comment_only_document_is_the_defaults() {
        assert_eq!(parse_config("# nothing yet\n").unwrap(), Config::default());
    }

    #[test]
    fn given_keys_override_and_the_rest_keep_defaults() {
        let config = parse_config(
            "bot: acme-bot\nlabels:\n  status:\n    error: bot-error\ncooldowns:\n  failed: 2.5\n",
        )
        .unwrap();
        assert_eq!(config.bot, "acme-bot");
        assert_eq!(config.labels.status.error, "bot-error");
        assert_eq!(config.labels.status.finished, "klaud-finished");
        assert_eq!(config.labels.handoff, "klaud-handoff");
        assert_eq!(config.cooldowns["failed"], 2.5);
    }

    #[test]
    fn an_unknown_top_level_key_is_named() {
        let error = parse_config("bots: x\n").unwrap_err();
        assert_eq!(error.key, "bots");
        assert!(
            error.message.contains("unknown field `bots`"),
            "{}",
            error.message
        );
    }

    #[test]
    fn an_unknown_nested_key_is_named_with_its_path() {
        let error = parse_config("labels:\n  status:\n    eror: x\n").unwrap_err();
        assert_eq!(error.key, "labels.status.eror", "{}", error.message);
    }

    #[test]
    fn an_unknown_empty_key_is_named_by_the_mapping_that_holds_it() {
        // Found by fuzzing: `{!owns:` is a mapping whose only key is an empty (tagged) scalar.
        let error = parse_config("{!owns:\n  ").unwrap_err();
        assert_eq!(error.key, "config", "{}", error.message);
        let error = parse_config("\"\": 1\n").unwrap_err();
        assert_eq!(error.key, "config", "{}", error.message);
        let error = parse_config("labels:\n  status:\n    \"\": x\n").unwrap_err();
        assert_eq!(error.key, "labels.status", "{}", error.message);
    }

    #[test]
    fn a_cooldown_for_an_unknown_outcome_is_rejected() {
        let error = parse_config("cooldowns:\n  succeeded: 1\n").unwrap_err();
        assert_eq!(error.key, "cooldowns.succeeded");
    }

    #[test]
    fn negative_or_handoff_cooldowns_are_rejected() {
        assert_eq!(
            parse_config("cooldowns:\n  failed: -1\n").unwrap_err().key,
            "cooldowns.failed"
        );
        assert_eq!(
            parse_config("cooldowns:\n  handoff: 1\n").unwrap_err().key,
            "cooldowns.handoff"
        );
    }

    #[test]
    fn the_dashboard_has_a_title_and_a_label_name() {
        let config = parse_config("dashboard:\n  label: steer-me\n  reopen: true\n").unwrap();
        assert_eq!(config.dashboard.label, "steer-me");
        assert_eq!(config.dashboard.title, "klaud dashboard");
        assert!(config.policy(5, 1.0).dashboard.reopen);
        for (text, key) in [
            ("dashboard:\n  title: ' '\n", "dashboard.title"),
            ("dashboard:\n  label: a,b\n", "dashboard.label"),
            ("dashboard:\n  label: ''\n", "dashboard.label"),
            ("dashboard:\n  colour: red\n", "dashboard.colour"),
        ] {
            assert_eq!(parse_config(text).unwrap_err().key, key, "{text}");
        }
    }

    #[test]
    fn a_daily_budget_is_a_positive_number_of_dollars() {
        let config = parse_config("budget:\n  daily-usd: 12.5\n").unwrap();
        assert_eq!(config.budget.daily_usd, Some(12.5));
        assert_eq!(config.policy(5, 1.0).daily_budget_usd, Some(12.5));
        assert_eq!(parse_config("budget: {}\n").unwrap().budget.daily_usd, None);
        assert_eq!(Config::default().policy(5, 1.0).daily_budget_usd, None);
        for key in ["daily-usd", "session-usd"] {
            for bad in ["0", "-3", ".inf", ".nan"] {
                let error = parse_config(&format!("budget:\n  {key}: {bad}\n")).unwrap_err();
                assert_eq!(error.key, format!("budget.{key}"), "{bad}");
                assert_eq!(error.message, "must be a positive number of US dollars");
            }
        }
        let capped = parse_config("budget:\n  session-usd: 2.5\n").unwrap();
        assert_eq!(capped.policy(5, 1.0).session_budget_usd, Some(2.5));
        assert_eq!(capped.policy(5, 1.0).daily_budget_usd, None);
        assert_eq!(
            parse_config("budget:\n  weekly-usd: 1\n").unwrap_err().key,
            "budget.weekly-usd"
        );
    }

    #[test]
    fn a_planner_job_pattern_needs_the_id() {
        let error = parse_config("workflows:\n  planner-job: Run candidate\n").unwrap_err();
        assert_eq!(error.key, "workflows.planner-job");
    }

    #[test]
    fn a_lock_pattern_that_would_match_candidate_branches_is_rejected() {
        let error = parse_config("legacy-lock-refs: ['klaud/*']\n").unwrap_err();
        assert_eq!(error.key, "legacy-lock-refs");
        let error = parse_config("legacy-lock-refs: ['*']\n").unwrap_err();
        assert_eq!(error.key, "legacy-lock-refs");
    }

    #[test]
    fn a_wrongly_typed_value_is_bad_input() {
        let error = parse_config("producer:\n  timeout-seconds: soon\n").unwrap_err();
        assert!(
            error.message.contains("timeout-seconds"),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_missing_file_means_defaults() {
        let directory = tempfile::tempdir().unwrap();
        let (config, source) = load_config(&directory.path().join("klaud.yml")).unwrap();
        assert_eq!(config, Config::default());
        assert_eq!(source, ConfigSource::MissingFileDefaults);
    }

    #[test]
    fn the_policy_carries_the_configured_names_and_cooldowns() {
        let config =
            parse_config("bot: acme-bot\ncooldowns:\n  readiness-blocked: 3\nlabels:\n  status:\n    error: bot-error\n")
                .unwrap();
        let policy = config.policy(4, 2.0);
        assert_eq!(policy.bot, "acme-bot");
        assert_eq!(policy.max_candidates, 4);
        assert_eq!(policy.cooldown_overrides[&Outcome::MissingAssets], 3.0);
        assert_eq!(policy.status_label(StatusLabel::Error), "bot-error");
        assert_eq!(policy.status_label(StatusLabel::Parked), "klaud-parked");
    }

    #[test]
    fn the_issues_source_is_one_choice_with_its_label_families_and_priorities() {
        let config = parse_config(
            "discovery:\n  source: issues\n  issues:\n    label: agent\n    priority-labels: [P0, P1]\n",
        )
        .unwrap();
        assert_eq!(config.discovery.source, DiscoverySource::Issues);
        assert_eq!(config.discovery.issues.label, "agent");
        assert_eq!(config.discovery.issues.family_labels, "area:*");
        assert_eq!(
            Config::default().discovery.source,
            DiscoverySource::InferencexConfigs
        );
        for (text, key) in [
            ("discovery:\n  source: tickets\n", "discovery.source"),
            (
                "discovery:\n  issues:\n    lable: x\n",
                "discovery.issues.lable",
            ),
            (
                "discovery:\n  issues:\n    label: ' '\n",
                "discovery.issues.label",
            ),
            (
                "discovery:\n  issues:\n    family-labels: ''\n",
                "discovery.issues.family-labels",
            ),
            (
                "discovery:\n  issues:\n    priority-labels: [P0, p0]\n",
                "discovery.issues.priority-labels",
            ),
        ] {
            assert_eq!(parse_config(text).unwrap_err().key, key, "{text}");
        }
    }

    #[test]
    fn the_schema_forbids_unknown_keys() {
        let schema = config_schema();
        assert_eq!(schema["additionalProperties"], serde_json::json!(false));
        assert!(schema["properties"]["branch-prefix"].is_object());
    }
}
