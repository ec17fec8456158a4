/// What a migration does, dialect aside: the tables, columns and indexes it
/// creates (`create table t`, `alter table t add column c`, `create index i`).
/// A full-text index is an index on Postgres (GIN) and a virtual table on
/// SQLite (FTS5); both carry the same name.
fn schema_changes(sql: &str) -> Vec<String> {
    let words: Vec<String> = sql
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .flat_map(|l| l.split(|c: char| c.is_whitespace() || c == '(' || c == ';'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let next = |k: usize| words.get(i + k).cloned().unwrap_or_default();
        match (w.as_str(), next(1).as_str()) {
            ("create", "table") => out.push(format!("table {}", next(2))),
            ("create", "index") => out.push(format!("index {}", next(2))),
            ("create", "unique") => out.push(format!("index {}", next(3))),
            ("create", "virtual") => out.push(format!("index {}", next(3))),
            ("add", "column") => out.push(format!("column {}", next(2))),
            _ => {}
        }
    }
    out
}

#[test]
fn migration_folders_stay_in_step() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    let read = |dialect: &str| {
        let mut files: Vec<(String, Vec<String>)> = std::fs::read_dir(dir.join(dialect))
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, schema_changes(&std::fs::read_to_string(&p).unwrap()))
            })
            .collect();
        files.sort();
        files
    };
    let (pg, lite) = (read("postgres"), read("sqlite"));
    assert!(!pg.is_empty());
    assert_eq!(
        pg, lite,
        "every migration exists for both databases and makes the same changes"
    );
}

#[test]
fn sqlite_paths() {
    assert_eq!(
        super::sqlite_path("sqlite:///a/b.db?mode=rwc").as_deref(),
        Some("/a/b.db")
    );
    assert_eq!(super::sqlite_path("sqlite::memory:"), None);
}

#[test]
fn sqlite_files_are_created_unless_a_mode_is_given() {
    use super::creating_sqlite_file as c;
    assert_eq!(c("sqlite:///a/b.db"), "sqlite:///a/b.db?mode=rwc");
    assert_eq!(
        c("sqlite:///a/b.db?cache=shared"),
        "sqlite:///a/b.db?cache=shared&mode=rwc"
    );
    assert_eq!(c("sqlite:///a/b.db?mode=ro"), "sqlite:///a/b.db?mode=ro");
    assert_eq!(c("sqlite::memory:"), "sqlite::memory:");
}
