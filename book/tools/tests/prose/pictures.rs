//! The hand-drawn diagrams (`book/src/images/*.svg`) read as prose: their words are checked
//! as a page's are. A diagram says which code it depicts (`<!-- depicts: FILE... -->`, or
//! `depicts: none` for a picture of an idea), the names its text writes must be in those
//! files (or outside our code, by the allow-list), and its counts are held as a page's.
//! The lock (`book/tools/src/lock.rs`, `image-NAME`) makes a diagram stale when a file it
//! depicts changes, until somebody has looked at it again.

/// The words of a diagram: its `<title>`, `<desc>`, and each `<text>` and `<tspan>`, each
/// on a line of its own, with entities decoded.
pub fn text_of(svg: &str) -> Vec<String> {
    let mut found = Vec::new();
    for tag in ["title", "desc", "text", "tspan"] {
        let open = format!("<{tag}");
        let mut rest = svg;
        while let Some(start) = rest.find(&open) {
            let after = &rest[start + open.len()..];
            // `<text` must not match `<textPath`, nor `<title` a `<titles`.
            if !after.starts_with(['>', ' ', '\n']) {
                rest = after;
                continue;
            }
            let Some(body_start) = after.find('>') else { break };
            let body = &after[body_start + 1..];
            let end = body.find('<').unwrap_or(body.len());
            let words = body[..end]
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&amp;", "&");
            if !words.trim().is_empty() {
                found.push(words.trim().to_string());
            }
            rest = &body[end..];
        }
    }
    found
}

/// The words of a diagram's text that are names of code: `a::b`, `name(`, `snake_case`,
/// `CamelCase`, `SCREAMING_CASE`. (Prose words, capitalized or not, are not.)
pub fn names_in(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let chars: Vec<char> = line.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if !(c.is_alphabetic() || c == '_')
            || (index > 0 && (chars[index - 1].is_alphanumeric() || chars[index - 1] == '-'))
        {
            index += 1;
            continue;
        }
        let start = index;
        while index < chars.len()
            && (chars[index].is_alphanumeric()
                || chars[index] == '_'
                || (chars[index] == ':'
                    && chars.get(index + 1) == Some(&':')
                    && chars.get(index + 2).is_some_and(|c| c.is_alphabetic())))
        {
            index += if chars[index] == ':' { 2 } else { 1 };
        }
        let word: String = chars[start..index].iter().collect();
        if chars.get(index) == Some(&'-') || (start > 0 && chars[start - 1] == '\\') {
            continue; // `loop-1`, `pool-worker-0`: a thread's name; `\nG`: an escape
        }
        // Units (`KiB`, `MiB`) and plurals of initials (`SQEs`) are prose.
        let initials =
            word.ends_with('s') && word[..word.len() - 1].chars().all(|c| c.is_ascii_uppercase());
        if ["KiB", "MiB", "GiB"].contains(&word.as_str()) || initials {
            continue;
        }
        let call = chars.get(index) == Some(&'(');
        let camel =
            word.chars().skip(1).any(char::is_uppercase) && word.chars().any(char::is_lowercase);
        let snake = word.contains('_') && word.len() > 1;
        let path = word.contains("::");
        if call || camel || snake || path {
            found.push(word);
        }
    }
    found
}
