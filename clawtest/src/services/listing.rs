//! `cargo clawtest services [NAME]`: what a task may name of a service, without its source
//! tree: each route's method, endpoint and action, its parameters (type, required, default),
//! and the fixture keys that seed its collections; for people, and as JSON.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{Catalogue, ServiceDescription};

/// `services NAME` named no service.
#[derive(Debug, thiserror::Error)]
#[error("no built-in service is called `{name}`")]
pub struct UnknownService {
    /// The name asked for.
    pub name: String,
    /// "did you mean `x`?", or the list of names.
    pub suggestion: String,
}

/// The services to show: all, or the one named.
pub fn select<'a>(
    catalogue: &'a Catalogue,
    name: Option<&str>,
) -> Result<Vec<&'a ServiceDescription>, UnknownService> {
    let Some(name) = name else {
        return Ok(catalogue
            .names()
            .filter_map(|name| catalogue.get(name))
            .collect());
    };
    catalogue
        .get(name)
        .map(|service| vec![service])
        .ok_or_else(|| {
            let names: Vec<&str> = catalogue.names().collect();
            UnknownService {
                name: name.to_string(),
                suggestion: crate::spelling::suggestion(name, &names, "the services are"),
            }
        })
}

/// The fixture keys of a service: what `fixtures:` of a task may hold for it.
pub fn fixture_keys(service: &ServiceDescription) -> Vec<&str> {
    service
        .collections
        .iter()
        .flat_map(|collection| collection.fixture_keys.iter().map(String::as_str))
        .collect()
}

/// One line per service: its name, routes and description.
pub fn render_summary(services: &[&ServiceDescription]) -> String {
    let width = services
        .iter()
        .map(|service| service.name.len())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for service in services {
        let _ = writeln!(
            text,
            "{:width$}  {:2} route(s)  {}",
            service.name,
            service.routes().len(),
            service.description
        );
    }
    text.push_str(
        "\n`cargo clawtest services NAME` shows a service's routes, parameters and fixture keys.\n",
    );
    text
}

/// Every route of `service` with its parameters, and the fixture keys.
pub fn render_service(service: &ServiceDescription) -> String {
    let mut text = format!("{}: {}\n", service.name, service.description);
    let keys = fixture_keys(service);
    let _ = writeln!(
        text,
        "fixture keys: {}",
        if keys.is_empty() {
            "(none)".to_string()
        } else {
            keys.join(", ")
        }
    );
    for route in service.routes() {
        let _ = writeln!(
            text,
            "\n{} {}  action: {}\n  {}",
            route.method, route.endpoint, route.action, route.description
        );
        for parameter in &route.parameters {
            let mut kind = parameter.ty.as_str().to_string();
            if let Some(items) = parameter.items {
                let _ = write!(kind, " of {}", items.as_str());
            }
            let requirement = if parameter.required {
                "required".to_string()
            } else if let Some(default) = &parameter.default {
                format!("default {default}")
            } else {
                "optional".to_string()
            };
            let _ = writeln!(
                text,
                "    {}: {kind}, {requirement}  {}",
                parameter.name, parameter.description
            );
        }
    }
    text
}

/// The services as JSON: `{"services": [{name, description, fixture_keys, routes: [{method,
/// endpoint, action, description, parameters: [{name, type, items?, required, nullable,
/// default?, description}]}]}]}`.
pub fn to_json(services: &[&ServiceDescription]) -> Value {
    let services: Vec<Value> = services
        .iter()
        .map(|service| {
            let routes: Vec<Value> = service
                .routes()
                .iter()
                .map(|route| {
                    json!({
                        "method": route.method.to_string(),
                        "endpoint": route.endpoint,
                        "action": route.action,
                        "description": route.description,
                        "parameters": route.parameters,
                    })
                })
                .collect();
            json!({
                "name": service.name,
                "description": service.description,
                "fixture_keys": fixture_keys(service),
                "routes": routes,
            })
        })
        .collect();
    json!({ "services": services })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_service_gets_the_nearest_name() {
        let catalogue = Catalogue::builtin();
        let error = select(&catalogue, Some("tod")).unwrap_err();
        assert_eq!(error.suggestion, "did you mean `todo`?");
    }

    #[test]
    fn a_service_shows_every_route_with_its_parameters_and_its_fixture_keys() {
        let catalogue = Catalogue::builtin();
        let todo = select(&catalogue, Some("todo")).unwrap();
        let text = render_service(todo[0]);
        assert!(text.contains("fixture keys: tasks\n"), "{text}");
        assert!(
            text.contains("POST /todo/tasks/update  action: update_task"),
            "{text}"
        );
        assert!(text.contains("    task_id: string, required"), "{text}");
        let json = to_json(&todo);
        assert_eq!(
            json["services"][0]["routes"][1]["parameters"][0]["name"],
            "task_id"
        );
    }
}
