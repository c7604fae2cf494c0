//! The repo memory of this build.

use std::sync::Arc;

use runner_contract::{Home, MemoryStore};

/// Files under `$CODEHANDS_HOME/memory` with feature `memory-fs`.
#[cfg(feature = "memory-fs")]
pub fn store(home: &Home) -> Arc<dyn MemoryStore> {
    Arc::new(memory_fs::FileMemory::in_home(home.root()))
}

/// Without `memory-fs`, runs have no memory: notes read as empty and nothing is kept.
#[cfg(not(feature = "memory-fs"))]
pub fn store(_home: &Home) -> Arc<dyn MemoryStore> {
    Arc::new(NoMemory)
}

#[cfg(not(feature = "memory-fs"))]
struct NoMemory;

#[cfg(not(feature = "memory-fs"))]
#[async_trait::async_trait]
impl MemoryStore for NoMemory {
    async fn notes(&self, _: &str) -> runner_contract::Result<String> {
        Ok(String::new())
    }
    async fn add_note(&self, _: &str, _: &str) -> runner_contract::Result<()> {
        Ok(())
    }
    async fn notes_for_prompt(&self, _: &str) -> runner_contract::Result<String> {
        Ok(String::new())
    }
    async fn record_run(
        &self,
        _: &str,
        _: &runner_contract::RunSummary,
    ) -> runner_contract::Result<()> {
        Ok(())
    }
    async fn profile(
        &self,
        _: &str,
    ) -> runner_contract::Result<Option<runner_contract::RepoProfile>> {
        Ok(None)
    }
    async fn save_profile(
        &self,
        _: &str,
        _: &runner_contract::RepoProfile,
    ) -> runner_contract::Result<()> {
        Ok(())
    }
    fn detect_profile(&self, _: &std::path::Path) -> runner_contract::RepoProfile {
        runner_contract::RepoProfile::default()
    }
}
