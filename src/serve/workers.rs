//! The requests in flight: read and not yet answered. Each is answered on a thread of its own,
//! so a request never waits for another; at most [`MAX_IN_FLIGHT`] are in flight at once (and
//! lines of at most about [`MAX_BYTES_IN_FLIGHT`] in all), and past that the reader waits for an
//! answer before it reads the next line (the lines wait in the pipe, nothing is lost).
//!
//! Threads are started as requests need them, up to the bound, and each one answers request
//! after request: a client that sends one request at a time keeps one thread busy. They end
//! when the server does, once every request given to them is answered.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::Scope;
use std::time::Duration;

use crate::signals;

/// The most requests in flight at once. Each may run a handler, which holds four descriptors
/// (three pipes and a pidfd) and seven while it starts, so 64 stay well within the usual limit
/// of 1,024 open files; and on a machine of a few cores, more handlers at once would only share
/// the same cores.
pub const MAX_IN_FLIGHT: usize = 64;

/// No further line is read while the lines in flight add up to this many bytes: a few requests
/// near the 64 MiB limit of one must not make the server hold 64 of them at once. One more line
/// may be read past it, so at most this plus one line's limit is held.
pub const MAX_BYTES_IN_FLIGHT: usize = 128 << 20;

/// How often a reader waiting for room looks for a signal. An answer wakes it at once; this only
/// bounds the wait should every request in flight be slow to notice the signal itself.
const RECHECK: Duration = Duration::from_millis(20);

/// One request to answer: what the answering needs, and the length of its line.
pub struct Job<W> {
    pub work: W,
    pub bytes: usize,
}

/// The requests in flight and the threads answering them.
pub struct Workers<W> {
    state: Mutex<State<W>>,
    /// Idle threads wait here for a request.
    work: Condvar,
    /// The reader waits here for room, and at the end for the last answer.
    answered: Condvar,
}

struct State<W> {
    /// Read and not yet taken by a thread.
    queue: VecDeque<Job<W>>,
    /// Queued or being answered.
    in_flight: usize,
    /// The length of their lines, added up.
    bytes: usize,
    /// Threads answering a request (from taking it to [`Workers::done`]).
    busy: usize,
    threads: usize,
    /// No more requests: idle threads end.
    closed: bool,
}

impl<W> Default for State<W> {
    fn default() -> State<W> {
        State {
            queue: VecDeque::new(),
            in_flight: 0,
            bytes: 0,
            busy: 0,
            threads: 0,
            closed: false,
        }
    }
}

impl<W> State<W> {
    /// Returns true if and only if one more line may be read.
    fn has_room(&self) -> bool {
        self.in_flight < MAX_IN_FLIGHT && self.bytes < MAX_BYTES_IN_FLIGHT
    }
}

impl<W: Send> Workers<W> {
    pub fn new() -> Workers<W> {
        Workers {
            state: Mutex::new(State::default()),
            work: Condvar::new(),
            answered: Condvar::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State<W>> {
        // Nothing is left half-changed under the lock; a panic elsewhere does not make it unusable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until one more request may be read; returns a signal that arrived meanwhile.
    pub fn wait_for_room(&self) -> Option<i32> {
        let mut state = self.state();
        while !state.has_room() {
            if let Some(sig) = signals::received() {
                return Some(sig);
            }
            state = self
                .answered
                .wait_timeout(state, RECHECK)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        signals::received()
    }

    /// Hands `job` to a thread that is not busy, or to a new one started in `scope` that then runs
    /// `answer` for it and for each later request it takes.
    pub fn submit<'scope, 'env>(
        &'scope self,
        scope: &'scope Scope<'scope, 'env>,
        job: Job<W>,
        answer: &'scope (impl Fn(W) + Sync),
    ) {
        let mut state = self.state();
        state.in_flight += 1;
        state.bytes += job.bytes;
        state.queue.push_back(job);
        // Each thread not busy takes one request, waking if it waits; more queued than that need
        // another thread. (Queued and busy add up to at most `in_flight`, so the threads never
        // outnumber MAX_IN_FLIGHT.)
        if state.queue.len() <= state.threads - state.busy {
            drop(state);
            self.work.notify_one();
            return;
        }
        state.threads += 1;
        drop(state);
        let started = std::thread::Builder::new()
            .name("request".into())
            .spawn_scoped(scope, move || self.serve(answer));
        if started.is_err() {
            // No thread to be had (a process limit): the threads there are take the request
            // once they are free; with none at all, this one is answered here.
            let mut state = self.state();
            state.threads -= 1;
            if state.threads > 0 {
                drop(state);
                self.work.notify_one();
                return;
            }
            let job = state.queue.pop_front();
            if job.is_some() {
                state.busy += 1;
            }
            drop(state);
            if let Some(job) = job {
                answer(job.work);
                self.done(job.bytes);
            }
        }
    }

    /// A thread's life: answer requests until the server closes.
    fn serve(&self, answer: &(impl Fn(W) + Sync)) {
        while let Some(job) = self.next_job() {
            answer(job.work);
            self.done(job.bytes);
        }
    }

    fn next_job(&self) -> Option<Job<W>> {
        let mut state = self.state();
        loop {
            if let Some(job) = state.queue.pop_front() {
                state.busy += 1;
                return Some(job);
            }
            if state.closed {
                state.threads -= 1;
                return None;
            }
            state = self
                .work
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// One request answered, whose line was `bytes` long.
    fn done(&self, bytes: usize) {
        let mut state = self.state();
        state.in_flight -= 1;
        state.busy -= 1;
        state.bytes -= bytes;
        drop(state);
        self.answered.notify_all();
    }

    /// Waits until every request given is answered, then lets the idle threads end.
    pub fn finish(&self) {
        let mut state = self.state();
        while state.in_flight > 0 {
            state = self
                .answered
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.closed = true;
        drop(state);
        self.work.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn job(number: u64, bytes: usize) -> Job<u64> {
        Job {
            work: number,
            bytes,
        }
    }

    #[test]
    fn every_job_is_answered_once_by_at_most_the_bound_of_threads() {
        let workers = Workers::new();
        let answered = Mutex::new(Vec::new());
        let threads = Mutex::new(std::collections::HashSet::new());
        let busy = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let answer = |number: u64| {
            let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            threads.lock().unwrap().insert(std::thread::current().id());
            std::thread::sleep(Duration::from_millis(2));
            answered.lock().unwrap().push(number);
            busy.fetch_sub(1, Ordering::SeqCst);
        };
        std::thread::scope(|scope| {
            for n in 0..200 {
                assert_eq!(workers.wait_for_room(), None);
                workers.submit(scope, job(n, 10), &answer);
            }
            workers.finish();
        });
        let mut answered = answered.into_inner().unwrap();
        answered.sort_unstable();
        assert_eq!(answered, (0..200).collect::<Vec<u64>>());
        assert!(most.load(Ordering::SeqCst) <= MAX_IN_FLIGHT);
        assert!(threads.into_inner().unwrap().len() <= MAX_IN_FLIGHT);
        let state = workers.state();
        assert_eq!(
            (state.in_flight, state.bytes, state.busy, state.threads),
            (0, 0, 0, 0)
        );
    }

    #[test]
    fn room_runs_out_at_the_bound_of_requests_or_of_bytes() {
        let mut state = State::<u64>::default();
        assert!(state.has_room());
        state.in_flight = MAX_IN_FLIGHT;
        assert!(!state.has_room());
        state.in_flight = 1;
        state.bytes = MAX_BYTES_IN_FLIGHT;
        assert!(!state.has_room());
        state.bytes = MAX_BYTES_IN_FLIGHT - 1;
        assert!(state.has_room());
    }
}
