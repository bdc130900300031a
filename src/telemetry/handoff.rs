//! The last part of `run`'s export, done after its answer by a process of its own.
//!
//! Once the collector has said `100 Continue` to the head of a dispatch's request, nothing it
//! does can change what the dispatch answers (`run` does not wait for the verdict on the spans,
//! [`super::export`]). What is left, the body (when it has not been sent yet) and the wait for
//! the collector's answer, is then handed over ([`defer`]) and done after the process's answer
//! is written ([`complete`]), by a child that shares the process's memory and has none of its
//! descriptors but the connection. Waiting for the collector's answer before the connection is
//! closed matters: some collectors (hyper-based ones) drop a request whose connection ends
//! before they have answered. With the child, the caller sees the answer, the exit status and
//! the end of the output without waiting for either, nor for the collector to be woken by the
//! body. That wake-up is what the body's send cost: the system puts the collector on the
//! sender's CPU, where it runs before the sender gets on (docs/BENCHMARKS.md, "Export on, local
//! receiver"). A child started as the process ends is put on another CPU; a `fork` copies the
//! address space and costs more than the send it would save.
//!
//! The child has the export's timeout ([`super::config::Config::timeout`]) for the body, and at
//! most 2 s more for the answer, and then ends; it is never waited for. A process whose parent
//! is an init process gets no child (nothing there may ever reap it). Only the executable arms this ([`arm`]), on
//! Linux, because only it knows that nothing follows [`complete`]; anything else sends the body
//! before it answers and closes the connection without waiting for the collector's answer.

use std::net::TcpStream;
use std::time::Duration;

/// Arms the hand-over: from now on [`complete`] will be called once the answer is written, and
/// nothing is read or written after it.
pub fn arm() {
    imp::arm();
}

/// Takes the body `bytes` of a request whose head the collector accepted, to send on `stream`
/// after the answer, within `timeout`; gives them back when the hand-over is not armed, or not
/// available on this system.
pub fn defer(
    stream: TcpStream,
    bytes: Vec<u8>,
    timeout: Duration,
) -> Result<(), (TcpStream, Vec<u8>)> {
    imp::defer(stream, bytes, timeout)
}

/// Sends what [`defer`] took, by a child of its own. Called last, once the process's answer is
/// written and flushed: it closes every descriptor of the process.
pub fn complete() {
    imp::complete();
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod imp {
    use std::cell::UnsafeCell;
    use std::net::TcpStream;
    use std::os::fd::{IntoRawFd as _, RawFd};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;
    use std::time::Duration;

    static ARMED: AtomicBool = AtomicBool::new(false);

    struct Deferred {
        stream: TcpStream,
        bytes: Vec<u8>,
        timeout: Duration,
    }

    static DEFERRED: Mutex<Option<Deferred>> = Mutex::new(None);

    pub fn arm() {
        ARMED.store(true, Ordering::Relaxed);
    }

    pub fn defer(
        stream: TcpStream,
        bytes: Vec<u8>,
        timeout: Duration,
    ) -> Result<(), (TcpStream, Vec<u8>)> {
        // A child of an init process (a container's first process, say) would be left to one
        // that may never reap it: no hand-over there.
        // SAFETY: getppid has no preconditions.
        if !ARMED.load(Ordering::Relaxed) || unsafe { libc::getppid() } == 1 {
            return Err((stream, bytes));
        }
        let mut deferred = DEFERRED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if deferred.is_some() {
            return Err((stream, bytes));
        }
        *deferred = Some(Deferred {
            stream,
            bytes,
            timeout,
        });
        Ok(())
    }

    /// What the child sends: written once by [`complete`] before the child starts, read only by
    /// the child.
    struct Parcel {
        fd: RawFd,
        bytes: *const u8,
        len: usize,
        /// `CLOCK_MONOTONIC`, in nanoseconds.
        deadline: u64,
        /// The signal mask before [`complete`] blocked every signal, as the kernel has it.
        mask: u64,
    }

    struct Shared<T>(UnsafeCell<T>);

    // SAFETY: each `Shared` below is written by the parent only before the child exists, and
    // read by the child only; `clone` orders the write before the child's first instruction.
    unsafe impl<T> Sync for Shared<T> {}

    static PARCEL: Shared<Parcel> = Shared(UnsafeCell::new(Parcel {
        fd: -1,
        bytes: std::ptr::null(),
        len: 0,
        deadline: 0,
        mask: 0,
    }));

    const STACK_SIZE: usize = 16 << 10;

    /// How long the child waits for the collector's answer once the body is sent.
    const ANSWER_WAIT: Duration = Duration::from_secs(2);

    #[repr(C, align(16))]
    struct Stack([u8; STACK_SIZE]);

    /// The child's stack: never touched by the parent.
    static STACK: Shared<Stack> = Shared(UnsafeCell::new(Stack([0; STACK_SIZE])));

    pub fn complete() {
        let Some(Deferred {
            stream,
            bytes,
            timeout,
        }) = DEFERRED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        else {
            return;
        };
        let fd = stream.into_raw_fd();
        // The body outlives this process's part: never freed, so the child may read it after
        // the parent has gone on to exit.
        let bytes = std::mem::ManuallyDrop::new(bytes);
        let deadline =
            sys::monotonic().saturating_add(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
        // Signals are blocked until the child has put back the default action of every signal
        // the process handles, so that no handler of the process's runs on the child's stack;
        // the child then has the mask the process had. The child gets a copy of the descriptor
        // table as it is when it starts: every descriptor but the connection is closed first,
        // so that it holds none of the caller's pipes (whose end the caller waits for) and no
        // lock.
        // SAFETY: plain system calls on this process's own descriptors and signal mask, with
        // sets that live for the calls; `fd` is at least 3, descriptors 0 to 2 being open since
        // the start (`main`).
        let (mask, closed) = unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut before: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut before);
            let mask = (&raw const before).cast::<u64>().read_unaligned();
            let closed = sys::close_range(fd as u32 + 1, u32::MAX) == 0
                && sys::close_range(0, fd as u32 - 1) == 0;
            (mask, closed)
        };
        // SAFETY: `PARCEL` is written here, before the child exists, and never again.
        unsafe {
            *PARCEL.0.get() = Parcel {
                fd,
                bytes: bytes.as_ptr(),
                len: bytes.len(),
                deadline,
                mask,
            };
        }
        // Without a child (a kernel without close_range, before 5.9, or no process to be had):
        // sent here, within the bound of `run`.
        let here = || {
            sys::set_mask(mask);
            let bound = super::super::config::FOREGROUND_BOUND.min(timeout);
            // SAFETY: `PARCEL` was written above; no child shares it.
            unsafe {
                (*PARCEL.0.get()).deadline =
                    sys::monotonic().saturating_add(bound.as_nanos() as u64);
            }
            send_parcel();
        };
        if !closed {
            here();
            return;
        }
        // SAFETY: the child runs `child` on `STACK`, which nothing else uses, and reads only
        // `PARCEL` and the body, which outlive it: the memory they are in is shared (CLONE_VM)
        // and is neither freed nor unmapped by the parent, whose exit leaves it to the child.
        // The child makes raw system calls only, so it touches no thread-local state of the
        // parent's (errno among it) and no lock or allocator.
        let child = unsafe {
            let top = STACK.0.get().cast::<u8>().add(STACK_SIZE);
            libc::clone(
                child,
                top.cast(),
                libc::CLONE_VM | libc::SIGCHLD,
                std::ptr::null_mut(),
            )
        };
        if child < 0 {
            here();
        }
    }

    extern "C" fn child(_: *mut libc::c_void) -> libc::c_int {
        sys::default_signals();
        // SAFETY: written by `complete` before the child started.
        sys::set_mask(unsafe { (*PARCEL.0.get()).mask });
        send_parcel();
        0
    }

    /// Sends the parcel's bytes, then reads what the collector says until the head of its
    /// final answer (or the connection's end), waiting while there is nothing to do, until its
    /// deadline; raw system calls only (see [`complete`]). Closing the
    /// connection before the collector has answered would lose the spans with collectors that
    /// give up on a request whose client has gone (hyper-based ones among them).
    fn send_parcel() {
        // SAFETY: written by `complete` before this runs, and not written again.
        let parcel = unsafe { &*PARCEL.0.get() };
        let wait = |events, deadline: u64| {
            let now = sys::monotonic();
            if now >= deadline {
                return false;
            }
            let millis = ((deadline - now) / 1_000_000).clamp(1, i32::MAX as u64) as i32;
            sys::wait_for(parcel.fd, events, millis);
            true
        };
        let mut sent = 0;
        while sent < parcel.len {
            // SAFETY: `sent < len`, within the body `complete` left alive.
            let n = unsafe { sys::send(parcel.fd, parcel.bytes.add(sent), parcel.len - sent) };
            if n > 0 {
                sent += n as usize;
            } else if n == -libc::EINTR as isize {
            } else if n != -libc::EAGAIN as isize || !wait(libc::POLLOUT, parcel.deadline) {
                sys::close(parcel.fd);
                return;
            }
        }
        // What the collector answers, up to the end of its final answer's head: a status of
        // 200 or more, after any interim `1xx`; waited for at most `ANSWER_WAIT` once the body
        // is sent, so that a collector that takes the spans and never answers keeps no process
        // for the export's whole timeout.
        let answered_by = parcel
            .deadline
            .min(sys::monotonic().saturating_add(ANSWER_WAIT.as_nanos() as u64));
        let mut answer = [0u8; 1024];
        let mut have = 0;
        loop {
            // SAFETY: `have < 1024`: the rest of `answer`, live for the call.
            let n = unsafe {
                sys::receive(
                    parcel.fd,
                    answer.as_mut_ptr().add(have),
                    answer.len() - have,
                )
            };
            if n > 0 {
                have += n as usize;
                while let Some(end) = answer[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                    if answer.get(9) != Some(&b'1') {
                        sys::close(parcel.fd);
                        return;
                    }
                    answer.copy_within(end + 4..have, 0);
                    have -= end + 4;
                }
                if have == answer.len() {
                    break;
                }
            } else if n == -libc::EINTR as isize {
            } else if n != -libc::EAGAIN as isize || !wait(libc::POLLIN, answered_by) {
                break;
            }
        }
        sys::close(parcel.fd);
    }

    /// System calls without the C library: they return `-errno` and write no `errno`.
    mod sys {
        use std::os::fd::RawFd;

        #[cfg(target_arch = "x86_64")]
        unsafe fn call(n: libc::c_long, a: [usize; 6]) -> isize {
            let ret: isize;
            // SAFETY (the caller's): the arguments are valid for system call `n`.
            unsafe {
                std::arch::asm!(
                    "syscall",
                    inlateout("rax") n as isize => ret,
                    in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
                    in("r10") a[3], in("r8") a[4], in("r9") a[5],
                    lateout("rcx") _, lateout("r11") _,
                    options(nostack),
                );
            }
            ret
        }

        #[cfg(target_arch = "aarch64")]
        unsafe fn call(n: libc::c_long, a: [usize; 6]) -> isize {
            let ret: isize;
            // SAFETY (the caller's): the arguments are valid for system call `n`.
            unsafe {
                std::arch::asm!(
                    "svc 0",
                    in("x8") n,
                    inlateout("x0") a[0] as isize => ret,
                    in("x1") a[1], in("x2") a[2], in("x3") a[3], in("x4") a[4], in("x5") a[5],
                    options(nostack),
                );
            }
            ret
        }

        /// `send(fd, bytes, len, MSG_NOSIGNAL | MSG_DONTWAIT)`.
        ///
        /// # Safety
        /// `bytes` is valid for reads of `len` bytes.
        pub unsafe fn send(fd: RawFd, bytes: *const u8, len: usize) -> isize {
            let flags = (libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) as usize;
            // SAFETY: the caller's; no address is given.
            unsafe {
                call(
                    libc::SYS_sendto,
                    [fd as usize, bytes as usize, len, flags, 0, 0],
                )
            }
        }

        /// `recv(fd, bytes, len, MSG_DONTWAIT)`.
        ///
        /// # Safety
        /// `bytes` is valid for writes of `len` bytes.
        pub unsafe fn receive(fd: RawFd, bytes: *mut u8, len: usize) -> isize {
            let flags = libc::MSG_DONTWAIT as usize;
            // SAFETY: the caller's; no address is asked for.
            unsafe {
                call(
                    libc::SYS_recvfrom,
                    [fd as usize, bytes as usize, len, flags, 0, 0],
                )
            }
        }

        /// Waits at most `millis` for `events` on `fd`.
        pub fn wait_for(fd: RawFd, events: libc::c_short, millis: i32) {
            let mut poll = libc::pollfd {
                fd,
                events,
                revents: 0,
            };
            let mut ts = libc::timespec {
                tv_sec: libc::time_t::from(millis / 1000),
                tv_nsec: libc::c_long::from(millis % 1000) * 1_000_000,
            };
            // SAFETY: one pollfd and one timespec (which ppoll updates), both live for the call;
            // no signal mask.
            unsafe {
                call(
                    libc::SYS_ppoll,
                    [(&raw mut poll) as usize, 1, (&raw mut ts) as usize, 0, 0, 0],
                );
            }
        }

        pub fn close(fd: RawFd) {
            // SAFETY: closing a descriptor is valid for any number.
            unsafe {
                call(libc::SYS_close, [fd as usize, 0, 0, 0, 0, 0]);
            }
        }

        /// `close_range(first, last, 0)`: 0, or `-errno`.
        pub fn close_range(first: u32, last: u32) -> isize {
            // SAFETY: closing descriptors is valid for any range.
            unsafe {
                call(
                    libc::SYS_close_range,
                    [first as usize, last as usize, 0, 0, 0, 0],
                )
            }
        }

        /// The kernel's `struct sigaction`, the same on x86_64 and aarch64.
        #[repr(C)]
        struct Action {
            handler: usize,
            flags: u64,
            restorer: usize,
            mask: u64,
        }

        const NO_ACTION: Action = Action {
            handler: 0,
            flags: 0,
            restorer: 0,
            mask: 0,
        };

        /// Puts back the default action of every signal that has a handler.
        pub fn default_signals() {
            for signal in 1..=64 {
                if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                    continue;
                }
                let mut action = NO_ACTION;
                // SAFETY: one `Action` for the old action, live for the call; none given.
                let read = unsafe {
                    call(
                        libc::SYS_rt_sigaction,
                        [signal as usize, 0, (&raw mut action) as usize, 8, 0, 0],
                    )
                };
                // SIG_DFL is 0 and SIG_IGN 1: anything else is a handler.
                if read == 0 && action.handler > 1 {
                    let default = NO_ACTION;
                    // SAFETY: one `Action` (the default, SIG_DFL), live for the call.
                    unsafe {
                        call(
                            libc::SYS_rt_sigaction,
                            [signal as usize, (&raw const default) as usize, 0, 8, 0, 0],
                        );
                    }
                }
            }
        }

        /// Sets the signal mask to `mask`.
        pub fn set_mask(mask: u64) {
            // SAFETY: one mask, live for the call.
            unsafe {
                call(
                    libc::SYS_rt_sigprocmask,
                    [
                        libc::SIG_SETMASK as usize,
                        (&raw const mask) as usize,
                        0,
                        8,
                        0,
                        0,
                    ],
                );
            }
        }

        /// `CLOCK_MONOTONIC` in nanoseconds.
        pub fn monotonic() -> u64 {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: one timespec, live for the call.
            unsafe {
                call(
                    libc::SYS_clock_gettime,
                    [
                        libc::CLOCK_MONOTONIC as usize,
                        (&raw mut ts) as usize,
                        0,
                        0,
                        0,
                        0,
                    ],
                );
            }
            (ts.tv_sec as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(ts.tv_nsec as u64)
        }
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
mod imp {
    use std::net::TcpStream;
    use std::time::Duration;

    pub fn arm() {}

    pub fn defer(
        stream: TcpStream,
        bytes: Vec<u8>,
        _timeout: Duration,
    ) -> Result<(), (TcpStream, Vec<u8>)> {
        Err((stream, bytes))
    }

    pub fn complete() {}
}
