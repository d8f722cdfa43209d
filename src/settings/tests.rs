use std::collections::HashMap;
use std::path::Path;

use super::reference::{self, TABLE_END, TABLE_START};
use super::*;

fn load(file: Option<&Path>, env: &[(&str, &str)], flags: &[(&str, &str)]) -> Result<Loaded, SettingsError> {
    let env: HashMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let read = move |name: &str| env.get(name).cloned();
    let flags = flags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Settings::load(&Sources { file, env: &read, flags })
}

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agentd-settings-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("agentd.toml");
    std::fs::write(&path, text).expect("write");
    path
}

#[test]
fn every_setting_is_a_field_and_every_field_a_setting() {
    let defaults = toml::Value::try_from(Settings::default()).expect("defaults serialize");
    let mut fields: Vec<&str> = defaults.as_table().expect("table").keys().map(String::as_str).collect();
    // Unset options do not serialize: add them back from the table's own knowledge.
    for setting in SETTINGS.iter().filter(|s| !s.unset.is_empty()) {
        fields.push(setting.key);
    }
    fields.retain(|f| *f != "providers");
    fields.sort();
    fields.dedup();
    let mut keys: Vec<&str> = SETTINGS.iter().map(|s| s.key).collect();
    keys.sort();
    assert_eq!(fields, keys);
    // A setting without a default value says what its absence means.
    let serialized = defaults.as_table().expect("table");
    for setting in SETTINGS {
        let empty = serialized.get(setting.key).is_none_or(|v| v.as_str() == Some(""));
        assert_eq!(empty, !setting.unset.is_empty(), "{}", setting.key);
    }
}

#[test]
fn layers_override_in_order_and_say_where_each_value_came_from() {
    let file = temp_file("layers", "workers = 8\nlease_s = 12\nrole = \"worker\"\nretention_days = 3\n");
    let loaded = load(
        Some(&file),
        &[("AGENTD_LEASE_S", "20"), ("AGENTD_RETENTION_DAYS", "4"), ("AGENTD_API_KEYS", "")],
        &[("retention_days", "5"), ("fake_llm", "true")],
    )
    .expect("valid");
    let s = &loaded.settings;
    assert_eq!((s.workers, s.lease_s, s.retention_days, s.role), (8, 20, 5, Role::Worker));
    assert!(s.fake_llm);
    assert_eq!(s.api_keys, None, "an empty variable is an unset one");
    assert_eq!(s.db_max_connections, 16);
    assert_eq!(loaded.source_of("workers"), format!("the file {}", file.display()));
    assert_eq!(loaded.source_of("lease_s"), "environment AGENTD_LEASE_S");
    assert_eq!(loaded.source_of("retention_days"), "command line --retention-days");
    assert_eq!(loaded.source_of("db_max_connections"), "default");
    assert_eq!(s.dir.as_deref(), file.parent());
}

#[test]
fn a_bad_value_names_its_key_its_layer_and_what_is_expected() {
    let error = load(None, &[("AGENTD_WORKERS", "lots")], &[]).expect_err("not a number").to_string();
    assert_eq!(
        error,
        "setting workers (from environment AGENTD_WORKERS): expected a whole number from 1 to 10000, found \"lots\""
    );
    let error = load(None, &[("AGENTD_FAKE_LLM", "maybe")], &[]).expect_err("not a switch").to_string();
    assert!(error.starts_with("setting fake_llm (from environment AGENTD_FAKE_LLM): "), "{error}");
    assert!(error.contains("maybe") && error.contains("bool"), "{error}");

    let error = load(None, &[], &[("workers", "0")]).expect_err("out of range").to_string();
    assert_eq!(
        error,
        "setting workers (from command line --workers): 0 is out of range: expected a whole number from 1 to 10000"
    );
    let error = load(None, &[("AGENTD_LEASE_S", "-3")], &[]).expect_err("negative").to_string();
    assert_eq!(
        error,
        "setting lease_s (from environment AGENTD_LEASE_S): expected a whole number from 1 to 3600"
    );

    let file = temp_file("bad", "wrokers = 3\n");
    let error = load(Some(&file), &[], &[]).expect_err("unknown key").to_string();
    assert!(error.contains("wrokers") && error.contains(&file.display().to_string()), "{error}");

    let file = temp_file("role", "role = \"chef\"\n");
    let error = load(Some(&file), &[], &[]).expect_err("unknown role").to_string();
    assert!(error.starts_with("setting role (from the file ") && error.contains("chef"), "{error}");

    let missing = Path::new("/nonexistent/agentd.toml");
    let error = load(Some(missing), &[], &[]).expect_err("missing file").to_string();
    assert!(error.starts_with("cannot read the settings file /nonexistent/agentd.toml"), "{error}");
}

#[test]
fn switches_and_numbers_read_from_the_environment_as_clap_did() {
    for (text, expected) in [("true", true), ("1", true), ("yes", true), ("false", false), ("0", false)] {
        let loaded = load(None, &[("AGENTD_FAKE_LLM", text)], &[]).expect("a switch");
        assert_eq!(loaded.settings.fake_llm, expected, "{text}");
    }
    // A key made only of digits is still a string.
    let loaded = load(None, &[("AGENTD_API_KEYS", "12345")], &[]).expect("keys");
    assert_eq!(loaded.settings.api_keys.as_deref(), Some("12345"));
    let loaded = load(None, &[("AGENTD_BIND", "0.0.0.0:9000")], &[]).expect("bind");
    assert_eq!(loaded.settings.bind.port(), 9000);
}

#[test]
fn effective_settings_redact_secrets_and_show_sources() {
    let file = temp_file(
        "effective",
        "[providers.groq]\nbase_url = \"https://api.groq.com/openai/v1\"\napi_key_env = \"GROQ_API_KEY\"\n",
    );
    let loaded = load(
        Some(&file),
        &[("AGENTD_API_KEYS", "sk-live-123"), ("DATABASE_URL", "postgres://u:pw@db/x")],
        &[("workers", "7")],
    )
    .expect("valid");
    let shown = reference::effective(&loaded);
    assert!(!shown.contains("sk-live-123") && !shown.contains("pw@db"), "{shown}");
    assert!(shown.contains("api_keys = \"<redacted>\"  # environment AGENTD_API_KEYS"), "{shown}");
    assert!(shown.contains("workers = 7  # command line --workers"), "{shown}");
    assert!(shown.contains("bind = \"127.0.0.1:8080\"  # default"), "{shown}");
    assert!(shown.contains("# secrets_key is not set: none: secrets cannot be used"), "{shown}");
    assert!(shown.contains("[providers.groq]") && shown.contains("GROQ_API_KEY"), "{shown}");
    // What is printed is a settings file that loads to the same settings (secrets aside).
    let reloaded: Settings = toml::from_str(&shown.replace("\"<redacted>\"", "\"x\"")).expect("valid TOML");
    assert_eq!((reloaded.workers, reloaded.providers.len()), (7, 1));
}

#[test]
fn the_example_file_loads_to_the_defaults() {
    let example = reference::example_toml();
    // `#key = value` lines are settings at their defaults (unset ones are `# key = example`).
    let uncommented: Vec<&str> = example
        .lines()
        .filter_map(|line| line.strip_prefix('#'))
        .filter(|line| !line.starts_with(' ') && !line.is_empty())
        .collect();
    assert!(uncommented.len() > 20, "{example}");
    let uncommented = uncommented.join("\n");
    let settings: Settings = toml::from_str(&uncommented).expect("the example's values load");
    assert_eq!(settings, Settings::default(), "{uncommented}");
}

/// The committed reference (docs/configuration.md's table, agentd.example.toml) is what the code
/// generates. `AGENTD_BLESS=1` rewrites them.
#[test]
fn the_committed_reference_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bless = std::env::var_os("AGENTD_BLESS").is_some();
    let example_path = root.join("agentd.example.toml");
    let example = reference::example_toml();
    if bless {
        std::fs::write(&example_path, &example).expect("write the example");
    }
    let committed = std::fs::read_to_string(&example_path).unwrap_or_default();
    assert!(
        committed == example,
        "agentd.example.toml is stale: run `AGENTD_BLESS=1 cargo nextest run settings::`"
    );

    let docs_path = root.join("docs/configuration.md");
    let docs = std::fs::read_to_string(&docs_path).expect("docs/configuration.md");
    let (Some(start), Some(end)) = (docs.find(TABLE_START), docs.find(TABLE_END)) else {
        panic!("docs/configuration.md has no generated settings table ({TABLE_START} ... {TABLE_END})");
    };
    let current = &docs[start..end + TABLE_END.len()];
    let table = reference::markdown_table();
    if bless && current != table {
        std::fs::write(&docs_path, docs.replace(current, &table)).expect("write the docs");
        return;
    }
    assert!(
        current == table,
        "docs/configuration.md's settings table is stale: run `AGENTD_BLESS=1 cargo nextest run settings::`"
    );
}
