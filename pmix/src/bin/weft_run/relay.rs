//! `weft-run --netns`: the hosted PMIx server, reachable from inside every node's network
//! namespace.
//!
//! libpmix 4.2 offers its clients TCP only (`PMIX_SERVER_URI*` = `…;tcp4://127.0.0.1:PORT`;
//! its Unix-socket transport is gone since PMIx 4), and it listens in the launcher's network
//! namespace. A rank in its node's own namespace has a loopback of its own, where nothing
//! listens. So for every node namespace the launcher binds the *same* address and port inside
//! that namespace (it is free there: the namespace is new) and relays every connection made
//! to it, byte for byte, to the real server. The URIs a rank gets from
//! `PMIx_server_setup_fork` stay valid unchanged.
//!
//! The listener is created by a short-lived thread that enters the node's namespace (`setns`
//! affects the calling thread only); accepting and the connections to the server run on
//! threads created by the launcher's main thread, hence in the launcher's namespace. Both
//! sides of a relayed connection have Nagle off (PMIx events are small writes). When either
//! side closes, the other side's direction is shut down, so the server sees a rank's death as
//! a lost connection exactly as without `--netns`. The relays live until the launcher exits.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::RawFd;

/// The server address in a `PMIX_SERVER_URI*` value (`NAME;tcp4://HOST:PORT`, or
/// `tcp6://[HOST]:PORT`).
pub fn server_addr(uri: &str) -> Option<SocketAddr> {
    let (_, rest) = uri.split_once("://")?;
    let (host, port) = rest.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip: std::net::IpAddr = host.parse().ok()?;
    Some(SocketAddr::new(ip, port.parse().ok()?))
}

/// Bind `addr` inside the network namespace `ns` (on a thread that enters it).
fn bind_in(ns: RawFd, addr: SocketAddr) -> io::Result<TcpListener> {
    std::thread::scope(|s| {
        s.spawn(move || {
            // SAFETY: `ns` is an open namespace descriptor kept by the launcher's `NetNs`;
            // setns only changes this (short-lived) thread's network namespace.
            if unsafe { libc::setns(ns, libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            TcpListener::bind(addr)
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("namespace listener thread panicked")))
    })
}

/// Copy `from` to `to` until either side ends, then shut both directions of this pair down.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let _ = io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

/// Relay one accepted connection to the server.
fn relay(client: TcpStream, server: SocketAddr) -> io::Result<()> {
    let upstream = TcpStream::connect(server)?;
    client.set_nodelay(true)?;
    upstream.set_nodelay(true)?;
    let (c2, u2) = (client.try_clone()?, upstream.try_clone()?);
    std::thread::Builder::new().name("pmix-relay-up".into()).spawn(move || pump(client, upstream))?;
    std::thread::Builder::new().name("pmix-relay-down".into()).spawn(move || pump(u2, c2))?;
    Ok(())
}

/// Make `server` reachable at the same address inside every namespace of `ns_fds`.
pub fn start(server: SocketAddr, ns_fds: &[RawFd]) -> io::Result<()> {
    for &ns in ns_fds {
        let listener = bind_in(ns, server).map_err(|e| {
            io::Error::new(e.kind(), format!("relay listener on {server} in a node namespace: {e}"))
        })?;
        std::thread::Builder::new().name("pmix-relay-accept".into()).spawn(move || {
            for conn in listener.incoming() {
                match conn.and_then(|c| relay(c, server)) {
                    Ok(()) => {}
                    Err(e) => note!("weft-run: --netns PMIx relay: {e}"),
                }
            }
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_parse() {
        assert_eq!(
            server_addr("pmix-server.1;tcp4://127.0.0.1:5757"),
            Some("127.0.0.1:5757".parse().unwrap())
        );
        assert_eq!(server_addr("s.1;tcp6://[::1]:80"), Some("[::1]:80".parse().unwrap()));
        assert_eq!(server_addr("s.1;tcp4://127.0.0.1"), None);
        assert_eq!(server_addr("nothing"), None);
    }
}
