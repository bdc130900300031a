//! A process that hands its work to a new process and ends (`run` starting background handlers,
//! contract §21): [`split`] returns only in the new process, the *continuation*, while the
//! caller's process ends with the exit status it was to end with. The caller waits for the
//! dispatcher's pid; that pid ends as soon as the answer is out, and the continuation keeps the
//! handlers.
//!
//! On x86-64 the continuation is made by `clone(CLONE_VM)`: it shares this process's memory
//! instead of copying its page tables (a `fork`, which then makes every page written afterwards
//! a copy), which measured 0.3 ms of a dispatch's 0.8 ms back to back (docs/BENCHMARKS.md).
//! What makes sharing sound is that the two never use the memory at the same time: in one block
//! of assembly, the original makes the `clone` and, when it returns there, makes only system
//! calls on registers (no load, no store, no stack) until it is gone. The continuation goes on
//! from the `clone` with the same stack and registers, as the one process left in that memory.
//! The conditions, each kept here:
//!
//! - one thread ([`super::process::single_threaded`], checked by the caller): another thread
//!   would run on in the same memory until the original's `exit_group` took it, perhaps in the
//!   middle of changing something the continuation then finds half changed;
//! - every signal blocked around the `clone` (by the caller): a handler run by the original
//!   would use the stack the continuation is running on; the continuation restores the mask;
//! - the kernel writes nothing into the memory when the original ends: `set_tid_address(NULL)`
//!   and `set_robust_list(NULL)` first, so that neither its thread id word nor a robust lock list
//!   is touched by its exit. (A SIGKILL, which no mask holds, arriving in the few instructions
//!   before them would clear the thread id word and walk an empty robust list: the C library
//!   reads that word only as the owner of recursive and error-checking mutexes, which nothing
//!   here uses.) Until it is gone, the kernel also keeps the original's restartable-sequence
//!   area in the thread's storage up to date (its CPU number), which only `sched_getcpu` reads;
//!   the continuation has none of its own, the kernel giving none to a `CLONE_VM` child;
//! - the continuation's thread id word (where the C library keeps the thread's id) is its own:
//!   `CLONE_CHILD_SETTID` writes it there, at the address the original had registered
//!   (`PR_GET_TID_ADDRESS`), and `CLONE_CHILD_CLEARTID` gives it the same exit as any thread.
//!
//! - no shadow stack (x86 CET): the kernel gives a `CLONE_VM` child an empty one, on which the
//!   continuation's first return would fault; with one, or when the `clone` is refused (a
//!   seccomp filter), the continuation is a `fork` instead.
//!
//! Elsewhere the continuation is a `fork` and the original `_exit`s at once.

use std::io;

/// Ends this process with exit status `code`, its work going on in a new process that has its
/// memory, its descriptors (as copies) and its signal dispositions. Returns in the new process;
/// an error when it could not be made, this process going on as it was. The caller makes sure
/// this process runs one thread and blocks every signal around the call.
#[cfg(target_os = "linux")]
pub fn split(code: u8) -> io::Result<()> {
    #[cfg(target_arch = "x86_64")]
    if !shadow_stack() && clone_apart(code).is_ok() {
        return Ok(());
    }
    fork_apart(code)
}

/// Returns true if and only if this thread runs with a shadow stack (x86 CET, Linux 6.6 and
/// later): the kernel would give a `CLONE_VM` child a new, empty one, and the new process's
/// first return would fault. The `fork` below copies it instead.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn shadow_stack() -> bool {
    const ARCH_SHSTK_STATUS: libc::c_ulong = 0x5005;
    const ARCH_SHSTK_SHSTK: u64 = 1;
    let mut status: u64 = 0;
    // SAFETY: arch_prctl(ARCH_SHSTK_STATUS) writes one u64 into `status`, which we own; a kernel
    // without it answers EINVAL and writes nothing.
    let asked = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_SHSTK_STATUS,
            &mut status as *mut u64,
        )
    };
    asked == 0 && status & ARCH_SHSTK_SHSTK != 0
}

/// A `fork`, and the original ends at once: where the memory cannot be shared.
#[cfg(target_os = "linux")]
fn fork_apart(code: u8) -> io::Result<()> {
    // SAFETY: one thread (the caller's condition), so the child is a whole copy; the parent
    // only ends.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(()),
        // SAFETY: _exit ends this process; its answer was written and flushed before.
        _ => unsafe { libc::_exit(i32::from(code)) },
    }
}

/// The `clone(CLONE_VM)` of the module's documentation.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn clone_apart(code: u8) -> io::Result<()> {
    let mut tid: *mut libc::c_int = std::ptr::null_mut();
    // SAFETY: PR_GET_TID_ADDRESS writes one pointer into `tid`, which we own.
    if unsafe { libc::prctl(libc::PR_GET_TID_ADDRESS, &mut tid as *mut *mut libc::c_int) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let flags =
        (libc::CLONE_VM | libc::CLONE_CHILD_SETTID | libc::CLONE_CHILD_CLEARTID | libc::SIGCHLD)
            as usize;
    let ret: isize;
    // SAFETY: see the module's documentation. `clone(flags, 0, NULL, tid, 0)`: the new process
    // starts at the next instruction with rax = 0, on this stack, and jumps past the original's
    // part. The original (rax > 0) makes three system calls on registers only and is gone: it
    // never reaches the end of the block, so nothing it did after the clone touches memory.
    // On failure (rax < 0) the block falls through in this process, which goes on.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jle 2f",
            // The original: set_tid_address(NULL), set_robust_list(NULL, 24), exit_group(code).
            "mov eax, 218",
            "xor edi, edi",
            "syscall",
            "mov eax, 273",
            "xor edi, edi",
            "mov esi, 24",
            "syscall",
            "mov eax, 231",
            "mov edi, r9d",
            "syscall",
            "ud2",
            "2:",
            inlateout("rax") libc::SYS_clone as isize => ret,
            inlateout("rdi") flags => _,
            inlateout("rsi") 0usize => _,
            inlateout("rdx") 0usize => _,
            in("r10") tid,
            in("r8") 0usize,
            in("r9") u32::from(code),
            lateout("rcx") _,
            lateout("r11") _,
        );
    }
    if ret < 0 {
        return Err(io::Error::from_raw_os_error(
            i32::try_from(-ret).unwrap_or(libc::EINVAL),
        ));
    }
    Ok(())
}
