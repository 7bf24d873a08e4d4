//! `mm-check-rules` as a user runs it: a valid rule set is summed up (exit
//! 0), an invalid one gets the error naming its world, rule and field
//! (exit 1), and nothing is started either way.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const GOOD: &str = r#"{
  "attributes": {
    "mode": {"type": "stringList", "values": ["ctf", "dm", "koth", "tdm"], "maxItems": 4},
    "platform": {"type": "string", "missing": "refuse"},
    "level": {"type": "number", "min": 0, "max": 100},
    "league": {"type": "number", "source": "trusted", "default": 1}
  },
  "attributeStore": {"writerScope": "mm/attributes.write"},
  "worlds": [
    {"name": "arena", "teamSize": 2, "rules": [
      {"name": "modes", "type": "intersection", "attribute": "mode"},
      {"name": "samePlatform", "type": "equality", "attribute": "platform",
       "optionalAfterSeconds": 60},
      {"name": "level", "type": "distance", "attribute": "level", "max": 10,
       "relax": {"perSecond": 0.5, "limit": 40}}
    ]},
    {"name": "casual", "teamSize": 4, "attributes": ["league"]}
  ]
}"#;

/// GOOD with the arena's distance rule given a negative max.
fn bad() -> String {
    GOOD.replace(r#""max": 10,"#, r#""max": -1,"#)
}

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mm-check-rules"));
    cmd.args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("mm-check-rules starts");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.unwrap_or("").as_bytes())
        .expect("stdin written");
    drop(input);
    child.wait_with_output().expect("mm-check-rules ends")
}

/// `text` in a file of its own (under cargo's directory for test files).
fn file(name: &str, text: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("check-rules-{}-{name}.json", std::process::id()));
    std::fs::write(&path, text).expect("rule set written");
    path
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_valid_rule_set_is_summed_up() {
    let path = file("good", GOOD);
    let out = run(&[path.to_str().unwrap()], None);
    assert_eq!(
        (out.status.code(), text(&out.stdout), text(&out.stderr)),
        (
            Some(0),
            "ok: 2 worlds (arena, casual), 4 attributes, 3 rules\n".to_owned(),
            String::new()
        )
    );
    let out = run(&["-"], Some(GOOD));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "ok: 2 worlds (arena, casual), 4 attributes, 3 rules\n"
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn an_invalid_rule_set_names_the_world_rule_and_field() {
    let path = file("bad", &bad());
    let out = run(&[path.to_str().unwrap()], None);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        err,
        format!(
            "mm-check-rules: {}: world \"arena\": rules[2] (\"level\"): max: must be a number >= 0, got -1\n",
            path.display()
        )
    );
    let out = run(&["-"], Some(&bad()));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("mm-check-rules: <stdin>: world \"arena\": rules[2]"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_file(path);

    let unknown = GOOD.replace(
        r#""attribute": "mode"}"#,
        r#""attribute": "mode", "weight": 2}"#,
    );
    let out = run(&["-"], Some(&unknown));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("world \"arena\": rules[0] (\"modes\"): unknown field `weight`"),
        "{err}"
    );
}

#[test]
fn help_unreadable_files_and_wrong_command_lines() {
    let out = run(&["--help"], None);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("usage: mm-check-rules <file>"));

    let out = run(&["/nonexistent/rules.json"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("mm-check-rules: cannot read /nonexistent/rules.json:"));

    for args in [&[][..], &["a.json", "b.json"], &["--verbose"]] {
        let out = run(args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).starts_with("usage:"), "{args:?}");
    }
}
