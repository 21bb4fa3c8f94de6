//! The Windows system calls the transport needs that std does not offer (events, overlapped
//! pipe I/O, Job objects, resuming a suspended process), declared here once and wrapped in
//! safe types: the Windows side of the libc boundary. No crate: about twenty kernel32 and
//! ws2_32 functions, each with the signature Microsoft documents.
//!
//! Every `unsafe` here is a call of one of these functions on handles this module's types own
//! (or borrow for the call) and on memory that stays valid and unmoved for as long as the
//! system may write it; each says which.
//!
//! A `RawHandle` is a pointer type, but a handle is not memory: it names a kernel object that
//! the system looks up and checks on every call (a stale or wrong one fails the call with
//! `ERROR_INVALID_HANDLE`). So the functions taking one stay safe, and clippy's "might
//! dereference a raw pointer" does not apply to them.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::c_void;
use std::fs::File;
use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::time::Duration;

type Handle = RawHandle;
type Bool = i32;

const INFINITE: u32 = u32::MAX;
const WAIT_OBJECT_0: u32 = 0;
const WAIT_TIMEOUT: u32 = 0x102;
const WAIT_FAILED: u32 = u32::MAX;
const ERROR_IO_PENDING: i32 = 997;
const ERROR_BROKEN_PIPE: i32 = 109;
const ERROR_OPERATION_ABORTED: i32 = 995;
const ERROR_HANDLE_EOF: i32 = 38;
/// OpenProcess's answer for an id no process has.
const ERROR_INVALID_PARAMETER: i32 = 87;
/// The right to wait on a process: enough to see whether it has exited.
const SYNCHRONIZE: u32 = 0x0010_0000;
const JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS: u32 = 9;
const JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE: u32 = 0x2000;
const TH32CS_SNAPTHREAD: u32 = 0x4;
const THREAD_SUSPEND_RESUME: u32 = 0x2;
const INVALID_HANDLE_VALUE: Handle = -1isize as Handle;
const FD_ACCEPT: i32 = 0x8;

#[repr(C)]
struct Overlapped {
    internal: usize,
    internal_high: usize,
    offset: u32,
    offset_high: u32,
    /// The event's HANDLE, as an integer so that a reader can move between threads.
    event: usize,
}

#[repr(C)]
#[derive(Default)]
struct JobBasicLimits {
    per_process_user_time_limit: i64,
    per_job_user_time_limit: i64,
    limit_flags: u32,
    minimum_working_set_size: usize,
    maximum_working_set_size: usize,
    active_process_limit: u32,
    affinity: usize,
    priority_class: u32,
    scheduling_class: u32,
}

#[repr(C)]
#[derive(Default)]
struct JobExtendedLimits {
    basic: JobBasicLimits,
    io: [u64; 6],
    process_memory_limit: usize,
    job_memory_limit: usize,
    peak_process_memory_used: usize,
    peak_job_memory_used: usize,
}

#[repr(C)]
struct ThreadEntry32 {
    size: u32,
    usage: u32,
    thread_id: u32,
    owner_process_id: u32,
    base_priority: i32,
    delta_priority: i32,
    flags: u32,
}

#[link(name = "kernel32")]
extern "system" {
    fn CreateEventW(attributes: *const c_void, manual_reset: Bool, initial_state: Bool, name: *const u16) -> Handle;
    fn SetEvent(event: Handle) -> Bool;
    fn ResetEvent(event: Handle) -> Bool;
    fn WaitForSingleObject(handle: Handle, milliseconds: u32) -> u32;
    fn WaitForMultipleObjects(count: u32, handles: *const Handle, wait_all: Bool, milliseconds: u32) -> u32;
    fn ReadFile(file: Handle, buffer: *mut u8, to_read: u32, read: *mut u32, overlapped: *mut Overlapped) -> Bool;
    fn WriteFile(file: Handle, buffer: *const u8, to_write: u32, written: *mut u32, overlapped: *mut Overlapped) -> Bool;
    fn GetOverlappedResult(file: Handle, overlapped: *mut Overlapped, transferred: *mut u32, wait: Bool) -> Bool;
    fn CancelIoEx(file: Handle, overlapped: *mut Overlapped) -> Bool;
    fn CreateJobObjectW(attributes: *const c_void, name: *const u16) -> Handle;
    fn SetInformationJobObject(job: Handle, class: u32, info: *const c_void, length: u32) -> Bool;
    fn AssignProcessToJobObject(job: Handle, process: Handle) -> Bool;
    fn TerminateJobObject(job: Handle, exit_code: u32) -> Bool;
    fn GetExitCodeProcess(process: Handle, exit_code: *mut u32) -> Bool;
    fn OpenProcess(access: u32, inherit: Bool, pid: u32) -> Handle;
    fn CreateToolhelp32Snapshot(flags: u32, process_id: u32) -> Handle;
    fn Thread32First(snapshot: Handle, entry: *mut ThreadEntry32) -> Bool;
    fn Thread32Next(snapshot: Handle, entry: *mut ThreadEntry32) -> Bool;
    fn OpenThread(access: u32, inherit: Bool, thread_id: u32) -> Handle;
    fn ResumeThread(thread: Handle) -> u32;
    fn GetConsoleWindow() -> Handle;
}

#[link(name = "ws2_32")]
extern "system" {
    fn WSAEventSelect(socket: usize, event: Handle, events: i32) -> i32;
}

/// A new handle from a call that returns NULL on failure.
fn owned(h: Handle, what: &str) -> io::Result<OwnedHandle> {
    if h.is_null() || h == INVALID_HANDLE_VALUE {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    // SAFETY: a handle the call just created, owned by nobody else.
    Ok(unsafe { OwnedHandle::from_raw_handle(h) })
}

fn check(ok: Bool, what: &str) -> io::Result<()> {
    if ok == 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

fn millis(timeout: Option<Duration>) -> u32 {
    // Rounded up, so a short wait never becomes a zero-time poll that spins.
    timeout.map_or(INFINITE, |d| d.as_nanos().div_ceil(1_000_000).min(u128::from(INFINITE - 1)) as u32)
}

/// A manual-reset event: set until reset, whoever waits on it.
pub struct Event(OwnedHandle);

impl Event {
    pub fn new() -> io::Result<Event> {
        // SAFETY: no attributes or name; the result is checked and owned.
        Ok(Event(owned(unsafe { CreateEventW(std::ptr::null(), 1, 0, std::ptr::null()) }, "CreateEventW")?))
    }

    pub fn raw(&self) -> RawHandle {
        self.0.as_raw_handle()
    }

    pub fn set(&self) {
        // SAFETY: an event handle we own.
        unsafe { SetEvent(self.raw()) };
    }

    pub fn reset(&self) {
        // SAFETY: an event handle we own.
        unsafe { ResetEvent(self.raw()) };
    }

    pub fn is_set(&self) -> bool {
        // SAFETY: a zero-time wait on a handle we own.
        unsafe { WaitForSingleObject(self.raw(), 0) == WAIT_OBJECT_0 }
    }
}

/// Waits until one of `handles` is signalled or `timeout` passes: the index of the first
/// signalled one, or None on timeout.
pub fn wait_any(handles: &[RawHandle], timeout: Option<Duration>) -> io::Result<Option<usize>> {
    // SAFETY: `handles` holds `len` handles the caller keeps open for the call (at most 64,
    // the system's limit, checked by the call itself).
    let r = unsafe { WaitForMultipleObjects(handles.len() as u32, handles.as_ptr(), 0, millis(timeout)) };
    match r {
        WAIT_TIMEOUT => Ok(None),
        WAIT_FAILED => Err(io::Error::last_os_error()),
        r if (r as usize) < handles.len() => Ok(Some(r as usize)),
        // WAIT_ABANDONED_n: only mutexes are abandoned, and none is waited on here.
        r => Err(io::Error::other(format!("WaitForMultipleObjects returned {r:#x}"))),
    }
}

/// Whether `handle` (a process, an event) is signalled within `timeout`.
pub fn wait_one(handle: RawHandle, timeout: Option<Duration>) -> bool {
    // SAFETY: a handle the caller keeps open for the call.
    unsafe { WaitForSingleObject(handle, millis(timeout)) == WAIT_OBJECT_0 }
}

/// An overlapped read or write in flight: the OVERLAPPED block and its event, boxed so that
/// their address stays fixed while the system may write them.
struct Io {
    overlapped: Box<Overlapped>,
    event: Event,
}

impl Io {
    fn new() -> io::Result<Io> {
        let event = Event::new()?;
        let overlapped = Box::new(Overlapped { internal: 0, internal_high: 0, offset: 0, offset_high: 0, event: event.raw() as usize });
        Ok(Io { overlapped, event })
    }

    fn reset(&mut self) {
        *self.overlapped = Overlapped { internal: 0, internal_high: 0, offset: 0, offset_high: 0, event: self.event.raw() as usize };
    }

    /// The count of a finished operation (`wait`: block until it is finished).
    fn result(&mut self, file: RawHandle, wait: bool) -> io::Result<u32> {
        let mut n = 0;
        // SAFETY: the OVERLAPPED block of an operation started on `file`, alive and unmoved.
        check(unsafe { GetOverlappedResult(file, &mut *self.overlapped, &mut n, wait as Bool) }, "GetOverlappedResult").map(|()| n)
    }

    /// Cancels the operation and waits until the system has let go of its memory.
    fn cancel(&mut self, file: RawHandle) -> io::Result<u32> {
        // SAFETY: as in `result`; cancelling an operation that already finished is harmless.
        unsafe { CancelIoEx(file, &mut *self.overlapped) };
        self.result(file, true)
    }
}

/// Reads one handle opened for overlapped I/O — our end of a child's pipe (std opens it so), or
/// a socket (std makes them overlapped): one read in flight at a time into a buffer of its own,
/// its event waitable together with other handles — Windows' stand-in for poll(2). `T` owns the
/// handle and closes it when the reader is dropped, after any read in flight has ended.
pub struct OverlappedReader<T> {
    io: Io,
    buf: Box<[u8]>,
    pending: bool,
    /// The read in flight failed at once because the writer is gone: nothing is in flight.
    ended: bool,
    /// The handle, as an integer so that the reader can move between threads.
    handle: usize,
    // Declared last: dropped after `Drop` has ended the read in flight.
    _owner: T,
}

/// Our end of a child's pipe.
pub type PipeReader = OverlappedReader<File>;

impl PipeReader {
    pub fn new(file: File, capacity: usize) -> io::Result<PipeReader> {
        let handle = file.as_raw_handle() as usize;
        OverlappedReader::with(file, handle, capacity)
    }
}

impl OverlappedReader<std::net::TcpStream> {
    /// A connected socket (a SOCKET is a handle ReadFile reads).
    pub fn socket(stream: std::net::TcpStream, capacity: usize) -> io::Result<Self> {
        use std::os::windows::io::AsRawSocket;
        let handle = stream.as_raw_socket() as usize;
        OverlappedReader::with(stream, handle, capacity)
    }
}

impl<T> OverlappedReader<T> {
    fn with(owner: T, handle: usize, capacity: usize) -> io::Result<Self> {
        Ok(OverlappedReader { io: Io::new()?, buf: vec![0; capacity].into_boxed_slice(), pending: false, ended: false, handle, _owner: owner })
    }

    fn raw(&self) -> RawHandle {
        self.handle as RawHandle
    }

    /// Signalled when the read in flight has finished.
    pub fn event(&self) -> RawHandle {
        self.io.event.raw()
    }

    /// Puts a read in flight unless one is. Errors other than a broken pipe (the writer is
    /// gone: end of stream, reported by `finish`) are returned.
    pub fn start(&mut self) -> io::Result<()> {
        if self.pending {
            return Ok(());
        }
        self.io.reset();
        let h = self.raw();
        // SAFETY: the buffer and the OVERLAPPED block belong to `self`, are heap memory that
        // does not move, and outlive the read: `finish` waits for its end, and `Drop` cancels
        // it and waits before they are freed. The handle is ours and overlapped.
        let ok = unsafe { ReadFile(h, self.buf.as_mut_ptr(), self.buf.len() as u32, std::ptr::null_mut(), &mut *self.io.overlapped) };
        if ok == 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(ERROR_IO_PENDING) => {}
                // Finished at once with nothing: the event is not set, so set it for `finish`.
                Some(ERROR_BROKEN_PIPE | ERROR_HANDLE_EOF) => {
                    self.ended = true;
                    self.io.event.set();
                }
                _ => return Err(e),
            }
        }
        self.pending = true;
        Ok(())
    }

    /// After `event()` fired: what the read brought (empty at end of stream).
    pub fn finish(&mut self) -> io::Result<&[u8]> {
        if !self.pending {
            return Ok(&[]);
        }
        self.pending = false;
        if self.ended {
            return Ok(&[]); // the broken pipe `start` saw
        }
        match self.io.result(self.raw(), true) {
            Ok(n) => Ok(&self.buf[..n as usize]),
            Err(e) if matches!(e.raw_os_error(), Some(ERROR_BROKEN_PIPE | ERROR_HANDLE_EOF)) || e.kind() == io::ErrorKind::BrokenPipe => {
                Ok(&[])
            }
            Err(e) => Err(e),
        }
    }

    /// `len` bytes of what the last finished read brought, from `at`.
    pub fn filled(&self, at: usize, len: usize) -> &[u8] {
        &self.buf[at..at + len]
    }

    /// Whether the read in flight has finished (its event is set).
    pub fn ready(&self) -> bool {
        self.pending && self.io.event.is_set()
    }
}

impl<T> Drop for OverlappedReader<T> {
    fn drop(&mut self) {
        if self.pending && !self.ended {
            let _ = self.io.cancel(self.raw());
        }
    }
}

/// Writes all of `data` to an overlapped pipe end, waiting for room up to `timeout` and giving
/// up when `wake` is set. A write cut short is cancelled and waited for before returning, so
/// the system holds nothing of `data` afterwards.
pub fn write_overlapped(file: &File, mut data: &[u8], deadline: Option<std::time::Instant>, wake: RawHandle) -> io::Result<()> {
    let h = file.as_raw_handle();
    let mut io = Io::new()?;
    while !data.is_empty() {
        io.reset();
        let len = data.len().min(1 << 30) as u32;
        // SAFETY: `data` and the boxed OVERLAPPED block outlive the write: every path below
        // waits for its end (result, or cancel + result) before either is released.
        let ok = unsafe { WriteFile(h, data.as_ptr(), len, std::ptr::null_mut(), &mut *io.overlapped) };
        if ok == 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(ERROR_IO_PENDING) {
                return Err(e);
            }
        }
        let left = deadline.map(|d| d.saturating_duration_since(std::time::Instant::now()));
        let woke = match wait_any(&[io.event.raw(), wake], left) {
            Ok(Some(0)) => None,
            Ok(Some(_)) => Some(io::Error::new(io::ErrorKind::BrokenPipe, "the client is closing")),
            Ok(None) => Some(io::Error::new(io::ErrorKind::TimedOut, "timed out writing to the agent's stdin")),
            Err(e) => Some(e),
        };
        match woke {
            None => {
                let n = io.result(h, true)?;
                data = &data[n as usize..];
            }
            Some(err) => {
                return match io.cancel(h) {
                    // It finished after all, racing the cancel.
                    Ok(n) if n == len && data.len() == len as usize => Ok(()),
                    Err(e) if e.raw_os_error() != Some(ERROR_OPERATION_ABORTED) => Err(e),
                    _ => Err(err),
                };
            }
        }
    }
    Ok(())
}

/// A Job object that kills every process in it when its last handle closes — when the
/// client tears the agent down, and when this process dies without doing so.
pub struct Job(OwnedHandle);

impl Job {
    pub fn new() -> io::Result<Job> {
        // SAFETY: no attributes (so the handle is not inherited) and no name.
        let job = Job(owned(unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) }, "CreateJobObjectW")?);
        let mut limits = JobExtendedLimits::default();
        limits.basic.limit_flags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the class's structure, of the size given, read during the call.
        check(
            unsafe {
                SetInformationJobObject(
                    job.0.as_raw_handle(),
                    JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS,
                    (&limits as *const JobExtendedLimits).cast(),
                    std::mem::size_of::<JobExtendedLimits>() as u32,
                )
            },
            "SetInformationJobObject(kill on close)",
        )?;
        Ok(job)
    }

    pub fn assign(&self, process: RawHandle) -> io::Result<()> {
        // SAFETY: both handles are open for the call.
        check(unsafe { AssignProcessToJobObject(self.0.as_raw_handle(), process) }, "AssignProcessToJobObject")
    }

    /// Ends every process in the job with `code`.
    pub fn terminate(&self, code: u32) {
        // SAFETY: a job handle we own.
        unsafe { TerminateJobObject(self.0.as_raw_handle(), code) };
    }
}

/// Whether process `pid` (any process) is known to have ended: no process has that id, or one
/// that has exited still does (its object kept by someone's handle). False while it runs, and
/// when it cannot be opened for another reason (another user's, access denied).
pub fn process_has_ended(pid: u32) -> bool {
    // 0 is the System Idle Process's id, which OpenProcess refuses as it refuses a missing one.
    if pid == 0 {
        return false;
    }
    // SAFETY: no pointers; a handle returned is ours, owned below.
    let raw = unsafe { OpenProcess(SYNCHRONIZE, 0, pid) };
    if raw.is_null() {
        return io::Error::last_os_error().raw_os_error() == Some(ERROR_INVALID_PARAMETER);
    }
    // SAFETY: the handle just opened, owned by nothing else.
    let process = unsafe { OwnedHandle::from_raw_handle(raw) };
    wait_one(process.as_raw_handle(), Some(Duration::ZERO))
}

/// The exit code of an exited process, None while it runs.
pub fn exit_code(process: RawHandle) -> Option<u32> {
    if !wait_one(process, Some(Duration::ZERO)) {
        return None;
    }
    let mut code = 0;
    // SAFETY: a process handle the caller keeps open; writes only `code`.
    (unsafe { GetExitCodeProcess(process, &mut code) } != 0).then_some(code)
}

/// Resumes the threads of process `pid`, which was created suspended (it has just its main
/// thread): std's spawn does not hand out the thread handle, so it is found by a snapshot.
pub fn resume_threads(pid: u32) -> io::Result<()> {
    // SAFETY: a new snapshot handle, checked and owned.
    let snapshot = owned(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) }, "CreateToolhelp32Snapshot")?;
    let mut entry = ThreadEntry32 { size: std::mem::size_of::<ThreadEntry32>() as u32, usage: 0, thread_id: 0, owner_process_id: 0, base_priority: 0, delta_priority: 0, flags: 0 };
    let mut resumed = 0;
    // SAFETY: the snapshot is ours; `entry` is a local of the size its `size` field states.
    let mut more = unsafe { Thread32First(snapshot.as_raw_handle(), &mut entry) } != 0;
    while more {
        if entry.owner_process_id == pid {
            // SAFETY: a new thread handle, checked and owned (closed at the end of the block).
            let thread = owned(unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.thread_id) }, "OpenThread")?;
            // SAFETY: a thread handle we own, opened with the right to resume.
            if unsafe { ResumeThread(thread.as_raw_handle()) } == u32::MAX {
                return Err(io::Error::last_os_error());
            }
            resumed += 1;
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot.as_raw_handle(), &mut entry) } != 0;
    }
    if resumed == 0 {
        return Err(io::Error::other(format!("no thread of process {pid} to resume")));
    }
    Ok(())
}

/// Whether this process has a console with a window (a console program in a terminal), which
/// a child can share; false for a desktop program (or a hidden console).
pub fn has_console_window() -> bool {
    // SAFETY: no arguments.
    !unsafe { GetConsoleWindow() }.is_null()
}

/// Makes `event` signalled while `socket` (a listener) has a connection to accept. This also
/// makes the socket non-blocking; what it accepts inherits both and must be handed to
/// `clear_socket_events` and made blocking again before use (`transport::socket`).
pub fn signal_on_accept(socket: usize, event: &Event) -> io::Result<()> {
    // SAFETY: a socket and an event handle the caller keeps open.
    if unsafe { WSAEventSelect(socket, event.raw(), FD_ACCEPT) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Undoes what an accepted socket inherited from `signal_on_accept`: no event association, so
/// std can make it blocking again (it refuses while one exists).
pub fn clear_socket_events(socket: usize) -> io::Result<()> {
    // SAFETY: a socket the caller keeps open; a null event with no events clears the selection.
    if unsafe { WSAEventSelect(socket, std::ptr::null_mut(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
