//! `[harness] files`: the harness's own configuration files (nanobot's `config.json`, an
//! OpenClaw `openclaw.json`, …), written from templates before each trial. A template is read
//! and checked once, when the run is prepared (an unknown placeholder is an error naming the
//! template's line and column); each backend then fills in the trial's values as the harness
//! sees them (its services URL, its workspace and home folders) and writes the file.
//!
//! Only `{name}` with a known name is replaced; every other brace stays as written, so JSON,
//! TOML and YAML templates need no escaping.

use std::path::{Component, Path, PathBuf};

use super::{Config, ConfigError};

/// A template larger than this is refused (a configuration file, not a data set).
const MAX_TEMPLATE_BYTES: u64 = 1024 * 1024;

/// The values a template can name, in the order the error message lists them.
const PLACEHOLDERS: [(&str, Placeholder); 7] = [
    ("services_url", Placeholder::ServicesUrl),
    ("gateway_url", Placeholder::GatewayUrl),
    ("openai_base_url", Placeholder::OpenaiBaseUrl),
    ("mcp_url", Placeholder::McpUrl),
    ("model", Placeholder::Model),
    ("workspace", Placeholder::Workspace),
    ("home", Placeholder::Home),
];

/// A value filled into a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholder {
    /// `{services_url}`: the mock services' base URL (`CLAWTEST_SERVICES_URL`).
    ServicesUrl,
    /// `{gateway_url}`: the model gateway without `/v1` (`ANTHROPIC_BASE_URL`).
    GatewayUrl,
    /// `{openai_base_url}`: the gateway with `/v1` (`OPENAI_BASE_URL`).
    OpenaiBaseUrl,
    /// `{mcp_url}`: the MCP endpoint (`{services_url}/mcp`).
    McpUrl,
    /// `{model}`: `harness.model`.
    Model,
    /// `{workspace}`: the workspace folder as the harness sees it (`CLAWTEST_WORKSPACE`).
    Workspace,
    /// `{home}`: the harness's home folder (`HOME`).
    Home,
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Value(Placeholder),
}

/// A checked template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

/// The trial's values, as the harness sees them.
#[derive(Debug, Clone, Copy)]
pub struct TemplateValues<'a> {
    /// The mock services' base URL.
    pub services_url: &'a str,
    /// The gateway's base URL, without `/v1`.
    pub gateway_url: &'a str,
    /// `harness.model` (a template naming `{model}` is refused at load when it is unset).
    pub model: &'a str,
    /// The workspace folder.
    pub workspace: &'a str,
    /// The home folder.
    pub home: &'a str,
}

impl Template {
    /// Reads the `{name}` placeholders of `text`.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            literal.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let name_length = after
                .find(|character: char| !(character.is_ascii_lowercase() || character == '_'))
                .unwrap_or(after.len());
            let name = &after[..name_length];
            if name.is_empty() || !after[name_length..].starts_with('}') {
                // Not a placeholder (a JSON object, a TOML inline table): kept as written.
                literal.push('{');
                rest = after;
                continue;
            }
            let Some((_, placeholder)) = PLACEHOLDERS.iter().find(|(known, _)| *known == name)
            else {
                let offset = text.len() - rest.len() + open;
                let line = text[..offset].matches('\n').count() + 1;
                let column = text[..offset]
                    .rfind('\n')
                    .map_or(offset, |newline| offset - newline - 1)
                    + 1;
                return Err(TemplateError {
                    line,
                    column,
                    message: format!(
                        "unknown placeholder `{{{name}}}`; the known ones are {}",
                        PLACEHOLDERS
                            .iter()
                            .map(|(known, _)| format!("{{{known}}}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            };
            if !literal.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut literal)));
            }
            pieces.push(Piece::Value(*placeholder));
            rest = &after[name_length + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Template { pieces })
    }

    /// Whether the template names `placeholder`.
    pub fn names(&self, placeholder: Placeholder) -> bool {
        self.pieces.contains(&Piece::Value(placeholder))
    }

    /// The text with the trial's values filled in.
    pub fn render(&self, values: &TemplateValues<'_>) -> String {
        let gateway = values.gateway_url.trim_end_matches('/');
        let services = values.services_url.trim_end_matches('/');
        let mut text = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(literal) => text.push_str(literal),
                Piece::Value(Placeholder::ServicesUrl) => text.push_str(services),
                Piece::Value(Placeholder::GatewayUrl) => text.push_str(gateway),
                Piece::Value(Placeholder::OpenaiBaseUrl) => {
                    text.push_str(gateway);
                    text.push_str("/v1");
                }
                Piece::Value(Placeholder::McpUrl) => {
                    text.push_str(services);
                    text.push_str("/mcp");
                }
                Piece::Value(Placeholder::Model) => text.push_str(values.model),
                Piece::Value(Placeholder::Workspace) => text.push_str(values.workspace),
                Piece::Value(Placeholder::Home) => text.push_str(values.home),
            }
        }
        text
    }
}

/// A placeholder a template cannot use, located in the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in bytes).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// Which folder a harness file is written under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileBase {
    /// The trial's workspace (the harness's working directory).
    Workspace,
    /// The harness's home folder (`~/…` targets).
    Home,
}

/// One `[harness] files` entry, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessFile {
    /// The folder the file goes under.
    pub base: FileBase,
    /// The path under `base` (relative, without `..`).
    pub path: PathBuf,
    /// The template, as written in `harness.files`, for messages.
    pub target: String,
    /// What is written, once filled in.
    pub template: Template,
}

impl Config {
    /// `[harness] files`, each template read from the suite and checked: the target must stay
    /// inside the workspace or home, the template must be UTF-8 text naming only known
    /// placeholders, and `{model}` needs `harness.model`.
    pub fn harness_files(&self) -> Result<Vec<HarnessFile>, ConfigError> {
        self.harness
            .files
            .iter()
            .map(|(target, source)| self.harness_file(target, source))
            .collect()
    }

    fn harness_file(&self, target: &str, source: &Path) -> Result<HarnessFile, ConfigError> {
        let error = |message: String| ConfigError::Value {
            origin: self.origin.clone(),
            field: format!("harness.files.\"{target}\""),
            message,
        };
        let (base, relative) = match target.strip_prefix("~/") {
            Some(rest) => (FileBase::Home, rest),
            None => (FileBase::Workspace, target),
        };
        let path = PathBuf::from(relative);
        if relative.is_empty()
            || !path
                .components()
                .all(|component| matches!(component, Component::Normal(_)))
        {
            return Err(error(
                "the target must be a relative path inside the workspace (`nanobot.json`) or the home folder (`~/.nanobot/config.json`), without `..`".into(),
            ));
        }
        let file = self.root.join(source);
        let shown = file.display();
        let size = std::fs::metadata(&file)
            .map_err(|io| error(format!("cannot read the template {shown}: {io}")))?
            .len();
        if size > MAX_TEMPLATE_BYTES {
            return Err(error(format!(
                "the template {shown} is {size} bytes; templates are at most {MAX_TEMPLATE_BYTES}"
            )));
        }
        let bytes = std::fs::read(&file)
            .map_err(|io| error(format!("cannot read the template {shown}: {io}")))?;
        let text = String::from_utf8(bytes).map_err(|utf8| {
            error(format!(
                "the template {shown} is not UTF-8 text (byte {})",
                utf8.utf8_error().valid_up_to()
            ))
        })?;
        let template = Template::parse(&text).map_err(|located| {
            error(format!(
                "{shown}:{}:{}: {}",
                located.line, located.column, located.message
            ))
        })?;
        if template.names(Placeholder::Model) && self.harness.model.is_none() {
            return Err(error(format!(
                "the template {shown} uses {{model}}, but `harness.model` is not set (e.g. `model = \"gpt-4o-mini\"` in [harness])"
            )));
        }
        Ok(HarnessFile {
            base,
            path,
            target: target.to_string(),
            template,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> TemplateValues<'static> {
        TemplateValues {
            services_url: "http://127.0.0.1:4000/",
            gateway_url: "http://127.0.0.1:5000",
            model: "gpt-4o-mini",
            workspace: "/w",
            home: "/h",
        }
    }

    #[test]
    fn known_placeholders_are_filled_and_other_braces_kept() {
        let template = Template::parse(
            "{\"url\": \"{mcp_url}\", \"base\": \"{openai_base_url}\", \"m\": \"{model}\",\n \"x\": {\"w\": \"{workspace}\", \"h\": \"{home}\", \"s\": \"{services_url}\", \"g\": \"{gateway_url}\"}, \"e\": {}}",
        )
        .unwrap();
        let text = template.render(&values());
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["url"], "http://127.0.0.1:4000/mcp");
        assert_eq!(parsed["base"], "http://127.0.0.1:5000/v1");
        assert_eq!(parsed["m"], "gpt-4o-mini");
        assert_eq!(parsed["x"]["w"], "/w");
        assert_eq!(parsed["x"]["h"], "/h");
        assert_eq!(parsed["x"]["s"], "http://127.0.0.1:4000");
        assert_eq!(parsed["x"]["g"], "http://127.0.0.1:5000");
        assert_eq!(parsed["e"], serde_json::json!({}));
    }

    #[test]
    fn an_unknown_placeholder_is_located() {
        let error = Template::parse("{\n  \"url\": \"{services}\"\n}").unwrap_err();
        assert_eq!((error.line, error.column), (2, 11));
        assert!(error.message.contains("`{services}`"), "{}", error.message);
        assert!(
            error.message.contains("{services_url}"),
            "{}",
            error.message
        );
    }

    fn config_with(files: &str, model: Option<&str>) -> (tempfile::TempDir, Config) {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("good.json"), "{\"m\": \"{model}\"}").unwrap();
        std::fs::write(folder.path().join("plain.json"), "{\"w\": \"{workspace}\"}").unwrap();
        std::fs::write(folder.path().join("binary.bin"), [0x66, 0xff, 0x00]).unwrap();
        let model = model.map_or(String::new(), |model| format!("model = \"{model}\"\n"));
        let text = format!("[harness]\ncommand = \"agent\"\n{model}[harness.files]\n{files}\n");
        let config = Config::from_text(
            &text,
            &folder.path().join("clawtest.toml"),
            folder.path().to_path_buf(),
        )
        .unwrap();
        (folder, config)
    }

    #[test]
    fn targets_go_to_the_workspace_or_the_home_folder() {
        let (_folder, config) = config_with(
            "\"~/.nanobot/config.json\" = \"good.json\"\n\"conf/plain.json\" = \"plain.json\"",
            Some("m1"),
        );
        let files = config.harness_files().unwrap();
        let placed: Vec<(FileBase, PathBuf)> = files
            .iter()
            .map(|file| (file.base, file.path.clone()))
            .collect();
        assert_eq!(
            placed,
            [
                (FileBase::Workspace, PathBuf::from("conf/plain.json")),
                (FileBase::Home, PathBuf::from(".nanobot/config.json")),
            ]
        );
    }

    #[test]
    fn bad_entries_are_errors_naming_the_field() {
        for (files, model, expected) in [
            ("\"../escape.json\" = \"plain.json\"", None, "without `..`"),
            ("\"/etc/passwd\" = \"plain.json\"", None, "relative path"),
            (
                "\"a.json\" = \"missing.json\"",
                None,
                "cannot read the template",
            ),
            (
                "\"a.json\" = \"binary.bin\"",
                None,
                "not UTF-8 text (byte 1)",
            ),
            (
                "\"a.json\" = \"good.json\"",
                None,
                "`harness.model` is not set",
            ),
        ] {
            let (_folder, config) = config_with(files, model);
            let error = config.harness_files().unwrap_err().to_string();
            assert!(error.starts_with("harness.files.\""), "{error}");
            assert!(error.contains(expected), "{files}: {error}");
        }
    }
}
