//! A webhook receiver on loopback: it records every request it is sent and answers each with the
//! next status of a script (200 once the script is used up).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
    /// The status it was answered with.
    pub answered: u16,
}

impl Received {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
            .unwrap_or_default()
    }
}

#[derive(Default)]
struct Shared {
    received: Vec<Received>,
    script: VecDeque<u16>,
}

pub struct Receiver {
    pub url: String,
    shared: Arc<Mutex<Shared>>,
}

impl Receiver {
    /// Listens on 127.0.0.1; `script` gives the first answers' statuses.
    pub async fn start(script: &[u16]) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let shared = Arc::new(Mutex::new(Shared {
            received: Vec::new(),
            script: script.iter().copied().collect(),
        }));
        let state = shared.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = state.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, state).await;
                });
            }
        });
        Receiver { url, shared }
    }

    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().unwrap().received.clone()
    }

    /// Waits until a request satisfies `found`; panics after `secs`.
    pub async fn wait_for(&self, secs: u64, found: impl Fn(&Received) -> bool) -> Received {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(hit) = self.received().into_iter().find(|r| found(r)) {
                return hit;
            }
            assert!(
                Instant::now() < deadline,
                "no such request within {secs} s; received: {:?}",
                self.received()
                    .iter()
                    .map(|r| (r.answered, String::from_utf8_lossy(&r.body).into_owned()))
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Reads requests off one connection (keep-alive) and answers each.
async fn serve(
    mut stream: tokio::net::TcpStream,
    state: Arc<Mutex<Shared>>,
) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    loop {
        let head_end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let mut chunk = [0u8; 4096];
            let read = stream.read(&mut chunk).await?;
            if read == 0 {
                return Ok(());
            }
            buffer.extend_from_slice(&chunk[..read]);
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let path = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .unwrap_or_default()
            .to_string();
        let headers: BTreeMap<String, String> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
            .collect();
        let length: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        while buffer.len() < head_end + length {
            let mut chunk = [0u8; 4096];
            let read = stream.read(&mut chunk).await?;
            if read == 0 {
                return Ok(());
            }
            buffer.extend_from_slice(&chunk[..read]);
        }
        let body = buffer[head_end..head_end + length].to_vec();
        buffer.drain(..head_end + length);
        let answered = {
            let mut shared = state.lock().unwrap();
            let answered = shared.script.pop_front().unwrap_or(200);
            shared.received.push(Received {
                path,
                headers,
                body,
                answered,
            });
            answered
        };
        let response = format!(
            "HTTP/1.1 {answered} Scripted\r\ncontent-length: 2\r\ncontent-type: application/json\r\n\r\n{{}}"
        );
        stream.write_all(response.as_bytes()).await?;
    }
}
