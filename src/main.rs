//! `klaud`: parse → run one step → exit code. Everything else lives in the library.

use std::process::ExitCode;

use klaud::shell::environment::Environment;

#[tokio::main]
async fn main() -> ExitCode {
    let environment = Environment::capture();
    ExitCode::from(klaud::shell::run(std::env::args_os().collect(), environment).await)
}
