//! Confining a handler and everything it starts (contract §20): writes only beneath the paths it
//! is given, no new socket unless the network is allowed, no signal and no abstract Unix socket
//! outside its sandbox. It knows nothing of settings: it is given [`Rules`].
//!
//! On Linux the confinement is Landlock (file system writes, TCP, scoping of signals and abstract
//! sockets) and a seccomp filter (`socket(2)` and io_uring, which Landlock does not see: a Unix
//! socket with a path, such as Docker's or an SSH agent's, is reached by `connect`, which no
//! file rule covers, and UDP has no Landlock rule at all). The `landlock` crate builds the
//! ruleset and `seccompiler` compiles the filter, both in the dispatcher, once per dispatch and
//! policy ([`prepare`]); the child, between clone (or fork) and exec, only makes the three
//! system calls of [`apply`], which allocate nothing. What a policy needs of the kernel and what
//! this kernel gives are decided by [`missing`], a pure function, so a kernel without a feature
//! is tested by feeding it one.

use std::path::PathBuf;

/// What a confined handler may do.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rules {
    /// The paths beneath which it may write (create, remove, rename, link, truncate, change a
    /// device); nowhere else. A path that is not there is left out.
    pub write: Vec<PathBuf>,
    /// Sockets of the IP and Unix families (and netlink) are allowed, abstract ones included.
    pub network: bool,
    /// It runs with what the kernel can enforce, instead of not at all.
    pub best_effort: bool,
}

/// One part of a confinement, and what it needs of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Writes,
    Truncation,
    Devices,
    Tcp,
    Signals,
    AbstractSockets,
    Sockets,
}

impl Part {
    pub const ALL: [Part; 7] = [
        Part::Writes,
        Part::Truncation,
        Part::Devices,
        Part::Tcp,
        Part::Signals,
        Part::AbstractSockets,
        Part::Sockets,
    ];

    /// What it keeps a handler from, for people.
    pub fn name(self) -> &'static str {
        match self {
            Part::Writes => "writes outside the allowed paths",
            Part::Truncation => "truncating files outside them",
            Part::Devices => "device ioctls outside them",
            Part::Tcp => "TCP connections and listening",
            Part::Signals => "signals to processes outside the sandbox",
            Part::AbstractSockets => "abstract Unix sockets outside the sandbox",
            Part::Sockets => {
                "new sockets of any family (UDP, DNS, Unix sockets with a path) and io_uring"
            }
        }
    }

    /// The Landlock ABI it needs, for the parts Landlock enforces.
    pub fn landlock_abi(self) -> Option<i32> {
        match self {
            Part::Writes => Some(1),
            Part::Truncation => Some(3),
            Part::Tcp => Some(4),
            Part::Devices => Some(5),
            Part::Signals | Part::AbstractSockets => Some(6),
            Part::Sockets => None,
        }
    }

    /// What it needs, for people: `Landlock ABI 4`, `a seccomp filter`.
    pub fn needs(self) -> String {
        match self.landlock_abi() {
            Some(abi) => format!("Landlock ABI {abi}"),
            None => "a seccomp filter".into(),
        }
    }

    /// What `"network": true` changes of it, for people.
    pub fn with_network(self) -> &'static str {
        match self {
            Part::Tcp | Part::AbstractSockets => "lifted",
            Part::Sockets => "only Unix, IP and netlink sockets allowed",
            Part::Writes | Part::Truncation | Part::Devices | Part::Signals => "kept",
        }
    }

    /// Returns true if and only if a policy that does (or does not) allow the network has it:
    /// with the network allowed, TCP and abstract sockets are not refused.
    pub fn in_policy(self, network: bool) -> bool {
        match self {
            Part::Tcp | Part::AbstractSockets => !network,
            _ => true,
        }
    }

    /// Returns true if and only if a kernel of `support` enforces it.
    pub fn enforced_by(self, support: &Support) -> bool {
        match self.landlock_abi() {
            Some(abi) => support.landlock.is_some_and(|have| have >= abi),
            None => support.seccomp,
        }
    }
}

/// What the running system can enforce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Support {
    /// Whether this is Linux, the only system that confines handlers.
    pub linux: bool,
    /// The Landlock ABI, when Landlock is there and on.
    pub landlock: Option<i32>,
    /// Whether a seccomp filter can be installed, for this processor.
    pub seccomp: bool,
}

/// The parts of a policy (with the network allowed or not) that a kernel of `support` cannot
/// enforce, in [`Part::ALL`]'s order: empty when all of it can be.
pub fn missing(network: bool, support: &Support) -> Vec<Part> {
    Part::ALL
        .into_iter()
        .filter(|part| part.in_policy(network) && !part.enforced_by(support))
        .collect()
}

/// Why a policy cannot run here, for the handler's message: what the system lacks.
pub fn refusal(missing: &[Part], support: &Support) -> String {
    if !support.linux {
        return "this system is not Linux, and sandboxed handlers run only on Linux (Landlock and seccomp)".into();
    }
    let what: Vec<String> = missing
        .iter()
        .map(|part| format!("{} (needs {})", part.name(), part.needs()))
        .collect();
    let have = match support.landlock {
        Some(abi) => format!("this kernel has Landlock ABI {abi}"),
        None => "this kernel has no Landlock (or it is off)".to_string(),
    };
    let seccomp = if support.seccomp {
        ""
    } else {
        " and no seccomp filter for this processor"
    };
    format!("{have}{seccomp}, so it cannot enforce: {}", what.join(", "))
}

#[cfg(target_os = "linux")]
pub(crate) use linux::{apply, Steps};
#[cfg(target_os = "linux")]
pub use linux::{prepare, support, Prepared};

#[cfg(not(target_os = "linux"))]
pub use elsewhere::{prepare, support, Prepared};

/// Off Linux nothing confines a handler: every policy is refused, and best effort runs it as
/// it is, saying so.
#[cfg(not(target_os = "linux"))]
mod elsewhere {
    use super::{missing, refusal, Part, Rules, Support};

    /// What this system can enforce: nothing.
    pub fn support() -> Support {
        Support {
            linux: false,
            landlock: None,
            seccomp: false,
        }
    }

    /// A confinement made ready: here, none at all.
    pub struct Prepared {
        pub left_out: Vec<Part>,
    }

    /// [`Rules`] made ready, or why they cannot be here.
    pub fn prepare(rules: &Rules) -> Result<Prepared, String> {
        let left_out = missing(rules.network, &support());
        if !rules.best_effort {
            return Err(refusal(&left_out, &support()));
        }
        Ok(Prepared { left_out })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(landlock: Option<i32>, seccomp: bool) -> Support {
        Support {
            linux: true,
            landlock,
            seccomp,
        }
    }

    /// The decision that makes a sandbox fail closed, fed the kernels it must refuse.
    #[test]
    fn what_a_kernel_cannot_enforce_is_named_part_by_part() {
        assert_eq!(missing(false, &kernel(Some(7), true)), []);
        assert_eq!(missing(true, &kernel(Some(6), true)), []);
        assert_eq!(
            missing(false, &kernel(Some(3), true)),
            [
                Part::Devices,
                Part::Tcp,
                Part::Signals,
                Part::AbstractSockets
            ]
        );
        // With the network allowed, TCP and abstract sockets are not refused, so not needed.
        assert_eq!(
            missing(true, &kernel(Some(3), true)),
            [Part::Devices, Part::Signals]
        );
        assert_eq!(
            missing(false, &kernel(Some(5), false)),
            [Part::Signals, Part::AbstractSockets, Part::Sockets]
        );
        assert_eq!(missing(false, &kernel(None, true)).len(), 6);
        let why = refusal(
            &missing(false, &kernel(Some(4), true)),
            &kernel(Some(4), true),
        );
        assert!(why.starts_with("this kernel has Landlock ABI 4"), "{why}");
        assert!(
            why.contains("signals to processes outside the sandbox (needs Landlock ABI 6)"),
            "{why}"
        );
        let none = kernel(None, false);
        let why = refusal(&missing(false, &none), &none);
        assert!(
            why.contains("no Landlock") && why.contains("no seccomp"),
            "{why}"
        );
        let elsewhere = Support {
            linux: false,
            landlock: None,
            seccomp: false,
        };
        assert!(refusal(&missing(false, &elsewhere), &elsewhere).contains("not Linux"));
    }
}

#[cfg(all(test, target_os = "linux"))]
#[path = "confine_tests.rs"]
mod linux_tests;

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;
    use std::ffi::c_int;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::path::Path;
    use std::sync::OnceLock;

    use landlock::{
        AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreatedAttr, Scope, ABI,
    };
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::{missing, refusal, Part, Rules, Support};

    /// The highest Landlock ABI whose rights this code asks for: a newer kernel's new rights
    /// are never asked for untested. (ABI 9's control of Unix sockets with a path is left to
    /// the seccomp filter, which `"network": true` lifts for Unix and IP sockets alike.)
    const KNOWN_ABI: ABI = ABI::V8;

    /// The errno of a refused `socket(2)` or io_uring call.
    const REFUSED: u32 = libc::EPERM as u32;

    /// The socket families `"network": true` allows; any other (raw packets, VM sockets, …) is
    /// refused whatever the policy.
    const NETWORK_FAMILIES: [c_int; 4] = [
        libc::AF_UNIX,
        libc::AF_INET,
        libc::AF_INET6,
        libc::AF_NETLINK,
    ];

    /// What this kernel can enforce, asked once per process.
    pub fn support() -> Support {
        static FOUND: OnceLock<Support> = OnceLock::new();
        *FOUND.get_or_init(|| Support {
            linux: true,
            landlock: landlock_abi(),
            seccomp: arch().is_some() && seccomp_filters(),
        })
    }

    /// The Landlock ABI of the running kernel, when Landlock is there and on.
    fn landlock_abi() -> Option<i32> {
        const VERSION: libc::c_uint = 1; // LANDLOCK_CREATE_RULESET_VERSION
                                         // SAFETY: with a null attribute and size 0, the version flag only asks for the ABI
                                         // number; nothing is read or written, and no descriptor is created.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                VERSION,
            )
        };
        i32::try_from(abi).ok().filter(|abi| *abi > 0)
    }

    /// Returns true if and only if a seccomp filter that returns an errno can be installed.
    fn seccomp_filters() -> bool {
        let action: u32 = libc::SECCOMP_RET_ERRNO;
        // SAFETY: SECCOMP_GET_ACTION_AVAIL only reads the 32-bit action it is pointed to, which
        // lives on this stack for the call; it installs nothing.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_GET_ACTION_AVAIL,
                0,
                std::ptr::addr_of!(action),
            )
        };
        rc == 0
    }

    /// The processor seccompiler compiles for, when it is one it knows.
    fn arch() -> Option<TargetArch> {
        std::env::consts::ARCH.try_into().ok()
    }

    /// A confinement made ready in the dispatcher: the Landlock ruleset's descriptor
    /// (close-on-exec, so no handler inherits it) and the seccomp program, which the child only
    /// points the kernel at. One may confine any number of handlers, one after another or at
    /// once.
    pub struct Prepared {
        ruleset: Option<OwnedFd>,
        filter: Vec<libc::sock_filter>,
        /// The parts of the policy left out because the kernel cannot enforce them (best effort
        /// only; otherwise [`prepare`] refuses).
        pub left_out: Vec<Part>,
    }

    /// What the child is handed: the ruleset's descriptor, where the program is and its
    /// length. Plain numbers, so std's fallback can carry them into its `pre_exec`.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Steps {
        ruleset: c_int,
        filter: usize,
        len: u16,
        active: bool,
    }

    impl Steps {
        /// No confinement: [`apply`] does nothing.
        pub(crate) const NONE: Steps = Steps {
            ruleset: -1,
            filter: 0,
            len: 0,
            active: false,
        };
    }

    impl Prepared {
        /// What the child applies; valid while `self` is.
        pub(crate) fn steps(&self) -> Steps {
            Steps {
                ruleset: self.ruleset.as_ref().map_or(-1, AsRawFd::as_raw_fd),
                filter: self.filter.as_ptr() as usize,
                len: u16::try_from(self.filter.len()).unwrap_or(0),
                active: true,
            }
        }
    }

    /// Confines the calling thread, and every process it then starts, by `steps`:
    /// `PR_SET_NO_NEW_PRIVS`, `landlock_restrict_self`, then the seccomp filter. Returns false,
    /// with `errno` set, when a step failed. Makes system calls only: no allocation, no lock,
    /// async-signal-safe, so it may run between clone (or fork) and exec.
    ///
    /// # Safety
    ///
    /// It confines the thread that calls it, for good: call it only in a child that is about to
    /// execute its handler (in the dispatcher it would confine the dispatcher's own thread).
    /// `steps` must come from a [`Prepared`] that is still alive in the memory the caller sees
    /// (the parent's, shared under CLONE_VM, or a fork's copy of it).
    pub(crate) unsafe fn apply(steps: Steps) -> bool {
        if !steps.active {
            return true;
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return false;
        }
        if steps.ruleset >= 0
            && libc::syscall(libc::SYS_landlock_restrict_self, steps.ruleset, 0) != 0
        {
            return false;
        }
        if steps.len > 0 {
            let program = libc::sock_fprog {
                len: steps.len,
                filter: steps.filter as *mut libc::sock_filter,
            };
            if libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                std::ptr::addr_of!(program),
            ) != 0
            {
                return false;
            }
        }
        true
    }

    /// `rules` made ready: refused, with why, when the kernel cannot enforce all of them and
    /// they are not best effort; else the ruleset and the filter of what it can enforce.
    pub fn prepare(rules: &Rules) -> Result<Prepared, String> {
        prepare_on(rules, support())
    }

    /// [`prepare`] on a kernel that reports `support`, which may be less than it has (a test
    /// of an older kernel asks for what that one has, and gets no more).
    pub(super) fn prepare_on(rules: &Rules, support: Support) -> Result<Prepared, String> {
        let left_out = missing(rules.network, &support);
        if !left_out.is_empty() && !rules.best_effort {
            return Err(refusal(&left_out, &support));
        }
        let enforced = |part: Part| part.in_policy(rules.network) && !left_out.contains(&part);
        let ruleset = match support.landlock {
            Some(abi) => Some(ruleset(rules, abi, &enforced)?),
            None => None,
        };
        let filter = if enforced(Part::Sockets) {
            filter(rules.network)?
        } else {
            Vec::new()
        };
        Ok(Prepared {
            ruleset,
            filter,
            left_out,
        })
    }

    /// The Landlock ruleset of `rules` on a kernel of `abi`, asking for the parts `enforced`
    /// says, each as a hard requirement: the crate refuses rather than leave one out.
    fn ruleset(
        rules: &Rules,
        abi: i32,
        enforced: &dyn Fn(Part) -> bool,
    ) -> Result<OwnedFd, String> {
        let failed =
            |e: landlock::RulesetError| format!("the Landlock ruleset could not be built: {e}");
        let mut write = AccessFs::from_write(KNOWN_ABI);
        if abi < 2 {
            // Without it, a file is never moved or linked into another folder: stricter.
            write.remove(AccessFs::Refer);
        }
        if !enforced(Part::Truncation) {
            write.remove(AccessFs::Truncate);
        }
        if !enforced(Part::Devices) {
            write.remove(AccessFs::IoctlDev);
        }
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(write)
            .map_err(failed)?;
        if enforced(Part::Tcp) {
            ruleset = ruleset
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                .map_err(failed)?;
        }
        let mut scopes = BitFlags::<Scope>::EMPTY;
        if enforced(Part::Signals) {
            scopes |= Scope::Signal;
        }
        if enforced(Part::AbstractSockets) {
            scopes |= Scope::AbstractUnixSocket;
        }
        if !scopes.is_empty() {
            ruleset = ruleset.scope(scopes).map_err(failed)?;
        }
        let mut created = ruleset.create().map_err(failed)?;
        let file_rights = write & AccessFs::from_file(KNOWN_ABI);
        for path in &rules.write {
            let Some((fd, is_dir)) = opened(path) else {
                continue;
            };
            let rights = if is_dir { write } else { file_rights };
            created = created
                .add_rule(PathBeneath::new(fd, rights))
                .map_err(failed)?;
        }
        Option::<OwnedFd>::from(created)
            .ok_or_else(|| "the kernel gave no Landlock ruleset".to_string())
    }

    /// `path` opened for a Landlock rule, and whether it is a folder; `None` when it is not
    /// there (nothing beneath it can be written then either).
    fn opened(path: &Path) -> Option<(PathFd, bool)> {
        let is_dir = std::fs::metadata(path).ok()?.is_dir();
        Some((PathFd::new(path).ok()?, is_dir))
    }

    /// The seccomp program: every `socket(2)` refused (with the network, every family but
    /// Unix, IP and netlink), and io_uring, which could make a socket behind the filter's back.
    /// A system call of another ABI than this processor's own (32-bit x86 on x86-64, say) kills
    /// the process: seccompiler checks the architecture first. On x86-64 the x32 ABI's numbers
    /// for the same calls are refused too.
    fn filter(network: bool) -> Result<Vec<libc::sock_filter>, String> {
        let failed =
            |e: seccompiler::BackendError| format!("the seccomp filter could not be built: {e}");
        let arch = arch().ok_or_else(|| "no seccomp filter for this processor".to_string())?;
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        for call in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            rules.insert(call, Vec::new());
        }
        let socket = if network {
            let others = NETWORK_FAMILIES
                .iter()
                .map(|family| {
                    SeccompCondition::new(
                        0,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::Ne,
                        *family as u64,
                    )
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(failed)?;
            vec![SeccompRule::new(others).map_err(failed)?]
        } else {
            Vec::new()
        };
        rules.insert(libc::SYS_socket, socket);
        if cfg!(target_arch = "x86_64") {
            const X32: i64 = 0x4000_0000;
            let native: Vec<(i64, Vec<SeccompRule>)> =
                rules.iter().map(|(n, r)| (*n, r.clone())).collect();
            for (call, rule) in native {
                rules.insert(call | X32, rule);
            }
        }
        let program: BpfProgram = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(REFUSED),
            arch,
        )
        .and_then(TryInto::try_into)
        .map_err(failed)?;
        Ok(program
            .into_iter()
            .map(|i| libc::sock_filter {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect())
    }
}
