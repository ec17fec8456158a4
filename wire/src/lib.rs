//! `weft-wire`: the wire contract every Weft component and client shares — API
//! request and response bodies ([`api`]), run events ([`event`]) and the one
//! fold of them every client uses ([`fold`]), ids ([`ids`]) and queue job
//! payloads ([`job`]) — with nothing else: no database, queue,
//! network or model code, so the terminal client (and anything else that only
//! speaks the protocol) depends on this alone and the contract cannot drift
//! between the gateway, the worker, the clients and the load tester.

pub mod api;
pub mod builtin_agent;
pub mod event;
pub mod fold;
pub mod ids;
pub mod job;
pub mod reasoning;
pub mod states;
pub mod time;
