//! klaud, the control plane for autonomous agent sweeps. See ARCHITECTURE.md for the map:
//! `core` decides (pure), `adapters` talk to the world (IO only), `shell` runs a step.

pub mod adapters;
pub mod core;
pub mod shell;
