//! A bare loopback listener that answers every request with one canned
//! response and counts the connections it accepted: what the egress
//! tests need to prove a denial ("this listener saw nothing") and to
//! script a redirect to a denied address, which the hyper target server
//! cannot do. Plain threads, no runtime: it must work beside any test.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A listener on a free port of `ip` (a loopback address) answering
/// every request, keep-alive, with `reply`; with the count of the
/// connections it accepted.
pub fn start(ip: IpAddr, reply: String) -> std::io::Result<(SocketAddr, Arc<AtomicUsize>)> {
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let addr = listen(ip, reply, move |_| {
        count.fetch_add(1, Ordering::SeqCst);
    })?;
    Ok((addr, accepted))
}

/// [`start`], keeping the source address of every connection instead of
/// a count: what a test of `--local-ips` asserts on.
pub fn start_seeing_peers(
    ip: IpAddr,
    reply: String,
) -> std::io::Result<(SocketAddr, Arc<Mutex<Vec<IpAddr>>>)> {
    let peers = Arc::new(Mutex::new(Vec::new()));
    let seen = peers.clone();
    let addr = listen(ip, reply, move |peer| {
        seen.lock().unwrap_or_else(|e| e.into_inner()).push(peer);
    })?;
    Ok((addr, peers))
}

fn listen(
    ip: IpAddr,
    reply: String,
    on_accept: impl Fn(IpAddr) + Send + 'static,
) -> std::io::Result<SocketAddr> {
    assert!(
        ip.is_loopback(),
        "test listeners stay on loopback, not {ip}"
    );
    let listener = TcpListener::bind((ip, 0))?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            if let Ok(peer) = stream.peer_addr() {
                on_accept(peer.ip());
            }
            let reply = reply.clone();
            std::thread::spawn(move || answer(stream, &reply));
        }
    });
    Ok(addr)
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
