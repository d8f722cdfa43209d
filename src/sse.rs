//! A reader of `text/event-stream` bodies, as MCP servers and streaming LLM providers send them
//! (the WHATWG rules): lines split on CR, LF or CRLF; `data:` lines joined with LF; an event
//! dispatched at a blank line; comments, `event:`, `id:` and `retry:` fields skipped (a response
//! is read once, not resumed). Bounded: an event or a body past the limit is an error.

/// Splits a stream of chunks into the `data` of its events.
#[derive(Debug, Default)]
pub struct SseReader {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// A CR ended the last line: an LF right after it belongs to it.
    after_cr: bool,
    read: usize,
}

impl SseReader {
    /// Feed `chunk`; returns the data of every event it completes. Fails past `limit` bytes read.
    pub fn feed(&mut self, chunk: &[u8], limit: usize) -> Result<Vec<String>, String> {
        self.read += chunk.len();
        if self.read > limit {
            return Err(format!("the response is larger than the limit of {limit} bytes"));
        }
        let mut events = Vec::new();
        for &byte in chunk {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\r' | b'\n' => {
                    self.after_cr = byte == b'\r';
                    if let Some(event) = self.end_line() {
                        events.push(event);
                    }
                }
                _ => self.line.push(byte),
            }
        }
        Ok(events)
    }

    fn end_line(&mut self) -> Option<String> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            let data = std::mem::take(&mut self.data);
            return std::mem::take(&mut self.has_data).then(|| String::from_utf8_lossy(&data).into_owned());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return None,
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &[][..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_across_chunks_and_line_endings() {
        let mut reader = SseReader::default();
        let mut events = reader
            .feed(b"id: 1\ndata: \n\n: comment\r\nevent: message\r\ndata: {\"a\":", 1000)
            .expect("feed");
        assert_eq!(events, [""]);
        events = reader.feed(b"1}\r\ndata: x\r\r\ndata:y\n\n", 1000).expect("feed");
        assert_eq!(events, ["{\"a\":1}\nx", "y"]);
        assert!(reader.feed(&[b'a'; 2000], 1000).is_err());
    }
}
