//! SIGINT, SIGTERM and SIGHUP: recorded, never fatal, so the dispatcher can stop the running
//! handler's process group and still print its result (contract §8).
//!
//! The handler only stores the signal number and writes one byte to a self-pipe; every blocking
//! wait in the dispatcher polls that pipe, so a signal is noticed at once whatever phase it is in.
//! Nothing ever reads the pipe: once a signal arrived it stays readable, so every thread that
//! polls it wakes (in `serve`, the reader of requests and each request's handler loop alike),
//! whichever thread the kernel ran the handler on, and however late a thread starts to wait.

#[cfg(unix)]
mod imp {
    use std::sync::atomic::{AtomicI32, Ordering};

    static RECEIVED: AtomicI32 = AtomicI32::new(0);
    static WAKE_WRITE: AtomicI32 = AtomicI32::new(-1);
    static WAKE_READ: AtomicI32 = AtomicI32::new(-1);

    extern "C" fn on_signal(sig: libc::c_int) {
        let _ = RECEIVED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
        let fd = WAKE_WRITE.load(Ordering::SeqCst);
        if fd >= 0 {
            // SAFETY: write(2) is async-signal-safe; errno is saved and restored around it so the
            // interrupted code sees its own.
            unsafe {
                let errno = *libc::__errno_location();
                let byte = 1u8;
                libc::write(fd, std::ptr::addr_of!(byte).cast(), 1);
                *libc::__errno_location() = errno;
            }
        }
    }

    /// The signals [`install`] catches: the one list the spawner's reset list is built from
    /// (`runner::spawn`), so a handler added here is reset in every child too.
    pub const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    /// Catches [`HANDLED`], and undoes what a caller may have left that would defeat the
    /// dispatcher (contract §6, §8): those signals blocked in the inherited mask (a SIGTERM
    /// would then never arrive), and SIGCHLD ignored (the kernel would then reap every handler
    /// itself, and its exit status, a block included, would be lost). Both survive `exec`, and
    /// some harnesses and daemons set them.
    pub fn install() {
        // SAFETY: sets SIGCHLD's disposition to the default; no handler of ours is involved.
        unsafe {
            libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        }
        let mut fds = [-1; 2];
        // SAFETY: pipe2 writes two descriptors into the array we own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } == 0 {
            WAKE_READ.store(fds[0], Ordering::SeqCst);
            WAKE_WRITE.store(fds[1], Ordering::SeqCst);
        }
        for sig in HANDLED {
            // SAFETY: a zeroed sigaction is a valid starting point; the handler is an
            // `extern "C" fn(c_int)` that only touches atomics and write(2). No SA_RESTART, so a
            // blocked read returns EINTR.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                action.sa_flags = 0;
                libc::sigaction(sig, &action, std::ptr::null_mut());
            }
        }
        // Unblocked once the handler is in place: a signal that was pending while blocked is
        // delivered now, recorded, and acted on like any other.
        // SAFETY: sigemptyset, sigaddset and pthread_sigmask write into a set we own.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in HANDLED {
                libc::sigaddset(&mut set, sig);
            }
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }

    /// [`install`] again in a copy of this process made by `fork`: a pipe of its own, the old
    /// one closed, and no signal received yet.
    pub fn renew() {
        for fd in [&WAKE_READ, &WAKE_WRITE] {
            let old = fd.swap(-1, Ordering::SeqCst);
            if old >= 0 {
                // SAFETY: the pipe's descriptors are this module's alone, and no longer named.
                unsafe { libc::close(old) };
            }
        }
        RECEIVED.store(0, Ordering::SeqCst);
        install();
    }

    /// The first of SIGINT, SIGTERM or SIGHUP received, if any.
    pub fn received() -> Option<i32> {
        match RECEIVED.load(Ordering::SeqCst) {
            0 => None,
            sig => Some(sig),
        }
    }

    /// The read end of the self-pipe, for callers that poll (-1 when none).
    pub fn wake_fd() -> i32 {
        WAKE_READ.load(Ordering::SeqCst)
    }

    /// Returns true if and only if reading `fd` would not block now (it has data, is at end of
    /// file, or is in error), without waiting.
    pub fn readable_now(fd: i32) -> bool {
        let mut fds = [libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: the array outlives the call; a timeout of 0 never blocks.
        unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) != 0 }
    }

    /// Blocks until `fd` is readable (or at end of file) or a signal arrives.
    pub fn wait_readable(fd: i32) {
        let mut fds = [
            libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let count = if fds[1].fd >= 0 { 2 } else { 1 };
        // SAFETY: the array outlives the call and `count` does not exceed its length.
        unsafe { libc::poll(fds.as_mut_ptr(), count, -1) };
    }

    pub fn name(sig: i32) -> &'static str {
        match sig {
            libc::SIGINT => "SIGINT",
            libc::SIGTERM => "SIGTERM",
            libc::SIGHUP => "SIGHUP",
            libc::SIGKILL => "SIGKILL",
            libc::SIGSEGV => "SIGSEGV",
            libc::SIGABRT => "SIGABRT",
            libc::SIGPIPE => "SIGPIPE",
            libc::SIGQUIT => "SIGQUIT",
            libc::SIGBUS => "SIGBUS",
            libc::SIGFPE => "SIGFPE",
            libc::SIGILL => "SIGILL",
            libc::SIGUSR1 => "SIGUSR1",
            libc::SIGUSR2 => "SIGUSR2",
            libc::SIGALRM => "SIGALRM",
            _ => "signal",
        }
    }
}

#[cfg(windows)]
mod imp {
    //! Console control events are not translated yet: on Windows the dispatcher stops with its
    //! console, and the job object takes the handler with it.
    pub fn install() {}
    pub fn renew() {}
    pub fn received() -> Option<i32> {
        None
    }
    pub fn wait_readable(_fd: i32) {}
    pub fn readable_now(_fd: i32) -> bool {
        true
    }
    pub fn name(_sig: i32) -> &'static str {
        "signal"
    }
}

pub use imp::*;
