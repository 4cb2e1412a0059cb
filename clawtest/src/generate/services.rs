//! Missing services: a service the request needs and the catalogue lacks is described by the
//! model in the service description format (`prompts/service.md`), read raw, checked against
//! the description schema and for consistency (`catalogue::check`), and smoke-called: every
//! route is called once on an empty World with its required parameters filled, and must
//! answer without a server error. Only then is it written to the suite's library (`mod.rs`) and
//! named by tasks.

use serde_json::{Map, Value};

use super::{ask_until, ingest::read_value, model::Model, model::ModelError};
use crate::services::Catalogue;
use crate::services::description::{ParamType, ServiceDescription};
use crate::world::{World, WorldOptions};

const TEMPLATE: &str = include_str!("../../prompts/service.md");

/// The description of service `name` for `request`, or the last answer's problems; and how
/// many answers were read. Asked in stage 0, after the parser.
pub(super) async fn describe(
    model: &mut Model,
    name: &str,
    request: &str,
    catalogue: &Catalogue,
    rejected: &mut dyn FnMut(u32, &[String]),
) -> Result<(Result<ServiceDescription, Vec<String>>, u32), ModelError> {
    let prompt = TEMPLATE
        .replace("{{name}}", name)
        .replace("{{request}}", request.trim());
    ask_until(model, 0, prompt, rejected, |answer| {
        read(answer, name, catalogue)
    })
    .await
}

/// Reads one answer: the description, or why it cannot be used.
pub(super) fn read(
    answer: &str,
    name: &str,
    catalogue: &Catalogue,
) -> Result<ServiceDescription, Vec<String>> {
    // Read straight into the description, so a wrong shape is located at its line too.
    let description: ServiceDescription = read_value(answer).map_err(|mut problem| {
        problem.help = Some(
            "a service description is a map of name, description, collections and routes (prompts/service.md)".into(),
        );
        vec![problem.plain(std::path::Path::new("(service)"))]
    })?;
    if description.name != name {
        return Err(vec![format!(
            "(service): name: expected `{name}`, found `{}`",
            description.name
        )]);
    }
    let extended = catalogue
        .with(vec![description.clone()])
        .map_err(|error| vec![format!("(service): {error}")])?;
    smoke(&description, &extended)?;
    Ok(description)
}

/// Calls every route of `description` once with its required parameters filled: a server
/// error, or a route the engine does not answer, is a problem.
fn smoke(description: &ServiceDescription, catalogue: &Catalogue) -> Result<(), Vec<String>> {
    let mut world = World::new(
        catalogue,
        std::slice::from_ref(&description.name),
        &Value::Null,
        &[],
        WorldOptions::default(),
    )
    .map_err(|error| vec![format!("(service): cannot be served: {error}")])?;
    let mut problems = Vec::new();
    for (index, route) in description.routes().iter().enumerate() {
        let body: Map<String, Value> = route
            .parameters
            .iter()
            .filter(|parameter| parameter.required)
            .map(|parameter| (parameter.name.clone(), sample(parameter.ty)))
            .collect();
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let answer = world.handle(route.method.name(), &route.endpoint, &body);
        if answer.status >= 500 || (answer.status == 404 && answer.body.get("error").is_none()) {
            problems.push(format!(
                "(service): routes[{index}]: `{} {}` answered HTTP {} when called with its required parameters: {}",
                route.method, route.endpoint, answer.status, answer.body
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// A value of type `ty` for a smoke call.
fn sample(ty: ParamType) -> Value {
    match ty {
        ParamType::String => Value::from("smoke"),
        ParamType::Integer => Value::from(1),
        ParamType::Number => Value::from(1.0),
        ParamType::Boolean => Value::from(true),
        ParamType::Array => Value::Array(Vec::new()),
        ParamType::Object => Value::Object(Map::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAYROLL: &str = "```yaml\nname: payroll\ndescription: Payslips\ncollections:\n  - {name: payslips, id_field: payslip_id, id_format: \"ps_{n:03}\", fixture_keys: [payslips]}\nroutes:\n  - endpoint: /payroll/payslips\n    action: list_payslips\n    description: List payslips\n    body: optional\n    operation: {kind: list, collection: payslips}\n    response: {payslips: \"${items}\", total: \"${count}\"}\n  - endpoint: /payroll/payslips/create\n    action: create_payslip\n    description: Create a payslip (employee)\n    parameters:\n      - {name: employee, type: string, required: true, description: Who}\n    operation: {kind: create, collection: payslips, record: {payslip_id: \"${id}\", employee: \"${params.employee}\"}}\n    response: {status: created, payslip: \"${record}\"}\n```";

    #[test]
    fn a_described_service_is_checked_and_smoke_called() {
        let description = read(PAYROLL, "payroll", &Catalogue::builtin()).unwrap();
        assert_eq!(description.routes().len(), 2);
    }

    #[test]
    fn a_service_of_another_name_or_shape_is_refused_with_the_reason() {
        let problems = read(PAYROLL, "billing", &Catalogue::builtin()).unwrap_err();
        assert_eq!(
            problems,
            ["(service): name: expected `billing`, found `payroll`"]
        );
        let broken = PAYROLL.replace("collection: payslips}", "collection: nowhere}");
        let problems = read(&broken, "payroll", &Catalogue::builtin()).unwrap_err();
        assert!(problems[0].contains("nowhere"), "{problems:?}");
        let problems = read(
            "name: payroll\nroutes: 3\n",
            "payroll",
            &Catalogue::builtin(),
        )
        .unwrap_err();
        assert!(problems[0].starts_with("(service):2:"), "{problems:?}");
        assert!(
            problems[0].contains("a service description is a map"),
            "{problems:?}"
        );
        // A name the catalogue has is not a missing service.
        let gmail = PAYROLL.replace("payroll", "gmail");
        let problems = read(&gmail, "gmail", &Catalogue::builtin()).unwrap_err();
        assert!(problems[0].contains("gmail"), "{problems:?}");
    }
}
