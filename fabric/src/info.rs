//! `fi_getinfo`: discovering providers and choosing the one the transport opens.
//!
//! Every query asks for the newest API version the loaded library supports
//! ([`crate::library::api_version`]), so weft built against 1.17 headers runs on 1.17 to 2.x.
//!
//! Selection rules ([`select`]):
//! 1. Hints: `FI_EP_RDM`; caps `FI_TAGGED | FI_RMA | FI_SEND | FI_RECV | FI_READ |
//!    FI_REMOTE_READ`; `FI_ORDER_SAS` on tx and rx (per-peer FIFO, required by the `Transport`
//!    contract); modes `FI_CONTEXT | FI_CONTEXT2` accepted; `FI_THREAD_DOMAIN`; manual data
//!    progress; `FI_RM_ENABLED`; mr_mode `FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
//!    FI_MR_PROV_KEY | FI_MR_ENDPOINT` offered (the provider keeps the bits it needs).
//! 2. `provider` (from `OfiConfig::provider` / `WEFT_FI_PROVIDER`) and `domain`
//!    (`OfiConfig::domain` / `WEFT_FI_DOMAIN`, e.g. `lo`) are passed to libfabric as hints,
//!    and the domain is also enforced on the results (libfabric 1.17 ignores the domain hint
//!    for `tcp;ofi_rxm`): an entry of another domain is never opened.
//! 3. Without a provider name, the best match by [`provider_rank`] wins: `verbs;ofi_rxm`,
//!    `cxi`, `efa`, `psm3`, `opx`, `psm2`, `tcp;ofi_rxm`, then anything else. Entries whose
//!    `mr_mode` needs a registration mode the transport does not implement
//!    (`attr::MrMode::from_bits`) are passed over. `shm`, `udp`,
//!    `sockets`, `ofi_rxd` and `net` stacks and the RDM-native `tcp` are never chosen unless
//!    named explicitly (`net`, libfabric 1.17's RDM-native tcp, and `tcp`, its successor from
//!    1.18 on, are faster for small messages than `tcp;ofi_rxm` but can leave a dead peer
//!    unreported: see [`provider_rank`]). Ties keep libfabric's order, except
//!    that IPv4 addressing is preferred over IPv6. Among stacks that are only used when named,
//!    the one with the fewest layers wins: `net` opens `net`, not `net;ofi_rxm`. An entry whose
//!    name is exactly the one asked for beats every other (on 2.x a hint of `tcp` also
//!    returns `tcp;ofi_rxm`).
//! 4. A provider name that libfabric does not know gives [`FabricError::UnknownProvider`],
//!    listing every installed provider; a known one that does not fit gives
//!    [`FabricError::NoProvider`].

use std::ffi::{CStr, CString};
use std::ptr;

use weft_fabric_sys as sys;

use crate::attr::{MrMode, REQUIRED_CAPS, SUPPORTED_MR_MODE};
use crate::error::{ret_msg, FabricError};
use crate::library;

/// An owned `fi_info` list (freed with `fi_freeinfo`).
pub struct Info {
    raw: *mut sys::fi_info,
}

/// One entry of an [`Info`] list.
#[derive(Clone, Copy)]
pub struct InfoRef<'a> {
    raw: &'a sys::fi_info,
}

fn cstr(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: libfabric attribute strings are NUL-terminated and live as long as the
        // fi_info that holds them; we copy before returning.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

fn strdup(s: &str) -> Result<*mut std::os::raw::c_char, FabricError> {
    let c = CString::new(s).map_err(|_| FabricError::Config(format!("{s:?} contains a NUL byte")))?;
    // SAFETY: `c` is a valid NUL-terminated string; strdup returns a malloc'ed copy that the
    // fi_info owns from now on (fi_freeinfo frees it with free()).
    let p = unsafe { libc::strdup(c.as_ptr()) };
    if p.is_null() {
        return Err(FabricError::Config("out of memory".into()));
    }
    Ok(p)
}

impl Info {
    /// `fi_getinfo(hints)`. "No match" (`-FI_ENODATA`) is an empty list, not an error.
    pub fn get(hints: Option<&Hints>) -> Result<Info, FabricError> {
        library::load().map_err(FabricError::Library)?;
        let mut out: *mut sys::fi_info = ptr::null_mut();
        let h = hints.map_or(ptr::null_mut(), |h| h.0.raw);
        let api = library::api_version();
        // SAFETY: node/service are NULL (local discovery, nothing is resolved or bound), hints
        // is NULL or a valid fi_info we own, `out` is a valid out-pointer.
        let ret = unsafe { sys::fi_getinfo(api, ptr::null(), ptr::null(), 0, h, &mut out) };
        if ret == -(sys::FI_ENODATA as i32) {
            return Ok(Info { raw: ptr::null_mut() });
        }
        if ret != 0 {
            let (ret, msg) = ret_msg(ret as isize);
            return Err(FabricError::GetInfo { ret, msg });
        }
        Ok(Info { raw: out })
    }

    /// The entries of the list.
    pub fn iter(&self) -> impl Iterator<Item = InfoRef<'_>> {
        let mut p = self.raw;
        std::iter::from_fn(move || {
            // SAFETY: `p` is NULL or an entry of the list we own, alive while `self` is.
            let r = unsafe { p.as_ref() }?;
            p = r.next;
            Some(InfoRef { raw: r })
        })
    }

    /// True if the list is empty.
    pub fn is_empty(&self) -> bool {
        self.raw.is_null()
    }

    /// A one-entry list copied from `e` (`fi_dupinfo`).
    pub fn dup(e: InfoRef<'_>) -> Result<Info, FabricError> {
        // SAFETY: `e.raw` is a valid fi_info; fi_dupinfo deep-copies it (not its `next`).
        let p = unsafe { sys::fi_dupinfo(e.raw) };
        if p.is_null() {
            return Err(FabricError::GetInfo {
                ret: -(sys::FI_ENOMEM as i32),
                msg: "fi_dupinfo failed".into(),
            });
        }
        Ok(Info { raw: p })
    }

    /// The first entry.
    pub fn first(&self) -> Option<InfoRef<'_>> {
        self.iter().next()
    }
}

impl Drop for Info {
    fn drop(&mut self) {
        if !self.raw.is_null() {
            // SAFETY: we own the list; no InfoRef outlives `self` (borrowck).
            unsafe { sys::fi_freeinfo(self.raw) };
        }
    }
}

impl<'a> InfoRef<'a> {
    pub(crate) fn raw(&self) -> &'a sys::fi_info {
        self.raw
    }
    /// The entry as the `*mut` that `fi_domain` / `fi_endpoint` take; they only read it.
    pub(crate) fn raw_mut(&self) -> *mut sys::fi_info {
        self.raw as *const sys::fi_info as *mut sys::fi_info
    }
    /// Provider name, e.g. `tcp;ofi_rxm`.
    pub fn provider(&self) -> String {
        // SAFETY: fi_getinfo fills fabric_attr for every entry; NULL is handled.
        unsafe { self.raw.fabric_attr.as_ref() }.map_or(String::new(), |f| cstr(f.prov_name))
    }
    /// Fabric name, e.g. `127.0.0.1/32`.
    pub fn fabric(&self) -> String {
        // SAFETY: as above.
        unsafe { self.raw.fabric_attr.as_ref() }.map_or(String::new(), |f| cstr(f.name))
    }
    fn domain_attr(&self) -> Option<&'a sys::fi_domain_attr> {
        // SAFETY: NULL or a valid attribute struct owned by the list.
        unsafe { self.raw.domain_attr.as_ref() }
    }
    fn tx_attr(&self) -> Option<&'a sys::fi_tx_attr> {
        // SAFETY: NULL or a valid attribute struct owned by the list.
        unsafe { self.raw.tx_attr.as_ref() }
    }
    fn ep_attr(&self) -> Option<&'a sys::fi_ep_attr> {
        // SAFETY: NULL or a valid attribute struct owned by the list.
        unsafe { self.raw.ep_attr.as_ref() }
    }
    /// Domain name, e.g. `lo`, `mlx5_0`.
    pub fn domain(&self) -> String {
        self.domain_attr().map_or(String::new(), |d| cstr(d.name))
    }
    /// Endpoint type.
    pub fn ep_type(&self) -> sys::fi_ep_type {
        self.ep_attr().map_or(0, |e| e.type_)
    }
    /// Capabilities.
    pub fn caps(&self) -> u64 {
        self.raw.caps
    }
    /// Mode bits the application must honour.
    pub fn mode(&self) -> u64 {
        self.raw.mode
    }
    /// Memory-registration mode bits.
    pub fn mr_mode(&self) -> u64 {
        self.domain_attr().map_or(0, |d| d.mr_mode as u32 as u64)
    }
    /// Size of an MR key in bytes.
    pub fn mr_key_size(&self) -> usize {
        self.domain_attr().map_or(0, |d| d.mr_key_size)
    }
    /// Largest message (and single RMA transfer).
    pub fn max_msg_size(&self) -> usize {
        self.ep_attr().map_or(0, |e| e.max_msg_size)
    }
    /// Largest `fi_inject` payload.
    pub fn inject_size(&self) -> usize {
        self.tx_attr().map_or(0, |t| t.inject_size)
    }
    /// Transmit queue depth.
    pub fn tx_size(&self) -> usize {
        self.tx_attr().map_or(0, |t| t.size)
    }
    /// Receive queue depth.
    pub fn rx_size(&self) -> usize {
        // SAFETY: NULL or a valid attribute struct owned by the list.
        unsafe { self.raw.rx_attr.as_ref() }.map_or(0, |r| r.size)
    }
    /// Address format (`FI_SOCKADDR_IN`, ...).
    pub fn addr_format(&self) -> u32 {
        self.raw.addr_format
    }
    /// Summary for `weft-info`.
    pub fn summary(&self) -> ProviderInfo {
        ProviderInfo {
            name: self.provider(),
            fabric: self.fabric(),
            domain: self.domain(),
            ep_type: ep_type_name(self.ep_type()).to_string(),
            caps: self.caps(),
            max_msg_size: self.max_msg_size(),
            inject_size: self.inject_size(),
            mr_mode: self.mr_mode(),
        }
    }
}

/// Hints for `fi_getinfo`, allocated by `fi_dupinfo(NULL)` (`fi_allocinfo` is a macro).
pub struct Hints(Info);

impl Hints {
    /// Empty hints.
    pub fn new() -> Result<Hints, FabricError> {
        library::load().map_err(FabricError::Library)?;
        // SAFETY: fi_dupinfo(NULL) allocates a zeroed fi_info with all attribute structs.
        let p = unsafe { sys::fi_dupinfo(ptr::null()) };
        if p.is_null() {
            return Err(FabricError::GetInfo {
                ret: -(sys::FI_ENOMEM as i32),
                msg: "fi_dupinfo failed".into(),
            });
        }
        Ok(Hints(Info { raw: p }))
    }

    /// The hints the transport uses (rule 1 of the module doc), restricted to `provider`
    /// and `domain` when given.
    pub fn transport(provider: Option<&str>, domain: Option<&str>) -> Result<Hints, FabricError> {
        let h = Hints::new()?;
        // SAFETY: fi_dupinfo(NULL) allocated every attribute struct; we own them exclusively
        // and store only malloc'ed strings (freed by fi_freeinfo).
        unsafe {
            let i = &mut *h.0.raw;
            i.caps = REQUIRED_CAPS;
            i.mode = sys::FI_CONTEXT | sys::FI_CONTEXT2;
            (*i.ep_attr).type_ = sys::FI_EP_RDM;
            (*i.tx_attr).msg_order = sys::FI_ORDER_SAS as u64;
            (*i.rx_attr).msg_order = sys::FI_ORDER_SAS as u64;
            let d = &mut *i.domain_attr;
            d.threading = sys::FI_THREAD_DOMAIN;
            d.data_progress = sys::FI_PROGRESS_MANUAL;
            d.resource_mgmt = sys::FI_RM_ENABLED;
            d.mr_mode = SUPPORTED_MR_MODE as i32;
            if let Some(dom) = domain {
                d.name = strdup(dom)?;
            }
            if let Some(p) = provider {
                (*i.fabric_attr).prov_name = strdup(p)?;
            }
        }
        Ok(h)
    }
}

/// Description of one provider/domain pair, for `weft-info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderInfo {
    /// Provider name (`tcp;ofi_rxm`, `verbs;ofi_rxm`, `cxi`, ...).
    pub name: String,
    /// Fabric name.
    pub fabric: String,
    /// Domain name (NIC or interface).
    pub domain: String,
    /// Endpoint type (`FI_EP_RDM`, `FI_EP_MSG`, `FI_EP_DGRAM`).
    pub ep_type: String,
    /// Capability bits.
    pub caps: u64,
    /// Largest message.
    pub max_msg_size: usize,
    /// Largest inject payload.
    pub inject_size: usize,
    /// Memory-registration mode bits.
    pub mr_mode: u64,
}

impl ProviderInfo {
    /// Names of the capability bits weft cares about.
    pub fn caps_names(&self) -> Vec<&'static str> {
        flag_names(self.caps, CAP_NAMES)
    }
    /// Names of the mr_mode bits.
    pub fn mr_mode_names(&self) -> Vec<&'static str> {
        flag_names(self.mr_mode, MR_NAMES)
    }
}

const CAP_NAMES: &[(u32, &str)] = &[
    (sys::FI_MSG, "FI_MSG"),
    (sys::FI_RMA, "FI_RMA"),
    (sys::FI_TAGGED, "FI_TAGGED"),
    (sys::FI_READ, "FI_READ"),
    (sys::FI_WRITE, "FI_WRITE"),
    (sys::FI_SEND, "FI_SEND"),
    (sys::FI_RECV, "FI_RECV"),
    (sys::FI_REMOTE_READ, "FI_REMOTE_READ"),
    (sys::FI_REMOTE_WRITE, "FI_REMOTE_WRITE"),
];

const MR_NAMES: &[(u32, &str)] = &[
    (sys::FI_MR_LOCAL, "FI_MR_LOCAL"),
    (sys::FI_MR_RAW, "FI_MR_RAW"),
    (sys::FI_MR_VIRT_ADDR, "FI_MR_VIRT_ADDR"),
    (sys::FI_MR_ALLOCATED, "FI_MR_ALLOCATED"),
    (sys::FI_MR_PROV_KEY, "FI_MR_PROV_KEY"),
    (sys::FI_MR_MMU_NOTIFY, "FI_MR_MMU_NOTIFY"),
    (sys::FI_MR_RMA_EVENT, "FI_MR_RMA_EVENT"),
    (sys::FI_MR_ENDPOINT, "FI_MR_ENDPOINT"),
    (sys::FI_MR_HMEM, "FI_MR_HMEM"),
];

fn flag_names(bits: u64, table: &[(u32, &'static str)]) -> Vec<&'static str> {
    table.iter().filter(|(b, _)| bits & *b as u64 != 0).map(|(_, n)| *n).collect()
}

/// Name of an endpoint type.
pub fn ep_type_name(t: sys::fi_ep_type) -> &'static str {
    match t {
        sys::FI_EP_RDM => "FI_EP_RDM",
        sys::FI_EP_MSG => "FI_EP_MSG",
        sys::FI_EP_DGRAM => "FI_EP_DGRAM",
        _ => "other",
    }
}

/// Every provider/domain pair libfabric reports (no hints): for `weft-info`.
pub fn providers() -> Result<Vec<ProviderInfo>, FabricError> {
    Ok(Info::get(None)?.iter().map(|e| e.summary()).collect())
}

/// Distinct provider names libfabric reports, in its order.
pub fn provider_names() -> Result<Vec<String>, FabricError> {
    let mut v: Vec<String> = Vec::new();
    for e in Info::get(None)?.iter() {
        let n = e.provider();
        if !v.contains(&n) {
            v.push(n);
        }
    }
    Ok(v)
}

/// Preference of a provider for automatic selection (lower is better); `None`: never chosen
/// automatically (`shm`, `udp`, `sockets`, `ofi_rxd` and `net` stacks, the RDM-native `tcp`,
/// utility-only providers).
///
/// `net` (libfabric 1.17's RDM-native tcp, which became `tcp` in 1.18) has a lower 8-byte
/// latency than `tcp;ofi_rxm` on loopback (≈4.2 vs ≈5.2 µs), but it does not report a dead
/// peer reliably: once the connection has failed, every send or read towards the peer makes
/// it reconnect, the connect is refused, and the call returns `-FI_EAGAIN` — forever, with no
/// error completion (`ofi_rxm` queues operations while it connects and fails them). It stays
/// opt-in (`WEFT_FI_PROVIDER=net`). The RDM-native `tcp` of libfabric 1.18 and later (the same
/// code renamed; 2.5.1 measured) behaves the same way: in the send-only kill test
/// (`WEFT_FI_TEST_PROVIDER=tcp`, `sendonly_detection`) the sends towards the killed peer
/// returned `-FI_EAGAIN` for 10 s with no error completion in 3 of 6 runs, where
/// `tcp;ofi_rxm` on the same library reported every kill. It is opt-in too
/// (`WEFT_FI_PROVIDER=tcp`). (On 1.17, `tcp` alone is a message-endpoint provider that never
/// matches the `FI_EP_RDM` hints.)
pub fn provider_rank(name: &str) -> Option<u32> {
    let layers: Vec<&str> = name.split(';').collect();
    if name == "tcp" || layers.iter().any(|l| matches!(*l, "shm" | "udp" | "sockets" | "ofi_rxd" | "net")) {
        return None;
    }
    Some(match name {
        "verbs;ofi_rxm" => 0,
        "cxi" => 1,
        "efa" => 2,
        "psm3" => 3,
        "opx" => 4,
        "psm2" => 5,
        "tcp;ofi_rxm" => 6,
        _ => 7,
    })
}

/// Base rank of an entry that [`provider_rank`] never chooses, when its name was asked for.
const FORCED_RANK: u32 = 8;

/// Which entry of `list` the transport opens (rules 3 and 4 of the module doc). `requested`:
/// the provider name that was asked for; then the skip list does not apply and an entry of
/// exactly that name wins. `domain`: only entries of that
/// domain qualify — checked here because libfabric 1.17 does not filter `tcp;ofi_rxm` entries
/// by the domain-name hint (it returns `eth0` entries for a hint of `lo`).
pub fn choose<'a>(list: &'a Info, requested: Option<&str>, domain: Option<&str>) -> Option<InfoRef<'a>> {
    let forced = requested.is_some();
    let mut best: Option<(u32, u32, InfoRef<'a>)> = None;
    for e in list.iter() {
        if e.ep_type() != sys::FI_EP_RDM || domain.is_some_and(|d| e.domain() != d) {
            continue;
        }
        // A named provider is opened even so, and `OfiTransport::open` names the mode it lacks.
        if !forced && MrMode::from_bits(e.mr_mode(), e.mr_key_size()).is_err() {
            continue;
        }
        let name = e.provider();
        let rank = match provider_rank(&name) {
            _ if requested == Some(name.as_str()) => 0,
            Some(r) => r,
            // Named explicitly: the fewest layers win (`net` over `net;ofi_rxm`).
            None if forced => FORCED_RANK + name.split(';').count() as u32,
            None => continue,
        };
        let v6 = u32::from(e.addr_format() == sys::FI_SOCKADDR_IN6);
        if best.as_ref().is_none_or(|(r, v, _)| (rank, v6) < (*r, *v)) {
            best = Some((rank, v6, e));
        }
    }
    best.map(|(_, _, e)| e)
}

/// Run the selection for `provider` / `domain` and return the chosen entry alone.
pub fn select(provider: Option<&str>, domain: Option<&str>) -> Result<Info, FabricError> {
    let hints = Hints::transport(provider, domain)?;
    let list = Info::get(Some(&hints))?;
    if let Some(e) = choose(&list, provider, domain) {
        return Info::dup(e);
    }
    let available = provider_names()?;
    if let Some(p) = provider {
        // libfabric accepts a core name ("tcp") for a layered stack ("tcp;ofi_rxm").
        let known = available.iter().any(|a| a == p || a.split(';').any(|l| l == p));
        if !known {
            return Err(FabricError::UnknownProvider { requested: p.to_string(), available });
        }
    }
    let why = match (provider, domain) {
        (Some(p), Some(d)) => format!("provider {p:?} offers no reliable-datagram endpoint with tagged messages, RMA read and send-after-send order on domain {d:?}"),
        (Some(p), None) => format!("provider {p:?} offers no reliable-datagram endpoint with tagged messages, RMA read and send-after-send order"),
        (None, Some(d)) => format!("no provider offers a reliable-datagram endpoint with tagged messages, RMA read and send-after-send order on domain {d:?}"),
        (None, None) => "no provider offers a reliable-datagram endpoint with tagged messages, RMA read and send-after-send order (shm, udp and sockets are only used when named)".to_string(),
    };
    Err(FabricError::NoProvider { why, available })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranking() {
        let r = provider_rank;
        assert_eq!(r("shm"), None);
        assert_eq!(r("udp;ofi_rxd"), None);
        assert_eq!(r("sockets"), None);
        assert!(r("verbs;ofi_rxm") < r("cxi"));
        assert!(r("efa") < r("tcp;ofi_rxm"));
        assert!(r("psm3") < r("tcp;ofi_rxm"));
        assert!(r("tcp;ofi_rxm") < r("something_new"));
        assert!(r("something_new").unwrap() < FORCED_RANK);
        // net and the RDM-native tcp: faster, but a dead peer can go unreported (see
        // provider_rank): named only.
        assert_eq!(r("net"), None);
        assert_eq!(r("net;ofi_rxm"), None);
        assert_eq!(r("tcp"), None);
    }

    #[test]
    fn lists_providers() {
        let p = providers().unwrap();
        assert!(p.iter().any(|p| p.name == "tcp;ofi_rxm" && p.domain == "lo"), "{p:?}");
        let names = provider_names().unwrap();
        assert!(names.contains(&"tcp;ofi_rxm".to_string()));
    }

    #[test]
    fn automatic_selection_on_loopback() {
        // tcp;ofi_rxm serves the `lo` domain here on 1.17 and 2.x (shm, and 2.x's RDM-native
        // tcp, are skipped unless named).
        let info = select(None, Some("lo")).unwrap();
        let e = info.first().unwrap();
        assert_eq!(e.provider(), "tcp;ofi_rxm");
        assert_eq!(e.domain(), "lo");
        assert_eq!(e.ep_type(), sys::FI_EP_RDM);
        assert_eq!(e.addr_format(), sys::FI_SOCKADDR_IN, "IPv4 preferred");
        assert_eq!(e.caps() & REQUIRED_CAPS, REQUIRED_CAPS);
        assert_eq!(e.mr_mode() & !SUPPORTED_MR_MODE, 0);
    }

    #[test]
    fn domain_is_enforced_on_results() {
        let h = Hints::transport(None, Some("lo")).unwrap();
        let list = Info::get(Some(&h)).unwrap();
        for requested in [None, Some("tcp;ofi_rxm")] {
            let e = choose(&list, requested, Some("lo")).unwrap();
            assert_eq!(e.domain(), "lo");
        }
        assert!(choose(&list, Some("tcp;ofi_rxm"), Some("no_such_nic0")).is_none());
    }

    #[test]
    fn override_selects_named_provider() {
        let info = select(Some("tcp;ofi_rxm"), Some("lo")).unwrap();
        assert_eq!(info.first().unwrap().provider(), "tcp;ofi_rxm");
    }

    #[test]
    fn exact_name_wins_over_a_stack_on_the_same_core() {
        // A hint of `tcp` matches `tcp;ofi_rxm` too. From 1.18 on the RDM-native `tcp` is
        // opened; on 1.17 `tcp` is a message-endpoint provider, so only the rxm stack qualifies.
        let info = select(Some("tcp"), Some("lo")).unwrap();
        let got = info.first().unwrap().provider();
        let native = Info::get(Some(&Hints::transport(Some("tcp"), Some("lo")).unwrap()))
            .unwrap()
            .iter()
            .any(|e| e.provider() == "tcp" && e.ep_type() == sys::FI_EP_RDM);
        assert_eq!(got, if native { "tcp" } else { "tcp;ofi_rxm" });
        assert_eq!(native, library::version() >= (1, 18), "{:?}", library::version());
        let info = select(Some("tcp;ofi_rxm"), Some("lo")).unwrap();
        assert_eq!(info.first().unwrap().provider(), "tcp;ofi_rxm");
    }

    #[test]
    fn net_means_the_rdm_native_provider() {
        // A hint of `net` also returns the `net;ofi_rxm` stack: the plain one is opened.
        if !provider_names().unwrap().iter().any(|n| n == "net") {
            return;
        }
        let h = Hints::transport(Some("net"), Some("lo")).unwrap();
        let list = Info::get(Some(&h)).unwrap();
        assert!(list.iter().any(|e| e.provider() == "net;ofi_rxm"), "both stacks match the hint");
        let info = select(Some("net"), Some("lo")).unwrap();
        let e = info.first().unwrap();
        assert_eq!((e.provider().as_str(), e.domain().as_str()), ("net", "lo"));
        assert_eq!(e.addr_format(), sys::FI_SOCKADDR_IN, "IPv4 preferred");
    }

    #[test]
    fn unknown_provider_lists_available() {
        let e = match select(Some("no_such_provider"), Some("lo")) {
            Err(e) => e,
            Ok(_) => panic!("selected a provider that does not exist"),
        };
        match &e {
            FabricError::UnknownProvider { requested, available } => {
                assert_eq!(requested, "no_such_provider");
                assert!(available.iter().any(|a| a == "tcp;ofi_rxm"));
            }
            other => panic!("wrong error {other:?}"),
        }
        let msg = e.to_string();
        assert!(msg.contains("no_such_provider") && msg.contains("tcp;ofi_rxm"), "{msg}");
    }

    #[test]
    fn unknown_domain_is_no_provider() {
        match select(None, Some("no_such_nic0")) {
            Err(FabricError::NoProvider { why, available }) => {
                assert!(why.contains("no_such_nic0"));
                assert!(!available.is_empty());
            }
            Err(e) => panic!("wrong error {e:?}"),
            Ok(_) => panic!("selected a provider on a domain that does not exist"),
        }
    }
}
