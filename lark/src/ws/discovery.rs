//! Endpoint discovery (`POST /callback/ws/endpoint`) and the WebSocket dial.
//!
//! Both steps classify their failures the way the official SDKs do: discovery code
//! 1 / 1000040343 / HTTP ≠ 200 and most handshake failures are retryable; any other
//! discovery code (bad credentials), a 403 handshake, or a 514 handshake with auth
//! code 1000040350 (connection limit) are fatal. Both have timeouts.

use reqwest::Url;
use serde::Deserialize;
use serde_json::json;
use tokio::net::TcpStream;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, tungstenite};

use super::config::ClientConfigWire;
use super::{WsConfig, WsError};

const ENDPOINT_PATH: &str = "/callback/ws/endpoint";
const CODE_SYSTEM_BUSY: i64 = 1;
const CODE_INTERNAL_ERROR: i64 = 1000040343;
const HANDSHAKE_FORBIDDEN: i64 = 403;
const HANDSHAKE_AUTH_FAILED: i64 = 514;
const AUTH_EXCEED_CONN_LIMIT: i64 = 1000040350;

pub(crate) type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Where to connect, from discovery.
pub(crate) struct Endpoint {
    pub url: String,
    /// Connection id, only for logs.
    pub device_id: String,
    /// Goes into `Frame.service` of every ping.
    pub service_id: i32,
    pub client_config: Option<ClientConfigWire>,
}

/// A failed connection attempt.
#[derive(Debug)]
pub(crate) enum ConnectFailure {
    Retryable(String),
    Fatal(WsError),
}

#[derive(Deserialize)]
struct EndpointResponse {
    code: i64,
    #[serde(default)]
    msg: String,
    data: Option<EndpointData>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct EndpointData {
    #[serde(rename = "URL")]
    url: String,
    client_config: Option<ClientConfigWire>,
}

pub(crate) async fn discover(
    http: &reqwest::Client,
    config: &WsConfig,
) -> Result<Endpoint, ConnectFailure> {
    let url = format!("{}{ENDPOINT_PATH}", config.base_url.trim_end_matches('/'));
    let body = json!({
        "AppID": config.credentials.app_id,
        "AppSecret": config.credentials.secret().expose(),
    });
    let response = http
        .post(url)
        .header("locale", "zh")
        .timeout(config.discovery_timeout)
        .json(&body)
        .send()
        .await
        .map_err(|e| ConnectFailure::Retryable(format!("discovery request failed: {e}")))?;
    let status = response.status();
    if !status.is_success() {
        return Err(ConnectFailure::Retryable(format!(
            "discovery answered HTTP {status}"
        )));
    }
    let parsed: EndpointResponse = response
        .json()
        .await
        .map_err(|e| ConnectFailure::Retryable(format!("discovery response unreadable: {e}")))?;
    match parsed.code {
        0 => {}
        CODE_SYSTEM_BUSY | CODE_INTERNAL_ERROR => {
            return Err(ConnectFailure::Retryable(format!(
                "discovery code {}: {}",
                parsed.code, parsed.msg
            )));
        }
        code => {
            return Err(ConnectFailure::Fatal(WsError::DiscoveryRejected {
                code,
                msg: parsed.msg,
            }));
        }
    }
    let data = parsed
        .data
        .ok_or_else(|| ConnectFailure::Retryable("discovery returned no data".into()))?;
    let parsed_url = Url::parse(&data.url)
        .map_err(|e| ConnectFailure::Retryable(format!("discovery returned a bad URL: {e}")))?;
    let query = |key: &str| {
        parsed_url
            .query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    };
    Ok(Endpoint {
        device_id: query("device_id").unwrap_or_default(),
        service_id: query("service_id")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        url: data.url,
        client_config: data.client_config,
    })
}

/// Dials the URL exactly as discovery returned it.
pub(crate) async fn dial(endpoint: &Endpoint, config: &WsConfig) -> Result<Socket, ConnectFailure> {
    let dial = tokio_tungstenite::connect_async(endpoint.url.as_str());
    match tokio::time::timeout(config.dial_timeout, dial).await {
        Err(_) => Err(ConnectFailure::Retryable("dial timed out".into())),
        Ok(Ok((socket, _))) => Ok(socket),
        Ok(Err(tungstenite::Error::Http(response))) => Err(classify_handshake(&response)),
        Ok(Err(e)) => Err(ConnectFailure::Retryable(format!("dial failed: {e}"))),
    }
}

fn classify_handshake(response: &tungstenite::http::Response<Option<Vec<u8>>>) -> ConnectFailure {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let status = header("Handshake-Status").and_then(|s| s.parse::<i64>().ok());
    let msg = header("Handshake-Msg").unwrap_or_default();
    let auth_code = header("Handshake-Autherrcode").and_then(|s| s.parse::<i64>().ok());
    match (status, auth_code) {
        (Some(HANDSHAKE_AUTH_FAILED), Some(AUTH_EXCEED_CONN_LIMIT)) => {
            ConnectFailure::Fatal(WsError::ConnectionLimit { msg })
        }
        (Some(HANDSHAKE_FORBIDDEN), _) => ConnectFailure::Fatal(WsError::HandshakeRejected {
            status: HANDSHAKE_FORBIDDEN,
            msg,
        }),
        (Some(status), _) => ConnectFailure::Retryable(format!("handshake status {status}: {msg}")),
        (None, _) => ConnectFailure::Retryable(format!("handshake HTTP {}", response.status())),
    }
}
