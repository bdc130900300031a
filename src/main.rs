//! The `levelcode-hooks` executable: parse the command line, run, map errors to exit statuses.
//! Modules are declared in `src/lib.rs`.
//!
//! On Linux with glibc the C library calls [`main`] directly (`no_main`): std's own start-up
//! would first locate the main thread's stack guard by reading and `sscanf`-ing
//! `/proc/self/maps`, about 45,000 instructions and ten system calls of a dispatch that is
//! meant to cost a fraction of one process spawn (docs/BENCHMARKS.md). What that start-up does
//! that the dispatcher needs, [`start`] does: SIGPIPE ignored, so a reader that goes away is an
//! error and not a silent death; descriptors 0 to 2 open, so no file the dispatcher opens can
//! take their numbers; a panic reported and turned into exit status 101; stdout flushed at the
//! end. The arguments reach `std::env::args` as usual (glibc hands them to std's initializer).
//! What is left out is the report of a main-thread stack overflow, which then ends the process
//! with SIGSEGV instead of a message: every input the dispatcher recurses on has a depth limit.

#![cfg_attr(all(target_os = "linux", target_env = "gnu", not(test)), no_main)]

use std::process::ExitCode;

use levelcode_hooks::cli;
use levelcode_hooks::dispatch::exit;

fn run() -> ExitCode {
    let cli = cli::parse();
    match cli::execute(cli) {
        Ok(code) => code,
        Err(err) => {
            if exit::is_broken_pipe(&err) {
                return exit::Status::Failure.into();
            }
            eprintln!("levelcode-hooks: {err:#}");
            exit::Status::Failure.into()
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
#[no_mangle]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    start();
    let code = match std::panic::catch_unwind(run) {
        Ok(code) => exit::number(code),
        // The panic hook has printed the message, as std's start-up would.
        Err(_) => 101,
    };
    let _ = std::io::Write::flush(&mut std::io::stdout());
    std::ffi::c_int::from(code)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", not(test))))]
fn main() -> ExitCode {
    run()
}

/// The part of std's start-up the dispatcher relies on; see the module documentation.
#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
fn start() {
    // SAFETY: plain system calls on descriptors 0 to 2 and on SIGPIPE's disposition; no
    // memory is shared with them but the local array poll fills in.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
            fd,
            events: 0,
            revents: 0,
        });
        if libc::poll(fds.as_mut_ptr(), 3, 0) > 0 {
            for fd in &fds {
                if fd.revents & libc::POLLNVAL != 0 {
                    // Opened at the lowest free number, which is this one.
                    libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                }
            }
        }
    }
}
