//! Storing the ledger as `ledger.json` on the orphan state branch through the contents API.
//!
//! Every write is a compare-and-swap on the file's blob sha. On a conflict (409 stale sha, 422
//! "sha wasn't supplied", or the branch created concurrently) the store re-reads the document and
//! asks the caller's decision again, a bounded number of times: a write is re-decided, never
//! lost. The branch is created on the first write; a missing file is an empty ledger. Each
//! commit message names the run and what it changed, so the branch history is the audit log.

use crate::adapters::github::GitHubClient;
use crate::adapters::github::error::GitHubError;
use crate::adapters::github::git::FileWrite;
use crate::core::ledger::{Ledger, LedgerReadError};

/// The file holding the ledger on the state branch.
pub const LEDGER_FILE: &str = "ledger.json";

/// What a caller decided on one reading of the ledger.
#[derive(Debug, Clone)]
pub enum LedgerDecision<T> {
    /// Store `ledger`, with `message` as the commit message, and answer `result`.
    Write {
        ledger: Ledger,
        message: String,
        result: T,
    },
    /// Nothing to store; answer `result`.
    Keep(T),
}

/// The result of [`LedgerStore::update`].
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerUpdate<T> {
    pub result: T,
    /// The document as stored (or as read, when nothing was written).
    pub ledger: Ledger,
    pub wrote: bool,
    /// Conflicts met before the decision held.
    pub conflicts: u32,
    /// The blob sha of the stored document (`None` when there is none yet), so a later update
    /// can start from it without reading again.
    pub blob_sha: Option<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LedgerError {
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error(transparent)]
    Unreadable(#[from] LedgerReadError),
    #[error("the ledger kept changing under this pass: {attempts} compare-and-swap attempts lost")]
    ConflictPersisted { attempts: u32 },
}

/// The ledger as read, with what a compare-and-swap write must name.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedLedger {
    pub ledger: Ledger,
    /// `None` when the file does not exist yet.
    pub blob_sha: Option<String>,
}

pub struct LedgerStore<'a> {
    client: &'a GitHubClient,
    branch: String,
    max_attempts: u32,
}

impl<'a> LedgerStore<'a> {
    pub fn new(client: &'a GitHubClient, branch: &str) -> Self {
        LedgerStore {
            client,
            branch: branch.to_string(),
            max_attempts: 5,
        }
    }

    /// How many compare-and-swap attempts an update may make.
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    pub async fn load(&self) -> Result<LoadedLedger, LedgerError> {
        match self
            .client
            .read_branch_file(&self.branch, LEDGER_FILE)
            .await?
        {
            Some(file) => Ok(LoadedLedger {
                ledger: Ledger::from_json(&file.text)?,
                blob_sha: Some(file.blob_sha),
            }),
            None => Ok(LoadedLedger {
                ledger: Ledger::empty(),
                blob_sha: None,
            }),
        }
    }

    /// Reads the ledger, asks `decide`, and stores its decision with compare-and-swap; on a
    /// conflict reads again and asks again.
    pub async fn update<T>(
        &self,
        decide: impl FnMut(&Ledger) -> LedgerDecision<T>,
    ) -> Result<LedgerUpdate<T>, LedgerError> {
        self.update_starting_from(None, decide).await
    }

    /// [`LedgerStore::update`], deciding first on `loaded` (a document this pass already read or
    /// wrote) instead of reading it again; a conflict reads the fresh document as usual.
    pub async fn update_starting_from<T>(
        &self,
        mut loaded: Option<LoadedLedger>,
        mut decide: impl FnMut(&Ledger) -> LedgerDecision<T>,
    ) -> Result<LedgerUpdate<T>, LedgerError> {
        let mut conflicts = 0;
        for _ in 0..self.max_attempts {
            let loaded = match loaded.take() {
                Some(loaded) => loaded,
                None => self.load().await?,
            };
            let (ledger, message, result) = match decide(&loaded.ledger) {
                LedgerDecision::Keep(result) => {
                    return Ok(LedgerUpdate {
                        result,
                        ledger: loaded.ledger,
                        wrote: false,
                        conflicts,
                        blob_sha: loaded.blob_sha,
                    });
                }
                LedgerDecision::Write {
                    ledger,
                    message,
                    result,
                } => (ledger, message, result),
            };
            match self
                .store(&ledger, loaded.blob_sha.as_deref(), &message)
                .await?
            {
                FileWrite::Written { blob_sha, .. } => {
                    return Ok(LedgerUpdate {
                        result,
                        ledger,
                        wrote: true,
                        conflicts,
                        blob_sha: Some(blob_sha),
                    });
                }
                FileWrite::Conflict => conflicts += 1,
            }
        }
        Err(LedgerError::ConflictPersisted {
            attempts: self.max_attempts,
        })
    }

    async fn store(
        &self,
        ledger: &Ledger,
        blob_sha: Option<&str>,
        message: &str,
    ) -> Result<FileWrite, LedgerError> {
        let text = ledger.to_json();
        if blob_sha.is_none() && self.client.branch(&self.branch).await?.is_none() {
            return Ok(self
                .client
                .create_orphan_branch_with_file(&self.branch, LEDGER_FILE, &text, message)
                .await?);
        }
        Ok(self
            .client
            .write_branch_file(&self.branch, LEDGER_FILE, &text, blob_sha, message)
            .await?)
    }
}
