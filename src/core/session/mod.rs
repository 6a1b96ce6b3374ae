//! The session inside the candidate job (contract §9): which job may run it (`adoption.rs`),
//! what the agent is given (`SessionContext`, written as `session.json`, and the settings of the
//! agent CLI with klaud's hooks), the Stop hook's decision (`stop.rs`) and the session log
//! (`notes.rs`).

pub mod adoption;
pub mod aftercare;
pub mod notes;
pub mod request;
pub mod stop;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::core::aftercare::SessionKind;
use crate::core::aftercare::evidence::Evidence;
use crate::core::ledger::{Attempt, Session};
use crate::core::outcome::Outcome;
use crate::core::outcome_file::reportable_outcomes;
use crate::core::policy::Policy;
use crate::core::snapshot::PullRequestFact;

/// The version of `session.json` this code writes.
pub const CONTEXT_VERSION: u32 = 1;

/// `session.json`: everything the agent gets from klaud, and what the Stop hook reads back.
/// Holds no token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SessionContext {
    pub version: u32,
    /// What the session is for: `propose` a change, or after-care's `refresh` (bring the
    /// validated pull request up to date with its base) or `repair` (make its failed checks pass).
    #[serde(default)]
    pub kind: SessionKind,
    /// An after-care session's base: the pull request's base branch and the commit it pointed at
    /// when the session started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<aftercare::BaseRef>,
    /// A `repair` session's evidence: the failed checks `recover` saw on the pull request's head,
    /// each with the end of its log (or why there is none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Vec<Evidence>>,
    /// The candidate's record as `select` claimed it; a labelled issue's without its task, which
    /// `maintainers-request` gives quoted.
    pub candidate: Value,
    /// What the maintainers asked for, when the candidate comes from a labelled issue: quoted,
    /// data to weigh, never instructions from klaud.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintainers_request: Option<request::MaintainersRequest>,
    pub candidate_id: String,
    pub family: String,
    /// `owner/name`.
    pub repository: String,
    /// The REST API the hook reads (`GITHUB_API_URL`).
    pub api_url: String,
    /// The branch the agent works on; its draft pull request is opened from it.
    pub branch: String,
    /// The session's pull request, when there is one.
    pub pull_request: Option<PullRequestSummary>,
    /// This job's attempt, 1 for the first.
    pub attempt: u32,
    pub max_attempts: u32,
    /// True when this job continues a session that ran before: read `earlier-attempts`.
    pub resume: bool,
    /// When the session started (its claim).
    pub session_started_at: DateTime<Utc>,
    pub adopted_at: DateTime<Utc>,
    /// When this job's time is up.
    pub deadline: DateTime<Utc>,
    /// From when the agent is told to wrap up.
    pub wrap_up_at: DateTime<Utc>,
    /// The session's earlier jobs with their notes and runs, oldest first.
    pub earlier_attempts: Vec<Attempt>,
    /// Where the agent writes its outcome.
    pub outcome_file: String,
    /// The outcomes the agent may report, with what each means.
    pub outcomes: Vec<OutcomeMeaning>,
    pub workflows: SessionWorkflows,
    /// The bot account the agent's commits and pull request must be by.
    pub bot: String,
    /// A pull request with this label belongs to maintainers.
    pub handoff_label: String,
    /// The command that adds an entry to the session log (`--text-file` or `--text`).
    pub note_command: String,
}

/// The session's pull request as the agent sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PullRequestSummary {
    pub number: u64,
    pub url: String,
    pub head_sha: String,
    pub draft: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct OutcomeMeaning {
    pub name: String,
    pub meaning: String,
}

/// The workflow files the agent starts runs of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SessionWorkflows {
    /// `null` when the repository has no smoke workflow.
    pub smoke: Option<String>,
    /// `null` when the repository has no sweep workflow: `validated` then needs no sweep run.
    pub sweep: Option<String>,
}

/// What the shell knows that the context needs besides the session.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextSetting {
    pub record: Value,
    pub maintainers_request: Option<request::MaintainersRequest>,
    pub repository: String,
    pub api_url: String,
    pub html_url: String,
    pub outcome_file: String,
    pub note_command: String,
    /// What an after-care session gets besides: its base and evidence.
    pub aftercare: Option<aftercare::AftercareContext>,
}

/// The context of an adopted session.
pub fn session_context(
    session: &Session,
    pull: Option<&PullRequestFact>,
    policy: &Policy,
    setting: ContextSetting,
    resume: bool,
) -> SessionContext {
    let (current, earlier) = session
        .attempts
        .split_last()
        .expect("an adopted session has its attempt");
    let (base, evidence) = match setting.aftercare {
        Some(context) if session.kind.is_aftercare() => (Some(context.base), context.evidence),
        _ => (None, None),
    };
    SessionContext {
        version: CONTEXT_VERSION,
        kind: session.kind,
        base,
        evidence,
        candidate: setting.record,
        maintainers_request: setting.maintainers_request,
        candidate_id: session.candidate.clone(),
        family: session.family.clone(),
        repository: setting.repository.clone(),
        api_url: setting.api_url,
        branch: policy.candidate_branch(&session.candidate),
        pull_request: pull.map(|pull| PullRequestSummary {
            number: pull.number,
            url: format!(
                "{}/{}/pull/{}",
                setting.html_url.trim_end_matches('/'),
                setting.repository,
                pull.number
            ),
            head_sha: pull.head_sha.clone(),
            draft: pull.draft,
        }),
        attempt: current.number,
        max_attempts: policy.session.max_attempts,
        resume,
        session_started_at: session.started_at,
        adopted_at: current.adopted_at,
        deadline: current.deadline,
        wrap_up_at: current.deadline - Duration::minutes(i64::from(policy.session.wrap_up_minutes)),
        earlier_attempts: earlier.to_vec(),
        outcome_file: setting.outcome_file,
        outcomes: reportable_outcomes()
            .map(|outcome: Outcome| OutcomeMeaning {
                name: outcome.name().to_string(),
                meaning: outcome.meaning().to_string(),
            })
            .collect(),
        workflows: SessionWorkflows {
            smoke: policy.smoke_workflow.clone(),
            sweep: policy.sweep_workflow.clone(),
        },
        bot: policy.bot.clone(),
        handoff_label: policy.handoff_label.clone(),
        note_command: setting.note_command,
    }
}

/// The session's pull request among the pull requests listed for its branch: the one the ledger
/// names, else the open one from this repository, else the newest opened since the session
/// started (a closed pull request of an earlier session of the candidate is not this one's).
pub fn pick_pull_request<'a>(
    pulls: &'a [PullRequestFact],
    branch: &str,
    known: Option<u64>,
    session_started_at: DateTime<Utc>,
) -> Option<&'a PullRequestFact> {
    let ours = || {
        pulls
            .iter()
            .filter(move |pull| pull.from_this_repository && pull.head_branch == branch)
    };
    if let Some(number) = known
        && let Some(pull) = ours().find(|pull| pull.number == number)
    {
        return Some(pull);
    }
    ours()
        .filter(|pull| pull.open)
        .max_by_key(|pull| pull.number)
        .or_else(|| {
            ours()
                .filter(|pull| pull.created_at >= session_started_at)
                .max_by_key(|pull| pull.number)
        })
}

/// A word quoted for a POSIX shell (the hook and note commands).
pub fn shell_quoted(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-=:+@%,".contains(c))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Seconds the CLI waits for one hook before it gives up on it.
pub const HOOK_TIMEOUT_SECONDS: u64 = 60;

/// The agent CLI's settings: klaud's Stop hook, and the hook after every tool call that tells the
/// agent when its time is nearly up. `klaud` is the path of this binary.
pub fn agent_settings(klaud: &str, context_file: &str) -> Value {
    let command = format!(
        "{} check-stop --context-file {}",
        shell_quoted(klaud),
        shell_quoted(context_file)
    );
    let hook = json!([{
        "hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}]
    }]);
    json!({"hooks": {"Stop": hook, "PostToolUse": hook}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::aftercare::evidence::EvidenceLog;
    use crate::core::aftercare::{AftercareWork, FailedJob};
    use crate::core::ledger::{Ledger, Resuming};
    use crate::core::policy::tests::inferencex_policy;
    use crate::core::test_support::at;

    /// The session of candidate `a` of `kind`, adopted by run 91.
    fn adopted(kind: SessionKind) -> Session {
        let mut ledger = Ledger::empty();
        ledger
            .claim_family("a", "f", 90, at("2026-12-01T08:00:00Z"))
            .unwrap();
        let session = &mut ledger.sessions[0];
        session.kind = kind;
        if kind.is_aftercare() {
            session.aftercare = Some(AftercareWork {
                pull_request: 12,
                head_sha: "h".into(),
                failed: Vec::new(),
            });
            session.resuming = Some(Resuming {
                by_run: 90,
                at: at("2026-12-01T08:00:00Z"),
            });
        }
        let job = adoption::JobIdentity {
            run_id: if kind.is_aftercare() { 91 } else { 90 },
            run_attempt: 1,
        };
        let limits = inferencex_policy().session;
        adoption::adopt(&ledger, "a", job, limits, at("2026-12-01T08:01:00Z"))
            .unwrap()
            .session
    }

    fn setting(aftercare: Option<aftercare::AftercareContext>) -> ContextSetting {
        ContextSetting {
            record: json!({"id": "a", "family": "f"}),
            maintainers_request: None,
            repository: "o/r".into(),
            api_url: "https://api.github.com".into(),
            html_url: "https://github.com".into(),
            outcome_file: "/w/outcome.json".into(),
            note_command: "klaud note --candidate a --text-file FILE".into(),
            aftercare,
        }
    }

    fn aftercare_context(evidence: Option<Vec<Evidence>>) -> aftercare::AftercareContext {
        aftercare::AftercareContext {
            base: aftercare::BaseRef {
                branch: "main".into(),
                sha: "b".repeat(40),
            },
            evidence,
        }
    }

    fn written(context: &SessionContext) -> Value {
        let value = serde_json::to_value(context).unwrap();
        let read: SessionContext = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(&read, context, "the hook reads back what was written");
        value
    }

    #[test]
    fn a_propose_session_says_its_kind_and_nothing_of_aftercare() {
        let policy = inferencex_policy();
        let session = adopted(SessionKind::Propose);
        let context = session_context(
            &session,
            None,
            &policy,
            setting(Some(aftercare_context(None))),
            false,
        );
        let value = written(&context);
        assert_eq!(value["kind"], "propose");
        assert!(value.get("base").is_none() && value.get("evidence").is_none());
    }

    #[test]
    fn a_refresh_session_gets_its_base_and_no_evidence() {
        let policy = inferencex_policy();
        let session = adopted(SessionKind::Refresh);
        let context = session_context(
            &session,
            None,
            &policy,
            setting(Some(aftercare_context(None))),
            false,
        );
        let value = written(&context);
        assert_eq!(value["kind"], "refresh");
        assert_eq!(
            value["base"],
            json!({"branch": "main", "sha": "b".repeat(40)})
        );
        assert!(value.get("evidence").is_none());
    }

    #[test]
    fn a_repair_session_gets_its_base_and_the_failed_jobs_with_their_log_tails() {
        let policy = inferencex_policy();
        let session = adopted(SessionKind::Repair);
        let failed = FailedJob {
            name: "sweep / b200".into(),
            run_id: Some(5),
            job_id: Some(6),
            url: Some("https://github.com/o/r/actions/runs/5/job/6".into()),
            conclusion: Some(crate::core::github_state::CheckConclusion::Failure),
        };
        let logs = std::collections::BTreeMap::from([(
            6,
            Ok(crate::core::aftercare::evidence::JobLog {
                text: "step 1\nError: out of memory\n".into(),
                whole: true,
            }),
        )]);
        let evidence =
            crate::core::aftercare::evidence::evidence(&[failed], &logs, &policy.aftercare);
        let context = session_context(
            &session,
            None,
            &policy,
            setting(Some(aftercare_context(Some(evidence)))),
            false,
        );
        let value = written(&context);
        assert_eq!(value["kind"], "repair");
        assert_eq!(value["base"]["branch"], "main");
        assert_eq!(
            value["evidence"],
            json!([{
                "name": "sweep / b200", "run-id": 5, "job-id": 6,
                "url": "https://github.com/o/r/actions/runs/5/job/6", "conclusion": "FAILURE",
                "log": {"state": "tail", "lines": 2, "text": "step 1\nError: out of memory"}
            }])
        );
        assert!(matches!(
            context.evidence.unwrap()[0].log,
            EvidenceLog::Tail { .. }
        ));
    }

    #[test]
    fn hook_commands_quote_what_a_shell_would_split() {
        assert_eq!(shell_quoted("/opt/klaud"), "/opt/klaud");
        assert_eq!(shell_quoted("/tmp/a b/it's"), r"'/tmp/a b/it'\''s'");
        assert_eq!(shell_quoted(""), "''");
        let settings = agent_settings("/x/klaud", "/tmp/run dir/session.json");
        assert_eq!(
            settings["hooks"]["Stop"][0]["hooks"][0]["command"],
            "/x/klaud check-stop --context-file '/tmp/run dir/session.json'"
        );
        assert_eq!(settings["hooks"]["PostToolUse"], settings["hooks"]["Stop"]);
    }
}
