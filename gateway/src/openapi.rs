//! The OpenAPI document, assembled by `utoipa` from the handlers' annotations and
//! the wire types in `weft-shared` — generated from the code, never hand-written.

use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Weft API",
        description = "Hosted multi-user AI agent chat: sessions, runs and their event streams."
    ),
    paths(
        crate::memories::list_memories,
        crate::memories::export_memories,
        crate::memories::add_memory,
        crate::memories::update_memory,
        crate::memories::delete_memory,
        crate::memories::forget_everything,
        crate::memories::switch_memory,
        crate::knowledge::list_bases,
        crate::knowledge::create_base,
        crate::knowledge::get_base,
        crate::knowledge::update_base,
        crate::knowledge::delete_base,
        crate::knowledge::list_documents,
        crate::knowledge::add_documents,
        crate::knowledge::get_document,
        crate::knowledge::document_chunks,
        crate::knowledge::delete_document,
        crate::knowledge::search,
        crate::knowledge::events::events,
        crate::meta::health,
        crate::meta::ready,
        crate::meta::models,
        crate::meta::modes,
        crate::meta::mcp,
        crate::auth::login,
        crate::auth::logout,
        crate::auth::me,
        crate::account::list_tokens,
        crate::account::create_token,
        crate::account::delete_token,
        crate::account::change_password,
        crate::account::list_users,
        crate::account::create_user,
        crate::account::update_user,
        crate::account::delete_user,
        crate::account::list_user_tokens,
        crate::account::delete_user_token,
        crate::account::limits,
        crate::settings::reload_config,
        crate::settings::settings,
        crate::settings::save_settings,
        crate::sessions::create,
        crate::sessions::list,
        crate::sessions::get_one,
        crate::sessions::update,
        crate::sessions::remove,
        crate::sessions::messages,
        crate::sessions::send,
        crate::sessions::stream,
        crate::runs::get_run,
        crate::runs::events,
        crate::runs::cancel,
        crate::approvals::list_approvals,
        crate::todos::session_todos,
        crate::schedules::list_schedules,
        crate::schedules::create_schedule,
        crate::schedules::get_schedule,
        crate::schedules::update_schedule,
        crate::schedules::delete_schedule,
        crate::schedules::run_schedule,
        crate::schedules::schedule_fires,
        crate::schedules::preview_schedule,
        crate::schedules::get_timezone,
        crate::schedules::set_timezone,
        crate::channels::list_channels,
        crate::channels::create_channel,
        crate::channels::get_channel,
        crate::channels::update_channel,
        crate::channels::delete_channel,
        crate::channels::test_channel,
        crate::channels::channel_deliveries,
        crate::notifications::list_notifications,
        crate::notifications::mark_notifications_read,
        crate::agents::list_agents,
        crate::agents::put_agent,
        crate::agents::delete_agent,
        crate::agents::get_instructions,
        crate::agents::put_instructions,
        crate::agents::system_prompt,
        crate::agents::list_skills,
        crate::agents::put_skill,
        crate::agents::delete_skill,
        crate::turns::undo,
        crate::turns::redo,
        crate::turns::regenerate,
        crate::turns::edit,
        crate::turns::alternatives,
        crate::turns::choose,
        crate::turns::compact,
        crate::turns::summary,
        crate::approvals::decide_approval,
        crate::plans::list_plans,
        crate::plans::run_plans,
        crate::plans::run_delegations,
        crate::plans::get_plan,
        crate::plans::decide_plan,
        crate::questions::list_questions,
        crate::questions::run_questions,
        crate::questions::get_question,
        crate::questions::answer_question,
        crate::chat::chat,
        crate::files::download,
        crate::lark::admin::link,
    ),
    components(schemas(
        weft_shared::event::EventKind,
        weft_shared::event::RunEvent,
        weft_shared::api::ErrorBody,
        weft_shared::api::ErrorEnvelope
    ))
)]
struct ApiDoc;

/// `GET /openapi.json`: this API's OpenAPI 3.1 description, served from the
/// code that makes it.
pub fn router() -> axum::Router<crate::AppState> {
    axum::Router::new().route("/openapi.json", axum::routing::get(serve))
}

async fn serve() -> axum::Json<utoipa::openapi::OpenApi> {
    axum::Json(spec())
}

pub fn spec() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    document_errors(&mut doc);
    doc
}

/// Every operation can fail with the one error envelope (400 bad input, 401,
/// 404, 413, 422, 429, 503 …): say so once, as each operation's `default`
/// response, instead of repeating the list on every handler.
fn document_errors(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    let error = ResponseBuilder::new()
        .description("An error: `{\"error\":{\"code\",\"message\"}}` (see the status)")
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorEnvelope")))
                .build(),
        )
        .build();
    for item in doc.paths.paths.values_mut() {
        for op in [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ]
        .into_iter()
        .flatten()
        {
            op.responses
                .responses
                .entry("default".into())
                .or_insert_with(|| error.clone().into());
        }
    }
}
