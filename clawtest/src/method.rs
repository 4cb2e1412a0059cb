//! The HTTP method a tool calls its route with: one type for a task's `tools[].method`, a
//! service description's `routes[].method`, the tools document a harness reads and the calls
//! the oracle and the Rust harness make. Owns reading a method (in any case, as ClawEnvKit's
//! loader upper-cases it) and the upper-case text every output writes.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// An HTTP method a tool may name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST`: the default, and the method of every ClawEnvKit service route.
    #[default]
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
}

impl Method {
    /// Every method a tool may name, in the order error messages list them.
    pub const ALL: [Method; 5] = [
        Method::Get,
        Method::Post,
        Method::Put,
        Method::Patch,
        Method::Delete,
    ];

    /// The method `text` names, in any case (`post`, `Post`, `POST`).
    pub fn from_name(text: &str) -> Option<Method> {
        Method::ALL
            .into_iter()
            .find(|method| method.name().eq_ignore_ascii_case(text.trim()))
    }

    /// Its upper-case name, as HTTP and every output write it.
    pub const fn name(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }

    /// The names of every method, for an error's help: `GET, POST, PUT, PATCH or DELETE`.
    pub fn choices() -> String {
        let names: Vec<&str> = Method::ALL.iter().map(|method| method.name()).collect();
        let (last, rest) = names.split_last().expect("at least one method");
        format!("{} or {last}", rest.join(", "))
    }
}

impl fmt::Display for Method {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl TryFrom<String> for Method {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        Method::from_name(&text).ok_or_else(|| {
            format!(
                "`{text}` is not an HTTP method a tool may use: write {}",
                Method::choices()
            )
        })
    }
}

impl From<Method> for &'static str {
    fn from(method: Method) -> Self {
        method.name()
    }
}

impl schemars::JsonSchema for Method {
    fn schema_name() -> Cow<'static, str> {
        "Method".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Method::ALL.iter().map(|method| method.name()).collect();
        schemars::json_schema!({
            "description": "An HTTP method (any case is read; outputs write upper case).",
            "type": "string",
            "enum": names,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Method;

    #[test]
    fn a_method_reads_in_any_case_and_writes_upper_case() {
        for method in Method::ALL {
            let lower = format!("\"{}\"", method.name().to_ascii_lowercase());
            assert_eq!(serde_json::from_str::<Method>(&lower).unwrap(), method);
            assert_eq!(
                serde_json::to_string(&method).unwrap(),
                format!("\"{}\"", method.name())
            );
        }
        assert_eq!(Method::from_name(" Patch "), Some(Method::Patch));
        assert_eq!(Method::default(), Method::Post);
    }

    #[test]
    fn an_unknown_method_is_refused_with_the_choices() {
        let error = serde_json::from_str::<Method>("\"FETCH\"").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("`FETCH` is not an HTTP method a tool may use: write GET, POST, PUT, PATCH or DELETE"),
            "{error}"
        );
        assert_eq!(Method::from_name(""), None);
    }
}
