//! The catalogue: the service descriptions a trial can use, built-in and task-local.
//!
//! Built-in services are data files in `catalogue/`, embedded in the binary and parsed
//! once at load; a bad built-in file is a bug in clawtest, so [`Catalogue::builtin`]
//! panics with the file's name and the parser's message.

use std::sync::Arc;

use super::description::{Operation, ServiceDescription};
use super::hooks;

/// The embedded built-in service files: (file name, contents).
const BUILTIN: &[(&str, &str)] = &[
    ("calendar.yaml", include_str!("catalogue/calendar.yaml")),
    ("caption.yaml", include_str!("catalogue/caption.yaml")),
    ("config.yaml", include_str!("catalogue/config.yaml")),
    ("contacts.yaml", include_str!("catalogue/contacts.yaml")),
    ("crm.yaml", include_str!("catalogue/crm.yaml")),
    ("documents.yaml", include_str!("catalogue/documents.yaml")),
    ("finance.yaml", include_str!("catalogue/finance.yaml")),
    ("gmail.yaml", include_str!("catalogue/gmail.yaml")),
    ("helpdesk.yaml", include_str!("catalogue/helpdesk.yaml")),
    ("inventory.yaml", include_str!("catalogue/inventory.yaml")),
    ("kb.yaml", include_str!("catalogue/kb.yaml")),
    ("notes.yaml", include_str!("catalogue/notes.yaml")),
    ("ocr.yaml", include_str!("catalogue/ocr.yaml")),
    ("rss.yaml", include_str!("catalogue/rss.yaml")),
    ("scheduler.yaml", include_str!("catalogue/scheduler.yaml")),
    ("spotify.yaml", include_str!("catalogue/spotify.yaml")),
    ("todo.yaml", include_str!("catalogue/todo.yaml")),
    ("web.yaml", include_str!("catalogue/web.yaml")),
    ("web_real.yaml", include_str!("catalogue/web_real.yaml")),
    (
        "web_real_injection.yaml",
        include_str!("catalogue/web_real_injection.yaml"),
    ),
];

/// A service description that does not parse or is inconsistent.
#[derive(Debug, thiserror::Error)]
pub enum DescriptionError {
    /// The YAML does not parse as a service description.
    #[error("service description `{origin}` does not parse: {message}")]
    Parse {
        /// Which description: a built-in file's name.
        origin: String,
        /// The YAML parser's message.
        message: String,
    },
    /// It parses, but is inconsistent: a route outside the service's prefix, an operation
    /// naming an unknown collection or parameter, an unknown hook (a bad `id_format` fails
    /// earlier, as the description is read).
    #[error("service description `{origin}` is inconsistent: {message}")]
    Invalid {
        /// Which description: a built-in file's name, or a task-local service's name.
        origin: String,
        /// The first problem found.
        message: String,
    },
    /// A task-local service has the name of a service already in the catalogue.
    #[error("service `{name}` is defined twice")]
    Duplicate {
        /// The service name given twice.
        name: String,
    },
}

/// Checks a description whole: its own consistency ([`ServiceDescription::check`]), then that
/// every hook its routes name is in the hooks table. Returns the first problem found.
pub(crate) fn check(description: &ServiceDescription) -> Result<(), String> {
    description.check()?;
    for route in &description.routes {
        if let Operation::Hook { hook, .. } = &route.operation
            && !hooks::exists(hook)
        {
            return Err(format!(
                "route {}: unknown hook `{hook}`; the hooks are: {}",
                route.endpoint,
                hooks::names().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    Ok(())
}

/// Parses and checks one service description (YAML); `origin` names it in errors.
fn parse_description(origin: &str, yaml: &str) -> Result<ServiceDescription, DescriptionError> {
    let desc: ServiceDescription =
        serde_saphyr::from_str(yaml).map_err(|e| DescriptionError::Parse {
            origin: origin.to_owned(),
            message: e.to_string(),
        })?;
    check(&desc).map_err(|message| DescriptionError::Invalid {
        origin: origin.to_owned(),
        message,
    })?;
    Ok(desc)
}

/// The services a trial can use, by name.
///
/// Descriptions are shared: every task with task-local services extends the catalogue, and
/// validating a suite does that once a file, so a copy must not copy the built-in routes.
#[derive(Debug, Clone, Default)]
pub struct Catalogue {
    services: Vec<Arc<ServiceDescription>>,
}

impl Catalogue {
    /// The built-in services: ClawEnvKit's 20.
    pub fn builtin() -> Catalogue {
        let services = BUILTIN
            .iter()
            .map(|(file, yaml)| {
                let description = parse_description(file, yaml).unwrap_or_else(|e| {
                    panic!("built-in service file is broken (a clawtest bug): {e}")
                });
                Arc::new(description)
            })
            .collect();
        Catalogue { services }
    }

    /// This catalogue plus `extra` (task-local services); a name already present is an error.
    pub(crate) fn with(
        &self,
        extra: Vec<ServiceDescription>,
    ) -> Result<Catalogue, DescriptionError> {
        let mut services = self.services.clone();
        for desc in extra {
            if services.iter().any(|s| s.name == desc.name) {
                return Err(DescriptionError::Duplicate { name: desc.name });
            }
            check(&desc).map_err(|message| DescriptionError::Invalid {
                origin: desc.name.clone(),
                message,
            })?;
            services.push(Arc::new(desc));
        }
        Ok(Catalogue { services })
    }

    /// The service named `name` (its description's `name`, as a task's `services` lists it).
    pub fn get(&self, name: &str) -> Option<&ServiceDescription> {
        self.services
            .iter()
            .find(|s| s.name == name)
            .map(Arc::as_ref)
    }

    /// Service names, in catalogue order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.services.iter().map(|s| s.name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_description_naming_an_unknown_hook_is_refused_with_the_known_ones() {
        let yaml = include_str!("catalogue/calendar.yaml").replacen(
            "hook: calendar_events,",
            "hook: calendar_eventz,",
            1,
        );
        match parse_description("calendar.yaml", &yaml) {
            Err(DescriptionError::Invalid { message, .. }) => {
                assert!(
                    message.contains("unknown hook `calendar_eventz`"),
                    "{message}"
                );
                assert!(message.contains("calendar_events"), "{message}");
            }
            other => panic!("an unknown hook must be refused, got {other:?}"),
        }
    }

    #[test]
    fn builtin_parses_and_lists_its_services() {
        let c = Catalogue::builtin();
        assert_eq!(c.names().count(), 20);
        assert!(c.get("calendar").is_some());
        assert!(c.get("slack").is_none());
    }

    #[test]
    fn canonical_actions_match_clawenvkit() {
        let c = Catalogue::builtin();
        let actions = |svc: &str| -> Vec<(String, String)> {
            c.get(svc)
                .unwrap()
                .routes()
                .iter()
                .map(|r| (r.endpoint.clone(), r.action.clone()))
                .collect()
        };
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            actions("todo"),
            pairs(&[
                ("/todo/tasks", "list_tasks"),
                ("/todo/tasks/update", "update_task"),
                ("/todo/tasks/create", "create_task"),
                ("/todo/tasks/delete", "delete_task"),
            ])
        );
        assert_eq!(
            actions("gmail"),
            pairs(&[
                ("/gmail/messages", "list_inbox"),
                ("/gmail/messages/get", "get_message"),
                ("/gmail/send", "send_email"),
                ("/gmail/drafts/save", "create_draft"),
            ])
        );
    }

    #[test]
    fn routes_give_a_json_schema_for_tools() {
        let c = Catalogue::builtin();
        let route = c.get("todo").unwrap().route("/todo/tasks/create").unwrap();
        assert_eq!(route.method, crate::method::Method::Post);
        let schema = route.parameters_schema();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["title"]));
        assert_eq!(
            schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["title", "description", "priority", "due_date"]
        );
        assert_eq!(schema["properties"]["priority"]["default"], "medium");
        let update = c.get("todo").unwrap().route("/todo/tasks/update").unwrap();
        assert_eq!(
            update.parameters_schema()["properties"]["tags"]["items"],
            json!({"type": "string"})
        );
    }

    #[test]
    fn inconsistent_descriptions_are_rejected() {
        let yaml = "name: x\ncollections: []\nroutes:\n  - endpoint: /x/a\n    action: a\n    operation: {kind: get, collection: nope, key: id}\n    response: {}\n";
        let err = parse_description("x.yaml", yaml).unwrap_err();
        assert!(
            err.to_string().contains("unknown collection `nope`"),
            "{err}"
        );
        let dup =
            Catalogue::builtin().with(vec![Catalogue::builtin().get("todo").unwrap().clone()]);
        assert!(matches!(dup, Err(DescriptionError::Duplicate { .. })));
    }
}
