//! The producer's checkout and run (contract §3a "producer"): a detached `git worktree` of
//! `repo-path` at the producer head, removed afterwards even when the work inside failed; the
//! first existing entrypoint; the producer run with the interpreter, cwd = the checkout root, a
//! scrubbed environment, a timeout and bounded stdout. Also the files of a head's folders
//! (`git ls-tree`), where a discovered candidate's producer arguments are found (§11).
//!
//! IO only: whether a run succeeded, must be rerun without the no-evals flag, or what its output
//! means is decided in `core::baseline::invocation`. Stderr of git and of the producer is handed
//! back to the caller for the log and never interpreted here.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::Mutex;

use super::process::{ChildCommand, ChildEnvironment, ChildOutput, run_child};

/// How long a git command (rev-parse, ls-tree, worktree add/remove) may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(300);

/// Bytes of a `git ls-tree` listing kept; a longer one is a failure, never a shorter list.
const TREE_LISTING_LIMIT: usize = 16 * 1024 * 1024;

/// Everything needed to check out and run the producer.
#[derive(Debug, Clone)]
pub struct ProducerSetup {
    /// The repository whose history holds the producer heads (`repo-path`).
    pub repository: PathBuf,
    /// Where checkouts are created (inside the work directory).
    pub checkouts_directory: PathBuf,
    /// The git program.
    pub git: OsString,
    /// `producer.interpreter`.
    pub interpreter: OsString,
    /// `producer.entrypoints`, tried in order.
    pub entrypoints: Vec<String>,
    /// `producer.timeout-seconds`.
    pub timeout: Duration,
    /// Bytes of producer stdout kept; more is an invalid output.
    pub stdout_limit: usize,
    /// The complete environment of git and the producer (PATH, HOME, LANG, TMPDIR and
    /// `producer.pass-env`): nothing else of klaud's environment, tokens included, reaches them.
    pub environment: Vec<(OsString, OsString)>,
}

/// Held while git changes a worktree list (`worktree add`, `remove`, `prune`). Heads are checked
/// out concurrently, and git reading the administrative folder of a worktree another task is
/// removing fails the add ("failed to read …/commondir"); one change at a time in this process
/// keeps every checkout independent of the others.
static WORKTREE_CHANGES: Mutex<()> = Mutex::const_new(());

/// Why the producer head could not be checked out.
#[derive(Debug)]
pub enum CheckoutFailure {
    /// The head is not a commit of the repository (a shallow clone, a wrong sha).
    HeadMissing { git_stderr: String },
    /// `git worktree add` failed.
    AddFailed {
        exit: Option<i32>,
        git_stderr: String,
    },
    /// git could not be started or the checkout directory could not be prepared.
    Unavailable(std::io::Error),
}

/// Why a head's files could not be listed.
#[derive(Debug)]
pub enum TreeFailure {
    /// The head is not a commit of the repository (a shallow clone, a wrong sha).
    HeadMissing,
    /// `git ls-tree` failed, or listed more than the bound.
    ListFailed { exit: Option<i32>, truncated: bool },
    /// git could not be started.
    Unavailable(std::io::Error),
}

/// What removing a checkout left behind, for the log.
#[derive(Debug)]
pub enum CheckoutRemoval {
    Removed,
    /// `git worktree remove` failed; the directory was deleted and the worktree pruned instead.
    RemovedByHand {
        git_stderr: String,
    },
    Failed(String),
}

/// A checkout of one producer head.
#[derive(Debug)]
pub struct Checkout {
    pub head: String,
    pub path: PathBuf,
    removed: bool,
}

impl Drop for Checkout {
    /// A safety net for a caller that panicked: the directory goes, and the next
    /// `git worktree prune` forgets it.
    fn drop(&mut self) {
        if !self.removed {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

impl Checkout {
    /// The first of `entrypoints` that is a file in this checkout.
    pub fn first_existing_entrypoint(&self, entrypoints: &[String]) -> Option<String> {
        entrypoints
            .iter()
            .find(|entrypoint| {
                let relative = Path::new(entrypoint.as_str());
                relative.is_relative() && self.path.join(relative).is_file()
            })
            .cloned()
    }
}

impl ProducerSetup {
    fn git(&self, args: &[&std::ffi::OsStr]) -> ChildCommand {
        let mut command = ChildCommand::new(self.git.clone(), GIT_TIMEOUT)
            .arg("-C")
            .arg(self.repository.as_os_str())
            .args(args.iter().copied());
        command.environment = ChildEnvironment::Only(self.environment.clone());
        command
    }

    /// Whether `repo-path`'s git configuration holds an HTTP authorization header (what
    /// `actions/checkout` persists by default). Every checkout of the repository shares that
    /// configuration, so producer code could read it. The value itself is never read into a log.
    pub async fn has_persisted_credentials(&self) -> bool {
        let pattern = r"^http\..*extraheader$";
        match run_child(&self.git(&["config".as_ref(), "--get-regexp".as_ref(), pattern.as_ref()]))
            .await
        {
            Ok(output) => output.succeeded() && !output.stdout.trim().is_empty(),
            Err(_) => false,
        }
    }

    /// Checks out `head`, runs `work` in the checkout, and removes the checkout whatever `work`
    /// returned.
    pub async fn with_checkout<T>(
        &self,
        head: &str,
        work: impl AsyncFnOnce(&Checkout) -> T,
    ) -> Result<(T, CheckoutRemoval), CheckoutFailure> {
        let checkout = self.add_checkout(head).await?;
        let value = work(&checkout).await;
        let removal = self.remove_checkout(checkout).await;
        Ok((value, removal))
    }

    /// `git rev-parse --verify` of the head as a commit.
    async fn verify_commit(&self, head: &str) -> std::io::Result<ChildOutput> {
        let commit = format!("{head}^{{commit}}");
        run_child(&self.git(&[
            "rev-parse".as_ref(),
            "--verify".as_ref(),
            "--quiet".as_ref(),
            commit.as_ref(),
        ]))
        .await
    }

    /// The paths (from the repository root) of the files `head` holds under `folders`
    /// (pathspecs, `.` for the whole tree), read with `git ls-tree` without a checkout.
    pub async fn list_files(
        &self,
        head: &str,
        folders: &[String],
    ) -> Result<Vec<String>, TreeFailure> {
        let exists = self
            .verify_commit(head)
            .await
            .map_err(TreeFailure::Unavailable)?;
        if !exists.succeeded() {
            return Err(TreeFailure::HeadMissing);
        }
        let fixed = [
            "ls-tree",
            "-r",
            "-z",
            "--name-only",
            "--full-tree",
            head,
            "--",
        ];
        let args: Vec<&std::ffi::OsStr> = fixed
            .iter()
            .map(std::ffi::OsStr::new)
            .chain(folders.iter().map(std::ffi::OsStr::new))
            .collect();
        let mut command = self.git(&args);
        command.stdout_limit = TREE_LISTING_LIMIT;
        let listed = run_child(&command)
            .await
            .map_err(TreeFailure::Unavailable)?;
        if !listed.succeeded() || listed.stdout_truncated {
            return Err(TreeFailure::ListFailed {
                exit: listed.exit,
                truncated: listed.stdout_truncated,
            });
        }
        Ok(listed
            .stdout
            .split('\0')
            .filter(|path| !path.is_empty())
            .map(str::to_string)
            .collect())
    }

    async fn add_checkout(&self, head: &str) -> Result<Checkout, CheckoutFailure> {
        let exists = self
            .verify_commit(head)
            .await
            .map_err(CheckoutFailure::Unavailable)?;
        if !exists.succeeded() {
            return Err(CheckoutFailure::HeadMissing {
                git_stderr: exists.stderr,
            });
        }
        std::fs::create_dir_all(&self.checkouts_directory).map_err(CheckoutFailure::Unavailable)?;
        let path = self.checkouts_directory.join(format!(
            "{}-{}",
            &head[..head.len().min(12)],
            unique_suffix()
        ));
        let path = std::path::absolute(&path).unwrap_or(path);
        let _changing = WORKTREE_CHANGES.lock().await;
        let added = run_child(&self.git(&[
            "worktree".as_ref(),
            "add".as_ref(),
            "--detach".as_ref(),
            "--quiet".as_ref(),
            path.as_os_str(),
            head.as_ref(),
        ]))
        .await
        .map_err(CheckoutFailure::Unavailable)?;
        let checkout = Checkout {
            head: head.to_string(),
            path,
            removed: false,
        };
        if !added.succeeded() {
            // Whatever git left half-made goes with the checkout's Drop and a prune.
            drop(checkout);
            let _ = run_child(&self.git(&["worktree".as_ref(), "prune".as_ref()])).await;
            return Err(CheckoutFailure::AddFailed {
                exit: added.exit,
                git_stderr: added.stderr,
            });
        }
        Ok(checkout)
    }

    async fn remove_checkout(&self, mut checkout: Checkout) -> CheckoutRemoval {
        checkout.removed = true;
        let _changing = WORKTREE_CHANGES.lock().await;
        let removed = run_child(&self.git(&[
            "worktree".as_ref(),
            "remove".as_ref(),
            "--force".as_ref(),
            checkout.path.as_os_str(),
        ]))
        .await;
        let git_stderr = match removed {
            Ok(output) if output.succeeded() => return CheckoutRemoval::Removed,
            Ok(output) => output.stderr,
            Err(error) => error.to_string(),
        };
        if let Err(error) = std::fs::remove_dir_all(&checkout.path)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            return CheckoutRemoval::Failed(format!(
                "cannot delete {}: {error}",
                checkout.path.display()
            ));
        }
        let _ = run_child(&self.git(&["worktree".as_ref(), "prune".as_ref()])).await;
        CheckoutRemoval::RemovedByHand { git_stderr }
    }

    /// Runs `<interpreter> <entrypoint> <args…>` in the checkout.
    pub async fn run_producer(
        &self,
        checkout: &Checkout,
        entrypoint: &str,
        args: &[String],
    ) -> std::io::Result<ChildOutput> {
        let mut command = ChildCommand::new(self.interpreter.clone(), self.timeout)
            .arg(entrypoint)
            .args(args.iter().map(String::as_str));
        command.working_directory = Some(checkout.path.clone());
        command.environment = ChildEnvironment::Only(self.environment.clone());
        command.stdout_limit = self.stdout_limit;
        run_child(&command).await
    }
}

/// A suffix that keeps concurrent checkouts of one head (two passes) apart.
fn unique_suffix() -> String {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes).expect("the operating system provides randomness");
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
