//! Mock services: the service engine and the built-in catalogue.
//!
//! A service is data ([`ServiceDescription`], one YAML file per built-in service in
//! `catalogue/`): collections seeded from task fixtures, and routes that each run one
//! generic operation (list, get, create, update, delete) and render response templates.
//! The [`crate::world::World`] holds the per-trial state and the audit log; [`http`]
//! serves a world over HTTP/1.1.

pub mod catalogue;
pub mod description;
pub mod engine;
pub mod hooks;
pub mod http;
pub mod python;
pub mod python_json;
pub mod standalone;
pub mod store;
pub mod time;

pub use catalogue::{Catalogue, DescriptionError, parse_description};
pub use description::{
    BodyRule, CollectionDescription, Filter, Match, Operation, ParamType, ParameterDescription,
    RebaseDates, RouteDescription, ServiceDescription, SetWhen,
};

/// How a task names a tool: its `tools[]` entry. The tool's name becomes the audit action
/// for calls to its endpoint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolBinding {
    pub name: String,
    pub service: String,
    pub endpoint: String,
    pub method: String,
}
