//! IO adapters: they run programs and talk to services, and decide nothing.

pub mod npm;
pub mod process;
