//! Wall time and peak RSS of one run of the real `klaud` binary. A child's peak RSS counts the
//! memory of the process it was spawned from (Linux records it at exec), and a benchmark holds
//! the whole scenario and the fake GitHub; so a freshly started copy of the benchmark program,
//! small, spawns klaud and reports klaud's own figures (`wait4`).
//!
//! A benchmark's `main` calls [`serve_as_intermediary`] first, and measures with [`intermediary`]
//! and [`measure`].

// A benchmark spawns the binary and passes its environment on.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The argument that makes the benchmark program the intermediary measuring one child.
const MEASURE_CHILD: &str = "--measure-child";
/// The same, followed by the file the child reads as its standard input.
const MEASURE_CHILD_WITH_STDIN: &str = "--measure-child-stdin";

/// What one run of the child cost.
pub struct ChildCost {
    /// Its exit code (-1 when a signal ended it).
    pub exit_code: i32,
    /// From spawn to exit, process start-up included.
    pub wall: Duration,
    /// Its own peak resident set size, in KiB.
    pub peak_rss_kib: i64,
}

/// A command that runs `program` through the intermediary; add the child's environment and
/// arguments to it (they pass through), then [`measure`] it. Its output is discarded.
pub fn intermediary(program: &Path) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("the bench program"));
    command.arg(MEASURE_CHILD).arg(program);
    command
}

/// As [`intermediary`], with the child's standard input read from `stdin` (a hook's input).
pub fn intermediary_with_stdin(program: &Path, stdin: &Path) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("the bench program"));
    command
        .arg(MEASURE_CHILD_WITH_STDIN)
        .arg(stdin)
        .arg(program);
    command
}

/// Runs a command made by [`intermediary`] and returns the child's figures.
pub fn measure(command: &mut Command) -> ChildCost {
    let output = command.output().expect("the intermediary runs");
    assert!(
        output.status.success(),
        "the intermediary failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = String::from_utf8(output.stdout).expect("UTF-8");
    let fields: Vec<&str> = report.split_whitespace().collect();
    let [exit_code, wall_seconds, peak_rss_kib] = fields[..] else {
        panic!("the intermediary reported {report:?}");
    };
    ChildCost {
        exit_code: exit_code.parse().expect("an exit code"),
        wall: Duration::from_secs_f64(wall_seconds.parse().expect("seconds")),
        peak_rss_kib: peak_rss_kib.parse().expect("KiB"),
    }
}

/// When this process was started as the intermediary: runs the child, prints
/// `<exit code> <wall seconds> <peak RSS in KiB>` and returns true (`main` then returns).
pub fn serve_as_intermediary() -> bool {
    let arguments: Vec<String> = std::env::args().collect();
    let (stdin, child_arguments) = match arguments.get(1).map(String::as_str) {
        Some(MEASURE_CHILD) => (Stdio::null(), &arguments[2..]),
        Some(MEASURE_CHILD_WITH_STDIN) => (
            Stdio::from(std::fs::File::open(&arguments[2]).expect("the child's input")),
            &arguments[3..],
        ),
        _ => return false,
    };
    let started = Instant::now();
    #[allow(clippy::zombie_processes)] // reaped by wait4, which also reports its peak RSS
    let child = Command::new(&child_arguments[0])
        .args(&child_arguments[1..])
        .stdin(stdin)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the child starts");
    let (exit_code, usage) = wait_with_usage(child.id());
    let wall = started.elapsed();
    println!("{exit_code} {} {}", wall.as_secs_f64(), usage.ru_maxrss);
    true
}

/// Waits for the child and returns its exit code and its own resource usage.
fn wait_with_usage(pid: u32) -> (i32, libc::rusage) {
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills in; the pid is our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid as libc::pid_t, "wait4 failed");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, usage)
}
