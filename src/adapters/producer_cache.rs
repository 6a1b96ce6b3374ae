//! Producer outputs cached in the work directory, keyed by head + arguments + no-evals flag, so
//! that a rerun of the step does no producer work (contract §3.2).
//!
//! One JSON file per successful invocation under `<directory>/producer-cache/`, named by the
//! SHA-256 of its key and written atomically (temporary file, then rename). A file whose recorded
//! key differs from the one asked for, or that does not parse, is a miss. Failed runs are never
//! cached: the next pass tries again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Bumped when the record's meaning changes, which turns every older file into a miss.
pub const CACHE_FORMAT: u32 = 1;

/// One cached producer invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CachedProducerOutput {
    pub format: u32,
    pub head: String,
    /// The argv after the entrypoint, without the no-evals flag.
    pub args: Vec<String>,
    pub no_evals_flag: String,
    pub entrypoint: String,
    /// True when the producer rejected the flag and ran without it.
    pub fallback: bool,
    /// The producer's entries, as it printed them.
    pub entries: Vec<Value>,
}

/// The cache directory.
#[derive(Debug, Clone)]
pub struct ProducerCache {
    directory: PathBuf,
}

impl ProducerCache {
    pub fn new(work_directory: &Path) -> Self {
        ProducerCache {
            directory: work_directory.join("producer-cache"),
        }
    }

    fn path_for(&self, head: &str, args: &[String], no_evals_flag: &str) -> PathBuf {
        let key = serde_json::json!([CACHE_FORMAT, head, args, no_evals_flag]).to_string();
        let digest = Sha256::digest(key.as_bytes());
        let name: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        self.directory.join(format!("{name}.json"))
    }

    /// The cached output of this invocation, if any.
    pub fn read(
        &self,
        head: &str,
        args: &[String],
        no_evals_flag: &str,
    ) -> Option<CachedProducerOutput> {
        let text = std::fs::read_to_string(self.path_for(head, args, no_evals_flag)).ok()?;
        let record: CachedProducerOutput = serde_json::from_str(&text).ok()?;
        (record.format == CACHE_FORMAT
            && record.head == head
            && record.args == args
            && record.no_evals_flag == no_evals_flag)
            .then_some(record)
    }

    /// Stores a successful invocation.
    pub fn write(&self, record: &CachedProducerOutput) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.directory)?;
        let path = self.path_for(&record.head, &record.args, &record.no_evals_flag);
        let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
        let text = serde_json::to_string(record).map_err(std::io::Error::other)?;
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, &path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(args: &[&str]) -> CachedProducerOutput {
        CachedProducerOutput {
            format: CACHE_FORMAT,
            head: "a".repeat(40),
            args: args.iter().map(|arg| arg.to_string()).collect(),
            no_evals_flag: "--no-evals".into(),
            entrypoint: "gen.py".into(),
            fallback: true,
            entries: vec![serde_json::json!({"conc": 4})],
        }
    }

    #[test]
    fn a_written_invocation_reads_back_by_its_key_only() {
        let directory = tempfile::tempdir().unwrap();
        let cache = ProducerCache::new(directory.path());
        let written = record(&["test-config", "--config-keys", "k"]);
        cache.write(&written).unwrap();
        assert_eq!(
            cache.read(&written.head, &written.args, "--no-evals"),
            Some(written.clone())
        );
        assert_eq!(
            cache.read(&written.head, &written.args, "--skip-evals"),
            None
        );
        assert_eq!(
            cache.read(&"b".repeat(40), &written.args, "--no-evals"),
            None
        );
        assert_eq!(cache.read(&written.head, &[], "--no-evals"), None);
    }

    #[test]
    fn an_unreadable_cache_file_is_a_miss() {
        let directory = tempfile::tempdir().unwrap();
        let cache = ProducerCache::new(directory.path());
        let written = record(&["x"]);
        cache.write(&written).unwrap();
        let path = cache.path_for(&written.head, &written.args, "--no-evals");
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(cache.read(&written.head, &written.args, "--no-evals"), None);
    }
}
