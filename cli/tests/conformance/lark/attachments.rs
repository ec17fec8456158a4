//! Files and images sent to the bot become attachments of their message: the
//! gateway fetches each from (fake) Lark with the "get message resource" call,
//! and the one upload path types them by their bytes and limits them. A refused
//! file is answered in the chat and starts no run.

use serde_json::{Value, json};
use weft_files::samples;
use weft_lark::fake::{FakeResource, PushOptions};

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(
    images_in_a_post_and_alone_reach_the_model_whole,
    a_pdf_file_is_read_by_the_model,
    refused_files_are_answered_in_the_chat_without_a_run,
    hostile_files_are_answered_and_the_bot_stays_up,
);

const REPORT: &str = "Quarterly revenue grew 42 percent";

/// Pushes a `message_type` message with `content` from `sender` in their direct
/// chat, after registering its `resources` (key → file) with the fake Lark.
fn send(
    w: &mut LarkWorld,
    sender: &str,
    message_type: &str,
    content: Value,
    resources: Vec<(&str, FakeResource)>,
) -> String {
    let (event, message) = w.ids();
    for (key, resource) in resources {
        w.fake.add_resource(&message, key, resource);
    }
    let chat = format!("oc_dm_{sender}");
    let mut envelope = message_event(&event, &message, &chat, "p2p", "", sender, "", json!([]));
    envelope["event"]["message"]["message_type"] = json!(message_type);
    envelope["event"]["message"]["content"] = json!(content.to_string());
    w.fake.push_event(envelope, PushOptions::default());
    message
}

fn described(bytes: &[u8]) -> String {
    format!(
        "image 1: image/png, {} bytes, sha256 {}",
        bytes.len(),
        weft_files::sha256_hex(bytes)
    )
}

/// The downloads the bot made for Lark message `message`.
fn downloads(w: &LarkWorld, message: &str) -> Vec<String> {
    w.fake
        .records()
        .calls_to(
            "GET",
            &format!("/open-apis/im/v1/messages/{message}/resources/"),
        )
        .iter()
        .map(|c| format!("{}?{} {}", c.path, c.query, c.status))
        .collect()
}

async fn images_in_a_post_and_alone_reach_the_model_whole(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let png = samples::png();
    let post = send(
        &mut w,
        "ou_alice",
        "post",
        json!({"zh_cn": {"title": "", "content": [
            [{"tag": "text", "text": "@mock.describe_images"}],
            [{"tag": "img", "image_key": "img_v3_post"}],
        ]}}),
        vec![("img_v3_post", FakeResource::image(png.clone()))],
    );
    let card = w.final_card(&post).await;
    assert_eq!(template(&card), "green", "{}", w.logs());
    assert!(body(&card).contains(&described(&png)), "{}", body(&card));
    assert_eq!(
        downloads(&w, &post),
        vec![format!(
            "/open-apis/im/v1/messages/{post}/resources/img_v3_post?type=image 200"
        )]
    );

    // An image alone is a message without text.
    let jpeg = samples::image(samples::ImageFormat::Jpeg);
    let image = send(
        &mut w,
        "ou_alice",
        "image",
        json!({"image_key": "img_v3_alone"}),
        vec![("img_v3_alone", FakeResource::image(jpeg.clone()))],
    );
    assert_eq!(template(&w.final_card(&image).await), "green");
    w.until("the reactions to go", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;

    // Both are attachments of their messages, as the linked account sees them.
    let (s, alice) = w
        .admin(
            reqwest::Method::POST,
            "/v1/admin/users",
            Some(json!({"username": "alice", "password": "password-123"})),
        )
        .await;
    assert_eq!(s, 201, "{alice}");
    let link = format!("/v1/admin/users/{}/lark", alice["id"].as_str().unwrap());
    let (s, linked) = w
        .admin(
            reqwest::Method::PUT,
            &link,
            Some(json!({"open_id": "ou_alice"})),
        )
        .await;
    assert_eq!(s, 200, "{linked}");
    let login: Value = w
        .http
        .post(format!("{}/v1/auth/login", w.base()))
        .json(&json!({"username": "alice", "password": "password-123"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = login["token"].as_str().unwrap();
    let sessions = w.get_json("/v1/sessions", token).await;
    let session = sessions["sessions"][0]["id"].as_str().unwrap();
    let history = w
        .get_json(&format!("/v1/sessions/{session}/messages"), token)
        .await;
    let files: Vec<(String, String, String, u64)> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["attachments"].as_array().cloned().unwrap_or_default())
        .map(|a| {
            (
                a["name"].as_str().unwrap().to_owned(),
                a["kind"].as_str().unwrap().to_owned(),
                a["mime"].as_str().unwrap().to_owned(),
                a["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        files,
        vec![
            (
                "image-1.png".into(),
                "image".into(),
                "image/png".into(),
                png.len() as u64
            ),
            (
                "image-1.jpg".into(),
                "image".into(),
                "image/jpeg".into(),
                jpeg.len() as u64
            ),
        ],
        "{history}"
    );
}

async fn a_pdf_file_is_read_by_the_model(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let pdf = samples::pdf(&[REPORT]);
    let msg = send(
        &mut w,
        "ou_bob",
        "file",
        json!({"file_key": "file_v3_q3", "file_name": "q3.pdf"}),
        vec![("file_v3_q3", FakeResource::file("q3.pdf", pdf))],
    );
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "green", "{}", w.logs());
    let echoed = body(&card);
    assert!(
        echoed.starts_with("You said:") && echoed.contains("q3.pdf") && echoed.contains(REPORT),
        "the model read the document: {echoed}"
    );
    assert_eq!(
        downloads(&w, &msg),
        vec![format!(
            "/open-apis/im/v1/messages/{msg}/resources/file_v3_q3?type=file 200"
        )]
    );
}

async fn refused_files_are_answered_in_the_chat_without_a_run(b: Backend) {
    let mut w = LarkWorld::start_with(
        b,
        1,
        fake_config(),
        &[
            ("WEFT_ATTACHMENTS__IMAGE_BYTES", "32768"),
            ("WEFT_ATTACHMENTS__DOCUMENT_BYTES", "65536"),
        ],
    )
    .await;
    let refused = [
        // Bytes of no type we take, whatever the name says.
        (
            "file_exe",
            FakeResource::file("setup.pdf", b"MZ\x90\x00\x03\0\0\0".to_vec()),
            "setup.pdf is not a supported file",
        ),
        // More than any attachment may be: not even read whole.
        (
            "file_big",
            FakeResource::file("big.txt", vec![b'a'; 70_000]),
            "document_bytes: big.txt is more than the 64 KiB a file may be",
        ),
        // A key Lark does not have for the message (234003).
        (
            "file_gone",
            FakeResource::file("gone.txt", b"-".to_vec()),
            "could not be fetched from Lark",
        ),
    ];
    let mut asked = Vec::new();
    for (key, resource, says) in refused {
        let name = resource.file_name.clone();
        // The gone file is registered under another key than the message names.
        let registered = if key == "file_gone" {
            "file_other"
        } else {
            key
        };
        let msg = send(
            &mut w,
            "ou_carol",
            "file",
            json!({"file_key": key, "file_name": name}),
            vec![(registered, resource)],
        );
        let answer = w
            .until(&format!("the answer to {name}"), |_| {
                w.replies(&msg).into_iter().find(|m| !notice(m).is_empty())
            })
            .await;
        assert!(notice(&answer).contains(says), "{}", notice(&answer));
        asked.push(msg);
    }
    // The text after them is answered alone: none of them became a message.
    let marker = w.dm("ou_carol", "marker");
    assert_eq!(body(&w.final_card(&marker).await), "You said: marker");
    for msg in &asked {
        assert_eq!(w.replies(msg).len(), 1, "only the refusal answers {msg}");
    }
    w.until("the reactions to go", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
    let gone = &downloads(&w, &asked[2])[0];
    assert!(gone.ends_with(" 400"), "{gone}");
}

/// Files no reader survives (issue 20): each message still gets its reply,
/// which says the file could not be read, and the bot answers the next one.
async fn hostile_files_are_answered_and_the_bot_stays_up(b: Backend) {
    let mut w = LarkWorld::start_with(
        b,
        1,
        fake_config(),
        &[("WEFT_FILES__EXTRACT_TIMEOUT_SECS", "3")],
    )
    .await;
    let files = [
        ("self-drawing.pdf", weft_files::hostile::self_drawing_pdf()),
        ("flate-bomb.pdf", weft_files::hostile::flate_bomb_pdf()),
        ("fan-out.pdf", weft_files::hostile::fan_out_pdf(48)),
    ];
    for (i, (name, bytes)) in files.into_iter().enumerate() {
        let key = format!("file_v3_hostile{i}");
        let msg = send(
            &mut w,
            "ou_mallory",
            "file",
            json!({"file_key": key, "file_name": name}),
            vec![(key.as_str(), FakeResource::file(name, bytes))],
        );
        let card = w.final_card(&msg).await;
        assert_eq!(template(&card), "green", "{name}: {}", w.logs());
        let echoed = body(&card);
        assert!(
            echoed.contains(name) && echoed.contains("could not be read"),
            "{name}: {echoed}"
        );
    }
    let msg = w.dm("ou_mallory", "still there?");
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "green", "{}", w.logs());
    assert!(!w.logs().contains("overflowed its stack"), "{}", w.logs());
}
