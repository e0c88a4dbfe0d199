//! A bare loopback listener that answers every request with one canned
//! response and counts the connections it accepted: what the egress
//! tests need to prove a denial ("this listener saw nothing") and to
//! script a redirect to a denied address, which the hyper target server
//! cannot do. Plain threads, no runtime: it must work beside any test.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A listener on a free port of `ip` (a loopback address) answering
/// every request, keep-alive, with `reply`; with the count of the
/// connections it accepted.
pub fn start(ip: IpAddr, reply: String) -> std::io::Result<(SocketAddr, Arc<AtomicUsize>)> {
    assert!(
        ip.is_loopback(),
        "test listeners stay on loopback, not {ip}"
    );
    let listener = TcpListener::bind((ip, 0))?;
    let addr = listener.local_addr()?;
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            let reply = reply.clone();
            std::thread::spawn(move || answer(stream, &reply));
        }
    });
    Ok((addr, accepted))
}

/// Read request heads byte by byte (no bodies are sent to it) and answer
/// each with `reply` until the peer goes.
fn answer(mut stream: std::net::TcpStream, reply: &str) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        while !head.ends_with(b"\r\n\r\n") {
            match stream.read(&mut byte) {
                Ok(0) | Err(_) => return,
                Ok(_) => head.push(byte[0]),
            }
        }
        head.clear();
        if stream.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// `200 OK` with body `ok`.
pub fn ok() -> String {
    "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_owned()
}
