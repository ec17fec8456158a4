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
        crate::meta::health,
        crate::meta::ready,
        crate::meta::models,
        crate::meta::modes,
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
        crate::chat::chat,
        crate::lark::admin::link,
    ),
    components(schemas(weft_shared::event::EventKind, weft_shared::api::ErrorBody))
)]
struct ApiDoc;

pub fn spec() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
