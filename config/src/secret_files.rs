//! `WEFT_<KEY>_FILE=/path`: any setting read from a file instead of the
//! environment, for secrets mounted as files (Docker and Kubernetes secrets), so
//! they never show in `docker inspect` or a pod spec. `WEFT_ADMIN_TOKEN_FILE`
//! sets `admin_token`, `WEFT_LARK__APP_SECRET_FILE` sets `lark.app_secret`.
//! One trailing line break is dropped (files written by `echo` end in one).
//! Giving both `WEFT_<KEY>` and `WEFT_<KEY>_FILE` is refused: which one wins
//! would be a guess.

use figment::value::{Dict, Value};

use super::ConfigError;

const PREFIX: &str = "WEFT_";
const SUFFIX: &str = "_FILE";

/// The settings named by `WEFT_*_FILE` variables among `vars`, read from their
/// files and nested by `__` as `Env` nests them.
pub(super) fn from_files(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Dict, ConfigError> {
    let vars: Vec<(String, String)> = vars.into_iter().collect();
    let mut settings = Dict::new();
    for (name, path) in &vars {
        let Some(key) = name
            .strip_prefix(PREFIX)
            .and_then(|k| k.strip_suffix(SUFFIX))
            .filter(|k| !k.is_empty())
        else {
            continue;
        };
        let direct = format!("{PREFIX}{key}");
        if vars.iter().any(|(n, _)| *n == direct) {
            return Err(ConfigError::Invalid(format!(
                "both {direct} and {name} are set; keep one"
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::Invalid(format!("{name}: cannot read {path}: {e}")))?;
        let text = text
            .strip_suffix('\n')
            .map(|t| t.strip_suffix('\r').unwrap_or(t))
            .unwrap_or(&text);
        insert(&mut settings, &key.to_ascii_lowercase(), text.to_string());
    }
    Ok(settings)
}

/// Whether an environment variable (its name without `WEFT_`, as `Env` sees it)
/// names a file for [`from_files`] rather than a setting.
pub(super) fn is_file_variable(key: &str) -> bool {
    key.len() > SUFFIX.len() && key.to_ascii_uppercase().ends_with(SUFFIX)
}

fn insert(dict: &mut Dict, key: &str, text: String) {
    match key.split_once("__") {
        None => {
            dict.insert(key.to_string(), Value::from(text));
        }
        Some((section, rest)) => {
            let entry = dict
                .entry(section.to_string())
                .or_insert_with(|| Value::from(Dict::new()));
            if let Value::Dict(_, inner) = entry {
                insert(inner, rest, text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use figment::Figment;
    use figment::providers::Serialized;

    use super::*;
    use crate::Config;

    fn file(name: &str, text: &str) -> String {
        let path = std::env::temp_dir().join(format!("weft-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    fn load(vars: Vec<(String, String)>) -> Result<Config, String> {
        let settings = from_files(vars).map_err(|e| e.to_string())?;
        Figment::from(Serialized::defaults(Config::default()))
            .merge(Serialized::defaults(settings))
            .extract()
            .map_err(|e| e.to_string())
    }

    #[test]
    fn settings_come_from_the_named_files_nested_by_double_underscore() {
        let token = "t".repeat(40);
        let cfg = load(vec![
            (
                "WEFT_ADMIN_TOKEN_FILE".into(),
                file("token", &format!("{token}\n")),
            ),
            (
                "WEFT_LARK__APP_SECRET_FILE".into(),
                file("lark", "s3cret\r\n"),
            ),
            ("WEFT_REDIS_PREFIX".into(), "ignored-here:".into()),
            ("OTHER_FILE".into(), "/nonexistent".into()),
        ])
        .unwrap();
        assert_eq!(cfg.admin_token.unwrap().expose(), token);
        assert_eq!(cfg.lark.app_secret.expose(), "s3cret");
    }

    #[test]
    fn a_missing_file_or_a_second_source_is_refused() {
        let err = load(vec![(
            "WEFT_DATABASE_URL_FILE".into(),
            "/nonexistent/weft-db-url".into(),
        )])
        .unwrap_err();
        assert!(
            err.contains("WEFT_DATABASE_URL_FILE: cannot read /nonexistent/weft-db-url"),
            "{err}"
        );
        let err = load(vec![
            ("WEFT_ADMIN_TOKEN".into(), "x".repeat(40)),
            ("WEFT_ADMIN_TOKEN_FILE".into(), file("both", "y")),
        ])
        .unwrap_err();
        assert!(err.contains("both WEFT_ADMIN_TOKEN and"), "{err}");
    }

    #[test]
    fn file_variables_are_told_apart_from_settings() {
        assert!(is_file_variable("admin_token_file"));
        assert!(is_file_variable("lark.app_secret_file"));
        assert!(!is_file_variable("_file"));
        assert!(!is_file_variable("admin_token"));
    }
}
