//! A hostile HTTP server for the tests of what the platform reads from a
//! server a tenant names (R-SEC-7): it announces a huge body, sends a body
//! or an event line without end, or goes silent after its headers.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the hostile server does after reading a request.
#[derive(Debug, Clone, Copy)]
pub enum Hostile {
    /// `Content-Length: 16 GiB`, then zeros as fast as it can.
    HugeLength,
    /// A chunked body that never ends.
    EndlessBody,
    /// An event stream whose one line never ends.
    EndlessLine,
    /// An event stream that sends its headers, then nothing.
    Silent,
}

/// Serve `mode` on 127.0.0.1 to every connection (for the life of the
/// test's runtime); the server's URL.
pub async fn hostile_http(mode: Hostile) -> anyhow::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let head = match mode {
                    Hostile::HugeLength => {
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 17179869184\r\n\r\n"
                    }
                    Hostile::EndlessBody => {
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
                    }
                    Hostile::EndlessLine | Hostile::Silent => {
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                    }
                };
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let block = vec![b'x'; 64 * 1024];
                loop {
                    let sent = match mode {
                        Hostile::HugeLength => socket.write_all(&block).await,
                        Hostile::EndlessBody | Hostile::EndlessLine => {
                            let mut chunk = format!("{:x}\r\n", block.len()).into_bytes();
                            if matches!(mode, Hostile::EndlessLine) {
                                chunk.extend_from_slice(b"data: ");
                                chunk.extend_from_slice(&block[6..]);
                            } else {
                                chunk.extend_from_slice(&block);
                            }
                            chunk.extend_from_slice(b"\r\n");
                            socket.write_all(&chunk).await
                        }
                        Hostile::Silent => {
                            tokio::time::sleep(Duration::from_secs(3600)).await;
                            Ok(())
                        }
                    };
                    if sent.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok(url)
}
