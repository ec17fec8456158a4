//! One chat turn in the REPL: send, stream the reply into the [`Display`], and
//! let Ctrl-C cancel the run (the gateway keeps the partial text as the reply).
//! Approval requests, questions and plans (plan mode, `/plan`) are answered
//! inline. Attached files go with the message and
//! are dropped once the gateway took it; a refused message (a file over a limit,
//! a type the gateway does not take) keeps them, so the person can fix and resend.

use std::io::{BufRead, Write};
use std::time::Duration;

use weft_wire::api::SendMessageRequest;

use super::display::Display;
use super::state::ReplState;
use crate::api::Gateway;
use crate::attach;
use crate::error::{ClientError, Result};
use crate::render::{DIM, RESET, YELLOW, args_summary};
use crate::reply::{Change, Outcome, Reply};
use crate::stream::RunStream;

pub async fn run(gw: &Gateway, state: &mut ReplState, text: String) -> Result<()> {
    send(gw, state, text, false).await
}

/// `/plan <task>`: the agent researches with read-only tools and proposes a
/// plan, which is shown in full and decided here before anything is done.
pub async fn plan(gw: &Gateway, state: &mut ReplState, task: String) -> Result<()> {
    send(gw, state, task, true).await
}

async fn send(gw: &Gateway, state: &mut ReplState, text: String, plan: bool) -> Result<()> {
    let files = match attach::read_all(&state.pending).await {
        Ok(files) => files,
        Err(e) => return Err(still_attached(e, state)),
    };
    let session = match state.ensure_session(gw).await {
        Ok(id) => id,
        Err(e) => return Err(still_attached(e, state)),
    };
    let req = SendMessageRequest {
        text,
        attachments: vec![],
        model: state.model.clone(),
        agent: Some(state.agent.clone()),
        mode: None,
        multitask: Default::default(),
        stream: true,
        wait: false,
        plan,
    };
    let mut stream = RunStream::send(gw, &session, req, files);
    let result = follow(gw, state, &mut stream).await;
    if result.is_ok() || stream.accepted() {
        state.pending.clear();
        return result;
    }
    result.map_err(|e| still_attached(e, state))
}

/// Why a message did not go, and that its files still wait for the next try.
fn still_attached(e: ClientError, state: &ReplState) -> ClientError {
    match state.pending.len() {
        0 => e,
        n => ClientError::Local(format!(
            "{e}\n  {} still attached: fix and send again, /attach lists them, /detach drops them",
            if n == 1 {
                "the file is"
            } else {
                "the files are"
            }
        )),
    }
}

/// Follow a run started elsewhere (`/retry`, `/edit`): the same rendering.
/// A resumed session's reply that is still streaming (sent from the web page,
/// Lark or another terminal): shown from its start, then live, as the web page
/// does on a reload.
pub async fn follow_active(gw: &Gateway, state: &mut ReplState, run_id: &str) -> Result<()> {
    println!("{DIM}a reply is on its way; following it (Ctrl-C stops it){RESET}");
    attach(gw, state, run_id).await
}

pub async fn attach(gw: &Gateway, state: &mut ReplState, run_id: &str) -> Result<()> {
    follow(gw, state, &mut RunStream::attach(gw, run_id, 0)).await
}

async fn follow(gw: &Gateway, state: &mut ReplState, stream: &mut RunStream) -> Result<()> {
    let mut reply = Reply::default();
    let mut display = Display::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut cancel_sent = false;
    let mut interrupts = crate::interrupt::Interrupts::new()?;
    loop {
        let next = tokio::select! {
            ev = stream.next() => ev,
            _ = tick.tick() => { display.tick(); continue; }
            _ = interrupts.next() => {
                if let Some(run) = stream.run_id()
                    && !cancel_sent
                {
                    cancel_sent = true;
                    display.note("⏹ stopping…");
                    if let Err(e) = gw.cancel(run).await {
                        display.note(&format!("could not cancel: {e}"));
                    }
                }
                continue;
            }
        };
        let ev = match next {
            Ok(Some(ev)) => ev,
            Ok(None) => break,
            Err(e) => {
                display.finish();
                return Err(e);
            }
        };
        for change in reply.apply(&ev) {
            match change {
                Change::Text { step, delta } => display.text(step, &delta),
                Change::Thinking { delta, .. } => display.thinking(&delta),
                Change::ToolStart(i) => display.tool_start(&reply.tools[i]),
                Change::ToolEnd(i) => display.tool_end(&reply.tools[i]),
                Change::Retract { reason, .. } => display.retract(&reason),
                Change::Approval(i) => {
                    display.finish();
                    let asked = &reply.approvals[i];
                    let decision = ask_approval(&asked.name, &asked.args).await;
                    gw.decide_approval(&asked.approval_id, decision).await?;
                    display = Display::new();
                }
                Change::ApprovalDecided(i) => {
                    let a = &reply.approvals[i];
                    if let Some(d) = &a.decided {
                        display.note(&crate::render::decision_note(
                            &a.name,
                            d.decision,
                            d.by.as_deref(),
                        ))
                    }
                }
                Change::Question(i) => {
                    display.finish();
                    let q = &reply.questions[i];
                    let answer = ask_question(q).await;
                    match answer {
                        Some(answer) => gw.answer_question(&q.question_id, &answer).await?,
                        None => display_note_unanswered(),
                    }
                    display = Display::new();
                }
                Change::QuestionAnswered(i) => {
                    let q = &reply.questions[i];
                    if let Some(a) = &q.answered {
                        display.note(&crate::render::answer_note(a));
                    }
                }
                Change::Plan(i) => {
                    display.finish();
                    let p = &reply.plans[i];
                    match decide_plan(&p.markdown).await {
                        Some((decision, comment)) => {
                            gw.decide_plan(&p.plan_id, decision, comment.as_deref())
                                .await?
                        }
                        None => println!(
                            "{DIM}(not decided: the plan waits until it expires — decide it from the web page or Lark){RESET}"
                        ),
                    }
                    display = Display::new();
                }
                Change::PlanDecided(i) => {
                    if let Some(d) = &reply.plans[i].decided {
                        display.note(&crate::render::plan_note(d));
                    }
                }
                Change::Agent(i) => {
                    display.note(&crate::render::agent_start_note(&reply.delegations[i]))
                }
                Change::AgentEnded(i) => {
                    display.note(&crate::render::agent_end_note(&reply.delegations[i]))
                }
                Change::Memories => display.note(&crate::render::memories_note(&reply.memories)),
                Change::Todos => {
                    let items = reply.todos.as_deref().unwrap_or_default();
                    display.note(&format!("☑ {}", crate::render::todo_progress(items)));
                }
                Change::StillWorking => display.still_working(reply.still_working),
                Change::Started { .. } | Change::Usage | Change::Citations | Change::Finished => {}
            }
        }
    }
    display.finish();
    match &reply.outcome {
        Some(Outcome::Failed(e)) => {
            display.note(&format!("✗ the run failed: {} ({})", e.message, e.code))
        }
        Some(Outcome::Cancelled { by }) => {
            display.note(&format!("⏹ cancelled by {by} — the partial reply is kept"))
        }
        _ => {}
    }
    if !reply.citations.is_empty() {
        println!("\n{}", crate::render::sources(&reply.citations, true));
    }
    if let Some(id) = &reply.session_id {
        state.session_id = Some(id.clone());
    }
    if !reply.model.is_empty() {
        state.session_model = reply.model.clone();
    }
    if let Some(todos) = &reply.todos {
        state.todos = todos.clone();
    }
    state.last = Some(reply);
    println!("{}", state.status_line(gw));
    Ok(())
}

fn display_note_unanswered() {
    println!(
        "{DIM}(not answered: it stays open until it expires — answer it from the web page or Lark){RESET}"
    );
}

/// The answer to a question the agent asked, read from the terminal: an
/// option's number (several, comma-separated, when it allows `multiple`), or
/// a typed answer where one is accepted. `None` at the end of input.
async fn ask_question(q: &weft_wire::fold::Question) -> Option<Vec<String>> {
    let q = q.clone();
    tokio::task::spawn_blocking(move || {
        println!("{YELLOW}?{RESET} {}", q.question);
        for (n, option) in q.options.iter().enumerate() {
            println!("  {}. {option}", n + 1);
        }
        let prompt = match (q.options.is_empty(), q.multiple, q.allow_text) {
            (true, _, _) => "your answer: ".to_string(),
            (false, true, true) => "numbers (e.g. 1,3) or your own answer: ".into(),
            (false, true, false) => "numbers (e.g. 1,3): ".into(),
            (false, false, true) => "a number or your own answer: ".into(),
            (false, false, false) => "a number: ".into(),
        };
        loop {
            print!("{prompt}");
            let _ = std::io::stdout().flush();
            let mut line = String::new();
            if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
                return None;
            }
            match crate::render::parse_answer(&q, line.trim()) {
                Ok(answer) => return Some(answer),
                Err(why) => println!("{DIM}{why}{RESET}"),
            }
        }
    })
    .await
    .ok()
    .flatten()
}

/// The plan (streamed above; paged in full when taller than the terminal),
/// then the decision read from the terminal: `y` approves, `n`
/// rejects, `e` asks for changes with a comment. `None` at the end of input.
async fn decide_plan(markdown: &str) -> Option<(weft_wire::states::PlanDecision, Option<String>)> {
    use weft_wire::states::PlanDecision;
    let markdown = markdown.to_string();
    tokio::task::spawn_blocking(move || {
        super::pager::page_if_tall(&markdown);
        println!("{DIM}── the plan above waits for your decision ──{RESET}");
        let read = |prompt: &str| {
            print!("{prompt}");
            let _ = std::io::stdout().flush();
            let mut line = String::new();
            (std::io::stdin().lock().read_line(&mut line).unwrap_or(0) > 0)
                .then(|| line.trim().to_string())
        };
        loop {
            let choice = read(&format!(
                "{YELLOW}?{RESET} carry out this plan?  [y]es / [n]o / [e]dit (ask for changes): "
            ))?;
            match choice.to_ascii_lowercase().as_str() {
                "y" | "yes" | "approve" => return Some((PlanDecision::Approve, None)),
                "n" | "no" | "reject" => return Some((PlanDecision::Reject, None)),
                "e" | "edit" | "revise" => loop {
                    let comment = read("what should change? ")?;
                    if !comment.is_empty() {
                        return Some((PlanDecision::Revise, Some(comment)));
                    }
                },
                _ => continue,
            }
        }
    })
    .await
    .ok()
    .flatten()
}

/// `approve / deny / always`, read from the terminal (cooked mode during a turn).
async fn ask_approval(name: &str, args: &serde_json::Value) -> &'static str {
    let question = format!(
        "{YELLOW}?{RESET} allow {name} {DIM}{}{RESET}  [y]es / [n]o / [a]lways: ",
        args_summary(args, 60)
    );
    tokio::task::spawn_blocking(move || {
        loop {
            print!("{question}");
            let _ = std::io::stdout().flush();
            let mut line = String::new();
            if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
                return "deny";
            }
            match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" | "approve" => return "approve",
                "n" | "no" | "deny" => return "deny",
                "a" | "always" => return "always",
                _ => continue,
            }
        }
    })
    .await
    .unwrap_or("deny")
}
