//! The configuration made typed for decisions: names, prefixes, labels, the cap and the cooldown
//! of every outcome (contract §1, §4). Built once by the shell from `.github/klaud.yml` and the
//! inputs; decisions read nothing else.

use std::collections::BTreeMap;

use chrono::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::outcome::{DefaultCooldown, Outcome, StatusLabel};

/// How long an outcome keeps a candidate (or its family) from being selected again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cooldown {
    /// Selectable on the next wave.
    None,
    /// The candidate waits this long after the session finished.
    Candidate(Duration),
    /// Every candidate of the family waits this long.
    Family(Duration),
    /// Not selectable while its pull request is open.
    WhilePullRequestOpen,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub bot: String,
    pub branch_prefix: String,
    pub state_branch: String,
    /// Planner job name with `{id}` for the candidate id.
    pub planner_job: String,
    pub planner_workflow: String,
    pub candidate_workflow: String,
    /// The smoke-test workflow file, if the repository has one.
    pub smoke_workflow: Option<String>,
    /// The sweep workflow file, if the repository has one: without it, `validated` needs no
    /// successful sweep run.
    pub sweep_workflow: Option<String>,
    pub handoff_label: String,
    pub sweep_labels: Vec<String>,
    pub status_labels: BTreeMap<StatusLabel, String>,
    /// Glob patterns (`*` = any run of characters) of legacy lock branches.
    pub legacy_lock_patterns: Vec<String>,
    pub max_candidates: u32,
    /// Days for outcomes without their own cooldown.
    pub default_cooldown_days: f64,
    /// Days per outcome from the configuration, overriding the contract's defaults.
    pub cooldown_overrides: BTreeMap<Outcome, f64>,
    pub session: SessionLimits,
    /// `budget.daily-usd`: when the agent runs recorded this much in 24 hours, nothing new starts.
    pub daily_budget_usd: Option<f64>,
    /// `budget.session-usd`: what one agent run may cost at most.
    pub session_budget_usd: Option<f64>,
    pub dashboard: DashboardSettings,
    pub health: HealthSettings,
    pub aftercare: AftercareSettings,
}

/// The dashboard issue (contract §10); `dashboard` in `.github/klaud.yml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct DashboardSettings {
    /// The title of the issue klaud creates.
    pub title: String,
    /// The label that marks it; only an issue with this label written by the bot is klaud's.
    pub label: String,
    /// Reopen klaud's dashboard when a person closed it (otherwise it stays closed and steers
    /// nothing).
    pub reopen: bool,
}

impl Default for DashboardSettings {
    fn default() -> Self {
        DashboardSettings {
            title: "klaud dashboard".to_string(),
            label: "klaud-dashboard".to_string(),
            reopen: false,
        }
    }
}

/// How klaud reads the health of its open pull requests and estimates when their sweeps end
/// (contract §12); `health` in `.github/klaud.yml`. The defaults name the InferenceX GPU runner
/// pools with example runner counts: a repository states its own fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct HealthSettings {
    /// Runner pools by the `runs-on` label that names them, with the runners each has. A sweep
    /// job's pool is the first of its labels named here; any other job is pool `other`.
    #[schemars(extend("additionalProperties" = {"type": "integer", "minimum": 1}))]
    pub pools: BTreeMap<String, u32>,
    /// Runners of pool `other`, the jobs no configured pool names.
    #[schemars(range(min = 1))]
    pub default_runners: u32,
    /// Minutes one sweep job takes, for a pool whose completed jobs klaud did not read.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub job_minutes: f64,
    /// A running pull request with at most this many pending sweep jobs is *almost ready*.
    pub almost_ready_jobs: u32,
    /// Active sweep runs whose jobs one pass reads (one page of 100 jobs each); the estimates
    /// of pull requests with runs past it are partial.
    pub max_run_reads: u32,
}

/// The InferenceX GPU runner pools, with example runner counts.
pub const INFERENCEX_POOLS: [(&str, u32); 9] = [
    ("b200", 12),
    ("b300", 18),
    ("h100", 19),
    ("h200", 18),
    ("mi300x", 9),
    ("mi325x", 9),
    ("mi355x", 9),
    ("gb200", 4),
    ("gb300", 4),
];

impl Default for HealthSettings {
    fn default() -> Self {
        HealthSettings {
            pools: INFERENCEX_POOLS
                .iter()
                .map(|(pool, runners)| (pool.to_string(), *runners))
                .collect(),
            default_runners: 4,
            job_minutes: 7.0,
            almost_ready_jobs: 5,
            max_run_reads: 20,
        }
    }
}

/// When a validated pull request gets a `refresh` session (contract §12): `conflicting`, when
/// GitHub says it conflicts with its base; `behind`, also when it is only behind its base;
/// `never`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RefreshWhen {
    Conflicting,
    Behind,
    Never,
}

/// When a validated pull request gets a `repair` session (contract §12): `failing`, when its
/// health is `failing` (a check failed, none still running); `never`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RepairWhen {
    Failing,
    Never,
}

/// How klaud keeps its validated pull requests mergeable and current (contract §12);
/// `aftercare` in `.github/klaud.yml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct AftercareSettings {
    /// Which base changes start a `refresh` session.
    pub refresh: RefreshWhen,
    /// Which check failures start a `repair` session.
    pub repair: RepairWhen,
    /// Close an after-care pull request when a newer candidate of its family ends `validated`;
    /// while on, a waiting after-care pull request does not occupy its family for other
    /// candidates.
    pub supersede: bool,
    /// After-care sessions one pull request may have over its life, successful ones included;
    /// past them it waits for a maintainer.
    #[schemars(range(max = 10))]
    pub max_sessions: u32,
    /// Hours at least between two after-care sessions of one pull request.
    #[schemars(range(max = 168))]
    pub cooldown_hours: u32,
    /// Lines kept from the end of each failed job's log for a `repair` session.
    #[schemars(range(min = 1, max = 10000))]
    pub log_lines: u32,
    /// Bytes of failed jobs' log tails one `repair` session gets at most, all jobs together.
    #[schemars(range(min = 1, max = 1048576))]
    pub max_log_bytes: u64,
}

impl Default for AftercareSettings {
    fn default() -> Self {
        AftercareSettings {
            refresh: RefreshWhen::Conflicting,
            repair: RepairWhen::Failing,
            supersede: true,
            max_sessions: 2,
            cooldown_hours: 6,
            log_lines: 200,
            max_log_bytes: 65_536,
        }
    }
}

impl AftercareSettings {
    /// Whether any event can start an after-care session (supersede aside).
    pub fn starts_sessions(&self) -> bool {
        self.max_sessions > 0
            && (self.refresh != RefreshWhen::Never || self.repair != RepairWhen::Never)
    }
}

/// How long one job of a session may run, and how many jobs a session may take (contract §9);
/// `session` in `.github/klaud.yml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct SessionLimits {
    /// Minutes from the moment `session` adopts a job to the session's deadline: the agent
    /// step's `timeout-minutes`. The default stays under GitHub's 6-hour job limit with room
    /// for `finish`.
    pub time_limit_minutes: u32,
    /// The agent is told to push, leave a note and stop this many minutes before the deadline.
    pub wrap_up_minutes: u32,
    /// Jobs one session may take; a session whose time ran out in this many jobs ends
    /// `no-outcome`.
    pub max_attempts: u32,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            time_limit_minutes: 330,
            wrap_up_minutes: 20,
            max_attempts: 3,
        }
    }
}

impl Policy {
    /// The cooldown a finished session earns. A session whose agent never ran earns none.
    pub fn cooldown(&self, outcome: Outcome, agent_ran: bool) -> Cooldown {
        if !agent_ran {
            return Cooldown::None;
        }
        let default = outcome.default_cooldown();
        if default == DefaultCooldown::WhilePullRequestOpen {
            return Cooldown::WhilePullRequestOpen;
        }
        let days = match (self.cooldown_overrides.get(&outcome), default) {
            (Some(days), _) => *days,
            (None, DefaultCooldown::None) => 0.0,
            (None, DefaultCooldown::ConfiguredDefault) => self.default_cooldown_days,
            (None, DefaultCooldown::Days(days) | DefaultCooldown::FamilyDays(days)) => days,
            (None, DefaultCooldown::WhilePullRequestOpen) => unreachable!("handled above"),
        };
        if days <= 0.0 {
            return Cooldown::None;
        }
        let duration = days_to_duration(days);
        match default {
            DefaultCooldown::FamilyDays(_) => Cooldown::Family(duration),
            _ => Cooldown::Candidate(duration),
        }
    }

    /// Whether `workflow` is the sweep workflow (never, without one).
    pub fn is_sweep(&self, workflow: &str) -> bool {
        self.sweep_workflow.as_deref() == Some(workflow)
    }

    /// Whether `workflow` is the smoke workflow (never, without one).
    pub fn is_smoke(&self, workflow: &str) -> bool {
        self.smoke_workflow.as_deref() == Some(workflow)
    }

    /// The longest cooldown any outcome can earn: finished sessions older than this can be pruned.
    pub fn longest_cooldown(&self) -> Duration {
        Outcome::ALL
            .iter()
            .filter_map(|outcome| match self.cooldown(*outcome, true) {
                Cooldown::Candidate(duration) | Cooldown::Family(duration) => Some(duration),
                Cooldown::None | Cooldown::WhilePullRequestOpen => None,
            })
            .max()
            .unwrap_or_else(Duration::zero)
    }

    /// The display name of a status label.
    pub fn status_label(&self, label: StatusLabel) -> &str {
        self.status_labels
            .get(&label)
            .map(String::as_str)
            .unwrap_or_else(|| label.default_name())
    }

    /// Every status label name, for removing the ones that no longer apply.
    pub fn all_status_labels(&self) -> Vec<&str> {
        StatusLabel::ALL
            .iter()
            .map(|label| self.status_label(*label))
            .collect()
    }

    /// `<branch-prefix><id>`.
    pub fn candidate_branch(&self, candidate: &str) -> String {
        format!("{}{candidate}", self.branch_prefix)
    }

    /// The candidate id of a candidate branch.
    pub fn candidate_of_branch<'a>(&self, branch: &'a str) -> Option<&'a str> {
        branch
            .strip_prefix(&self.branch_prefix)
            .filter(|id| !id.is_empty())
    }

    /// The candidate whose session a pull request belongs to, when it is klaud's: its head is a
    /// candidate branch of `repository` itself. Pull requests from forks (or whose fork is gone,
    /// `head_repository` `None`) and on other branches are other people's.
    pub fn candidate_of_pull_request<'a>(
        &self,
        head_repository: Option<&str>,
        head_branch: &'a str,
        repository: &str,
    ) -> Option<&'a str> {
        head_repository
            .is_some_and(|head| head.eq_ignore_ascii_case(repository))
            .then(|| self.candidate_of_branch(head_branch))
            .flatten()
    }

    /// The planner job that runs `candidate`.
    pub fn planner_job_name(&self, candidate: &str) -> String {
        self.planner_job.replace("{id}", candidate)
    }

    /// True when `branch` matches a legacy lock pattern.
    pub fn is_legacy_lock(&self, branch: &str) -> bool {
        self.legacy_lock_patterns
            .iter()
            .any(|pattern| glob_matches(pattern, branch))
    }
}

fn days_to_duration(days: f64) -> Duration {
    Duration::milliseconds((days * 86_400_000.0).round() as i64)
}

/// `*` matches any run of characters (slashes included); everything else matches itself.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(index) => rest = &rest[index + middle.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The InferenceX profile with a 1-day default and a cap of 5.
    pub(crate) fn inferencex_policy() -> Policy {
        Policy {
            bot: "Klaud-Cold".into(),
            branch_prefix: "klaud/auto-".into(),
            state_branch: "klaud/state".into(),
            planner_job: "Run candidate {id}".into(),
            planner_workflow: "klaud-plan.yml".into(),
            candidate_workflow: "klaud-candidate.yml".into(),
            smoke_workflow: Some("e2e-tests.yml".into()),
            sweep_workflow: Some("run-sweep.yml".into()),
            handoff_label: "klaud-handoff".into(),
            sweep_labels: vec!["full-sweep-fail-fast".into(), "full-sweep-enabled".into()],
            status_labels: BTreeMap::new(),
            session: SessionLimits::default(),
            legacy_lock_patterns: vec!["klaud/recovery-*".into(), "klaud/claim-*".into()],
            max_candidates: 5,
            default_cooldown_days: 1.0,
            cooldown_overrides: BTreeMap::new(),
            daily_budget_usd: None,
            session_budget_usd: None,
            dashboard: DashboardSettings::default(),
            health: HealthSettings::default(),
            aftercare: AftercareSettings::default(),
        }
    }

    #[test]
    fn contract_cooldowns() {
        let policy = inferencex_policy();
        assert_eq!(policy.cooldown(Outcome::NoCapacity, true), Cooldown::None);
        assert_eq!(
            policy.cooldown(Outcome::MissingAssets, true),
            Cooldown::Candidate(Duration::days(7))
        );
        assert_eq!(
            policy.cooldown(Outcome::ClosedByMaintainer, true),
            Cooldown::Family(Duration::days(7))
        );
        assert_eq!(
            policy.cooldown(Outcome::Failed, true),
            Cooldown::Candidate(Duration::days(1))
        );
        assert_eq!(
            policy.cooldown(Outcome::Handoff, true),
            Cooldown::WhilePullRequestOpen
        );
    }

    #[test]
    fn a_session_whose_agent_never_ran_earns_no_cooldown() {
        let policy = inferencex_policy();
        assert_eq!(policy.cooldown(Outcome::Failed, false), Cooldown::None);
        assert_eq!(
            policy.cooldown(Outcome::MissingAssets, false),
            Cooldown::None
        );
    }

    #[test]
    fn configured_cooldowns_override_and_fractions_work() {
        let mut policy = inferencex_policy();
        policy.cooldown_overrides.insert(Outcome::Failed, 0.5);
        policy
            .cooldown_overrides
            .insert(Outcome::ClosedByMaintainer, 3.0);
        policy
            .cooldown_overrides
            .insert(Outcome::MissingAssets, 0.0);
        assert_eq!(
            policy.cooldown(Outcome::Failed, true),
            Cooldown::Candidate(Duration::hours(12))
        );
        assert_eq!(
            policy.cooldown(Outcome::ClosedByMaintainer, true),
            Cooldown::Family(Duration::days(3))
        );
        assert_eq!(
            policy.cooldown(Outcome::MissingAssets, true),
            Cooldown::None
        );
    }

    #[test]
    fn the_longest_cooldown_bounds_pruning() {
        let mut policy = inferencex_policy();
        assert_eq!(policy.longest_cooldown(), Duration::days(7));
        policy.default_cooldown_days = 10.0;
        assert_eq!(policy.longest_cooldown(), Duration::days(10));
    }

    #[test]
    fn branches_and_jobs_are_named_from_the_candidate() {
        let policy = inferencex_policy();
        assert_eq!(policy.candidate_branch("a.b"), "klaud/auto-a.b");
        assert_eq!(policy.candidate_of_branch("klaud/auto-a.b"), Some("a.b"));
        assert_eq!(policy.candidate_of_branch("klaud/auto-"), None);
        assert_eq!(policy.candidate_of_branch("feature/x"), None);
        assert_eq!(policy.planner_job_name("a"), "Run candidate a");
    }

    #[test]
    fn legacy_lock_patterns_match_with_stars() {
        let policy = inferencex_policy();
        assert!(policy.is_legacy_lock("klaud/recovery-123-cand"));
        assert!(policy.is_legacy_lock("klaud/claim-x"));
        assert!(!policy.is_legacy_lock("klaud/auto-x"));
        assert!(glob_matches("a*b*c", "axxbyyc"));
        assert!(!glob_matches("a*b*c", "axxc"));
        assert!(glob_matches("exact", "exact"));
        assert!(!glob_matches("ab*ba", "aba"));
    }

    #[test]
    fn status_labels_default_to_the_inferencex_names() {
        let mut policy = inferencex_policy();
        assert_eq!(policy.status_label(StatusLabel::Error), "klaud-error");
        policy
            .status_labels
            .insert(StatusLabel::Error, "bot-error".into());
        assert_eq!(policy.status_label(StatusLabel::Error), "bot-error");
        assert_eq!(policy.all_status_labels().len(), 8);
    }
}
