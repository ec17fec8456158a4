//! One-shot mode (`weft -p …`, `weft "…"`, `echo … | weft`): send one message,
//! print the reply, exit with a code scripts can branch on.
//!
//! stdout carries the reply and nothing else (`--output text`) or one JSON object
//! (`--output json`); progress, tool activity (`--print-tools`) and errors go to
//! stderr. With `--stream` (the default) text is written as it arrives; with
//! `--no-stream` it is written once the run is over, which also keeps the output
//! exact if an upstream retry voids text already received.
//!
//! Files (`-f PATH`) are read before the session is opened, so an unreadable one
//! stops the command before anything reaches the gateway.

use std::io::Write;

use serde::Serialize;
use weft_wire::api::{Citation, SendMessageRequest, UsageDto};

use crate::api::Gateway;
use crate::attach::{self, LocalFile};
use crate::error::{ClientError, Result};
use crate::exit;
use crate::reply::{Change, Outcome, Reply};
use crate::session::{self, SessionChoice};
use crate::stream::RunStream;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Text,
    Json,
}

/// What one-shot mode does when a tool call waits for a person's yes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approve {
    /// Nobody is there to answer: cancel the run and exit 1 (the default).
    Never,
    /// Approve every call of this run.
    Auto,
}

/// What one-shot mode does when the agent asks a question (`ask_user`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerMode {
    /// Nobody is there to answer: say what was asked, cancel the run and exit
    /// 1 (the default).
    Never,
    /// Pick the first option (a question without options cannot be answered
    /// this way, as with `never`).
    Auto,
}

#[derive(Debug, Clone)]
pub struct OneShot {
    pub text: String,
    /// Files sent with the message (`-f`), checked when the command line was read.
    pub files: Vec<LocalFile>,
    pub session: SessionChoice,
    pub model: Option<String>,
    pub agent: Option<String>,
    pub output: Output,
    pub stream: bool,
    pub print_tools: bool,
    pub approve: Approve,
    pub answer: AnswerMode,
}

#[derive(Serialize)]
struct JsonToolCall<'a> {
    name: &'a str,
    args: &'a serde_json::Value,
}

#[derive(Serialize)]
struct JsonResult<'a> {
    session_id: &'a str,
    run_id: Option<&'a str>,
    response: String,
    tool_calls: Vec<JsonToolCall<'a>>,
    model: &'a str,
    /// The session's agent.
    agent: &'a str,
    usage: UsageDto,
    duration_ms: Option<u64>,
    /// The documents `response` cites as `[n]`.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    citations: &'a [Citation],
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<serde_json::Value>,
}

/// Run it; the answer is the process exit code.
pub async fn run(gw: &Gateway, job: OneShot) -> Result<u8> {
    if job.text.trim().is_empty() && job.files.is_empty() {
        return Err(ClientError::Usage("the message is empty".into()));
    }
    let files = attach::read_all(&job.files).await?;
    let session =
        session::open(gw, &job.session, job.model.as_deref(), job.agent.as_deref()).await?;
    let req = SendMessageRequest {
        text: job.text.clone(),
        attachments: vec![],
        model: job.model.clone(),
        agent: job.agent.clone(),
        mode: None,
        multitask: Default::default(),
        stream: true,
        wait: false,
        plan: false,
    };
    let mut stream = RunStream::send(gw, &session.id, req, files);
    let mut reply = Reply::default();
    let mut printer = TextPrinter {
        live: job.stream && job.output == Output::Text,
        ..TextPrinter::default()
    };
    let mut cancelling = false;
    let mut refused = false;
    let mut interrupts = crate::interrupt::Interrupts::new()?;
    loop {
        let next = tokio::select! {
            ev = stream.next() => match ev {
                Ok(ev) => ev,
                Err(e) => {
                    forget_refused(gw, &job, &session.id, &stream, &e).await;
                    return Err(e);
                }
            },
            _ = interrupts.next() => {
                if cancelling {
                    eprintln!();
                    return Ok(130);
                }
                cancelling = true;
                eprintln!("\nweft: cancelling (Ctrl-C again to quit at once)");
                if let Some(run) = stream.run_id() {
                    gw.cancel(run).await?;
                }
                continue;
            }
        };
        let Some(ev) = next else { break };
        for change in reply.apply(&ev) {
            printer.show(&reply, &change, job.print_tools)?;
            if let Change::Approval(i) = &change {
                let asked = &reply.approvals[*i];
                let (approval_id, name, args) = (&asked.approval_id, &asked.name, &asked.args);
                match job.approve {
                    Approve::Auto => {
                        eprintln!(
                            "weft: approving {name} {} (--approve auto)",
                            crate::render::args_summary(args, 60)
                        );
                        gw.decide_approval(approval_id, "approve").await?;
                    }
                    Approve::Never if !refused => {
                        refused = true;
                        eprintln!(
                            "weft: the agent wants to call {name} {}, which needs your approval.\n      One-shot mode does not approve tool calls (--approve never), so the run is cancelled.\n      Rerun with --approve auto to allow them, or use the REPL (`weft`) to decide each call.",
                            crate::render::args_summary(args, 60)
                        );
                        if let Some(run) = stream.run_id() {
                            gw.cancel(run).await?;
                        }
                    }
                    Approve::Never => {}
                }
            }
            if let Change::Question(i) = &change {
                let q = &reply.questions[*i];
                match (job.answer, q.options.first()) {
                    (AnswerMode::Auto, Some(first)) => {
                        eprintln!(
                            "weft: the agent asks: {}\n      answering {first:?}, the first option (--answer auto)",
                            q.question
                        );
                        gw.answer_question(&q.question_id, std::slice::from_ref(first))
                            .await?;
                    }
                    _ if !refused => {
                        refused = true;
                        let options = if q.options.is_empty() {
                            String::new()
                        } else {
                            format!("\n      Options: {}", q.options.join(" | "))
                        };
                        let how = if q.options.is_empty() {
                            "It has no options to pick from, so one-shot mode cannot answer it"
                        } else {
                            "One-shot mode does not answer questions (--answer never)"
                        };
                        eprintln!(
                            "weft: the agent asks: {}{options}\n      {how}, so the run is cancelled.\n      Rerun with --answer auto to pick the first option, or use the REPL (`weft`) to answer.",
                            q.question
                        );
                        if let Some(run) = stream.run_id() {
                            gw.cancel(run).await?;
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    if refused {
        return Ok(exit::RUN_FAILED);
    }
    match job.output {
        Output::Text => printer.finish(&reply)?,
        Output::Json => print_json(&session.id, &session.agent, &reply)?,
    }
    Ok(match &reply.outcome {
        Some(Outcome::Done) => exit::OK,
        Some(Outcome::Failed(e)) => {
            eprintln!("weft: the run failed: {} ({})", e.message, e.code);
            exit::RUN_FAILED
        }
        Some(Outcome::Cancelled { by }) => {
            eprintln!("weft: the run was cancelled (by {by})");
            exit::RUN_FAILED
        }
        None => {
            return Err(ClientError::Local(
                "the event stream ended before the run did".into(),
            ));
        }
    })
}

/// A session this command created for a message the gateway refused (a file
/// over a limit, say) holds nothing: remove it rather than leave an empty one.
async fn forget_refused(
    gw: &Gateway,
    job: &OneShot,
    session: &str,
    stream: &RunStream,
    e: &ClientError,
) {
    let refused = matches!(
        e,
        ClientError::Api {
            status: 400..=499,
            ..
        }
    );
    if refused && job.session == SessionChoice::New && !stream.accepted() {
        let _ = gw.delete_session(session).await;
    }
}

/// Writes text deltas to stdout as they come, tool lines to stderr.
#[derive(Default)]
struct TextPrinter {
    live: bool,
    last_step: Option<u32>,
    wrote_any: bool,
    ends_with_newline: bool,
}

impl TextPrinter {
    fn show(&mut self, reply: &Reply, change: &Change, print_tools: bool) -> Result<()> {
        match change {
            Change::Text { step, delta } if self.live => {
                let new_step = self.last_step != Some(*step);
                let delta = if new_step {
                    delta.trim_start()
                } else {
                    delta.as_str()
                };
                if delta.is_empty() {
                    return Ok(());
                }
                let mut out = std::io::stdout().lock();
                if new_step && self.wrote_any {
                    out.write_all(if self.ends_with_newline {
                        b"\n"
                    } else {
                        b"\n\n"
                    })?;
                }
                self.last_step = Some(*step);
                out.write_all(delta.as_bytes())?;
                out.flush()?;
                self.wrote_any = true;
                self.ends_with_newline = delta.ends_with('\n');
            }
            Change::Retract { reason, .. } if self.live && self.wrote_any => {
                eprintln!(
                    "\nweft: the reply restarted ({reason}); text above this line may repeat"
                );
            }
            Change::ToolStart(i) if print_tools => {
                let t = &reply.tools[*i];
                eprintln!("⚙ {} {}", t.name, crate::render::args_summary(&t.args, 80));
            }
            Change::ToolEnd(i) if print_tools => {
                let t = &reply.tools[*i];
                let ok = t.ended.as_ref().is_some_and(|e| e.ok);
                let mark = if ok { "✓" } else { "✗" };
                let ms = t.ended.as_ref().map_or(0, |e| e.duration_ms);
                eprintln!("{mark} {} ({ms} ms)", t.name);
            }
            Change::ApprovalDecided(i) if print_tools => {
                let a = &reply.approvals[*i];
                if let Some(d) = &a.decided {
                    eprintln!(
                        "{}",
                        crate::render::decision_note(&a.name, d.decision, d.by.as_deref())
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, reply: &Reply) -> Result<()> {
        let mut out = std::io::stdout().lock();
        if self.live {
            if self.wrote_any && !self.ends_with_newline {
                out.write_all(b"\n")?;
            }
        } else if reply.succeeded() || !reply.text().is_empty() {
            let text = reply.text();
            if !text.is_empty() {
                writeln!(out, "{text}")?;
            }
        }
        if !reply.citations.is_empty() {
            let styled = std::io::IsTerminal::is_terminal(&std::io::stdout());
            writeln!(
                out,
                "\n{}",
                crate::render::sources(&reply.citations, styled)
            )?;
        }
        out.flush()?;
        Ok(())
    }
}

fn print_json(session_id: &str, agent: &str, reply: &Reply) -> Result<()> {
    let error = match &reply.outcome {
        Some(Outcome::Failed(e)) => Some(serde_json::json!({"code": e.code, "message": e.message})),
        Some(Outcome::Cancelled { by }) => {
            Some(serde_json::json!({"code": "cancelled", "message": format!("cancelled by {by}")}))
        }
        _ => None,
    };
    let body = JsonResult {
        session_id,
        run_id: reply.run_id.as_deref(),
        response: reply.text(),
        tool_calls: reply
            .tools
            .iter()
            .map(|t| JsonToolCall {
                name: &t.name,
                args: &t.args,
            })
            .collect(),
        model: &reply.model,
        agent,
        usage: reply.usage,
        duration_ms: reply.duration_ms,
        citations: &reply.citations,
        error,
    };
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &body).map_err(|e| ClientError::Local(e.to_string()))?;
    out.write_all(b"\n")?;
    Ok(())
}
