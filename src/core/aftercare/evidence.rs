//! A `repair` session's evidence (contract §12): the failed jobs `recover` saw on the pull
//! request's head, each with the end of its log as `session.json` gives it — the last
//! `aftercare.log-lines` lines, every log together within `aftercare.max-log-bytes`, a cut said
//! where one was made, and a log that could not be read named with why (never fatal).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::FailedJob;
use crate::core::github_state::CheckConclusion;
use crate::core::policy::AftercareSettings;
use crate::core::snapshot::Read;

/// The end of a job's log as the reader kept it: at most the bytes it was asked for, taken from
/// the end of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLog {
    pub text: String,
    /// False when the log was longer than what was kept: the first kept line may be partial.
    pub whole: bool,
}

/// One failed check with its log's end, as `session.json` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Evidence {
    /// The check run's name, or a commit status's context.
    pub name: String,
    pub run_id: Option<u64>,
    pub job_id: Option<u64>,
    pub url: Option<String>,
    pub conclusion: Option<CheckConclusion>,
    pub log: EvidenceLog,
}

/// What the session gets of a failed check's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum EvidenceLog {
    /// The log's last `lines` lines; `cut` says what was left out, when anything was.
    Tail {
        lines: usize,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cut: Option<String>,
    },
    /// The log could not be read.
    Unreadable { why: String },
    /// The check has no job log (a commit status, or a check of another app).
    NoLog { why: String },
}

/// The evidence of `failed` with the logs read by job id (a job missing from `logs` was not
/// read), bounded per [`AftercareSettings`]: each log to its last `log-lines` lines, all of them
/// together to `max-log-bytes`, shared so that a short log keeps all it has and the long ones
/// split the rest evenly.
pub fn evidence(
    failed: &[FailedJob],
    logs: &BTreeMap<u64, Read<JobLog>>,
    settings: &AftercareSettings,
) -> Vec<Evidence> {
    let tails: Vec<Result<LineTail, EvidenceLog>> = failed
        .iter()
        .map(|job| line_tail_of(job, logs, settings.log_lines))
        .collect();
    let sizes: Vec<usize> = tails
        .iter()
        .filter_map(|tail| tail.as_ref().ok().map(|tail| tail.text.len()))
        .collect();
    let mut allowances = shares(&sizes, settings.max_log_bytes).into_iter();
    failed
        .iter()
        .zip(tails)
        .map(|(job, tail)| Evidence {
            name: job.name.clone(),
            run_id: job.run_id,
            job_id: job.job_id,
            url: job.url.clone(),
            conclusion: job.conclusion.clone(),
            log: match tail {
                Ok(tail) => {
                    let allowance = allowances.next().unwrap_or_default();
                    tail.within(allowance, settings)
                }
                Err(log) => log,
            },
        })
        .collect()
}

/// The last lines of a job's log before the byte bound.
struct LineTail {
    text: String,
    /// Lines were left out before these.
    earlier_left_out: bool,
}

fn line_tail_of(
    job: &FailedJob,
    logs: &BTreeMap<u64, Read<JobLog>>,
    lines: u32,
) -> Result<LineTail, EvidenceLog> {
    let Some(job_id) = job.job_id else {
        return Err(EvidenceLog::NoLog {
            why: "a commit status or another app's check has no job log".to_string(),
        });
    };
    match logs.get(&job_id) {
        None => Err(EvidenceLog::Unreadable {
            why: format!("the log of job {job_id} was not read"),
        }),
        Some(Err(failure)) => Err(EvidenceLog::Unreadable {
            why: failure.reason.clone(),
        }),
        Some(Ok(log)) => Ok(last_lines(log, lines)),
    }
}

/// The last `lines` lines of `log`: a partial first line (the log was longer than what was kept)
/// is left out.
fn last_lines(log: &JobLog, lines: u32) -> LineTail {
    let text = log.text.strip_suffix('\n').unwrap_or(&log.text);
    let mut all: Vec<&str> = text.split('\n').collect();
    let mut earlier_left_out = false;
    if !log.whole && all.len() > 1 {
        all.remove(0);
        earlier_left_out = true;
    }
    if text.is_empty() {
        all.clear();
    }
    let keep = (lines as usize).min(all.len());
    earlier_left_out |= keep < all.len();
    LineTail {
        text: all[all.len() - keep..].join("\n"),
        earlier_left_out,
    }
}

impl LineTail {
    /// The tail within `allowance` bytes, cut at a line start (at a character when one line is
    /// longer than the allowance), with what was left out said.
    fn within(self, allowance: u64, settings: &AftercareSettings) -> EvidenceLog {
        let allowance = usize::try_from(allowance).unwrap_or(usize::MAX);
        let lines_note = format!(
            "earlier lines left out: the last {} lines are given (aftercare.log-lines)",
            settings.log_lines
        );
        if self.text.len() <= allowance {
            return EvidenceLog::Tail {
                lines: line_count(&self.text),
                cut: self.earlier_left_out.then_some(lines_note),
                text: self.text,
            };
        }
        let mut start = self.text.len() - allowance;
        while !self.text.is_char_boundary(start) {
            start += 1;
        }
        if let Some(newline) = self.text[start..].find('\n')
            && start > 0
            && !self.text[..start].ends_with('\n')
        {
            start += newline + 1;
        }
        let text = self.text[start..].to_string();
        EvidenceLog::Tail {
            lines: line_count(&text),
            cut: Some(format!(
                "cut to its last {} bytes: the logs of a session together get at most {} bytes (aftercare.max-log-bytes)",
                text.len(),
                settings.max_log_bytes
            )),
            text,
        }
    }
}

fn line_count(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        text.split('\n').count()
    }
}

/// Each size's share of `budget`, in order: sizes that fit under an even split keep all they
/// have, and what they leave is split evenly among the others.
fn shares(sizes: &[usize], budget: u64) -> Vec<u64> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&index| sizes[index]);
    let mut allowances = vec![0u64; sizes.len()];
    let mut left = budget;
    for (position, &index) in order.iter().enumerate() {
        let remaining = (sizes.len() - position) as u64;
        let even = left / remaining;
        let share = (sizes[index] as u64).min(even);
        allowances[index] = share;
        left -= share;
    }
    allowances
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::snapshot::ReadFailure;

    fn failed(name: &str, job_id: Option<u64>) -> FailedJob {
        FailedJob {
            name: name.to_string(),
            run_id: job_id.map(|id| id * 10),
            job_id,
            url: job_id.map(|id| format!("https://github.com/o/r/actions/runs/1/job/{id}")),
            conclusion: Some(CheckConclusion::Failure),
        }
    }

    fn settings(log_lines: u32, max_log_bytes: u64) -> AftercareSettings {
        AftercareSettings {
            log_lines,
            max_log_bytes,
            ..AftercareSettings::default()
        }
    }

    fn numbered(count: usize) -> String {
        (1..=count).map(|line| format!("line {line}\n")).collect()
    }

    fn whole(text: &str) -> Read<JobLog> {
        Ok(JobLog {
            text: text.to_string(),
            whole: true,
        })
    }

    fn tail(evidence: &Evidence) -> (&str, usize, Option<&str>) {
        match &evidence.log {
            EvidenceLog::Tail { lines, text, cut } => (text.as_str(), *lines, cut.as_deref()),
            other => panic!("a tail, not {other:?}"),
        }
    }

    #[test]
    fn a_log_gives_its_last_lines_and_says_the_earlier_ones_were_left_out() {
        let logs = BTreeMap::from([(1, whole(&numbered(300))), (2, whole("only\n"))]);
        let given = evidence(
            &[failed("sweep / b200", Some(1)), failed("lint", Some(2))],
            &logs,
            &settings(200, 65_536),
        );
        let (text, lines, cut) = tail(&given[0]);
        assert_eq!(lines, 200);
        assert!(text.starts_with("line 101\n") && text.ends_with("line 300"));
        assert_eq!(
            cut,
            Some("earlier lines left out: the last 200 lines are given (aftercare.log-lines)")
        );
        assert_eq!(tail(&given[1]), ("only", 1, None));
        assert_eq!(given[0].job_id, Some(1));
        assert_eq!(given[0].name, "sweep / b200");
    }

    #[test]
    fn a_log_kept_from_its_end_loses_its_partial_first_line() {
        let logs = BTreeMap::from([(
            1,
            Ok(JobLog {
                text: "ial line\nfull one\nlast\n".into(),
                whole: false,
            }),
        )]);
        let given = evidence(&[failed("a", Some(1))], &logs, &settings(200, 65_536));
        let (text, lines, cut) = tail(&given[0]);
        assert_eq!((text, lines), ("full one\nlast", 2));
        assert!(cut.is_some(), "the earlier part is said to be left out");
    }

    #[test]
    fn the_logs_together_stay_within_the_byte_bound_a_short_one_whole() {
        let long = numbered(5_000);
        let logs = BTreeMap::from([
            (1, whole(&long)),
            (2, whole("short failure\n")),
            (3, whole(&long)),
        ]);
        let given = evidence(
            &[
                failed("a", Some(1)),
                failed("b", Some(2)),
                failed("c", Some(3)),
            ],
            &logs,
            &settings(10_000, 1_000),
        );
        let total: usize = given.iter().map(|one| tail(one).0.len()).sum();
        assert!(total <= 1_000, "{total} bytes");
        assert_eq!(tail(&given[1]), ("short failure", 1, None));
        let (text, lines, cut) = tail(&given[0]);
        assert!(text.ends_with("line 5000") && text.starts_with("line "));
        assert!(
            text.len() > 400,
            "the long ones split the rest: {}",
            text.len()
        );
        assert_eq!(lines, text.split('\n').count());
        assert_eq!(
            cut.unwrap(),
            format!(
                "cut to its last {} bytes: the logs of a session together get at most 1000 bytes (aftercare.max-log-bytes)",
                text.len()
            )
        );
    }

    #[test]
    fn one_line_longer_than_the_bound_is_cut_at_a_character() {
        let logs = BTreeMap::from([(1, whole(&"é".repeat(100)))]);
        let given = evidence(&[failed("a", Some(1))], &logs, &settings(10, 51));
        let (text, lines, _) = tail(&given[0]);
        assert_eq!((text.chars().count(), lines), (25, 1));
    }

    #[test]
    fn an_unreadable_or_unread_log_is_named_and_a_status_has_none() {
        let logs = BTreeMap::from([(1, Err(ReadFailure::new("HTTP 410: logs expired")))]);
        let given = evidence(
            &[
                failed("a", Some(1)),
                failed("b", Some(2)),
                failed("ci/external", None),
            ],
            &logs,
            &settings(200, 65_536),
        );
        assert_eq!(
            given[0].log,
            EvidenceLog::Unreadable {
                why: "HTTP 410: logs expired".into()
            }
        );
        assert_eq!(
            given[1].log,
            EvidenceLog::Unreadable {
                why: "the log of job 2 was not read".into()
            }
        );
        assert!(matches!(given[2].log, EvidenceLog::NoLog { .. }));
    }

    #[test]
    fn an_empty_log_is_an_empty_tail() {
        let logs = BTreeMap::from([(1, whole(""))]);
        let given = evidence(&[failed("a", Some(1))], &logs, &settings(200, 65_536));
        assert_eq!(tail(&given[0]), ("", 0, None));
    }

    #[test]
    fn shares_keep_small_sizes_whole_and_split_the_rest() {
        assert_eq!(shares(&[10, 1_000, 1_000], 310), vec![10, 150, 150]);
        assert_eq!(shares(&[10, 20], 1_000), vec![10, 20]);
        assert_eq!(shares(&[], 5), Vec::<u64>::new());
    }
}
