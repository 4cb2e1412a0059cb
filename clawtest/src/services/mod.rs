//! Mock services: service descriptions, the built-in catalogue, a service's store, the
//! engine that answers a request from it, and the hooks.
//!
//! A service is data ([`ServiceDescription`], one YAML file per built-in service in
//! `catalogue/`): collections seeded from task fixtures (`store`), and routes that each
//! run one generic operation (list, get, create, update, delete) or a named hook
//! (`hooks`) and render response templates (`engine`). Everything here is pure and
//! imports nothing above it: the per-trial state and the audit log belong to the world,
//! and serving it over HTTP to `serve`.

pub(crate) mod catalogue;
pub mod description;
pub(crate) mod engine;
pub(crate) mod hooks;
pub mod listing;
pub(crate) mod python;
pub(crate) mod python_json;
pub(crate) mod store;
pub(crate) mod time;

pub use catalogue::{Catalogue, DescriptionError};
pub use description::{
    BodyRule, CollectionDescription, Filter, Match, Operation, ParamType, ParameterDescription,
    RebaseDates, RouteDescription, ServiceDescription, SetWhen,
};

/// How a task names a tool: its `tools[]` entry. The tool's name becomes the audit action
/// for calls to its endpoint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolBinding {
    /// The tool's name (`tools[].name`): the action audit entries of its endpoint carry.
    pub name: String,
    /// The service the endpoint belongs to (`tools[].service`).
    pub service: String,
    /// The route's path the tool calls (`tools[].endpoint`, e.g. `/todo/tasks/create`).
    pub endpoint: String,
    /// The HTTP method the tool calls the endpoint with (`tools[].method`).
    pub method: crate::method::Method,
}
