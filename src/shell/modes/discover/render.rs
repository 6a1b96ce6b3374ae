//! The families of the repository's master configs and their renderings (contract §11): the
//! files `discovery.configs` matches (never under a `deprecated/` folder), each one's top-level
//! keys, and each key rendered by the repository's own generator at the checkout — several at
//! once, up to the machine's cores — or taken from the render cache while its inputs are
//! unchanged: the family's text, the runners file, the generator's sources, and the command.
//!
//! The generator is given the family's own block of the master file (its excerpt) when that
//! block reads alone as exactly the key's value in the whole file: a generator that parses and
//! validates every file it is given then reads one family instead of all of them (on the
//! InferenceX configs, most of a run's time), and another family's error cannot hide this one.
//! A block that does not stand alone (an alias into another block) is rendered from the whole
//! file.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::adapters::process::{ChildCommand, ChildEnvironment, run_child};
use crate::core::discovery::pattern::{pattern_matches, segment_matches};

/// Bytes of one rendering's stdout kept; more is an unrenderable family.
pub const RENDER_STDOUT_LIMIT: usize = 32 * 1024 * 1024;

/// The files the patterns match, relative to `root`, sorted and once. `*` and `?` match
/// within one path segment; a path with a `deprecated` folder is never matched.
pub fn matching_files(root: &Path, pattern: &str) -> Vec<String> {
    let segments: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let mut found = Vec::new();
    walk(root, "", &segments, &mut found);
    found.retain(|path: &String| pattern_matches(pattern, path));
    found.sort();
    found.dedup();
    found
}

fn walk(root: &Path, prefix: &str, segments: &[&str], found: &mut Vec<String>) {
    let Some((segment, rest)) = segments.split_first() else {
        return;
    };
    let here = root.join(prefix);
    let join = |name: &str| {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}/{name}")
        }
    };
    let mut names: Vec<String> = Vec::new();
    if segment.contains('*') || segment.contains('?') {
        if let Ok(entries) = std::fs::read_dir(&here) {
            for entry in entries.flatten() {
                if let Some(name) = entry.file_name().to_str()
                    && segment_matches(segment, name)
                {
                    names.push(name.to_string());
                }
            }
        }
    } else {
        names.push(segment.to_string());
    }
    for name in names {
        let path = join(&name);
        let full = root.join(&path);
        if rest.is_empty() {
            if full.is_file() {
                found.push(path);
            }
        } else if full.is_dir() {
            walk(root, &path, rest, found);
        }
    }
}

/// The families of a master file, in file order, each with the text it is rendered from, or
/// why the file has none.
pub fn read_master(root: &Path, file: &str) -> Result<Vec<FamilyJob>, String> {
    let text = std::fs::read_to_string(root.join(file))
        .map_err(|error| format!("cannot read it: {error}"))?;
    let document: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).map_err(|error| format!("not valid YAML: {error}"))?;
    let serde_yaml_ng::Value::Mapping(mapping) = document else {
        return Err("its top level is not a mapping".into());
    };
    let mut excerpts = excerpts(&text, &mapping);
    mapping
        .iter()
        .map(|(key, _)| match key {
            serde_yaml_ng::Value::String(name) => Ok(FamilyJob {
                file: file.to_string(),
                key: name.clone(),
                excerpt: excerpts.remove(name.as_str()),
            }),
            other => Err(format!("a top-level key is not a string: {other:?}")),
        })
        .collect()
}

/// The verbatim text of each top-level key's block that reads, on its own, as exactly that key
/// with exactly the value it has in the whole file (an alias into another block, a document
/// marker or anything else that would change it leaves the key out: it is rendered from the
/// whole file).
fn excerpts(text: &str, whole: &serde_yaml_ng::Mapping) -> BTreeMap<String, String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| {
            let first = line.chars().next().unwrap_or(' ');
            !first.is_whitespace() && first != '#'
        })
        .map(|(index, _)| index)
        .collect();
    let mut found = BTreeMap::new();
    for (position, start) in starts.iter().enumerate() {
        let end = starts.get(position + 1).copied().unwrap_or(lines.len());
        let block: String = lines[*start..end].concat();
        let Ok(serde_yaml_ng::Value::Mapping(alone)) = serde_yaml_ng::from_str(&block) else {
            continue;
        };
        let Some((serde_yaml_ng::Value::String(key), value)) = alone.iter().next() else {
            continue;
        };
        if alone.len() == 1 && whole.get(key.as_str()) == Some(value) {
            found.insert(key.clone(), block);
        }
    }
    found
}

/// How the generator is run.
#[derive(Debug, Clone)]
pub struct Generator {
    pub root: PathBuf,
    pub interpreter: OsString,
    /// The entrypoint, relative to `root`.
    pub entrypoint: String,
    pub runner_config: String,
    pub timeout: Duration,
    pub environment: Vec<(OsString, OsString)>,
    /// Renderings at once.
    pub parallel: usize,
    /// Where renderings are kept between runs.
    pub cache: PathBuf,
    /// Where the families' excerpts are written for the generator.
    pub excerpts: PathBuf,
}

/// One family to render.
#[derive(Debug, Clone)]
pub struct FamilyJob {
    pub file: String,
    pub key: String,
    /// The key's block alone, which the generator is given instead of the whole file: it reads
    /// and validates only this family (faster, and another family's error cannot hide it).
    /// `None`: the block does not stand alone, and the whole file is given.
    pub excerpt: Option<String>,
}

impl FamilyJob {
    pub fn name(&self) -> String {
        format!("{}:{}", self.file, self.key)
    }
}

/// What rendering one family gave.
#[derive(Debug, Clone)]
pub enum RenderResult {
    /// The generator's entries.
    Entries(Value),
    /// Why not, in one line.
    Refused(String),
}

/// Totals of one discovery's renderings.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RenderCounts {
    pub families: usize,
    pub generator_runs: usize,
    pub from_cache: usize,
    pub refused: usize,
    /// Renderings the generator gave that could not be kept in the render cache.
    pub not_kept: usize,
}

/// What rendering one family gave, and how.
struct Rendered {
    result: RenderResult,
    from_cache: bool,
    /// Why a new rendering could not be kept in the render cache.
    not_kept: Option<String>,
}

impl Generator {
    fn arguments(&self, job: &FamilyJob, config_file: &str) -> Vec<String> {
        vec![
            self.entrypoint.clone(),
            "test-config".into(),
            "--config-keys".into(),
            job.key.clone(),
            "--config-files".into(),
            config_file.to_string(),
            "--runner-config".into(),
            self.runner_config.clone(),
        ]
    }

    /// The config file the generator is given: the family's excerpt, written under `excerpts`
    /// by its digest, or the whole master file.
    fn config_file(&self, job: &FamilyJob) -> std::io::Result<String> {
        let Some(excerpt) = &job.excerpt else {
            return Ok(job.file.clone());
        };
        std::fs::create_dir_all(&self.excerpts)?;
        let path = self
            .excerpts
            .join(format!("{}.yaml", hex(&Sha256::digest(excerpt.as_bytes()))));
        if !path.is_file() {
            std::fs::write(&path, excerpt)?;
        }
        Ok(std::path::absolute(&path)?.display().to_string())
    }

    /// The fingerprint of what the generator's sources are: every file in the entrypoint's
    /// folder and below, by path and content.
    pub fn sources_fingerprint(&self) -> String {
        let folder = self
            .root
            .join(&self.entrypoint)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.root.clone());
        let mut files = Vec::new();
        collect_files(&folder, &mut files);
        files.sort();
        let mut hasher = Sha256::new();
        for file in files {
            let relative = file.strip_prefix(&self.root).unwrap_or(&file);
            hasher.update(relative.to_string_lossy().as_bytes());
            hasher.update([0]);
            hasher.update(std::fs::read(&file).unwrap_or_default());
            hasher.update([0]);
        }
        hex(&hasher.finalize())
    }

    /// Renders every job: from the cache while its inputs are unchanged, else with the
    /// generator, `parallel` at once. Results come back in the jobs' order, with the counts
    /// and, when a rendering could not be kept in the cache, the first reason.
    pub async fn render_all(
        &self,
        jobs: &[FamilyJob],
    ) -> (Vec<RenderResult>, RenderCounts, Option<String>) {
        let sources = self.sources_fingerprint();
        let runners = std::fs::read(self.root.join(&self.runner_config)).unwrap_or_default();
        let mut file_digests: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
        for job in jobs.iter().filter(|job| job.excerpt.is_none()) {
            file_digests.entry(job.file.as_str()).or_insert_with(|| {
                Sha256::digest(std::fs::read(self.root.join(&job.file)).unwrap_or_default())
                    .to_vec()
            });
        }
        // What a rendering depends on: the command (with the family's file and key, not where
        // its excerpt was written), the text the generator reads, the runners file and the
        // generator's sources.
        let keys: Vec<String> = jobs
            .iter()
            .map(|job| {
                let mut hasher = Sha256::new();
                hasher.update(self.interpreter.to_string_lossy().as_bytes());
                for argument in self.arguments(job, &job.file) {
                    hasher.update([0]);
                    hasher.update(argument.as_bytes());
                }
                hasher.update([0]);
                match &job.excerpt {
                    Some(excerpt) => {
                        hasher.update(b"excerpt");
                        hasher.update(Sha256::digest(excerpt.as_bytes()));
                    }
                    None => {
                        hasher.update(b"whole file");
                        hasher.update(&file_digests[job.file.as_str()]);
                    }
                }
                hasher.update([0]);
                hasher.update(sources.as_bytes());
                hasher.update([0]);
                hasher.update(Sha256::digest(&runners));
                hex(&hasher.finalize())
            })
            .collect();
        let results: Vec<Rendered> = futures::stream::iter(
            jobs.iter()
                .zip(&keys)
                .map(|(job, key)| self.render_one(job, key)),
        )
        .buffered(self.parallel.max(1))
        .collect()
        .await;
        let mut counts = RenderCounts {
            families: jobs.len(),
            ..RenderCounts::default()
        };
        let mut not_kept = None;
        for rendered in &results {
            if rendered.from_cache {
                counts.from_cache += 1;
            } else {
                counts.generator_runs += 1;
            }
            if matches!(rendered.result, RenderResult::Refused(_)) {
                counts.refused += 1;
            }
            if let Some(reason) = &rendered.not_kept {
                counts.not_kept += 1;
                not_kept.get_or_insert_with(|| reason.clone());
            }
        }
        (
            results
                .into_iter()
                .map(|rendered| rendered.result)
                .collect(),
            counts,
            not_kept,
        )
    }

    /// One family. Only successful renderings are kept: a refusal is asked again next time.
    async fn render_one(&self, job: &FamilyJob, key: &str) -> Rendered {
        let kept = self.cache.join(format!("{key}.json"));
        if let Ok(text) = std::fs::read_to_string(&kept)
            && let Ok(entries) = serde_json::from_str::<Value>(&text)
        {
            return Rendered {
                result: RenderResult::Entries(entries),
                from_cache: true,
                not_kept: None,
            };
        }
        let rendered = |result| Rendered {
            result,
            from_cache: false,
            not_kept: None,
        };
        let config_file = match self.config_file(job) {
            Ok(path) => path,
            Err(error) => {
                return rendered(RenderResult::Refused(format!(
                    "its excerpt could not be written: {error}"
                )));
            }
        };
        let mut command = ChildCommand::new(self.interpreter.clone(), self.timeout)
            .args(self.arguments(job, &config_file));
        command.working_directory = Some(self.root.clone());
        command.environment = ChildEnvironment::Only(self.environment.clone());
        command.stdout_limit = RENDER_STDOUT_LIMIT;
        let refused = |reason| rendered(RenderResult::Refused(reason));
        match run_child(&command).await {
            Err(error) => refused(format!("the generator could not be started: {error}")),
            Ok(output) if output.timed_out => refused(format!(
                "the generator ran longer than {} s",
                self.timeout.as_secs()
            )),
            Ok(output) if output.stdout_truncated => refused(format!(
                "the generator printed more than {RENDER_STDOUT_LIMIT} bytes"
            )),
            Ok(output) if output.exit != Some(0) => refused(format!(
                "the generator refused it ({}): {}",
                match output.exit {
                    Some(code) => format!("exit {code}"),
                    None => "ended by a signal".to_string(),
                },
                output.last_stderr_line().unwrap_or("no message")
            )),
            Ok(output) => match serde_json::from_str::<Value>(&output.stdout) {
                Ok(entries) => Rendered {
                    result: RenderResult::Entries(entries),
                    from_cache: false,
                    not_kept: self.keep(key, &kept, &output.stdout).err(),
                },
                Err(error) => refused(format!(
                    "the generator printed something that is not JSON: {error}"
                )),
            },
        }
    }

    /// Keeps a rendering in the cache, whole or not at all (written aside, then renamed).
    fn keep(&self, key: &str, kept: &Path, text: &str) -> Result<(), String> {
        let temporary = self
            .cache
            .join(format!("{key}.json.{}.partial", std::process::id()));
        std::fs::create_dir_all(&self.cache)
            .and_then(|()| std::fs::write(&temporary, text))
            .and_then(|()| std::fs::rename(&temporary, kept))
            .map_err(|error| {
                let _ = std::fs::remove_file(&temporary);
                format!("{}: {error}", self.cache.display())
            })
    }
}

fn collect_files(folder: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        // Bytecode caches change with every run and say nothing about the sources.
        if name == "__pycache__" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect_files(&path, files);
        } else if path.is_file() {
            files.push(path);
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_an_excerpt_only_when_it_reads_alone_as_the_same_value() {
        let root = tempfile::tempdir().unwrap();
        let text = "# header\na:\n  image: x # one\n  list: [1, 2]\n\n# about b\nb: &shared\n  image: y\nc: *shared\n\"d e\": {image: z}\n";
        std::fs::write(root.path().join("m.yaml"), text).unwrap();
        let jobs = read_master(root.path(), "m.yaml").unwrap();
        let excerpts: Vec<(&str, Option<&str>)> = jobs
            .iter()
            .map(|job| (job.key.as_str(), job.excerpt.as_deref()))
            .collect();
        assert_eq!(
            excerpts,
            [
                (
                    "a",
                    Some("a:\n  image: x # one\n  list: [1, 2]\n\n# about b\n")
                ),
                ("b", Some("b: &shared\n  image: y\n")),
                ("c", None),
                ("d e", Some("\"d e\": {image: z}\n")),
            ]
        );
        assert!(read_master(root.path(), "missing.yaml").is_err());
    }

    /// A checkout whose generator is a shell script that logs each family it renders and
    /// refuses the key `bad`.
    fn scripted_checkout() -> (tempfile::TempDir, Generator) {
        let root = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let full = root.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        };
        write(
            "gen/render.sh",
            "echo \"$3\" >> runs.log\n[ \"$3\" = bad ] && { echo refused >&2; exit 3; }\nprintf '[{\"key\": \"%s\"}]' \"$3\"\n",
        );
        write("gen/helpers.sh", "# one\n");
        write("configs/runners.yaml", "b200: [b200-nv_0]\n");
        write(
            "m.yaml",
            "a:\n  image: x\nb:\n  image: y\nbad:\n  image: z\n",
        );
        let generator = Generator {
            root: root.path().to_path_buf(),
            interpreter: "/bin/sh".into(),
            entrypoint: "gen/render.sh".into(),
            runner_config: "configs/runners.yaml".into(),
            timeout: Duration::from_secs(30),
            environment: Vec::new(),
            parallel: 2,
            cache: root.path().join("cache"),
            excerpts: root.path().join("excerpts"),
        };
        (root, generator)
    }

    /// `(generator runs, from the cache, refused)` of one discovery of `m.yaml`, and the keys
    /// the generator was run for.
    async fn render(generator: &Generator) -> ((usize, usize, usize), Vec<String>) {
        let log = generator.root.join("runs.log");
        let _ = std::fs::remove_file(&log);
        let jobs = read_master(&generator.root, "m.yaml").unwrap();
        let (results, counts, not_kept) = generator.render_all(&jobs).await;
        assert_eq!(not_kept, None);
        assert!(matches!(&results[0], RenderResult::Entries(entries) if entries[0]["key"] == "a"));
        assert!(matches!(&results[2], RenderResult::Refused(reason) if reason.contains("exit 3")));
        let mut ran: Vec<String> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        ran.sort();
        (
            (counts.generator_runs, counts.from_cache, counts.refused),
            ran,
        )
    }

    #[tokio::test]
    async fn a_rendering_is_reused_until_its_text_the_runners_file_or_the_generator_changes() {
        let (root, generator) = scripted_checkout();
        let write = |path: &str, text: &str| std::fs::write(root.path().join(path), text).unwrap();
        assert_eq!(
            render(&generator).await,
            ((3, 0, 1), vec!["a".into(), "b".into(), "bad".into()])
        );
        // Nothing changed: only the refusal is asked again.
        assert_eq!(render(&generator).await, ((1, 2, 1), vec!["bad".into()]));
        // One family's text: that family alone.
        write(
            "m.yaml",
            "a:\n  image: x2\nb:\n  image: y\nbad:\n  image: z\n",
        );
        assert_eq!(
            render(&generator).await,
            ((2, 1, 1), vec!["a".into(), "bad".into()])
        );
        // The runners file: every family.
        write("configs/runners.yaml", "b200: [b200-nv_0, b200-nv_1]\n");
        assert_eq!(render(&generator).await.0, (3, 0, 1));
        // Any file of the generator's folder: every family.
        write("gen/helpers.sh", "# two\n");
        assert_eq!(render(&generator).await.0, (3, 0, 1));
        // Bytecode caches are not the generator's sources.
        std::fs::create_dir_all(root.path().join("gen/__pycache__")).unwrap();
        write("gen/__pycache__/helpers.pyc", "compiled");
        assert_eq!(render(&generator).await.0, (1, 2, 1));
    }

    #[tokio::test]
    async fn a_rendering_that_cannot_be_kept_is_used_and_counted() {
        let (root, mut generator) = scripted_checkout();
        std::fs::write(root.path().join("blocked"), "a file").unwrap();
        generator.cache = root.path().join("blocked/cache");
        let jobs = read_master(&generator.root, "m.yaml").unwrap();
        let (results, counts, not_kept) = generator.render_all(&jobs).await;
        assert!(matches!(&results[1], RenderResult::Entries(entries) if entries[0]["key"] == "b"));
        assert_eq!((counts.generator_runs, counts.not_kept), (3, 2));
        assert!(not_kept.unwrap().contains("blocked/cache"));
    }

    #[test]
    fn files_under_a_deprecated_folder_are_never_matched() {
        let root = tempfile::tempdir().unwrap();
        for path in [
            "configs/amd-master.yaml",
            "configs/nvidia-master.yaml",
            "configs/runners.yaml",
            "configs/deprecated/old-master.yaml",
            "other/x-master.yaml",
        ] {
            let full = root.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, "a: 1\n").unwrap();
        }
        assert_eq!(
            matching_files(root.path(), "configs/*-master.yaml"),
            ["configs/amd-master.yaml", "configs/nvidia-master.yaml"]
        );
        assert_eq!(
            matching_files(root.path(), "*/*-master.yaml"),
            [
                "configs/amd-master.yaml",
                "configs/nvidia-master.yaml",
                "other/x-master.yaml"
            ]
        );
        assert_eq!(
            matching_files(root.path(), "configs/*/*-master.yaml"),
            Vec::<String>::new()
        );
    }
}
