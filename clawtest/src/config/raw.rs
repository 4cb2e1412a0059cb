//! `RawConfig`: the file as read, every table optional, before the checks across values
//! (`check.rs`) and the harnesses' two forms are settled into a `Config`.

use serde::Deserialize;

use super::llm::LlmConfig;
use super::matrix::{Harnesses, MatrixConfig};
use super::sections::{
    DockerConfig, Gates, GenerateConfig, JudgeConfig, LimitsConfig, ReportConfig, RunConfig,
    ValidateConfig,
};

/// The file format: every table optional.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default = "super::sections::default_tasks")]
    pub(super) tasks: Vec<String>,
    #[serde(default)]
    pub(super) harness: Harnesses,
    #[serde(default)]
    pub(super) matrix: MatrixConfig,
    #[serde(default)]
    pub(super) run: RunConfig,
    #[serde(default)]
    pub(super) gates: Gates,
    #[serde(default)]
    pub(super) llm: LlmConfig,
    #[serde(default)]
    pub(super) judge: JudgeConfig,
    #[serde(default)]
    pub(super) docker: DockerConfig,
    #[serde(default)]
    pub(super) validate: ValidateConfig,
    #[serde(default)]
    pub(super) limits: LimitsConfig,
    #[serde(default)]
    pub(super) report: ReportConfig,
    #[serde(default)]
    pub(super) generate: GenerateConfig,
    #[serde(default)]
    pub(super) faults: crate::fault::FaultSettings,
}
