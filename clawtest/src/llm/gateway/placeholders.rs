//! The per-trial values clawtest itself creates (the services' and the gateway's URLs, the
//! trial's folder with the workspace, home and temp folders in it), written to cassettes as
//! placeholders (`{{services_url}}`, `{{trial_folder}}`, …) and put back when replayed.
//!
//! Recording replaces each value by its placeholder in the request and in the answer;
//! replay replaces the new trial's values by the same placeholders in the request before
//! comparing (so the recording matches whatever port or folder this trial got) and the
//! placeholders by the new values in the answer (so a model that names a file in the
//! workspace names the new one). The trial's folder is made by the trial, which tells the
//! gateway its path ([`TrialValues::with_folder`]): it is hidden like the URLs, by its exact
//! text, from the first request on.
//!
//! The task id and the trial number are the same in the recording and in the replay, so they
//! are compared as they are (a placeholder for a short id such as `t` would rewrite words).

use serde_json::Value;

/// The placeholder of the trial's folder.
const TRIAL_FOLDER: &str = "trial_folder";

/// The values of one trial and their placeholders.
#[derive(Debug, Clone, Default)]
pub(crate) struct TrialValues {
    /// (placeholder, value), longest value first so that a URL is replaced before its
    /// address.
    exact: Vec<(String, String)>,
}

impl TrialValues {
    /// Adds `value` (an exact text) as `{{name}}`; empty values are left out.
    pub(crate) fn with(mut self, name: &str, value: &str) -> TrialValues {
        if !value.is_empty() {
            self.exact.push((placeholder(name), value.to_string()));
            self.exact
                .sort_by_key(|(_, value)| std::cmp::Reverse(value.len()));
        }
        self
    }

    /// Adds a URL as `{{name}}` and its `host:port` as `{{name_address}}` (harnesses write
    /// either).
    pub(crate) fn with_url(self, name: &str, url: &str) -> TrialValues {
        let address = url
            .split_once("://")
            .map_or(url, |(_, rest)| rest)
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let address_name = format!("{}_address", name.trim_end_matches("_url"));
        self.with(name, url).with(&address_name, &address)
    }

    /// The trial's folder (as the harness is told it) becomes `{{trial_folder}}`.
    pub(crate) fn with_folder(self, folder: &std::path::Path) -> TrialValues {
        self.with(TRIAL_FOLDER, &folder.to_string_lossy())
    }

    /// `text` with this trial's values replaced by their placeholders.
    pub(crate) fn hide_text(&self, text: &str) -> String {
        self.hide_seen(text).into_owned()
    }

    /// [`TrialValues::hide_text`], without a copy when `text` holds none of the values.
    pub(crate) fn hide_seen<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        let mut text = std::borrow::Cow::Borrowed(text);
        for (name, value) in &self.exact {
            if text.contains(value.as_str()) {
                text = std::borrow::Cow::Owned(text.replace(value.as_str(), name));
            }
        }
        text
    }

    /// `text` with the placeholders replaced by this trial's values.
    pub(crate) fn restore_text(&self, text: &str) -> String {
        if !text.contains("{{") {
            return text.to_string();
        }
        let mut text = text.to_string();
        for (name, value) in &self.exact {
            text = text.replace(name.as_str(), value);
        }
        text
    }

    /// [`TrialValues::hide_text`] on every string of a JSON value.
    pub(crate) fn hide(&self, value: &Value) -> Value {
        map_strings(value, &mut |text| self.hide_text(text))
    }

    /// [`TrialValues::restore_text`] on every string of a JSON value.
    pub(crate) fn restore(&self, value: &Value) -> Value {
        map_strings(value, &mut |text| self.restore_text(text))
    }
}

fn placeholder(name: &str) -> String {
    format!("{{{{{name}}}}}")
}

/// `value` with each of its strings changed by `change` (keys stay as they are).
pub(super) fn map_strings(value: &Value, change: &mut dyn FnMut(&str) -> String) -> Value {
    match value {
        Value::String(text) => Value::String(change(text)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|item| map_strings(item, change)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), map_strings(value, change)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(folder: &str) -> TrialValues {
        TrialValues::default()
            .with_url("services_url", "http://127.0.0.1:41234")
            .with_url("gateway_url", "http://127.0.0.1:41235/abc")
            .with_folder(std::path::Path::new(folder))
    }

    #[test]
    fn values_become_placeholders_and_come_back() {
        let request = json!({"messages": [{"role": "system", "content": "Tools at http://127.0.0.1:41234/mcp (127.0.0.1:41234); you work in /tmp/clawtest-trial-Ab3xY9/workspace."}]});
        let hidden = values("/tmp/clawtest-trial-Ab3xY9").hide(&request);
        assert_eq!(
            hidden["messages"][0]["content"],
            "Tools at {{services_url}}/mcp ({{services_address}}); you work in {{trial_folder}}/workspace."
        );
        // Another trial: other port, other folder; the same placeholders.
        let other = TrialValues::default()
            .with_url("services_url", "http://127.0.0.1:50000")
            .with_folder(std::path::Path::new("/tmp/clawtest-trial-QQ11zz"));
        let again = other.hide(&json!(
            "Tools at http://127.0.0.1:50000/mcp (127.0.0.1:50000); you work in /tmp/clawtest-trial-QQ11zz/workspace."
        ));
        assert_eq!(again, hidden["messages"][0]["content"]);
        assert_eq!(
            other.restore(&json!({"path": "{{trial_folder}}/workspace/notes.txt"})),
            json!({"path": "/tmp/clawtest-trial-QQ11zz/workspace/notes.txt"})
        );
    }

    /// The folder is the one the trial was told, whatever its name: no guess from its shape,
    /// and another trial's folder of the same shape is not taken for it.
    #[test]
    fn the_folder_told_is_hidden_whatever_its_name_and_no_other() {
        let values = values("/var/run/somewhere/odd-name");
        assert_eq!(
            values.hide_text("in /var/run/somewhere/odd-name/workspace"),
            "in {{trial_folder}}/workspace"
        );
        assert_eq!(
            values.hide_text("in /tmp/clawtest-trial-Zz99/workspace"),
            "in /tmp/clawtest-trial-Zz99/workspace"
        );
    }

    #[test]
    fn texts_without_values_are_left_alone() {
        assert_eq!(
            values("/tmp/clawtest-trial-Ab3xY9").hide_text("Review every task"),
            "Review every task"
        );
        assert_eq!(
            values("/tmp/clawtest-trial-Ab3xY9").restore_text("{{unknown}} stays"),
            "{{unknown}} stays"
        );
    }
}
