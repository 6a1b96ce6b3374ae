//! Counting every request sent to GitHub (retries included, so nothing is under-counted) and
//! refusing requests beyond the pass's budget.

use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;

use super::error::GitHubError;

/// Whether a request only reads, or may change something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    Read,
    Write,
}

/// Requests sent so far in this pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RequestCounts {
    /// GET requests sent, retries included.
    pub reads: u64,
    /// POST, PUT, PATCH and DELETE requests sent (GraphQL mutations included), retries included.
    pub writes: u64,
    /// Requests that were repeats of an earlier attempt.
    pub retries: u64,
    /// Milliseconds spent waiting for backoff and `Retry-After`.
    pub waited_ms: u64,
}

/// The request budget of one pass.
#[derive(Debug)]
pub struct RequestBudget {
    max_reads: u64,
    max_writes: u64,
    counts: Mutex<RequestCounts>,
}

impl RequestBudget {
    pub fn new(max_reads: u64, max_writes: u64) -> Self {
        RequestBudget {
            max_reads,
            max_writes,
            counts: Mutex::new(RequestCounts::default()),
        }
    }

    /// Counts one request about to be sent, or refuses it when the budget is used up.
    pub fn charge(&self, kind: RequestKind, is_retry: bool) -> Result<(), GitHubError> {
        let mut counts = self.counts.lock().expect("budget lock");
        match kind {
            RequestKind::Read if counts.reads >= self.max_reads => {
                return Err(GitHubError::BudgetExhausted {
                    kind: "read",
                    limit: self.max_reads,
                });
            }
            RequestKind::Write if counts.writes >= self.max_writes => {
                return Err(GitHubError::BudgetExhausted {
                    kind: "write",
                    limit: self.max_writes,
                });
            }
            RequestKind::Read => counts.reads += 1,
            RequestKind::Write => counts.writes += 1,
        }
        if is_retry {
            counts.retries += 1;
        }
        Ok(())
    }

    pub fn note_wait(&self, waited: Duration) {
        let mut counts = self.counts.lock().expect("budget lock");
        counts.waited_ms += u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
    }

    pub fn counts(&self) -> RequestCounts {
        *self.counts.lock().expect("budget lock")
    }

    /// Writes still allowed in this pass.
    pub fn writes_left(&self) -> u64 {
        self.max_writes.saturating_sub(self.counts().writes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_beyond_the_budget_are_refused_and_not_counted() {
        let budget = RequestBudget::new(2, 1);
        budget.charge(RequestKind::Read, false).unwrap();
        budget.charge(RequestKind::Read, true).unwrap();
        assert!(matches!(
            budget.charge(RequestKind::Read, false),
            Err(GitHubError::BudgetExhausted {
                kind: "read",
                limit: 2
            })
        ));
        budget.charge(RequestKind::Write, false).unwrap();
        assert!(budget.charge(RequestKind::Write, false).is_err());
        assert_eq!(
            budget.counts(),
            RequestCounts {
                reads: 2,
                writes: 1,
                retries: 1,
                waited_ms: 0
            }
        );
        assert_eq!(budget.writes_left(), 0);
    }
}
