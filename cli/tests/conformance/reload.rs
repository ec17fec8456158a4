//! Config reload with rollback (issue 22): `weft.toml` edited and reloaded
//! (`POST /v1/admin/reload`, `SIGHUP`, the web settings) reaches every
//! replica — distributed: two gateways and two workers — while a run started
//! before keeps its config; an invalid config or one that needs a restart
//! changes nothing; the file's agents follow the file without losing an
//! admin's edits; a model removed under a session falls back to the default.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_backends;
use crate::harness::*;

both_backends!(
    a_reload_reaches_every_replica_and_a_bad_one_changes_nothing,
    a_copy_of_the_file_that_lags_is_read_again_when_it_changes,
);

/// The file the test edits: `runs` per minute, the models after `mock`, the
/// helper agent's instructions, and anything else appended.
fn config(runs: u32, models: &[&str], instructions: &str, extra: &str) -> String {
    let mut out = format!(
        "[limits]\nruns_per_minute_per_user = {runs}\n\n[[models]]\nid = \"mock\"\nprovider = \"mock\"\ndefault = true\n"
    );
    for m in models {
        out.push_str(&format!(
            "\n[[models]]\nid = \"{m}\"\nprovider = \"mock\"\n"
        ));
    }
    out.push_str(&format!(
        "\n[[agents]]\nid = \"helper\"\nname = \"Helper\"\ndescription = \"from the file\"\ninstructions = \"{instructions}\"\n"
    ));
    out.push_str(extra);
    out
}

struct Replicas {
    app: App,
    /// Distributed: a second gateway and a second worker.
    second: Option<(Proc, String)>,
    _worker: Option<Proc>,
    file: PathBuf,
}

impl Replicas {
    /// Every gateway's base URL.
    fn bases(&self) -> Vec<String> {
        let mut out = vec![self.app.base.clone()];
        out.extend(self.second.iter().map(|(_, b)| b.clone()));
        out
    }

    /// Replaces the config file whole (a new file renamed over it): a
    /// replica still following the previous reload may read the file at any
    /// moment, and `fs::write` truncates first — caught between the two, it
    /// would load an empty file, every default (once seen in CI: a replica
    /// back at `runs_per_minute_per_user` 60).
    fn write(&self, text: &str) {
        let next = self.file.with_extension("toml.next");
        std::fs::write(&next, text).unwrap();
        std::fs::rename(&next, &self.file).unwrap();
    }

    async fn on(
        &self,
        base: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .app
            .http
            .request(method, format!("{base}{path}"))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    async fn reload(&self) -> (u16, Value) {
        self.on(&self.app.base, Method::POST, "/v1/admin/reload", None)
            .await
    }

    /// The processes besides the gateway the test talks to: the workers and
    /// the second gateway.
    fn others(&self) -> Vec<&Proc> {
        self.app
            .workers
            .iter()
            .chain(self._worker.iter())
            .chain(self.second.iter().map(|(gateway, _)| gateway))
            .collect()
    }

    /// Until every other process has applied config `version` (each logs
    /// it); the gateway that answered the reload has applied it already, and
    /// embedded, the one process has. (The second gateway used to be left
    /// out: a settings change sent to it next could still diff against the
    /// config before the reload.)
    async fn applied(&self, v: &Value) {
        let version = v["version"].as_i64().expect("the reload's version");
        logged_by(&self.others(), "config reloaded", version).await
    }

    /// Until every process — gateways and workers — has logged `needle` for
    /// config `version`.
    async fn logged_everywhere(&self, needle: &str, version: i64) {
        let mut all = self.others();
        all.push(&self.app.gateway);
        logged_by(&all, needle, version).await
    }

    /// Until every gateway shows `runs_per_minute_per_user == runs`; how long it took.
    async fn everywhere(&self, runs: u64) -> Duration {
        let started = Instant::now();
        eventually_with(
            Duration::from_secs(15),
            POLL,
            &format!("every gateway showing runs_per_minute_per_user = {runs}"),
            || self.app.logs(),
            async || {
                for base in self.bases() {
                    let (_, v) = self.on(&base, Method::GET, "/v1/admin/limits", None).await;
                    if v["runs_per_minute_per_user"] != runs {
                        return Err(format!("{base} shows {v}"));
                    }
                }
                Ok(())
            },
        )
        .await;
        started.elapsed()
    }
}

async fn start(b: Backend) -> Replicas {
    let mut env = Env::new(b, &[]).await;
    let file = env.dir.path().join("weft.toml");
    std::fs::write(&file, config(60, &[], "Be brief.", "")).unwrap();
    env.extra
        .push(("WEFT_CONFIG".into(), file.display().to_string()));
    let (second, worker) = match b {
        Backend::Embedded => (None, None),
        Backend::Distributed => {
            let gw = Proc::spawn(
                env.command(&["serve", "--listen", "127.0.0.1:0"]),
                "listening on http://",
            );
            let base = format!("http://{}", gw.addr.clone().unwrap());
            (Some((gw, base)), Some(App::spawn_worker(&env)))
        }
    };
    Replicas {
        app: App::start_in(env, true),
        second,
        _worker: worker,
        file,
    }
}

/// Agent `id` as an admin sees it.
async fn agent(app: &App, id: &str) -> Value {
    let (s, v) = app.get("/v1/agents", ADMIN_TOKEN).await;
    assert_eq!(s, 200, "{v}");
    v["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["id"] == id).cloned())
        .unwrap_or_else(|| panic!("no agent {id}: {v}"))
}

fn changes(v: &Value) -> Vec<String> {
    v["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}: {}",
                c["key"].as_str().unwrap(),
                c["change"].as_str().unwrap()
            )
        })
        .collect()
}

async fn a_reload_reaches_every_replica_and_a_bad_one_changes_nothing(b: Backend) {
    let r = start(b).await;
    let alice = r.app.user("alice").await;
    let session = r.app.session(&alice).await;
    // A run in flight across the reload: ~4 s of tokens.
    let long = r
        .app
        .send(&alice, &session, "@mock.tokens 200 @mock.delay 0 20")
        .await;

    r.write(&config(120, &["fast"], "Be very brief.", ""));
    let (s, v) = r.reload().await;
    assert_eq!(s, 200, "{v}\n{}", r.app.logs());
    let listed = changes(&v);
    for expected in [
        "models.fast: added",
        "limits.runs_per_minute_per_user: 60 → 120",
    ] {
        assert!(listed.iter().any(|c| c == expected), "{listed:?}");
    }
    assert!(
        listed
            .iter()
            .any(|c| c.starts_with("agents.helper: changed") && c.contains("instructions")),
        "{listed:?}"
    );
    let answered = Instant::now();
    let took = r.everywhere(120).await;
    r.applied(&v).await;
    eprintln!(
        "reload reached every gateway in {took:?}, every replica in {:?}",
        answered.elapsed()
    );
    // Every gateway offers the new model, and runs on it (on either worker) work.
    for base in r.bases() {
        let (_, models) = r.on(&base, Method::GET, "/v1/models", None).await;
        assert!(models.to_string().contains("\"fast\""), "{base}: {models}");
    }
    let (s, fast) = r
        .app
        .post("/v1/sessions", &alice, json!({"model": "fast"}))
        .await;
    assert_eq!(s, 201, "{fast}");
    let fast = fast["id"].as_str().unwrap().to_owned();
    for i in 0..4 {
        let run = r
            .app
            .send(&alice, &fast, &format!("@mock.reply on fast {i}"))
            .await;
        let done = r.app.wait_run(&alice, &run, Duration::from_secs(30)).await;
        assert_eq!(done["status"], "succeeded", "{done}");
        assert_eq!(done["model"], "fast", "{done}");
    }
    // The run that started before the reload ended as it began.
    let done = r.app.wait_run(&alice, &long, Duration::from_secs(60)).await;
    assert_eq!(done["status"], "succeeded", "{done}");

    // The file's agent was updated; an admin's edit of another field stays
    // through the next reload, which takes the field the file changed.
    let helper = agent(&r.app, "helper").await;
    assert_eq!(helper["instructions"], "Be very brief.", "{helper}");
    let edited = json!({"name": "Helper", "description": "edited by an admin",
                        "instructions": "Be very brief."});
    let (s, v) = r
        .app
        .call(
            Method::PUT,
            "/v1/admin/agents/helper",
            ADMIN_TOKEN,
            Some(edited),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    r.write(&config(120, &["fast"], "Answer in French.", ""));
    let (s, v) = r.reload().await;
    assert_eq!(s, 200, "{v}");
    let helper = agent(&r.app, "helper").await;
    assert_eq!(
        (&helper["instructions"], &helper["description"]),
        (&json!("Answer in French."), &json!("edited by an admin")),
        "{helper}"
    );

    // Invalid: nothing changes, and the answer names the key.
    r.write(&config(120, &["fast"], "x", "").replace("= 120", "= \"many\""));
    let (s, v) = r.reload().await;
    assert_eq!(s, 422, "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("runs_per_minute_per_user"), "{message}");
    // Needs a restart: refused whole, the limit in the same file not applied.
    r.write(&config(90, &["fast"], "x", "\n[worker]\nconcurrency = 3\n"));
    let (s, v) = r.reload().await;
    assert_eq!(s, 409, "{v}");
    assert_eq!(v["error"]["code"], "needs_restart");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("worker.concurrency")),
        "{v}"
    );
    for base in r.bases() {
        let (_, limits) = r.on(&base, Method::GET, "/v1/admin/limits", None).await;
        assert_eq!(limits["runs_per_minute_per_user"], 120, "{base}: {limits}");
    }

    // A model removed under a session: its next run uses the default, says
    // so, and the session follows.
    r.write(&config(120, &[], "Answer in French.", ""));
    let (s, v) = r.reload().await;
    assert_eq!(s, 200, "{v}");
    assert!(
        changes(&v).contains(&"models.fast: removed".to_owned()),
        "{v}"
    );
    r.applied(&v).await;
    let mut stream = r
        .app
        .send_stream(&alice, &fast, "@mock.reply still here")
        .await;
    let events = stream.until_terminal().await;
    let text = rendered_text(&events);
    assert!(
        text.starts_with(
            "_The model fast is no longer configured; this conversation now uses mock._"
        ),
        "{text}"
    );
    assert!(text.ends_with("still here"), "{text}");
    let (_, s) = r.app.get(&format!("/v1/sessions/{fast}"), &alice).await;
    assert_eq!(s["model"], "mock", "{s}");

    // The web settings: shown, saved over the file, applied everywhere.
    let (s, v) = r
        .on(&r.app.base, Method::GET, "/v1/admin/settings", None)
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["settings"]["limits"]["runs_per_minute_per_user"], 120,
        "{v}"
    );
    let mut limits = v["settings"]["limits"].clone();
    limits["runs_per_minute_per_user"] = json!(30);
    let last = r.bases().last().unwrap().clone();
    let (s, v) = r
        .on(
            &last,
            Method::PUT,
            "/v1/admin/settings",
            Some(json!({"settings": {"limits": limits}})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        changes(&v),
        ["limits.runs_per_minute_per_user: 120 → 30".to_owned()]
    );
    r.everywhere(30).await;
    let (s, v) = r
        .on(
            &last,
            Method::PUT,
            "/v1/admin/settings",
            Some(json!({"settings": {"listen": "0.0.0.0:1"}})),
        )
        .await;
    assert_eq!(s, 422, "{v}");

    // SIGHUP reads the file again (the saved settings still win for limits).
    r.write(&config(120, &["later"], "Answer in French.", ""));
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &r.app.gateway.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    eventually(
        Duration::from_secs(15),
        "every gateway offering the model \"later\"",
        async || {
            for base in r.bases() {
                let (_, models) = r.on(&base, Method::GET, "/v1/models", None).await;
                if !models.to_string().contains("\"later\"") {
                    return Err(format!("{base}: {models}"));
                }
            }
            Ok(())
        },
    )
    .await;
    r.everywhere(30).await;
}

/// Each replica reads its own copy of the file, and copies change at their
/// own time (a ConfigMap reaches each pod's volume late). A reload made with
/// a newer copy — here `weft admin reload` run with the operator's — is
/// followed with the copy each process has, and each then watches its copy:
/// when it changes to what the reload read, it is applied without another
/// reload.
async fn a_copy_of_the_file_that_lags_is_read_again_when_it_changes(b: Backend) {
    let r = start(b).await;
    let newer = config(150, &[], "Be brief.", "");
    let operator = r.file.with_file_name("operator.toml");
    std::fs::write(&operator, &newer).unwrap();
    let out = r
        .app
        .env
        .command(&["admin", "reload"])
        .env("WEFT_CONFIG", &operator)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let version: i64 = said
        .strip_prefix("config version ")
        .and_then(|rest| rest.split(':').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no version in {said:?}"));
    // Every process followed the version with its own (older) copy...
    r.logged_everywhere("differs from the one the reload read", version)
        .await;
    for base in r.bases() {
        let (_, limits) = r.on(&base, Method::GET, "/v1/admin/limits", None).await;
        assert_eq!(limits["runs_per_minute_per_user"], 60, "{base}: {limits}");
    }
    // ...and applies its copy once it catches up, with no second reload. The
    // scenario's own delay, not a wait for a state: the copy changes some
    // polls later, as a ConfigMap's does.
    tokio::time::sleep(4 * weft_store::reload::POLL).await;
    r.write(&newer);
    r.everywhere(150).await;
    r.logged_everywhere("now matches the one the reload read", version)
        .await;
}

/// Until each of `procs` has logged a line with `needle` and
/// `config.version=<version>`.
async fn logged_by(procs: &[&Proc], needle: &str, version: i64) {
    let version = format!("config.version={version}");
    eventually_with(
        Duration::from_secs(15),
        POLL,
        &format!("every process logging {needle:?} for {version}"),
        || {
            procs
                .iter()
                .map(|p| p.logs())
                .collect::<Vec<_>>()
                .join("\n----\n")
        },
        async || {
            let behind = procs
                .iter()
                .filter(|p| {
                    !plain(&p.logs())
                        .lines()
                        .any(|l| l.contains(needle) && l.contains(&version))
                })
                .count();
            match behind {
                0 => Ok(()),
                n => Err(format!("{n} of {} not yet", procs.len())),
            }
        },
    )
    .await
}
