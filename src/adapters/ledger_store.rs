//! Storing the ledger as `ledger.json` on the orphan state branch, and beside it the record of
//! each candidate with a session (`records/<candidate>.json`, as `select` claimed it).
//!
//! Every write is a compare-and-swap on the ledger's blob sha. On a conflict (409 stale sha, 422
//! "sha wasn't supplied", a branch that moved or was created concurrently) the store re-reads the
//! document and asks the caller's decision again, a bounded number of times: a write is
//! re-decided, never lost. The branch is created on the first write; a missing file is an empty
//! ledger. Each commit message names the run and what it changed, so the branch history is the
//! audit log.
//!
//! A write that changes nothing about records is one contents-API write, as it always was. One
//! that stores records, or whose ledger drops every session of a candidate, first reads the
//! branch's tree; the records it stores and those of candidates the ledger no longer holds a
//! session of are written or deleted in the same commit as the ledger, through the git data API,
//! on top of the commit whose `ledger.json` was read (the branch moves only as a fast-forward
//! from it, so the compare-and-swap holds).

use std::collections::{BTreeMap, BTreeSet};

use crate::adapters::github::GitHubClient;
use crate::adapters::github::error::GitHubError;
use crate::adapters::github::git::{FileChange, FileWrite, FilesWrite, RECORDED_SHA};
use crate::core::candidate::is_candidate_id;
use crate::core::ledger::{Ledger, LedgerReadError};

/// The file holding the ledger on the state branch.
pub const LEDGER_FILE: &str = "ledger.json";

/// The directory of the candidates' records on the state branch.
pub const RECORDS_DIRECTORY: &str = "records";

/// Where the record of `candidate` lives on the state branch, `records/<candidate>.json`;
/// `None` when `candidate` is not a candidate id (which is also what makes an id safe as a file
/// name).
pub fn record_path(candidate: &str) -> Option<String> {
    is_candidate_id(candidate).then(|| format!("{RECORDS_DIRECTORY}/{candidate}.json"))
}

/// The candidate whose record `path` is, when it is a record's path.
fn record_candidate(path: &str) -> Option<&str> {
    let candidate = path
        .strip_prefix(RECORDS_DIRECTORY)?
        .strip_prefix('/')?
        .strip_suffix(".json")?;
    is_candidate_id(candidate).then_some(candidate)
}

/// A candidate's record, stored as `records/<candidate>.json` while the ledger holds a session
/// of the candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateRecord {
    pub candidate: String,
    /// The record as JSON text, stored as given.
    pub json: String,
}

/// What a caller decided on one reading of the ledger.
#[derive(Debug, Clone)]
pub enum LedgerDecision<T> {
    /// Store `ledger`, with `message` as the commit message, and answer `result`.
    Write {
        ledger: Ledger,
        message: String,
        result: T,
    },
    /// [`LedgerDecision::Write`], storing `records` in the same commit; each must be of a
    /// candidate with a session in `ledger`.
    WriteWithRecords {
        ledger: Ledger,
        records: Vec<CandidateRecord>,
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
    #[error("'{candidate}' is not a candidate id, so it names no record on the state branch")]
    NotACandidateId { candidate: String },
    #[error(
        "the record of candidate '{candidate}' was to be stored without a session of it in the ledger"
    )]
    RecordWithoutSession { candidate: String },
    #[error("GitHub's answer to the commit written names no blob of {LEDGER_FILE}")]
    LedgerBlobUnknown,
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
            let (ledger, records, message, result) = match decide(&loaded.ledger) {
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
                } => (ledger, Vec::new(), message, result),
                LedgerDecision::WriteWithRecords {
                    ledger,
                    records,
                    message,
                    result,
                } => (ledger, records, message, result),
            };
            check_records(&ledger, &records)?;
            match self.store(&loaded, &ledger, &records, &message).await? {
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

    /// The record of `candidate` as stored beside the ledger; `None` when there is none (one
    /// read).
    pub async fn read_record(&self, candidate: &str) -> Result<Option<String>, LedgerError> {
        let path = record_path(candidate).ok_or_else(|| LedgerError::NotACandidateId {
            candidate: candidate.to_string(),
        })?;
        Ok(self
            .client
            .read_branch_file(&self.branch, &path)
            .await?
            .map(|file| file.text))
    }

    /// Stores `ledger` (and `records`) if the ledger on the branch is still the one `loaded`
    /// holds.
    async fn store(
        &self,
        loaded: &LoadedLedger,
        ledger: &Ledger,
        records: &[CandidateRecord],
        message: &str,
    ) -> Result<FileWrite, LedgerError> {
        let text = ledger.to_json();
        let expected = loaded.blob_sha.as_deref();
        if records.is_empty() && candidates_dropped(&loaded.ledger, ledger).is_empty() {
            return self.store_ledger_alone(&text, expected, message).await;
        }
        // A dry run's recorded write is not on the branch: the branch as GitHub holds it
        // stands for the document that write stored.
        let recorded = self.client.records_writes() && expected == Some(RECORDED_SHA);
        let mut files = vec![(LEDGER_FILE.to_string(), text)];
        files.extend(records.iter().filter_map(|record| {
            record_path(&record.candidate).map(|path| (path, record.json.clone()))
        }));
        let Some(tree) = self.client.branch_tree(&self.branch).await? else {
            if expected.is_some() && !recorded {
                // The branch went since the ledger was read.
                return Ok(FileWrite::Conflict);
            }
            let created = self
                .client
                .create_orphan_branch_with_files(&self.branch, &files, message)
                .await?;
            return ledger_blob(created);
        };
        if !recorded && tree.files.get(LEDGER_FILE).map(String::as_str) != expected {
            return Ok(FileWrite::Conflict);
        }
        let deletions = records_without_session(&tree.files, ledger);
        if records.is_empty() && deletions.is_empty() {
            return Ok(self
                .client
                .write_branch_file(&self.branch, LEDGER_FILE, &files[0].1, expected, message)
                .await?);
        }
        let changes: Vec<FileChange> = files
            .into_iter()
            .map(|(path, text)| FileChange::Write { path, text })
            .chain(
                deletions
                    .into_iter()
                    .map(|path| FileChange::Delete { path }),
            )
            .collect();
        let written = self
            .client
            .commit_files_to_branch(&self.branch, &tree, &changes, message)
            .await?;
        ledger_blob(written)
    }

    /// The ledger alone through the contents API, creating the branch when it is missing.
    async fn store_ledger_alone(
        &self,
        text: &str,
        blob_sha: Option<&str>,
        message: &str,
    ) -> Result<FileWrite, LedgerError> {
        if blob_sha.is_none() && self.client.branch(&self.branch).await?.is_none() {
            let files = [(LEDGER_FILE.to_string(), text.to_string())];
            let created = self
                .client
                .create_orphan_branch_with_files(&self.branch, &files, message)
                .await?;
            return ledger_blob(created);
        }
        Ok(self
            .client
            .write_branch_file(&self.branch, LEDGER_FILE, text, blob_sha, message)
            .await?)
    }
}

/// The ledger's part of a multi-file write.
fn ledger_blob(written: FilesWrite) -> Result<FileWrite, LedgerError> {
    match written {
        FilesWrite::Written {
            commit_sha,
            mut blob_shas,
        } => {
            let blob_sha = blob_shas
                .remove(LEDGER_FILE)
                .ok_or(LedgerError::LedgerBlobUnknown)?;
            Ok(FileWrite::Written {
                blob_sha,
                commit_sha,
            })
        }
        FilesWrite::Conflict => Ok(FileWrite::Conflict),
    }
}

/// Every record names a candidate id with a session in `ledger`: a record is kept only while
/// its candidate has one.
fn check_records(ledger: &Ledger, records: &[CandidateRecord]) -> Result<(), LedgerError> {
    let with_session = candidates_with_session(ledger);
    for record in records {
        if !is_candidate_id(&record.candidate) {
            return Err(LedgerError::NotACandidateId {
                candidate: record.candidate.clone(),
            });
        }
        if !with_session.contains(record.candidate.as_str()) {
            return Err(LedgerError::RecordWithoutSession {
                candidate: record.candidate.clone(),
            });
        }
    }
    Ok(())
}

fn candidates_with_session(ledger: &Ledger) -> BTreeSet<&str> {
    ledger
        .sessions
        .iter()
        .map(|session| session.candidate.as_str())
        .collect()
}

/// The candidates with a session in `before` and none in `after`: their records go with the
/// write that stores `after`.
fn candidates_dropped<'a>(before: &'a Ledger, after: &Ledger) -> BTreeSet<&'a str> {
    let kept = candidates_with_session(after);
    candidates_with_session(before)
        .into_iter()
        .filter(|candidate| !kept.contains(candidate))
        .collect()
}

/// The record files among `files` (a branch's listing) whose candidate has no session in
/// `ledger`.
fn records_without_session(files: &BTreeMap<String, String>, ledger: &Ledger) -> Vec<String> {
    let with_session = candidates_with_session(ledger);
    files
        .keys()
        .filter(|path| {
            record_candidate(path).is_some_and(|candidate| !with_session.contains(candidate))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn ledger_of(candidates: &[&str]) -> Ledger {
        let mut ledger = Ledger::empty();
        for (run, candidate) in candidates.iter().enumerate() {
            ledger
                .claim_family(
                    candidate,
                    &format!("family-{candidate}"),
                    run as u64 + 1,
                    now(),
                )
                .unwrap();
        }
        ledger
    }

    fn record(candidate: &str) -> CandidateRecord {
        CandidateRecord {
            candidate: candidate.into(),
            json: format!("{{\"id\": \"{candidate}\"}}"),
        }
    }

    fn listing(paths: &[&str]) -> BTreeMap<String, String> {
        paths
            .iter()
            .map(|path| (path.to_string(), format!("blob-of-{path}")))
            .collect()
    }

    #[test]
    fn a_record_lives_at_records_slash_its_id_dot_json_and_only_a_candidate_id_names_one() {
        assert_eq!(
            record_path("cand-12").as_deref(),
            Some("records/cand-12.json")
        );
        assert_eq!(record_path("..").as_deref(), Some("records/...json"));
        for not_an_id in ["", "a/b", "a b", "ä", &"x".repeat(81)] {
            assert_eq!(record_path(not_an_id), None, "{not_an_id:?}");
        }
        for candidate in ["cand-12", "..", "A.z_0-9"] {
            let path = record_path(candidate).unwrap();
            assert_eq!(record_candidate(&path), Some(candidate));
        }
        for not_a_record in [
            "ledger.json",
            "records/a/b.json",
            "records/a.txt",
            "other/a.json",
        ] {
            assert_eq!(record_candidate(not_a_record), None, "{not_a_record}");
        }
    }

    #[test]
    fn a_candidate_is_dropped_when_its_last_session_goes() {
        let before = ledger_of(&["a", "b", "c"]);
        let mut after = before.clone();
        after.sessions.retain(|session| session.candidate != "b");
        assert_eq!(candidates_dropped(&before, &after), BTreeSet::from(["b"]));
        assert!(candidates_dropped(&before, &before).is_empty());
        let grown = ledger_of(&["a", "b", "c", "d"]);
        assert!(
            candidates_dropped(&before, &grown).is_empty(),
            "a new session drops nothing"
        );
        let swapped = ledger_of(&["a", "c", "d"]);
        assert_eq!(
            candidates_dropped(&before, &swapped),
            BTreeSet::from(["b"]),
            "as many candidates as before, one of them new"
        );
    }

    #[test]
    fn the_records_that_go_are_those_of_candidates_without_a_session() {
        let ledger = ledger_of(&["a"]);
        let files = listing(&[
            "ledger.json",
            "records/a.json",
            "records/b.json",
            "records/nested/c.json",
            "notes.md",
        ]);
        assert_eq!(records_without_session(&files, &ledger), ["records/b.json"]);
        assert!(records_without_session(&listing(&["ledger.json"]), &ledger).is_empty());
    }

    #[test]
    fn a_record_must_name_a_candidate_with_a_session() {
        let ledger = ledger_of(&["a"]);
        assert_eq!(check_records(&ledger, &[record("a")]), Ok(()));
        assert_eq!(
            check_records(&ledger, &[record("a"), record("b")]),
            Err(LedgerError::RecordWithoutSession {
                candidate: "b".into()
            })
        );
        assert_eq!(
            check_records(&ledger, &[record("a/../b")]),
            Err(LedgerError::NotACandidateId {
                candidate: "a/../b".into()
            })
        );
    }

    #[test]
    fn the_ledger_blob_of_a_multi_file_write_is_the_blob_of_ledger_json() {
        let written = FilesWrite::Written {
            commit_sha: "c".into(),
            blob_shas: BTreeMap::from([
                (LEDGER_FILE.to_string(), "l".to_string()),
                ("notes.md".to_string(), "n".to_string()),
            ]),
        };
        assert_eq!(
            ledger_blob(written),
            Ok(FileWrite::Written {
                blob_sha: "l".into(),
                commit_sha: "c".into()
            })
        );
        assert_eq!(ledger_blob(FilesWrite::Conflict), Ok(FileWrite::Conflict));
        let without = FilesWrite::Written {
            commit_sha: "c".into(),
            blob_shas: BTreeMap::new(),
        };
        assert_eq!(ledger_blob(without), Err(LedgerError::LedgerBlobUnknown));
    }
}
