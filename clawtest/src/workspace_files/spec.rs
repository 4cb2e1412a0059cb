//! A model's description of its files (`workspace_files:` in the Generator's answer), read as
//! a raw JSON value and checked into [`FileSpec`]s: every field known, every size within
//! [`Limits`], every value of the type its place needs. Each mistake names its field
//! (`workspace_files[1].sqlite.tables[0].rows[3][2]`), so the model can be told exactly.

use serde_json::Value;

use super::fields::{bounded_text, display, known_keys, list, name, object, shape};
use super::picture::read_picture;
use super::{Cell, Column, ColumnKind, Content, FileSpec, Limits, SpecError, Table};

/// The key of the Generator's answer that holds the descriptions.
pub const FIELD: &str = "workspace_files";

/// The kinds of file, as the key that gives a file's content.
const KINDS: &[&str] = &["text", "csv", "json", "sqlite", "pdf", "image"];

/// Every description of `value` (the list under [`FIELD`]), or every mistake in it.
pub fn read_all(value: &Value, limits: &Limits) -> Result<Vec<FileSpec>, Vec<SpecError>> {
    let Value::Array(entries) = value else {
        return Err(vec![SpecError::new(
            FIELD,
            "must be a list of files (`- {path: /workspace/…, csv: …}`)",
        )]);
    };
    if entries.len() > limits.files {
        return Err(vec![SpecError::new(
            FIELD,
            format!(
                "{} files described; a task has at most {}",
                entries.len(),
                limits.files
            ),
        )]);
    }
    let mut specs = Vec::new();
    let mut errors = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let field = format!("{FIELD}[{index}]");
        match read_file(entry, &field, limits) {
            Ok(spec) => {
                if specs.iter().any(|known: &FileSpec| known.path == spec.path) {
                    errors.push(SpecError::new(
                        format!("{field}.path"),
                        format!("`{}` is described twice", spec.path),
                    ));
                } else {
                    specs.push(spec);
                }
            }
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() {
        Ok(specs)
    } else {
        Err(errors)
    }
}

fn read_file(entry: &Value, field: &str, limits: &Limits) -> Result<FileSpec, SpecError> {
    let map = object(entry, field)?;
    let kinds: Vec<&str> = KINDS
        .iter()
        .copied()
        .filter(|kind| map.contains_key(*kind))
        .collect();
    let allowed: Vec<&str> = std::iter::once("path")
        .chain(KINDS.iter().copied())
        .collect();
    known_keys(map, field, &allowed)?;
    let path = workspace_path(map.get("path"), &format!("{field}.path"))?;
    let kind = match kinds.as_slice() {
        [kind] => *kind,
        [] => {
            return Err(SpecError::new(
                field,
                format!(
                    "says nothing of the content: give one of {}",
                    KINDS.join(", ")
                ),
            ));
        }
        several => {
            return Err(SpecError::new(
                field,
                format!("gives {}: a file is one kind", several.join(" and ")),
            ));
        }
    };
    let inner = format!("{field}.{kind}");
    let value = &map[kind];
    let extension = path
        .rsplit_once('.')
        .map(|(_, extension)| extension.to_ascii_lowercase());
    let content = match kind {
        "text" => Content::Text(bounded_text(value, &inner, limits.file_bytes)?),
        "csv" => read_csv(value, &inner, limits)?,
        "json" => Content::Json(value.clone()),
        "sqlite" => Content::Sqlite(read_tables(value, &inner, limits)?),
        "pdf" => Content::Pdf(read_pages(value, &inner, limits)?),
        _ => Content::Image(read_picture(value, &inner, extension.as_deref(), limits)?),
    };
    let expected: &[&str] = match &content {
        Content::Csv { .. } => &["csv"],
        Content::Json(_) => &["json"],
        Content::Sqlite(_) => &["db", "sqlite", "sqlite3"],
        Content::Pdf(_) => &["pdf"],
        Content::Image(_) => &["png", "jpg", "jpeg"],
        Content::Text(_) => &[],
    };
    let binary = ["db", "sqlite", "sqlite3", "pdf", "png", "jpg", "jpeg"];
    let fits = match &content {
        Content::Text(_) => !extension
            .as_deref()
            .is_some_and(|found| binary.contains(&found)),
        _ => extension
            .as_deref()
            .is_some_and(|found| expected.contains(&found)),
    };
    if !fits {
        let wanted = if expected.is_empty() {
            "a text extension (.txt, .md, .py, .sql, …)".to_owned()
        } else {
            format!(".{}", expected.join(" or ."))
        };
        return Err(SpecError::new(
            format!("{field}.path"),
            format!("`{path}` does not name a {kind} file: its name ends in {wanted}"),
        ));
    }
    Ok(FileSpec { path, content })
}

/// `/workspace/a/b.csv` or `a/b.csv` → `a/b.csv`: relative, plain names, at most three deep.
fn workspace_path(value: Option<&Value>, field: &str) -> Result<String, SpecError> {
    let Some(Value::String(path)) = value else {
        return Err(SpecError::new(field, "missing: give `/workspace/<name>`"));
    };
    let relative = path.strip_prefix("/workspace/").unwrap_or(path);
    let parts: Vec<&str> = relative.split('/').collect();
    let plain = |part: &&str| {
        !part.is_empty()
            && *part != "."
            && *part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    if relative.len() > 100 || parts.len() > 3 || !parts.iter().all(plain) {
        return Err(SpecError::new(
            field,
            format!(
                "`{path}` is not a file under /workspace: at most three plain names (letters, digits, `.`, `_`, `-`) joined by `/`"
            ),
        ));
    }
    Ok(relative.to_owned())
}

fn cell(value: &Value, field: &str) -> Result<Cell, SpecError> {
    const CELL_BYTES: usize = 1_000;
    match value {
        Value::Null => Ok(Cell::Null),
        Value::Bool(flag) => Ok(Cell::Integer(i64::from(*flag))),
        Value::Number(number) => match (number.as_i64(), number.as_f64()) {
            (Some(integer), _) => Ok(Cell::Integer(integer)),
            (None, Some(real)) if real.is_finite() => Ok(Cell::Real(real)),
            _ => Err(SpecError::new(field, format!("{number} is out of range"))),
        },
        Value::String(text) if text.len() <= CELL_BYTES => Ok(Cell::Text(text.clone())),
        Value::String(text) => Err(SpecError::new(
            field,
            format!("{} bytes; a value is at most {CELL_BYTES}", text.len()),
        )),
        other => Err(SpecError::new(
            field,
            format!("must be text, a number or null, not {}", shape(other)),
        )),
    }
}

fn rows(
    value: Option<&Value>,
    field: &str,
    width: usize,
    limits: &Limits,
) -> Result<Vec<Vec<Cell>>, SpecError> {
    let items = list(value, field, limits.rows, "rows")?;
    let mut rows = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = format!("{field}[{index}]");
        let values = list(Some(item), &at, limits.columns, "values")?;
        if values.len() != width {
            return Err(SpecError::new(
                at,
                format!("{} values; the columns are {width}", values.len()),
            ));
        }
        let row = values
            .iter()
            .enumerate()
            .map(|(column, value)| cell(value, &format!("{at}[{column}]")))
            .collect::<Result<Vec<_>, _>>()?;
        rows.push(row);
    }
    Ok(rows)
}

fn read_csv(value: &Value, field: &str, limits: &Limits) -> Result<Content, SpecError> {
    let map = object(value, field)?;
    known_keys(map, field, &["columns", "rows"])?;
    let at = format!("{field}.columns");
    let columns = list(map.get("columns"), &at, limits.columns, "columns")?
        .iter()
        .enumerate()
        .map(
            |(index, column)| match cell(column, &format!("{at}[{index}]"))? {
                Cell::Text(text) => Ok(text),
                _ => Err(SpecError::new(
                    format!("{at}[{index}]"),
                    "a column's name is text",
                )),
            },
        )
        .collect::<Result<Vec<_>, _>>()?;
    if columns.is_empty() {
        return Err(SpecError::new(at, "give at least one column"));
    }
    let rows = rows(
        map.get("rows"),
        &format!("{field}.rows"),
        columns.len(),
        limits,
    )?;
    Ok(Content::Csv { columns, rows })
}

fn read_tables(value: &Value, field: &str, limits: &Limits) -> Result<Vec<Table>, SpecError> {
    let map = object(value, field)?;
    known_keys(map, field, &["tables"])?;
    let at = format!("{field}.tables");
    let items = list(map.get("tables"), &at, limits.tables, "tables")?;
    if items.is_empty() {
        return Err(SpecError::new(at, "give at least one table"));
    }
    let mut tables: Vec<Table> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let table = read_table(item, &format!("{at}[{index}]"), limits)?;
        if tables
            .iter()
            .any(|known| known.name.eq_ignore_ascii_case(&table.name))
        {
            return Err(SpecError::new(
                format!("{at}[{index}].name"),
                format!("a table `{}` is described twice", table.name),
            ));
        }
        tables.push(table);
    }
    Ok(tables)
}

fn read_table(value: &Value, field: &str, limits: &Limits) -> Result<Table, SpecError> {
    let map = object(value, field)?;
    known_keys(map, field, &["name", "columns", "rows"])?;
    let table_name = name(
        map.get("name").unwrap_or(&Value::Null),
        &format!("{field}.name"),
    )?;
    let at = format!("{field}.columns");
    let items = list(map.get("columns"), &at, limits.columns, "columns")?;
    let mut columns: Vec<Column> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let column = read_column(item, &format!("{at}[{index}]"))?;
        if columns
            .iter()
            .any(|known| known.name.eq_ignore_ascii_case(&column.name))
        {
            return Err(SpecError::new(
                format!("{at}[{index}].name"),
                format!("a column `{}` is described twice", column.name),
            ));
        }
        columns.push(column);
    }
    if columns.is_empty() {
        return Err(SpecError::new(at, "give at least one column"));
    }
    if columns.iter().filter(|column| column.primary_key).count() > 1 {
        return Err(SpecError::new(at, "at most one column is the primary key"));
    }
    let at = format!("{field}.rows");
    let rows = rows(map.get("rows"), &at, columns.len(), limits)?;
    for (index, row) in rows.iter().enumerate() {
        for (column, (value, described)) in row.iter().zip(&columns).enumerate() {
            let fits = match (value, described.kind) {
                (Cell::Null, _) => !described.primary_key,
                (Cell::Integer(_), ColumnKind::Integer | ColumnKind::Real) => true,
                (Cell::Real(_), ColumnKind::Real) | (Cell::Text(_), ColumnKind::Text) => true,
                _ => false,
            };
            if !fits {
                return Err(SpecError::new(
                    format!("{at}[{index}][{column}]"),
                    format!(
                        "`{}` is not a value of column `{}` ({}{})",
                        display(&cell_value(value)),
                        described.name,
                        kind_name(described.kind),
                        if described.primary_key {
                            " primary key, never null"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
    }
    Ok(Table {
        name: table_name,
        columns,
        rows,
    })
}

fn cell_value(cell: &Cell) -> Value {
    match cell {
        Cell::Null => Value::Null,
        Cell::Integer(integer) => Value::from(*integer),
        Cell::Real(real) => Value::from(*real),
        Cell::Text(text) => Value::from(text.as_str()),
    }
}

pub(super) fn kind_name(kind: ColumnKind) -> &'static str {
    match kind {
        ColumnKind::Integer => "integer",
        ColumnKind::Real => "real",
        ColumnKind::Text => "text",
    }
}

fn read_column(value: &Value, field: &str) -> Result<Column, SpecError> {
    let map = object(value, field)?;
    known_keys(map, field, &["name", "type", "primary_key"])?;
    let column_name = name(
        map.get("name").unwrap_or(&Value::Null),
        &format!("{field}.name"),
    )?;
    let kinds = [ColumnKind::Integer, ColumnKind::Real, ColumnKind::Text];
    let names: Vec<&str> = kinds.iter().map(|kind| kind_name(*kind)).collect();
    let kind = match map.get("type") {
        Some(Value::String(text)) => kinds
            .iter()
            .copied()
            .find(|kind| kind_name(*kind).eq_ignore_ascii_case(text))
            .ok_or_else(|| {
                SpecError::new(
                    format!("{field}.type"),
                    format!(
                        "`{text}` is not a column type; {}",
                        crate::spelling::suggestion(
                            &text.to_ascii_lowercase(),
                            &names,
                            "the types are"
                        )
                    ),
                )
            })?,
        _ => {
            return Err(SpecError::new(
                format!("{field}.type"),
                "missing: give integer, real or text",
            ));
        }
    };
    let primary_key = match map.get("primary_key") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) if kind == ColumnKind::Integer => true,
        Some(Value::Bool(true)) => {
            return Err(SpecError::new(
                format!("{field}.primary_key"),
                "only an integer column is the primary key (the row's id)",
            ));
        }
        Some(other) => {
            return Err(SpecError::new(
                format!("{field}.primary_key"),
                format!("must be true or false, not {}", shape(other)),
            ));
        }
    };
    Ok(Column {
        name: column_name,
        kind,
        primary_key,
    })
}

fn read_pages(value: &Value, field: &str, limits: &Limits) -> Result<Vec<Vec<String>>, SpecError> {
    let map = object(value, field)?;
    known_keys(map, field, &["pages"])?;
    let at = format!("{field}.pages");
    let items = list(map.get("pages"), &at, limits.pages, "pages")?;
    if items.is_empty() {
        return Err(SpecError::new(at, "give at least one page"));
    }
    let mut pages = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let page_field = format!("{at}[{index}]");
        let text = bounded_text(
            item,
            &page_field,
            limits.page_lines * (limits.line_chars + 1),
        )?;
        let lines: Vec<String> = text
            .trim_end_matches('\n')
            .split('\n')
            .map(str::to_owned)
            .collect();
        if lines.len() > limits.page_lines {
            return Err(SpecError::new(
                page_field,
                format!(
                    "{} lines; a page holds at most {}",
                    lines.len(),
                    limits.page_lines
                ),
            ));
        }
        for (number, line) in lines.iter().enumerate() {
            if line.chars().count() > limits.line_chars {
                return Err(SpecError::new(
                    format!("{page_field}, line {}", number + 1),
                    format!(
                        "{} characters; a line holds at most {}",
                        line.chars().count(),
                        limits.line_chars
                    ),
                ));
            }
            if let Some(bad) = line.chars().find(|c| !super::pdf::writable(*c)) {
                return Err(SpecError::new(
                    format!("{page_field}, line {}", number + 1),
                    format!(
                        "`{bad}` cannot be written: a page's text is printable Latin-1 (no tabs or control characters)"
                    ),
                ));
            }
        }
        pages.push(lines);
    }
    Ok(pages)
}
