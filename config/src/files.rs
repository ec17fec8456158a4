//! `[files]`: how untrusted documents are read — uploads, Lark files and
//! `web_fetch` bodies, each in a `weft extract` child process (`weft_files::isolate`).

use serde::{Deserialize, Serialize};

/// Limits of one document's extraction (`[files]`, env `WEFT_FILES__<KEY>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct FilesConfig {
    /// Wall-clock and CPU seconds one document may take to read; past it the
    /// child is killed and the file "could not be read". Documents of one
    /// message are read at the same time, so a send waits this long at most.
    pub extract_timeout_secs: u64,
    /// Address space of the child reading one document (1 GiB): an allocation
    /// beyond it fails and the file "could not be read".
    pub extract_memory_bytes: u64,
}

impl Default for FilesConfig {
    fn default() -> Self {
        FilesConfig {
            extract_timeout_secs: 20,
            extract_memory_bytes: 1 << 30,
        }
    }
}

impl FilesConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=600).contains(&self.extract_timeout_secs) {
            return Err("files.extract_timeout_secs must be between 1 and 600".into());
        }
        if self.extract_memory_bytes < 64 << 20 {
            return Err(
                "files.extract_memory_bytes must be at least 67108864 (64 MiB): the reader itself needs that"
                    .into(),
            );
        }
        Ok(())
    }

    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.extract_timeout_secs)
    }
}
