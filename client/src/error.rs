//! Client errors, phrased so a person knows what to do next, each mapped to an
//! exit code (see [`crate::exit`]).

use crate::exit;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The command line or input makes no sense (exit 2).
    #[error("{0}")]
    Usage(String),
    #[error(
        "cannot reach the gateway at {url} ({detail})\n  is it running? Start one here with `weft up`, or point the client elsewhere with --gateway URL / WEFT_GATEWAY"
    )]
    Unreachable { url: String, detail: String },
    #[error(
        "the gateway at {url} did not accept the token: {message}\n  log in with `weft login`, or pass --token / WEFT_TOKEN"
    )]
    Unauthorized { url: String, message: String },
    #[error(
        "not logged in to {url}\n  run `weft login`, or pass --token / WEFT_TOKEN (after `weft up` on this machine no login is needed)"
    )]
    NoToken { url: String },
    #[error(
        "the gateway at {url} does not offer {path}: it is probably older than this client ({ours}); upgrade the gateway"
    )]
    GatewayTooOld {
        url: String,
        path: String,
        ours: String,
    },
    /// The gateway refused the request with its error envelope.
    #[error("{message} ({code})")]
    Api {
        status: u16,
        code: String,
        message: String,
    },
    #[error("{0}")]
    Local(String),
}

impl ClientError {
    pub fn exit_code(&self) -> u8 {
        match self {
            ClientError::Usage(_) => exit::USAGE,
            ClientError::Unreachable { .. }
            | ClientError::Unauthorized { .. }
            | ClientError::NoToken { .. }
            | ClientError::GatewayTooOld { .. } => exit::CONNECTION,
            ClientError::Api {
                status: 401 | 403, ..
            } => exit::CONNECTION,
            ClientError::Api { .. } | ClientError::Local(_) => exit::RUN_FAILED,
        }
    }

    /// A 404 from the API (unknown session or run).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ClientError::Api { status: 404, .. })
    }

    /// Worth retrying the same request: the gateway was briefly away or overloaded.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Unreachable { .. } => true,
            ClientError::Api { status, .. } => *status >= 500,
            _ => false,
        }
    }
}

impl From<std::io::Error> for ClientError {
    fn from(e: std::io::Error) -> Self {
        ClientError::Local(e.to_string())
    }
}

pub type Result<T, E = ClientError> = std::result::Result<T, E>;
