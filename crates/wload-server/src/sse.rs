//! Reading a server-sent event stream (the client side of
//! `GET /v1/runs/{id}/events`): bytes in, complete `(event, data)` pairs
//! out, whatever the chunking.

/// An incremental parser of `text/event-stream`.
#[derive(Default)]
pub struct Parser {
    buf: Vec<u8>,
    event: String,
    data: Vec<String>,
}

impl Parser {
    /// Feed bytes; returns the events they completed.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<(String, String)> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = self.buf.drain(..=end).collect();
            let line = String::from_utf8_lossy(&raw[..raw.len() - 1]);
            let line = line.trim_end_matches('\r');
            if line.is_empty() {
                if !self.data.is_empty() || !self.event.is_empty() {
                    let event = std::mem::take(&mut self.event);
                    let event = if event.is_empty() {
                        "message".to_owned()
                    } else {
                        event
                    };
                    out.push((event, self.data.join("\n")));
                    self.data.clear();
                }
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => self.event = value.to_owned(),
                "data" => self.data.push(value.to_owned()),
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_whole_whatever_the_chunks() {
        let stream = b"event: console\ndata: a\ndata: b\n\n: comment\n\nevent: end\ndata: {}\n\n";
        for split in 1..stream.len() {
            let mut p = Parser::default();
            let mut got = p.push(&stream[..split]);
            got.extend(p.push(&stream[split..]));
            assert_eq!(
                got,
                vec![
                    ("console".to_owned(), "a\nb".to_owned()),
                    ("end".to_owned(), "{}".to_owned())
                ],
                "split at {split}"
            );
        }
    }
}
