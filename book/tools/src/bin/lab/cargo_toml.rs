//! A chapter's `Cargo.toml`, made into the manifest of a crate of its own.
//!
//! A chapter is a member of the workbook's workspace, and leans on it:
//! `edition.workspace = true`, `nix.workspace = true`, `shared.workspace = true`. Copied
//! out of the workspace, each of those must become what the workspace says
//! (`edition = "2021"`, `nix = { version = "0.30", features = [...] }`, and `shared` as
//! the lab has it: copied into the lab, or from a git repository at a pinned revision),
//! and the copy needs a `[workspace]` of its own, or Cargo would look for a workspace
//! above it (and refuse to build if it found the workbook's, which does not list it). The
//! workspace's `[profile.*]` sections come along: only a workspace's root may set them,
//! and the student's program should be built as the chapters are. A crate the lab holds
//! beside its program (the copy of `shared`, the handout's grader) is a member of the
//! lab's workspace instead, with no `[workspace]` or profiles of its own.
//!
//! The manifests are read line by line, for the part of TOML they use: `[section]`
//! headers, `key = value` lines (a value may run over several lines while a bracket is
//! open), and comments. No TOML crate: the lab must not add to what the workbook
//! downloads. Anything this does not understand is an error, never a silent copy.

use std::collections::BTreeMap;

/// What the chapter's manifest needs from the workspace's.
pub struct Workspace {
    /// `[workspace.package]`: `edition = "2021"`, ...
    package: BTreeMap<String, String>,
    /// `[workspace.dependencies]`: `nix = { version = ... }`, ...
    dependencies: BTreeMap<String, String>,
    /// `[workspace.lints...]` sections, as `[lints...]` ones, for `lints.workspace = true`.
    lints: Vec<String>,
    /// `[profile...]` sections, as they are.
    profiles: Vec<String>,
}

/// A dependency's fields as TOML, in order: `("path", "\"shared\"")`.
pub type Fields = Vec<(String, String)>;

/// How the lab's manifest differs from the chapter's.
pub struct Changes<'a> {
    /// The chapter's package name, and the student's.
    pub was: &'a str,
    pub name: &'a str,
    /// The package's new description.
    pub description: &'a str,
    /// Where a path dependency goes: given a path from the workbook's root (`shared`),
    /// the fields that name it in the lab's manifest, written as TOML (`path =
    /// "shared"`, or `git = "..."` and `rev = "..."`), in place of the `path`; an error
    /// for a folder the lab does not carry.
    pub locate: &'a dyn Fn(&str) -> Result<Fields, String>,
    /// The chapter's folder, from the workbook's root (`chapters/03-event-loop`), for a
    /// path dependency the chapter names itself.
    pub chapter_folder: &'a str,
    /// `Some(members)` for the lab's own manifest, the root of its workspace (with these
    /// members beside the path dependencies Cargo adds by itself); `None` for a crate
    /// the lab holds, a member of that workspace.
    pub workspace: Option<&'a [&'a str]>,
}

impl Workspace {
    /// Reads the workspace's `Cargo.toml`.
    pub fn parse(text: &str) -> Result<Workspace, String> {
        let mut workspace = Workspace {
            package: BTreeMap::new(),
            dependencies: BTreeMap::new(),
            lints: Vec::new(),
            profiles: Vec::new(),
        };
        for section in sections(text)? {
            let header = section.header.as_str();
            if header == "[workspace.package]" {
                workspace.package.extend(entries(&section.lines)?);
            } else if header == "[workspace.dependencies]" {
                workspace.dependencies.extend(entries(&section.lines)?);
            } else if let Some(rest) = header.strip_prefix("[workspace.lints") {
                let mut lines = vec![format!("[lints{rest}")];
                lines.extend(section.lines.iter().cloned());
                workspace.lints.push(lines.join("\n").trim_end().to_string());
            } else if header.starts_with("[profile.") {
                let mut lines = vec![header.to_string()];
                lines.extend(section.lines.iter().cloned());
                workspace.profiles.push(lines.join("\n").trim_end().to_string());
            }
        }
        Ok(workspace)
    }

    /// The chapter's manifest `chapter`, as a crate of its own.
    pub fn standalone(&self, chapter: &str, changes: &Changes) -> Result<String, String> {
        let mut out = Vec::new();
        for section in sections(chapter)? {
            let header = section.header.as_str();
            if header == "[lints]" {
                let entries = entries(&section.lines)?;
                if entries.get("workspace").map(String::as_str) == Some("true") {
                    if self.lints.is_empty() {
                        return Err("lints.workspace = true, but the workspace has no lints".into());
                    }
                    for lints in &self.lints {
                        out.push(lints.clone());
                        out.push(String::new());
                    }
                    continue;
                }
            }
            if !header.is_empty() {
                out.push(header.to_string());
            }
            let is_package = header == "[package]";
            let is_dependencies = header.trim_end_matches(']').ends_with("dependencies");
            let mut lines = section.lines.iter().peekable();
            while let Some(line) = lines.next() {
                let Some((key, value)) = entry(line) else {
                    out.push(line.clone()); // a comment or a blank line
                    continue;
                };
                let value = whole_value(value, &mut lines)?;
                let rewritten = if is_package {
                    self.package_entry(key, &value, changes)?
                } else if is_dependencies {
                    self.dependency(key, &value, changes)?
                } else if key == "workspace" && value == "true" {
                    return Err(format!("{header}: `workspace = true` is not understood here"));
                } else if key == "name" && unquote(&value).ok().as_deref() == Some(changes.was) {
                    // A `[[bin]]` named after the chapter is named after the student.
                    format!("name = {}", string(changes.name))
                } else {
                    format!("{key} = {value}")
                };
                out.push(rewritten);
            }
        }
        while out.last().is_some_and(|line| line.trim().is_empty()) {
            out.pop();
        }
        let Some(members) = changes.workspace else {
            let mut text = out.join("\n");
            text.push('\n');
            return Ok(text);
        };
        out.push(String::new());
        out.push(
            "# A workspace of its own: this crate is not a member of the workbook's, wherever \
             it is."
                .to_string(),
        );
        out.push("[workspace]".to_string());
        if !members.is_empty() {
            let quoted: Vec<String> = members.iter().map(|member| string(member)).collect();
            out.push(format!("members = [{}]", quoted.join(", ")));
        }
        if !self.profiles.is_empty() {
            out.push(String::new());
            out.push("# As the workbook builds its chapters.".to_string());
            out.push(self.profiles.join("\n\n"));
        }
        let mut text = out.join("\n");
        text.push('\n');
        Ok(text)
    }

    /// One `key = value` of `[package]`: the name and description are the lab's, and what
    /// the chapter takes from the workspace is written out.
    fn package_entry(&self, key: &str, value: &str, changes: &Changes) -> Result<String, String> {
        let inherited = |base: &str| {
            self.package
                .get(base)
                .map(|value| format!("{base} = {value}"))
                .ok_or(format!("package.{base} comes from the workspace, which does not set it"))
        };
        match key {
            "name" => Ok(format!("name = {}", string(changes.name))),
            "description" => Ok(format!("description = {}", string(changes.description))),
            _ => match key.strip_suffix(".workspace") {
                Some(base) if value == "true" => inherited(base),
                _ if table(value)?.iter().any(|(k, v)| k == "workspace" && v == "true") => {
                    inherited(key)
                }
                _ => Ok(format!("{key} = {value}")),
            },
        }
    }

    /// One dependency: `nix.workspace = true`, or `nix = { workspace = true, features =
    /// [...] }`, written out as the workspace has it, with the chapter's additions; a path
    /// made what the lab names that folder by ([`Changes::locate`]).
    fn dependency(&self, key: &str, value: &str, changes: &Changes) -> Result<String, String> {
        let (name, mut fields) = match key.strip_suffix(".workspace") {
            Some(name) if value == "true" => (name, vec![("workspace".into(), "true".into())]),
            Some(_) => return Err(format!("{key} = {value}: expected `true`")),
            None => (key, table(value)?),
        };
        let inherits = fields.iter().any(|(k, v)| k == "workspace" && v == "true");
        let mut written: Vec<(String, String)> = if inherits {
            let Some(workspace) = self.dependencies.get(name) else {
                return Err(format!("{name} comes from the workspace, which does not list it"));
            };
            fields.retain(|(k, _)| k != "workspace");
            let mut written = Vec::new();
            for (k, v) in table(workspace)? {
                match k.as_str() {
                    "path" => written.extend((changes.locate)(&unquote(&v)?)?),
                    _ => written.push((k, v)),
                }
            }
            written
        } else {
            // The chapter's own: a path is from the chapter's folder.
            let mut written = Vec::new();
            for (k, v) in fields.drain(..) {
                match k.as_str() {
                    "path" if unquote(&v)?.starts_with('/') => {
                        return Err(format!("{name}: an absolute path cannot leave the workbook"))
                    }
                    "path" => {
                        let path = format!("{}/{}", changes.chapter_folder, unquote(&v)?);
                        written.extend((changes.locate)(&normalize(&path))?);
                    }
                    _ => written.push((k, v)),
                }
            }
            written
        };
        // What the chapter adds to the workspace's: features add up, the rest overrides.
        for (k, v) in fields {
            match written.iter_mut().find(|(old, _)| *old == k) {
                Some((_, old)) if k == "features" => *old = union(old, &v)?,
                Some((_, old)) => *old = v,
                None => written.push((k, v)),
            }
        }
        Ok(match written.as_slice() {
            [(k, version)] if k == "version" => format!("{name} = {version}"),
            _ => {
                let fields: Vec<String> =
                    written.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                format!("{name} = {{ {} }}", fields.join(", "))
            }
        })
    }
}

/// A `[header]` and the lines under it (the lines before the first header have none).
struct Section {
    header: String,
    lines: Vec<String>,
}

fn sections(text: &str) -> Result<Vec<Section>, String> {
    let mut sections = vec![Section { header: String::new(), lines: Vec::new() }];
    let mut open = 0;
    for line in text.lines() {
        let trimmed = strip_comment(line).trim();
        if open == 0 && trimmed.starts_with('[') && !trimmed.contains('=') {
            sections.push(Section { header: trimmed.to_string(), lines: Vec::new() });
            continue;
        }
        open += depth(trimmed);
        if open < 0 {
            return Err(format!("a bracket closes that never opened: {line}"));
        }
        if let Some(section) = sections.last_mut() {
            section.lines.push(line.to_string());
        }
    }
    Ok(sections)
}

/// The key and value of a `key = value` line, or `None` for a comment or a blank line.
fn entry(line: &str) -> Option<(&str, &str)> {
    let line = strip_comment(line).trim();
    let (key, value) = line.split_once('=')?;
    Some((key.trim(), value.trim()))
}

/// `first`, with the lines that follow it while a bracket it opened is still open.
fn whole_value<'a>(
    first: &str, lines: &mut impl Iterator<Item = &'a String>,
) -> Result<String, String> {
    let mut value = first.to_string();
    let mut open = depth(first);
    while open > 0 {
        let next = lines.next().ok_or(format!("a value never ends: {first}"))?;
        let next = strip_comment(next).trim();
        open += depth(next);
        value.push(' ');
        value.push_str(next);
    }
    Ok(value)
}

/// Every `key = value` of these lines (values over several lines joined).
fn entries(lines: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut found = BTreeMap::new();
    let mut lines = lines.iter();
    while let Some(line) = lines.next() {
        if let Some((key, value)) = entry(line) {
            found.insert(key.to_string(), whole_value(value, &mut lines)?);
        }
    }
    Ok(found)
}

/// How many more brackets this text opens than it closes, outside strings.
fn depth(text: &str) -> i32 {
    let mut depth = 0;
    let mut quote = None;
    let mut escaped = false;
    for c in text.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' => quote = Some(c),
                '[' | '{' => depth += 1,
                ']' | '}' => depth -= 1,
                _ => {}
            },
        }
    }
    depth
}

/// `line` without a `# comment` (a `#` inside a string is not one).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut escaped = false;
    for (at, c) in line.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => return &line[..at],
            None => {}
        }
    }
    line
}

/// The fields of an inline table `{ a = 1, b = [2, 3] }`, in order; a version string
/// (`"0.26"`) is the table `{ version = "0.26" }`.
fn table(value: &str) -> Result<Vec<(String, String)>, String> {
    let value = value.trim();
    if value.starts_with('"') || value.starts_with('\'') {
        return Ok(vec![("version".to_string(), value.to_string())]);
    }
    let inside = value
        .strip_prefix('{')
        .and_then(|rest| rest.strip_suffix('}'))
        .ok_or(format!("expected a version or an inline table: {value}"))?;
    let mut fields = Vec::new();
    for part in split_top_level(inside) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (key, value) =
            part.split_once('=').ok_or(format!("expected `key = value` in {{ {inside} }}"))?;
        fields.push((key.trim().to_string(), value.trim().to_string()));
    }
    Ok(fields)
}

/// `text` split at the commas that are outside strings and brackets.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut open = 0;
    let mut quote = None;
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' => quote = Some(c),
                '[' | '{' => open += 1,
                ']' | '}' => open -= 1,
                ',' if open == 0 => {
                    parts.push(&text[start..at]);
                    start = at + 1;
                }
                _ => {}
            },
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The text of a TOML string: `"a\"b"` is `a"b`, `'a\b'` is `a\b`.
fn unquote(value: &str) -> Result<String, String> {
    let value = value.trim();
    if let Some(literal) = value.strip_prefix('\'').and_then(|rest| rest.strip_suffix('\'')) {
        return Ok(literal.to_string());
    }
    let inside = value
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .ok_or(format!("expected a string: {value}"))?;
    let mut text = String::new();
    let mut chars = inside.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('\\') => text.push('\\'),
                Some('"') => text.push('"'),
                Some('t') => text.push('\t'),
                other => return Err(format!("an escape this cannot read: \\{other:?}")),
            },
            (c, false) => text.push(c),
        }
    }
    Ok(text)
}

/// `text` as a TOML string.
pub fn string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The features of both arrays, each once, in order.
fn union(old: &str, new: &str) -> Result<String, String> {
    let mut features = strings(old)?;
    for feature in strings(new)? {
        if !features.contains(&feature) {
            features.push(feature);
        }
    }
    let quoted: Vec<String> = features.iter().map(|feature| string(feature)).collect();
    Ok(format!("[{}]", quoted.join(", ")))
}

/// The strings of an array of strings.
fn strings(array: &str) -> Result<Vec<String>, String> {
    let inside = array
        .trim()
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .ok_or(format!("expected an array: {array}"))?;
    split_top_level(inside)
        .into_iter()
        .filter(|part| !part.trim().is_empty())
        .map(unquote)
        .collect()
}

/// `a/b/../c` as `a/c`.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|last| *last != "..") => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

#[cfg(test)]
#[path = "cargo_toml_tests.rs"]
mod tests;
