//! The gradebook's formats, read back: the JSON by a tiny reader of our own (strict: what
//! it accepts, any JSON parser does), the JUnit XML against a fixture, and both escapes
//! on the characters that break them.

use super::*;
use crate::chapters;
use crate::probes;

/// A JSON value, as the tiny reader below reads it.
#[derive(Debug, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(f64),
    Text(String),
    List(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The member `key` of an object.
    fn get(&self, key: &str) -> &Json {
        match self {
            Json::Object(members) => members
                .iter()
                .find(|(name, _)| name == key)
                .map(|(_, value)| value)
                .unwrap_or_else(|| panic!("no {key:?} in {self:?}")),
            _ => panic!("{self:?} is not an object"),
        }
    }

    fn text(&self) -> &str {
        match self {
            Json::Text(text) => text,
            _ => panic!("{self:?} is not a string"),
        }
    }

    fn number(&self) -> f64 {
        match self {
            Json::Number(number) => *number,
            _ => panic!("{self:?} is not a number"),
        }
    }

    fn list(&self) -> &[Json] {
        match self {
            Json::List(items) => items,
            _ => panic!("{self:?} is not a list"),
        }
    }
}

/// Reads one JSON document, all of `text` (but white space around it), or says where it
/// is not JSON.
fn read_json(text: &str) -> Result<Json, String> {
    let mut reader = Reader { text: text.as_bytes(), at: 0 };
    let value = reader.value()?;
    reader.space();
    match reader.at == reader.text.len() {
        true => Ok(value),
        false => Err(format!("more after the document, at {}", reader.at)),
    }
}

struct Reader<'a> {
    text: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn space(&mut self) {
        while self.text.get(self.at).is_some_and(|b| b" \t\r\n".contains(b)) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        self.space();
        match self.text.get(self.at) {
            Some(&b) if b == byte => {
                self.at += 1;
                Ok(())
            }
            other => Err(format!("expected {:?} at {}, found {other:?}", byte as char, self.at)),
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.space();
        let rest = &self.text[self.at..];
        for (word, value) in [("null", Json::Null), ("true", Json::Bool(true))] {
            if rest.starts_with(word.as_bytes()) {
                self.at += word.len();
                return Ok(value);
            }
        }
        if rest.starts_with(b"false") {
            self.at += 5;
            return Ok(Json::Bool(false));
        }
        match rest.first() {
            Some(b'"') => self.string().map(Json::Text),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.space();
                if self.text.get(self.at) == Some(&b']') {
                    self.at += 1;
                    return Ok(Json::List(items));
                }
                loop {
                    items.push(self.value()?);
                    self.space();
                    match self.text.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return Ok(Json::List(items));
                        }
                        other => return Err(format!("a list goes on with {other:?}")),
                    }
                }
            }
            Some(b'{') => {
                self.at += 1;
                let mut members = Vec::new();
                self.space();
                if self.text.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    return Ok(Json::Object(members));
                }
                loop {
                    self.space();
                    let key = self.string()?;
                    self.expect(b':')?;
                    members.push((key, self.value()?));
                    self.space();
                    match self.text.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(Json::Object(members));
                        }
                        other => return Err(format!("an object goes on with {other:?}")),
                    }
                }
            }
            _ => {
                let length =
                    rest.iter().take_while(|b| b.is_ascii_digit() || b"-+.eE".contains(b)).count();
                let number = std::str::from_utf8(&rest[..length]).map_err(|e| e.to_string())?;
                self.at += length;
                number.parse().map(Json::Number).map_err(|_| format!("no value: {number:?}"))
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            let byte = *self.text.get(self.at).ok_or("a string never ends")?;
            self.at += 1;
            match byte {
                b'"' => return String::from_utf8(out).map_err(|e| e.to_string()),
                b'\\' => {
                    let escaped = *self.text.get(self.at).ok_or("an escape never ends")?;
                    self.at += 1;
                    let c = match escaped {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'u' => {
                            let hex = self.text.get(self.at..self.at + 4).ok_or("short \\u")?;
                            self.at += 4;
                            let hex = std::str::from_utf8(hex).map_err(|e| e.to_string())?;
                            let code = u32::from_str_radix(hex, 16).map_err(|e| e.to_string())?;
                            char::from_u32(code).ok_or("a surrogate, which we never write")?
                        }
                        other => return Err(format!("no escape \\{}", other as char)),
                    };
                    out.extend(c.to_string().as_bytes());
                }
                byte if byte < 0x20 => return Err(format!("a raw control byte {byte:#x}")),
                byte => out.push(byte),
            }
        }
    }
}

/// Strings that break a careless writer: quotes, backslashes, every control character,
/// what JavaScript alone treats as a line's end, and letters beyond ASCII.
fn hard_strings() -> Vec<String> {
    let controls: String = (0u8..0x20).map(char::from).collect();
    vec![
        String::new(),
        "plain".to_string(),
        r#"a "quoted" \ back\slash, a / and a \n that is not one"#.to_string(),
        controls,
        "\u{7f} \u{2028}\u{2029} é ✓ 🦀 <&> ]]> '".to_string(),
    ]
}

#[test]
fn json_strings_read_back_as_written() {
    for text in hard_strings() {
        let written = json_string(&text);
        assert_eq!(read_json(&written), Ok(Json::Text(text.clone())), "{written}");
        assert!(!written.chars().any(|c| u32::from(c) < 0x20), "raw control in {written:?}");
    }
    assert_eq!(json_string("\u{1}\u{1f}"), r#""\u0001\u001f""#);
    // The reader refuses what JSON refuses, so that it proves something.
    assert!(read_json("\"a\nb\"").is_err());
    assert!(read_json(r#"{"a": 1,}"#).is_err());
    assert!(read_json(r#"{"a": 1} x"#).is_err());
}

fn chapter_3() -> &'static Chapter {
    chapters::chapter(3).expect("chapter 3")
}

fn probe(name: &str) -> &'static crate::probes::Probe {
    probes::find(name).unwrap_or_else(|| panic!("no probe {name}"))
}

/// Four checks of a reader's server held to chapter 3, one of each kind but "ahead".
fn made_up() -> (Vec<Checked>, Vec<Duration>) {
    let checked = vec![
        (chapter_3(), probe("ipv6_host"), Verdict::Skipped("no IPv6 \"here\"".to_string())),
        (chapter_3(), probe("hello"), Verdict::Pass),
        (
            chapter_3(),
            probe("keep_alive"),
            Verdict::Fail(
                Failure::Lacks,
                "held to ch03-event-loop, it should have \"keep-alive\", but <closed> & gone\n\
                 second line\u{1b}[0m"
                    .to_string(),
            ),
        ),
        (
            chapter_3(),
            probe("header_timeout"),
            Verdict::ExpectedLimitation { why: "no timers", seen: "waited 2 s".to_string() },
        ),
    ];
    let took = [0.0, 0.021, 1.5, 2.25].map(Duration::from_secs_f64).to_vec();
    (checked, took)
}

fn made_up_run<'a>(checked: &'a [Checked], took: &'a [Duration]) -> Run<'a> {
    Run {
        checked,
        took,
        chapter: Some(chapter_3()),
        server: "./my \"server\"",
        elapsed: Duration::from_millis(2600),
        exit_status: report::exit_status(checked, false),
    }
}

#[test]
fn the_json_is_one_object_per_check_and_the_summary() {
    let (checked, took) = made_up();
    let text = json(&made_up_run(&checked, &took));
    let document = read_json(&text).unwrap_or_else(|error| panic!("{error}:\n{text}"));
    let checks = document.get("checks").list();
    assert_eq!(checks.len(), 4);
    // One check a line, for a reader with grep.
    assert_eq!(text.lines().filter(|line| line.starts_with("  {\"chapter\"")).count(), 4);
    let keep_alive = &checks[2];
    assert_eq!(keep_alive.get("name").text(), "keep_alive");
    assert_eq!(keep_alive.get("row").text(), "keep-alive and pipelining");
    assert_eq!(keep_alive.get("row_name").text(), "keep-alive");
    assert_eq!(keep_alive.get("verdict").text(), "fail-lacks");
    assert_eq!(keep_alive.get("seconds").number(), 1.5);
    assert!(keep_alive.get("message").text().ends_with("gone\nsecond line\u{1b}[0m"));
    let words: Vec<&str> = checks.iter().map(|check| check.get("verdict").text()).collect();
    assert_eq!(words, ["skipped", "pass", "fail-lacks", "expected"]);
    assert_eq!(checks[3].get("message").text(), "no timers\nseen: waited 2 s");
    assert_eq!(checks[1].get("message").text(), "");

    let summary = document.get("summary");
    for (key, count) in [("checks", 4.0), ("pass", 1.0), ("expected", 1.0), ("fail", 1.0)] {
        assert_eq!(summary.get(key).number(), count, "{key}");
    }
    assert_eq!(summary.get("fail-lacks").number(), 1.0);
    assert_eq!(summary.get("skipped").number(), 1.0);
    let why = &summary.get("skipped_why").list()[0];
    assert_eq!((why.get("why").text(), why.get("checks").number()), ("no IPv6 \"here\"", 1.0));
    assert_eq!(summary.get("chapter").number(), 3.0);
    assert_eq!(summary.get("chapter_name").text(), "ch03-event-loop");
    assert_eq!(summary.get("server").text(), "./my \"server\"");
    assert_eq!(summary.get("exit_status").number(), 1.0);
    assert_eq!(summary.get("seconds").number(), 2.6);
    assert_eq!(summary.get("line").text(), report::summary_line(&checked));
}

#[test]
fn a_run_of_no_single_chapter_says_null() {
    let (checked, took) = made_up();
    let run = Run { chapter: None, ..made_up_run(&checked, &took) };
    let document = read_json(&json(&run)).expect("JSON");
    assert_eq!(document.get("summary").get("chapter"), &Json::Null);
}

/// The five entities and the numeric references, undone: what an XML parser reads.
fn unescape_xml(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let end = rest[at..].find(';').expect("an entity ends") + at;
        let entity = &rest[at + 1..end];
        out.push(match entity {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            number => {
                let code = number.strip_prefix('#').expect("a character reference");
                char::from_u32(code.parse().expect("decimal")).expect("a character")
            }
        });
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// What XML 1.0 allows in a document at all.
fn xml_allows(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r')
        || (u32::from(c) >= 0x20 && !matches!(c, '\u{fffe}' | '\u{ffff}'))
}

#[test]
fn xml_escapes_read_back_as_written_but_what_xml_cannot_hold() {
    for text in hard_strings() {
        // What XML cannot hold is written as Rust writes it; everything else reads back.
        let expected: String =
            text.chars()
                .map(|c| {
                    if xml_allows(c) {
                        c.to_string()
                    } else {
                        format!("\\u{{{:x}}}", u32::from(c))
                    }
                })
                .collect();
        let attribute = xml_attribute(&text);
        let inner = attribute.strip_prefix('"').and_then(|a| a.strip_suffix('"')).expect("quoted");
        assert!(!inner.contains(['"', '<', '>', '\n', '\r', '\t']), "{attribute}");
        assert_eq!(unescape_xml(inner), expected, "{attribute}");
        let written = xml_text(&text);
        assert!(!written.contains(['<', '>']) && written.chars().all(xml_allows), "{written:?}");
        assert_eq!(unescape_xml(&written), expected, "{written}");
    }
    assert_eq!(xml_text("a\u{1b}[0m & <b>"), "a\\u{1b}[0m &amp; &lt;b&gt;");
    assert_eq!(xml_attribute("say \"hi\"\nbye"), "\"say &quot;hi&quot;&#10;bye\"");
}

#[test]
fn the_junit_xml_is_a_testsuite_per_row_and_a_testcase_per_check() {
    let (checked, took) = made_up();
    let expected = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="suite: ./my &quot;server&quot; held to ch03-event-loop" tests="4" failures="1" errors="0" skipped="1" time="2.600">
  <testsuite name="routes, HEAD, errors, bad input, big files intact" tests="2" failures="0" errors="0" skipped="1" time="0.021">
    <properties>
      <property name="row" value="basics"/>
      <property name="chapter" value="ch03-event-loop"/>
      <property name="expected" value="has it"/>
    </properties>
    <testcase name="ipv6_host" classname="basics" time="0.000">
      <skipped message="no IPv6 &quot;here&quot;"/>
    </testcase>
    <testcase name="hello" classname="basics" time="0.021"/>
  </testsuite>
  <testsuite name="keep-alive and pipelining" tests="1" failures="1" errors="0" skipped="0" time="1.500">
    <properties>
      <property name="row" value="keep-alive"/>
      <property name="chapter" value="ch03-event-loop"/>
      <property name="expected" value="has it"/>
    </properties>
    <testcase name="keep_alive" classname="keep-alive" time="1.500">
      <failure message="held to ch03-event-loop, it should have &quot;keep-alive&quot;, but &lt;closed&gt; &amp; gone" type="fail-lacks">held to ch03-event-loop, it should have "keep-alive", but &lt;closed&gt; &amp; gone
second line\u{1b}[0m</failure>
    </testcase>
  </testsuite>
  <testsuite name="idle, header and send timeouts" tests="1" failures="0" errors="0" skipped="0" time="2.250">
    <properties>
      <property name="row" value="timeouts"/>
      <property name="chapter" value="ch03-event-loop"/>
      <property name="expected" value="lacks it"/>
    </properties>
    <testcase name="header_timeout" classname="timeouts" time="2.250">
      <system-out>expected: no timers
seen: waited 2 s</system-out>
    </testcase>
  </testsuite>
</testsuites>
"#;
    let written = junit(&made_up_run(&checked, &took));
    assert_eq!(written, expected, "\n{written}");
}

#[test]
fn every_verdict_has_its_word() {
    let verdicts = [
        Verdict::Pass,
        Verdict::Ahead { why: "" },
        Verdict::ExpectedLimitation { why: "", seen: String::new() },
        Verdict::Fail(Failure::Broken, String::new()),
        Verdict::Fail(Failure::Lacks, String::new()),
        Verdict::Fail(Failure::Exceeds, String::new()),
        Verdict::Skipped(String::new()),
    ];
    let words: Vec<&str> = verdicts.iter().map(verdict_word).collect();
    assert_eq!(words, VERDICTS);
}
