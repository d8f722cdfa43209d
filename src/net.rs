//! Listening sockets for agentd's servers (the API, and the fake model's).

use tokio::net::{TcpListener, TcpSocket};

/// Connections the kernel may queue before they are accepted. tokio's default (1,024) overflows
/// when thousands of clients connect at once (thousands of kickoffs, say), and a dropped SYN is
/// retried only after 1 s, then 3 s: seconds added to a kickoff. The kernel caps this at
/// `net.core.somaxconn`.
const ACCEPT_BACKLOG: u32 = 8192;

/// A listening socket on `addr` (port 0: a free one) with a deep accept queue.
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(ACCEPT_BACKLOG)
}
