//! IO adapters: they run programs and talk to services, and decide nothing.

pub mod feeds;
pub mod github;
pub mod ledger_store;
pub mod npm;
pub mod process;
pub mod producer;
pub mod producer_cache;
