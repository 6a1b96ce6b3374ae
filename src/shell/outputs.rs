//! The sole writer of `$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY` and workflow commands
//! (`::error::`, `::warning::`, `::group::`, `::add-mask::`, `::stop-commands::`).
//!
//! Inside GitHub Actions (`GITHUB_ACTIONS=true`) everything goes where the runner reads it. Run
//! locally, the same calls print a readable report: log lines on stderr, the outputs and the
//! summary on stdout.

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::environment::Environment;

/// Where the report of a step goes.
#[derive(Debug, Clone)]
pub struct Reporter {
    in_actions: bool,
    output_file: Option<PathBuf>,
    summary_file: Option<PathBuf>,
}

impl Reporter {
    pub fn new(environment: &Environment) -> Self {
        Reporter {
            in_actions: environment.in_github_actions,
            output_file: environment.github_output.clone(),
            summary_file: environment.github_step_summary.clone(),
        }
    }

    /// A plain log line.
    pub fn info(&self, line: &str) {
        self.log_line(line);
    }

    pub fn warning(&self, message: &str) {
        if self.in_actions {
            println!("::warning::{}", escape_data(message));
        } else {
            eprintln!("warning: {message}");
        }
    }

    /// An error annotation; `field` names the offending input when there is one.
    pub fn error(&self, field: Option<&str>, message: &str) {
        let text = match field {
            Some(field) => format!("{field}: {message}"),
            None => message.to_string(),
        };
        if self.in_actions {
            println!("::error::{}", escape_data(&text));
        } else {
            eprintln!("error: {text}");
        }
    }

    /// Hides `secret` from every later log line of the job.
    pub fn mask(&self, secret: &str) {
        if self.in_actions && !secret.is_empty() {
            for line in secret.lines().filter(|line| !line.trim().is_empty()) {
                println!("::add-mask::{}", escape_data(line));
            }
        }
    }

    pub fn begin_group(&self, title: &str) {
        if self.in_actions {
            println!("::group::{}", escape_data(title));
        } else {
            eprintln!("== {title}");
        }
    }

    pub fn end_group(&self) {
        if self.in_actions {
            println!("::endgroup::");
        }
    }

    /// Logs text that klaud did not write (a child's stderr): inside Actions it is fenced with
    /// `::stop-commands::` so that nothing in it is taken as a workflow command.
    pub fn untrusted_block(&self, title: &str, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        if self.in_actions {
            let token = random_token();
            println!("{title}:");
            println!("::stop-commands::{token}");
            println!("{}", text.trim_end());
            println!("::{token}::");
        } else {
            eprintln!("{title}:");
            for line in text.trim_end().lines() {
                eprintln!("  | {line}");
            }
        }
    }

    /// Writes every field of `outputs` as a step output: strings as they are, numbers and
    /// booleans in their JSON spelling, arrays and objects as compact JSON. `None` fields are
    /// skipped. Values with a line break use the heredoc form with a random delimiter.
    pub fn write_outputs<T: Serialize>(&self, outputs: &T) -> std::io::Result<()> {
        let pairs = output_pairs(outputs)?;
        match &self.output_file {
            Some(path) => append(path, &render_output_file(&pairs)),
            None => {
                if !pairs.is_empty() {
                    println!("outputs:");
                    for (name, value) in &pairs {
                        println!("  {name}: {value}");
                    }
                }
                Ok(())
            }
        }
    }

    /// Appends Markdown to the step summary, or prints it when there is none.
    pub fn write_summary(&self, markdown: &str) -> std::io::Result<()> {
        match &self.summary_file {
            Some(path) => append(path, &format!("{}\n", markdown.trim_end())),
            None => {
                println!("{}", markdown.trim_end());
                Ok(())
            }
        }
    }

    fn log_line(&self, line: &str) {
        if self.in_actions {
            println!("{line}");
        } else {
            eprintln!("{line}");
        }
    }
}

/// Writes an agent CLI hook's answer (`check-stop`): its stdout is the answer and nothing else.
pub fn write_hook_answer(answer: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(answer.as_bytes());
    let _ = stdout.flush();
}

/// Flattens a typed outputs struct into `(name, value)` pairs in field order.
pub fn output_pairs<T: Serialize>(outputs: &T) -> std::io::Result<Vec<(String, String)>> {
    let value = serde_json::to_value(outputs).map_err(std::io::Error::other)?;
    let serde_json::Value::Object(fields) = value else {
        return Err(std::io::Error::other(
            "step outputs must serialize to an object",
        ));
    };
    Ok(fields
        .into_iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(name, value)| {
            let text = match value {
                serde_json::Value::String(text) => text,
                other => other.to_string(),
            };
            (name, text)
        })
        .collect())
}

/// The text appended to `$GITHUB_OUTPUT` for these pairs.
pub fn render_output_file(pairs: &[(String, String)]) -> String {
    let mut text = String::new();
    for (name, value) in pairs {
        if value.contains('\n') || value.contains('\r') {
            let delimiter = loop {
                let candidate = format!("ghadelimiter_{}", random_token());
                if !value.contains(&candidate) {
                    break candidate;
                }
            };
            let _ = writeln!(text, "{name}<<{delimiter}\n{value}\n{delimiter}");
        } else {
            let _ = writeln!(text, "{name}={value}");
        }
    }
    text
}

/// Escapes a workflow command's message as the runner expects.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// 32 hexadecimal characters from the operating system's random source.
pub fn random_token() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides randomness");
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn append(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(text.as_bytes())
}

/// A Markdown table from a header and rows; cells have `|` and line breaks neutralised.
pub fn markdown_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let cell = |text: &str| text.replace('|', "\\|").replace(['\n', '\r'], " ");
    let mut table = String::new();
    let _ = writeln!(table, "| {} |", header.join(" | "));
    let _ = writeln!(table, "|{}", "---|".repeat(header.len()));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|text| cell(text)).collect();
        let _ = writeln!(table, "| {} |", cells.join(" | "));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    #[serde(rename_all = "kebab-case")]
    struct Sample {
        cli_path: String,
        attempts: u32,
        selected: bool,
        candidates: Vec<String>,
        missing: Option<String>,
        body: String,
    }

    fn sample() -> Sample {
        Sample {
            cli_path: "/p/claude".into(),
            attempts: 2,
            selected: true,
            candidates: vec!["a".into(), "b".into()],
            missing: None,
            body: "line one\nline two".into(),
        }
    }

    #[test]
    fn fields_become_outputs_in_order_with_json_for_structures() {
        let pairs = output_pairs(&sample()).unwrap();
        let names: Vec<&str> = pairs.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            ["cli-path", "attempts", "selected", "candidates", "body"]
        );
        assert_eq!(pairs[1].1, "2");
        assert_eq!(pairs[2].1, "true");
        assert_eq!(pairs[3].1, r#"["a","b"]"#);
    }

    #[test]
    fn multi_line_values_use_a_random_delimiter_heredoc() {
        let text = render_output_file(&[("body".into(), "line one\nline two".into())]);
        let mut lines = text.lines();
        let opening = lines.next().unwrap();
        let delimiter = opening.strip_prefix("body<<ghadelimiter_").unwrap();
        assert_eq!(delimiter.len(), 32);
        assert_eq!(lines.next(), Some("line one"));
        assert_eq!(lines.next(), Some("line two"));
        assert_eq!(
            lines.next(),
            Some(format!("ghadelimiter_{delimiter}").as_str())
        );
    }

    #[test]
    fn single_line_values_use_name_equals_value() {
        let text = render_output_file(&[("attempts".into(), "2".into())]);
        assert_eq!(text, "attempts=2\n");
    }

    #[test]
    fn delimiters_differ_between_calls() {
        assert_ne!(random_token(), random_token());
    }

    #[test]
    fn workflow_command_data_is_escaped() {
        assert_eq!(escape_data("50%\nnext\r"), "50%25%0Anext%0D");
    }

    #[test]
    fn outputs_are_appended_to_the_output_file() {
        let directory = tempfile::tempdir().unwrap();
        let output = directory.path().join("output");
        std::fs::write(&output, "earlier=1\n").unwrap();
        let reporter = Reporter {
            in_actions: true,
            output_file: Some(output.clone()),
            summary_file: None,
        };
        reporter.write_outputs(&sample()).unwrap();
        let written = std::fs::read_to_string(output).unwrap();
        assert!(
            written.starts_with("earlier=1\ncli-path=/p/claude\n"),
            "{written}"
        );
        assert!(written.contains("body<<ghadelimiter_"));
    }

    #[test]
    fn markdown_tables_neutralise_pipes_and_line_breaks() {
        let table = markdown_table(&["a", "b"], &[vec!["x|y".into(), "1\n2".into()]]);
        assert_eq!(table, "| a | b |\n|---|---|\n| x\\|y | 1 2 |\n");
    }
}
