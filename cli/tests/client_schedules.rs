//! `weft schedules …` against a live `weft up`: add (the next fire times
//! printed first), a bad cron refused with its field named, the timezone taken
//! from `--tz`, then `TZ`, then the gateway's default, list, pause and resume,
//! rename, run now (and watching that run), its fire history, remove; and the
//! channels a schedule delivers to — named on add, listed, replaced, cleared —
//! with each fire's deliveries in its history.

mod client_support;

use client_support::{Server, WAIT, api, assert_code, eventually, run, stderr, stdout};

/// `weft schedules ARGS…` with `TZ` as given (none: unset).
fn schedules(s: &Server, tz: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut cmd = s.weft();
    cmd.env_remove("TZ");
    if let Some(tz) = tz {
        cmd.env("TZ", tz);
    }
    cmd.arg("schedules").args(args);
    run(cmd, None)
}

/// The schedule of that name, as the API has it.
fn schedule(s: &Server, name: &str) -> serde_json::Value {
    let (status, body) = api(s, reqwest::Method::GET, "/v1/schedules", None);
    assert_eq!(status, 200, "{body}");
    body["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name)
        .unwrap_or_else(|| panic!("no schedule {name:?} in {body}"))
        .clone()
}

/// Waits for a run to end: the gateway closes its event stream after the
/// terminal event.
fn wait_for_end(s: &Server, run: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let resp = reqwest::Client::new()
            .get(format!("{}/v1/runs/{run}/events", s.url))
            .bearer_auth(&s.token)
            .header("accept", "text/event-stream")
            .timeout(WAIT)
            .send()
            .await
            .expect("the gateway answers");
        assert_eq!(resp.status(), 200);
        let events = resp.text().await.expect("the stream ends with the run");
        assert!(events.contains("event: done"), "{events}");
    });
}

/// The line of `text` that contains `needle`.
fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
}

#[test]
fn a_weekday_schedule_is_previewed_made_paused_run_and_removed_from_the_terminal() {
    let s = Server::start();

    let out = schedules(&s, None, &["list"]);
    assert_code(&out, 0);
    assert!(
        stdout(&out).starts_with("no schedules yet"),
        "{}",
        stdout(&out)
    );

    // Every weekday at 9:00 Shanghai time: the words and three fire times first.
    let out = schedules(
        &s,
        Some("Europe/Berlin"),
        &[
            "add",
            "--name",
            "standup",
            "--cron",
            "0 9 * * 1-5",
            "--tz",
            "Asia/Shanghai",
            "Summarise yesterday's merged PRs",
        ],
    );
    assert_code(&out, 0);
    let said = stdout(&out);
    let lines: Vec<&str> = said.lines().collect();
    assert!(
        lines[0].contains("09:00") && lines[0].contains("(Asia/Shanghai)"),
        "{said}"
    );
    assert!(lines[1].starts_with("  next: "), "{said}");
    for fire in &lines[1..4] {
        assert!(fire.ends_with(" 09:00 +08:00"), "{said}");
        let day = fire.trim_start_matches("  next:").trim_start();
        assert!(
            ["Mon", "Tue", "Wed", "Thu", "Fri"]
                .iter()
                .any(|d| day.starts_with(d)),
            "a weekend fire: {said}"
        );
    }
    assert!(
        lines[4].starts_with("created schedule standup (")
            && lines[4].ends_with("a new session each time"),
        "{said}"
    );
    let standup = schedule(&s, "standup");
    assert_eq!(standup["timezone"], "Asia/Shanghai");
    assert_eq!(standup["trigger"]["cron"], "0 9 * * 1-5");
    let id = standup["id"].as_str().unwrap().to_string();
    let short = &id[id.len() - 8..];

    // A bad cron: the gateway's 422, which names the field; nothing is made.
    let out = schedules(&s, None, &["add", "--cron", "0 99 * * *", "bad one"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("trigger.cron"), "{}", stderr(&out));
    assert!(!stdout(&out).contains("created"), "{}", stdout(&out));

    // No --tz: TZ when it names a zone the gateway knows, else its default (UTC),
    // said on stderr. `--every` takes units; `--session` a suffix.
    let (_, session) = api(
        &s,
        reqwest::Method::POST,
        "/v1/sessions",
        Some(serde_json::json!({})),
    );
    let session_id = session["id"].as_str().unwrap().to_string();
    let out = schedules(
        &s,
        Some(":Europe/Berlin"),
        &[
            "add",
            "--every",
            "1h30m",
            "--session",
            &session_id[session_id.len() - 8..],
            "Check the build",
        ],
    );
    assert_code(&out, 0);
    assert!(
        stdout(&out).contains("Every 90 minutes — timezone Europe/Berlin"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains(&format!(
        "in session {}",
        &session_id[session_id.len() - 8..]
    )));
    let build = schedule(&s, "Check the build");
    assert_eq!(build["timezone"], "Europe/Berlin");
    assert_eq!(build["trigger"]["every_secs"], 5400);
    assert_eq!(build["target"]["session"], session_id.as_str());

    let out = schedules(
        &s,
        Some("Mars/Olympus"),
        &["add", "--every", "2h", "hourly-ish"],
    );
    assert_code(&out, 0);
    assert!(
        stderr(&out).contains("TZ=Mars/Olympus is not a timezone"),
        "{}",
        stderr(&out)
    );
    assert_eq!(schedule(&s, "hourly-ish")["timezone"], "UTC");

    // `weft schedules` alone lists them: id, name, words, next fire, state, last fire.
    let out = schedules(&s, None, &[]);
    assert_code(&out, 0);
    let listed = stdout(&out);
    assert!(listed.starts_with("ID "), "{listed}");
    let row = line_with(&listed, short);
    assert!(
        row.contains("standup") && row.contains("(Asia/Shanghai)"),
        "{listed}"
    );
    assert!(
        row.contains(" 09:00 +08:00") && row.contains("enabled"),
        "{listed}"
    );
    assert!(
        line_with(&listed, "Check the build").contains("Every 90 minutes"),
        "{listed}"
    );

    // Pause: no next fire; resume (here by name): the next one again.
    let out = schedules(&s, None, &["pause", short]);
    assert_code(&out, 0);
    assert_eq!(stdout(&out), format!("paused standup ({short})\n"));
    let listed = stdout(&schedules(&s, None, &["list"]));
    let row = line_with(&listed, short);
    assert!(
        row.contains("paused") && !row.contains("09:00 +08:00"),
        "{listed}"
    );
    assert_eq!(schedule(&s, "standup")["enabled"], false);

    let out = schedules(&s, None, &["resume", "standup"]);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("resumed standup") && stdout(&out).contains("next fire"));
    assert!(
        stdout(&out).trim_end().ends_with(" 09:00 +08:00"),
        "{}",
        stdout(&out)
    );
    assert!(line_with(&stdout(&schedules(&s, None, &[])), short).contains("enabled"));

    let out = schedules(&s, None, &["rename", short, "morning standup"]);
    assert_code(&out, 0);
    assert_eq!(schedule(&s, "morning standup")["id"], id.as_str());

    // Nothing has fired yet.
    let out = schedules(&s, None, &["fires", short]);
    assert_code(&out, 0);
    assert!(
        stdout(&out).contains("has not fired yet"),
        "{}",
        stdout(&out)
    );

    // Run now: the fire, its run and session, and how to watch it.
    let out = schedules(&s, None, &["run", short]);
    assert_code(&out, 0);
    let said = stdout(&out);
    assert!(
        line_with(&said, "fired morning standup").ends_with(": started"),
        "{said}"
    );
    let run_id = line_with(&said, "run ")
        .trim_start_matches("run ")
        .to_string();
    let session = line_with(&said, "session ")
        .trim_start_matches("session ")
        .to_string();
    assert!(
        said.contains(&format!("watch it: weft -r {session}")),
        "{said}"
    );
    wait_for_end(&s, &run_id);

    // Its history: when it was due, how late, how it went, the run's status.
    let out = schedules(&s, None, &["fires", "morning standup"]);
    assert_code(&out, 0);
    let history = stdout(&out);
    assert!(history.starts_with("FIRE TIME "), "{history}");
    let row = line_with(&history, &session[session.len() - 8..]);
    assert!(
        row.contains("started (run now)") && row.contains("succeeded"),
        "{history}"
    );
    assert!(row.contains("s  "), "a lateness in seconds: {history}");
    let listed = stdout(&schedules(&s, None, &[]));
    assert!(
        line_with(&listed, short).contains("started (succeeded)"),
        "{listed}"
    );

    // Remove: gone from the list; the session it made stays.
    let out = schedules(&s, None, &["rm", short]);
    assert_code(&out, 0);
    assert!(stdout(&out).starts_with("deleted schedule morning standup"));
    assert!(!stdout(&schedules(&s, None, &[])).contains(short));
    let (status, _) = api(
        &s,
        reqwest::Method::GET,
        &format!("/v1/sessions/{session}"),
        None,
    );
    assert_eq!(status, 200);

    let out = schedules(&s, None, &["rm", short]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("no schedule"), "{}", stderr(&out));
}

#[test]
fn a_schedule_delivers_to_the_channels_it_names() {
    let s = Server::start_env(
        true,
        &[("WEFT_TOOLS__WEB_FETCH__ALLOW_HOSTS", "[\"127.0.0.1\"]")],
    );
    // A port nobody listens on: each try is refused, and retried.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let channel = |name: &str| {
        let url = format!("http://127.0.0.1:{closed}/{name}");
        let body = serde_json::json!({"name": name, "target": {"kind": "webhook", "url": url}});
        let (status, made) = api(&s, reqwest::Method::POST, "/v1/channels", Some(body));
        assert_eq!(status, 201, "{made}");
        made["id"].as_str().unwrap().to_string()
    };
    let ops = channel("ops-hook");
    let audit = channel("audit");
    let audit_short = &audit[audit.len() - 8..];

    // An unknown channel: said before anything is previewed or made.
    let out = schedules(
        &s,
        None,
        &[
            "add",
            "--every",
            "1h",
            "--deliver",
            "nope",
            "Check the build",
        ],
    );
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("no channel \"nope\"; `weft channels` lists yours"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "");

    // By name and by short id.
    let out = schedules(
        &s,
        None,
        &[
            "add",
            "--every",
            "1h",
            "--deliver",
            "ops-hook",
            "--deliver",
            audit_short,
            "Check the build",
        ],
    );
    assert_code(&out, 0);
    assert!(
        stdout(&out).ends_with("delivers to ops-hook, audit (and your inbox)\n"),
        "{}",
        stdout(&out)
    );
    let build = schedule(&s, "Check the build");
    assert_eq!(build["deliver"], serde_json::json!([ops, audit]));
    let id = build["id"].as_str().unwrap().to_string();
    let short = &id[id.len() - 8..];
    let listed = stdout(&schedules(&s, None, &[]));
    assert!(listed.contains(" DELIVERS TO "), "{listed}");
    assert!(
        line_with(&listed, short).contains("  ops-hook, audit  "),
        "{listed}"
    );

    // `deliver` replaces the list: now only ops-hook, which `weft channels`
    // counts a schedule for.
    let out = schedules(&s, None, &["deliver", "Check the build", "ops-hook"]);
    assert_code(&out, 0);
    assert_eq!(
        stdout(&out),
        format!("Check the build ({short}) now delivers to ops-hook (and your inbox)\n")
    );
    assert_eq!(
        schedule(&s, "Check the build")["deliver"],
        serde_json::json!([ops])
    );
    let row = line_with(&stdout(&schedules(&s, None, &[])), short).to_string();
    assert!(
        row.contains("  ops-hook  ") && !row.contains("audit"),
        "{row}"
    );
    let mut cmd = s.weft();
    cmd.arg("channels");
    let listed = stdout(&run(cmd, None));
    let cells = |name: &str| -> Vec<String> {
        line_with(&listed, name)
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    assert_eq!(cells("ops-hook")[4], "1", "{listed}");
    assert_eq!(cells("audit")[4], "0", "{listed}");

    // A fire: its run's notification goes to ops-hook, whose receiver is
    // not there; the history shows the delivery and what its tries met.
    let said = stdout(&schedules(&s, None, &["run", short]));
    let run_id = line_with(&said, "run ")
        .trim_start_matches("run ")
        .to_string();
    wait_for_end(&s, &run_id);
    let fires_path = format!("/v1/schedules/{id}/fires");
    eventually("a try at ops-hook", || {
        let (_, fires) = api(&s, reqwest::Method::GET, &fires_path, None);
        match fires["fires"][0]["deliveries"][0]["attempts"].as_u64() {
            Some(1..) => Ok(()),
            _ => Err(fires.to_string()),
        }
    });
    let out = schedules(&s, None, &["fires", short]);
    assert_code(&out, 0);
    let history = stdout(&out);
    let lines: Vec<&str> = history.lines().collect();
    assert!(lines[1].contains("started (run now)"), "{history}");
    assert!(
        lines[2].starts_with("  -> ops-hook (webhook): pending, ")
            && lines[2].contains(&format!("http://127.0.0.1:{closed}/ops-hook")),
        "{history}"
    );

    // --none: the inbox only.
    let out = schedules(&s, None, &["deliver", short, "--none"]);
    assert_code(&out, 0);
    assert_eq!(
        stdout(&out),
        format!("Check the build ({short}) now notifies your inbox only\n")
    );
    assert_eq!(
        schedule(&s, "Check the build")["deliver"],
        serde_json::json!([])
    );
}
