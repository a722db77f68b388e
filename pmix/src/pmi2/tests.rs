//! The PMI-2 client against a scripted fake process manager on a socketpair: a good
//! conversation, then malformed, silent and closed servers (typed errors, no hang).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::*;

const T: Duration = Duration::from_secs(2);

/// Read the init line and reply to it with `init_reply`; then serve framed commands with
/// `serve` (command text → reply body, or `None` to stay silent) until the client hangs up.
fn fake(
    init_reply: &'static str,
    mut serve: impl FnMut(&str) -> Option<Vec<u8>> + Send + 'static,
) -> (UnixStream, JoinHandle<Vec<String>>) {
    let (client, mut server) = UnixStream::pair().unwrap();
    server.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let h = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while b[0] != b'\n' {
            if server.read_exact(&mut b).is_err() {
                return seen;
            }
            line.push(b[0]);
        }
        seen.push(String::from_utf8_lossy(&line).trim_end().to_string());
        if server.write_all(init_reply.as_bytes()).is_err() {
            return seen;
        }
        loop {
            let mut hdr = [0u8; 6];
            if server.read_exact(&mut hdr).is_err() {
                return seen;
            }
            let n: usize = std::str::from_utf8(&hdr).unwrap().trim().parse().unwrap();
            let mut body = vec![0u8; n];
            server.read_exact(&mut body).unwrap();
            let cmd = String::from_utf8(body).unwrap();
            seen.push(cmd.clone());
            match serve(&cmd) {
                Some(reply) => {
                    if server.write_all(&reply).is_err() {
                        return seen;
                    }
                }
                None => std::thread::sleep(Duration::from_secs(4)),
            }
        }
    });
    (client, h)
}

const INIT_OK: &str = "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n";

fn framed(s: &str) -> Vec<u8> {
    wire::frame(s)
}

fn field<'a>(cmd: &'a str, k: &str) -> &'a str {
    cmd.split(';').find_map(|f| f.strip_prefix(k).and_then(|r| r.strip_prefix('='))).unwrap_or("")
}

/// A well-behaved single-node manager for a job of `size`, with a real KVS.
fn good_server(rank: u32, size: u32) -> impl FnMut(&str) -> Option<Vec<u8>> + Send {
    let mut kvs: HashMap<String, String> = HashMap::new();
    move |cmd: &str| {
        let name = field(cmd, "cmd").to_string();
        Some(framed(&match name.as_str() {
            "fullinit" => format!(
                "cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank={rank};size={size};appnum=0;rc=0;"
            ),
            "job-getid" => "cmd=job-getid-response;jobid=kvs_1:x;rc=0;".into(),
            "info-getjobattr" => {
                format!("cmd=info-getjobattr-response;found=TRUE;value=(vector,(0,1,{size}));rc=0;")
            }
            "kvs-put" => {
                kvs.insert(field(cmd, "key").into(), field(cmd, "value").into());
                "cmd=kvs-put-response;rc=0;".into()
            }
            "kvs-fence" => "cmd=kvs-fence-response;rc=0;".into(),
            "kvs-get" => match kvs.get(field(cmd, "key")) {
                Some(v) => format!("cmd=kvs-get-response;found=TRUE;value={v};rc=0;"),
                None => "cmd=kvs-get-response;found=FALSE;rc=0;".into(),
            },
            "finalize" => "cmd=finalize-response;rc=0;".into(),
            other => format!("cmd={other}-response;rc=1;errmsg=unknown;"),
        }))
    }
}

#[test]
fn good_conversation() {
    let (sock, h) = fake(INIT_OK, good_server(1, 3));
    let mut rt = Pmi2Runtime::connect(sock, 1, None, T).unwrap();
    assert_eq!((rt.backend(), rt.rank(), rt.size(), rt.node_id()), ("pmi2", 1, 3, 0));
    assert_eq!(rt.job_id(), "kvs_1_x");
    assert_eq!(rt.local_peers(), &[0, 1, 2]);
    assert!(matches!(rt.node_of(3), Err(RuntimeError::BadRank { rank: 3, size: 3 })));
    let big: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    rt.put("shm", b"card;with=odd\0bytes").unwrap();
    rt.put("big", &big).unwrap();
    rt.commit().unwrap();
    rt.fence().unwrap();
    assert_eq!(rt.get(1, "shm").unwrap(), b"card;with=odd\0bytes");
    assert_eq!(rt.get(1, "big").unwrap(), big);
    assert!(matches!(rt.get(0, "shm"), Err(RuntimeError::NotFound { rank: 0, .. })));
    assert!(matches!(rt.get(7, "shm"), Err(RuntimeError::BadRank { .. })));
    assert!(matches!(rt.put("a;b", b"x"), Err(RuntimeError::Env(_))));
    let mut out = Vec::new();
    rt.poll_terminated(&mut out);
    assert!(out.is_empty());
    rt.finalize().unwrap();
    assert!(rt.put("x", b"y").is_err());
    drop(rt);
    let seen = h.join().unwrap();
    assert_eq!(seen[0], "cmd=init pmi_version=2 pmi_subversion=0");
    assert_eq!(seen[1], "cmd=fullinit;pmirank=1;threaded=FALSE;");
    assert!(seen.iter().any(|c| c.starts_with("cmd=kvs-put;key=weft.1.big;value=*")));
    assert!(seen.iter().any(|c| c == "cmd=kvs-fence;"));
}

/// Slurm's PMI-2 server wants `pmijobid`, `pmirank` and `threaded` in `fullinit` (it refuses
/// the command when one is missing): the job id from `PMI_JOBID` goes first, as MPICH sends it.
#[test]
fn fullinit_announces_the_job_id() {
    let (sock, h) = fake(INIT_OK, good_server(2, 4));
    let rt = Pmi2Runtime::connect(sock, 2, Some("17.0"), T).unwrap();
    assert_eq!((rt.rank(), rt.size()), (2, 4));
    drop(rt);
    let seen = h.join().unwrap();
    assert_eq!(seen[1], "cmd=fullinit;pmijobid=17.0;pmirank=2;threaded=FALSE;");
}

/// `connect` against a server whose reply to command `bad_cmd` is `reply`.
fn connect_with(bad_cmd: &'static str, reply: Vec<u8>) -> Result<Pmi2Runtime, RuntimeError> {
    let mut good = good_server(0, 2);
    let (sock, _h) =
        fake(INIT_OK, move |cmd| if field(cmd, "cmd") == bad_cmd { Some(reply.clone()) } else { good(cmd) });
    Pmi2Runtime::connect(sock, 0, None, T)
}

fn malformed(r: Result<Pmi2Runtime, RuntimeError>) -> String {
    match r {
        Err(RuntimeError::Pmi2(Pmi2Error::Malformed(m))) => m,
        Err(e) => panic!("expected a malformed-reply error, got {e}"),
        Ok(_) => panic!("expected a malformed-reply error, got a runtime"),
    }
}

#[test]
fn malformed_replies_are_typed_errors() {
    // Length header that is not a number.
    malformed(connect_with("fullinit", b"abcdefcmd=fullinit-response;".to_vec()));
    // Announced length beyond the limit.
    malformed(connect_with("fullinit", b"999999cmd=x;".to_vec()));
    // Reply to another command.
    let m = malformed(connect_with("fullinit", framed("cmd=kvs-put-response;")));
    assert!(m.contains("expected fullinit-response"), "{m}");
    // Missing and non-numeric attributes.
    let m = malformed(connect_with("fullinit", framed("cmd=fullinit-response;size=2;rc=0;")));
    assert!(m.contains("rank"), "{m}");
    malformed(connect_with("fullinit", framed("cmd=fullinit-response;rank=x;size=2;rc=0;")));
    // A field without '='.
    malformed(connect_with("job-getid", framed("cmd=job-getid-response;j;")));
    // A found flag that is not a boolean.
    malformed(connect_with("info-getjobattr", framed("cmd=info-getjobattr-response;found=maybe;")));
    // Rank outside the job.
    let (sock, _h) =
        fake(INIT_OK, |cmd| Some(framed(&format!("cmd={}-response;rank=5;size=2;rc=0;", field(cmd, "cmd")))));
    assert!(matches!(
        Pmi2Runtime::connect(sock, 0, None, T),
        Err(RuntimeError::BadRank { rank: 5, size: 2 })
    ));
    // A server error code.
    match connect_with("fullinit", framed("cmd=fullinit-response;rc=3;errmsg=nope;")) {
        Err(RuntimeError::Pmi2(Pmi2Error::Server { cmd, rc, msg })) => {
            assert_eq!((cmd.as_str(), rc.as_str(), msg.as_str()), ("fullinit", "3", "nope"))
        }
        other => panic!("expected a server error, got {:?}", other.err()),
    }
    // A PMI-1-only manager.
    let (sock, _h) = fake("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n", |_| None);
    assert!(matches!(
        Pmi2Runtime::connect(sock, 0, None, T),
        Err(RuntimeError::Pmi2(Pmi2Error::Unsupported(_)))
    ));
}

#[test]
fn garbled_values_are_typed_errors() {
    let mut good = good_server(0, 1);
    let (sock, _h) = fake(INIT_OK, move |cmd| match field(cmd, "key") {
        "weft.0.nothex" => Some(framed("cmd=kvs-get-response;found=TRUE;value=zz;rc=0;")),
        "weft.0.chunks" => Some(framed("cmd=kvs-get-response;found=TRUE;value=*99999;rc=0;")),
        "weft.0.lost" => Some(framed("cmd=kvs-get-response;found=TRUE;value=*2;rc=0;")),
        _ => good(cmd),
    });
    let mut rt = Pmi2Runtime::connect(sock, 0, None, T).unwrap();
    for k in ["nothex", "chunks", "lost"] {
        assert!(matches!(rt.get(0, k), Err(RuntimeError::Pmi2(Pmi2Error::Malformed(_)))), "{k}");
    }
}

#[test]
fn silent_and_closed_servers_fail_in_time() {
    // Silent after the handshake: the fullinit reply never comes.
    let (sock, _h) = fake(INIT_OK, |_| None);
    let t0 = Instant::now();
    let r = Pmi2Runtime::connect(sock, 0, None, Duration::from_millis(300));
    assert!(matches!(r, Err(RuntimeError::Pmi2(Pmi2Error::Timeout(_)))), "{:?}", r.err());
    assert!(t0.elapsed() < Duration::from_secs(3));
    // Closed before answering init.
    let (client, server) = UnixStream::pair().unwrap();
    drop(server);
    let r = Pmi2Runtime::connect(client, 0, None, T);
    assert!(matches!(r, Err(RuntimeError::Pmi2(Pmi2Error::Closed(_)))), "{:?}", r.err());
    // Closed in the middle of a reply.
    let (sock, _h) = fake(INIT_OK, |_| Some(b"    40cmd=fullinit".to_vec()));
    let r = Pmi2Runtime::connect(sock, 0, None, T);
    // The fake then blocks reading the next command; the client sees a timeout or a close.
    assert!(
        matches!(r, Err(RuntimeError::Pmi2(Pmi2Error::Timeout(_) | Pmi2Error::Closed(_)))),
        "{:?}",
        r.err()
    );
}

#[test]
fn bad_pmi_fd() {
    let err = |v: Option<&str>| match socket_from_fd_var(v) {
        Err(Pmi2Error::BadFd(m)) => m,
        other => panic!("expected BadFd, got {:?}", other.map(|_| ())),
    };
    assert!(err(None).contains("not set"));
    assert!(err(Some("x")).contains("not a number"));
    assert!(err(Some("-3")).contains("negative"));
    // An fd number that is not open (far above anything this test process holds).
    assert!(err(Some("1000000")).contains("1000000"));
    // An open fd that is not a socket.
    let f = std::fs::File::open("/proc/self/status").unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
    assert!(err(Some(&fd.to_string())).contains("not a socket"));
}
