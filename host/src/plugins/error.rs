//! Typed plugin failures. Each stays with the call (and the bot) that caused it.

use crate::error::{ApiError, ErrorCode};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    #[error("plugin {plugin} ran past its deadline of {limit_ms} ms")]
    Deadline { plugin: String, limit_ms: u64 },
    #[error("plugin {plugin} used up its instruction budget")]
    InstructionBudget { plugin: String },
    #[error("plugin {plugin} exceeded its memory limit of {limit_mib} MiB")]
    MemoryLimit { plugin: String, limit_mib: usize },
    #[error("plugin {plugin} trapped: {detail}")]
    Trap { plugin: String, detail: String },
    #[error("plugin {plugin} broke its contract: {detail}")]
    Contract { plugin: String, detail: String },
    #[error("plugin {plugin} reported an error: {detail}")]
    Guest { plugin: String, detail: String },
    #[error("plugin cannot be loaded: {0}")]
    Load(String),
    #[error("no {kind} plugin named {name}")]
    NotFound { kind: &'static str, name: String },
}

impl PluginError {
    /// A short machine-readable name of the failure, for `details.reason` and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Deadline { .. } => "deadline",
            Self::InstructionBudget { .. } => "instruction_budget",
            Self::MemoryLimit { .. } => "memory_limit",
            Self::Trap { .. } => "trap",
            Self::Contract { .. } => "contract",
            Self::Guest { .. } => "guest_error",
            Self::Load(_) => "load",
            Self::NotFound { .. } => "not_found",
        }
    }
}

impl From<PluginError> for ApiError {
    fn from(err: PluginError) -> Self {
        match &err {
            PluginError::NotFound { .. } => ApiError::new(ErrorCode::NotFound, err.to_string()),
            PluginError::Load(_) => ApiError::new(ErrorCode::InvalidRequest, err.to_string())
                .detail("reason", err.reason()),
            _ => ApiError::new(ErrorCode::PluginError, err.to_string())
                .detail("reason", err.reason()),
        }
    }
}
