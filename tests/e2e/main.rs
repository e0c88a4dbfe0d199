//! End-to-end tests: the real `wload` binary, real guests built from
//! `examples/` for wasm32-wasip2, and a real HTTP server on 127.0.0.1
//! (wload's own target server, run inside this test process so that the
//! tests can read what it saw).

mod support;
mod thresholds;

mod api_schema;
mod compose;
mod control;
mod deploy;
mod distributed;
mod egress;
mod errors;
mod executors;
mod hostile;
mod http;
mod k6_corpus;
mod k8s;
mod languages;
mod layers;
mod load;
mod oci;
mod openapi;
mod outputs;
mod parity;
mod plugin_caps;
mod plugins;
mod remote_outputs;
mod report;
mod rest_crud;
mod results;
mod service;
mod service_plugins;
mod validation;
mod worlds;
