/*
 * What differs between the platforms the C tests run on, behind one small interface, so that
 * every test program stays one source: POSIX (Linux, C99 + POSIX + pthreads) and Windows
 * (mingw-w64, run under Wine by `make windows-c-tests`; pthreads from winpthreads).
 *
 *   plat_now_ms(), plat_sleep_ms(ms)          a monotonic clock in milliseconds; a sleep
 *   plat_watchdog_start(),                    ends the program (exit 3) with `message` on stderr
 *   plat_watchdog_arm(s, message),            when a test runs longer than `s` seconds: SIGALRM
 *   plat_watchdog_disarm()                    on POSIX, a watchdog thread on Windows
 *   plat_stdout_by_line()                     stdout written out line by line (as stderr's lines
 *                                             are), so the two interleave in order
 *   plat_sigpipe_ignore(), plat_sigpipe_default()   SIGPIPE's action (Windows has no SIGPIPE: a
 *                                             write to a closed pipe fails there, nothing to do)
 *   plat_events, plat_event_source(c, &ev, &err)    what a host waits on for queued events: the
 *   plat_event_wait(&ev, ms)                  descriptor (omprpc_client_event_fd, poll(2)) or the
 *   plat_events_same(&a, &b)                  event HANDLE (omprpc_client_event_handle,
 *   PLAT_EVENT_SOURCE_NAME                    WaitForSingleObject); the name of that call
 *   plat_foreign_event_source(c, &untouched, &err)  the other platform's call, which must refuse
 *   plat_make_temp_dir(prefix, buf, cap)      a new directory in the temp dir ($TMPDIR, else /tmp;
 *                                             Windows: GetTempPath, written with '/', so that a
 *                                             path can go into JSON unescaped)
 *   plat_read_file(path, buf, cap)            reads a file whole (NUL-terminated; 0 if it cannot be
 *                                             opened) without keeping a writer from replacing it
 *                                             by rename meanwhile (Windows: FILE_SHARE_DELETE)
 *   plat_setenv(name, value), plat_unsetenv(name)   this process's environment (what the library
 *                                             reads when it builds an agent's environment)
 *   plat_file_is_private(path, why, cap)      1 when only this user can read `path`: mode 0600 on
 *                                             POSIX, an owner-only DACL on Windows
 *   plat_raise_fd_limit()                     RLIMIT_NOFILE to its hard limit (Windows has no
 *                                             such per-process limit on handles)
 *   plat_under_wine()                         1 in a Windows program running under Wine
 *   plat_added_env_name(name)                 1 for a variable the system puts into every new
 *                                             process's environment, whatever block it was
 *                                             given (Wine: SystemDrive, SystemRoot, WINE*)
 *   PLAT_FDS_PER_CLIENT                       a bound on the descriptors (Windows: handles) one
 *                                             client holds, for the load test's leak check
 *   PLAT_WINDOWS, PLAT_NAME                   1 on Windows, else 0; "windows" / "posix"
 *
 * No test body needs an #ifdef: what a test cannot do on a platform is a skip with its reason
 * (harness.h's SKIP_IF), counted as skipped.
 */
#ifndef OMPRPC_TEST_PLATFORM_H
#define OMPRPC_TEST_PLATFORM_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omprpc.h"

#ifdef _WIN32

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#include <aclapi.h>
#include <io.h>
#include <process.h>
#include <unistd.h>

#define PLAT_WINDOWS 1
#define PLAT_NAME "windows"
#define PLAT_EVENT_SOURCE_NAME "omprpc_client_event_handle"
/* A started client holds 12 handles (measured under Wine: 1 to 4 clients, 12 each, 0 after
 * free); a start in flight holds a few more for a moment. */
#define PLAT_FDS_PER_CLIENT 14

static inline int64_t plat_now_ms(void) {
    static LARGE_INTEGER freq;
    LARGE_INTEGER now;
    if (!freq.QuadPart) QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&now);
    return (int64_t)(now.QuadPart / freq.QuadPart * 1000 + now.QuadPart % freq.QuadPart * 1000 / freq.QuadPart);
}

static inline void plat_sleep_ms(long ms) { Sleep(ms < 0 ? 0 : (DWORD)ms); }

/* The watchdog thread sleeps on an auto-reset event until the armed deadline (0: none); a
 * change of deadline wakes it to sleep again. Past the deadline it writes the message and ends
 * the process as SIGALRM's handler does on POSIX. */
static HANDLE plat_wd_wake;
static volatile LONG64 plat_wd_deadline;
static char plat_wd_message[256];

static DWORD WINAPI plat_wd_thread(LPVOID arg) {
    (void)arg;
    for (;;) {
        LONG64 deadline = InterlockedCompareExchange64(&plat_wd_deadline, 0, 0);
        DWORD wait = INFINITE;
        if (deadline) {
            int64_t left = deadline - plat_now_ms();
            if (left <= 0) {
                DWORD written;
                WriteFile(GetStdHandle(STD_ERROR_HANDLE), plat_wd_message, (DWORD)strlen(plat_wd_message), &written, NULL);
                /* Not _exit: the CRT's ends in ExitProcess, which notifies every DLL and so waits
                 * for the loader lock, which the stuck thread may hold. */
                TerminateProcess(GetCurrentProcess(), 3);
            }
            wait = (DWORD)left;
        }
        WaitForSingleObject(plat_wd_wake, wait);
    }
    return 0;
}

static inline void plat_watchdog_start(void) {
    HANDLE th;
    plat_wd_wake = CreateEventA(NULL, FALSE, FALSE, NULL);
    th = plat_wd_wake ? CreateThread(NULL, 0, plat_wd_thread, NULL, 0, NULL) : NULL;
    if (!th) {
        fprintf(stderr, "cannot start the watchdog thread (error %lu)\n", (unsigned long)GetLastError());
        exit(2);
    }
    CloseHandle(th);
}

static inline void plat_watchdog_arm(int seconds, const char *message) {
    snprintf(plat_wd_message, sizeof plat_wd_message, "%s", message);
    InterlockedExchange64(&plat_wd_deadline, plat_now_ms() + (int64_t)seconds * 1000);
    SetEvent(plat_wd_wake);
}

static inline void plat_watchdog_disarm(void) {
    InterlockedExchange64(&plat_wd_deadline, 0);
    SetEvent(plat_wd_wake);
}

/* The CRT has no line buffering (_IOLBF is full buffering there): unbuffered instead. */
static inline void plat_stdout_by_line(void) { setvbuf(stdout, NULL, _IONBF, 0); }

static inline void plat_sigpipe_ignore(void) {}
static inline void plat_sigpipe_default(void) {}

typedef struct {
    void *handle;
} plat_events;

static inline omprpc_status plat_event_source(const omprpc_client *c, plat_events *ev, char **err) {
    ev->handle = NULL;
    return omprpc_client_event_handle(c, &ev->handle, err);
}

/* 1 when set (events queued, or the client closed), 0 on timeout, -1 on error. */
static inline int plat_event_wait(const plat_events *ev, int64_t timeout_ms) {
    DWORD r = WaitForSingleObject((HANDLE)ev->handle, timeout_ms < 0 ? INFINITE
                                                      : timeout_ms > 0x7fffffff ? 0x7fffffffUL
                                                                                : (DWORD)timeout_ms);
    return r == WAIT_OBJECT_0 ? 1 : r == WAIT_TIMEOUT ? 0 : -1;
}

static inline int plat_event_source_valid(const plat_events *ev) {
    return ev->handle != NULL && ev->handle != INVALID_HANDLE_VALUE;
}

static inline int plat_events_same(const plat_events *a, const plat_events *b) { return a->handle == b->handle; }

/* The descriptor call, which Windows refuses; *untouched says whether out_fd kept its value. */
static inline omprpc_status plat_foreign_event_source(const omprpc_client *c, int *untouched, char **err) {
    int fd = -12345;
    omprpc_status st = omprpc_client_event_fd(c, &fd, err);
    *untouched = fd == -12345;
    return st;
}

static inline int plat_make_temp_dir(const char *prefix, char *buf, size_t cap) {
    static volatile LONG counter;
    char tmp[MAX_PATH + 1];
    DWORD n = GetTempPathA(sizeof tmp, tmp);
    int attempt;
    size_t i;
    if (n == 0 || n > MAX_PATH) return 0;
    for (attempt = 0; attempt < 100; attempt++) {
        int w = snprintf(buf, cap, "%s%s-%lx-%lx-%lx", tmp, prefix, (unsigned long)GetCurrentProcessId(),
                         (unsigned long)InterlockedIncrement(&counter), (unsigned long)(GetTickCount() & 0xffff));
        if (w < 0 || (size_t)w >= cap) return 0;
        for (i = 0; buf[i]; i++)
            if (buf[i] == '\\') buf[i] = '/';
        if (CreateDirectoryA(buf, NULL)) return 1;
        if (GetLastError() != ERROR_ALREADY_EXISTS) return 0;
    }
    return 0;
}

/* The CRT's fopen does not share delete access: a rename over the file (how the fake agent's
 * grandchild writes its heartbeat) would then fail, and the grandchild stops beating. */
static inline int plat_read_file(const char *path, char *buf, size_t cap) {
    HANDLE f = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    DWORD got = 0, n = 0;
    if (f == INVALID_HANDLE_VALUE) return 0;
    while (n < cap - 1 && ReadFile(f, buf + n, (DWORD)(cap - 1 - n), &got, NULL) && got > 0) n += got;
    buf[n] = '\0';
    CloseHandle(f);
    return 1;
}

/* Both the CRT's copy (getenv) and the process's environment block (what the library reads). */
static inline int plat_setenv(const char *name, const char *value) {
    return (_putenv_s(name, value) == 0 && SetEnvironmentVariableA(name, value)) ? 0 : -1;
}

static inline int plat_unsetenv(const char *name) {
    return (_putenv_s(name, "") == 0 && SetEnvironmentVariableA(name, NULL)) ? 0 : -1;
}

/* Private: a DACL whose every allowing entry is this user or SYSTEM, and one is this user. */
static inline int plat_file_is_private(const char *path, char *why, size_t cap) {
    PACL dacl = NULL;
    PSECURITY_DESCRIPTOR sd = NULL;
    HANDLE token = NULL;
    union {
        TOKEN_USER user;
        char bytes[256];
    } me;
    DWORD len = 0, err, i;
    int ok = 0, mine = 0;
    err = GetNamedSecurityInfoA(path, SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL, &dacl, NULL, &sd);
    if (err != ERROR_SUCCESS) {
        snprintf(why, cap, "GetNamedSecurityInfo(%s) failed: error %lu", path, (unsigned long)err);
        return 0;
    }
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token)
        || !GetTokenInformation(token, TokenUser, &me, sizeof me, &len)) {
        snprintf(why, cap, "cannot read this process's user: error %lu", (unsigned long)GetLastError());
    } else if (!dacl) {
        snprintf(why, cap, "%s has no DACL: everyone has access", path);
    } else {
        ok = 1;
        for (i = 0; i < dacl->AceCount && ok; i++) {
            ACE_HEADER *ace = NULL;
            PSID sid;
            if (!GetAce(dacl, i, (LPVOID *)&ace) || ace->AceType != ACCESS_ALLOWED_ACE_TYPE) continue;
            sid = (PSID)&((ACCESS_ALLOWED_ACE *)ace)->SidStart;
            if (EqualSid(sid, me.user.User.Sid)) {
                mine = 1;
            } else if (!IsWellKnownSid(sid, WinLocalSystemSid)) {
                snprintf(why, cap, "%s: DACL entry %lu allows someone other than this user and SYSTEM", path,
                         (unsigned long)i);
                ok = 0;
            }
        }
        if (ok && !mine) {
            snprintf(why, cap, "%s: no DACL entry allows this user", path);
            ok = 0;
        }
    }
    if (token) CloseHandle(token);
    LocalFree(sd);
    return ok;
}

static inline void plat_raise_fd_limit(void) {}

static inline int plat_under_wine(void) {
    HMODULE ntdll = GetModuleHandleA("ntdll.dll");
    return ntdll && GetProcAddress(ntdll, "wine_get_version") != NULL;
}

/* Wine's loader adds these to a process started with an environment block of one variable
 * (CreateProcess of `cmd /c set` with "A=1" shows them); Windows adds none. */
static inline int plat_added_env_name(const char *name) {
    return plat_under_wine()
           && (!strncmp(name, "WINE", 4) || !strcmp(name, "SystemDrive") || !strcmp(name, "SystemRoot"));
}

#else /* POSIX */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PLAT_WINDOWS 0
#define PLAT_NAME "posix"
#define PLAT_EVENT_SOURCE_NAME "omprpc_client_event_fd"
#define PLAT_FDS_PER_CLIENT 12

static inline int64_t plat_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void plat_sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static char plat_wd_message[256];

static void plat_on_alarm(int sig) {
    ssize_t r;
    (void)sig;
    r = write(2, plat_wd_message, strlen(plat_wd_message));
    (void)r;
    _exit(3);
}

static inline void plat_watchdog_start(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = plat_on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
}

static inline void plat_watchdog_arm(int seconds, const char *message) {
    snprintf(plat_wd_message, sizeof plat_wd_message, "%s", message);
    alarm((unsigned)seconds);
}

static inline void plat_watchdog_disarm(void) { alarm(0); }

static inline void plat_stdout_by_line(void) { setvbuf(stdout, NULL, _IOLBF, 0); }

/* A closed pipe must surface as an error from write(), not kill the test. */
static inline void plat_sigpipe_ignore(void) { signal(SIGPIPE, SIG_IGN); }
static inline void plat_sigpipe_default(void) { signal(SIGPIPE, SIG_DFL); }

typedef struct {
    int fd;
} plat_events;

static inline omprpc_status plat_event_source(const omprpc_client *c, plat_events *ev, char **err) {
    ev->fd = -1;
    return omprpc_client_event_fd(c, &ev->fd, err);
}

/* 1 when readable (events queued, or the client closed), 0 on timeout, -1 on error. */
static inline int plat_event_wait(const plat_events *ev, int64_t timeout_ms) {
    struct pollfd p;
    int r;
    p.fd = ev->fd;
    p.events = POLLIN;
    p.revents = 0;
    r = poll(&p, 1, timeout_ms < 0 ? -1 : timeout_ms > 0x7fffffff ? 0x7fffffff : (int)timeout_ms);
    return r == 1 ? ((p.revents & POLLIN) ? 1 : -1) : r == 0 ? 0 : -1;
}

static inline int plat_event_source_valid(const plat_events *ev) { return ev->fd >= 0; }

static inline int plat_events_same(const plat_events *a, const plat_events *b) { return a->fd == b->fd; }

/* The event HANDLE call, which only Windows has; *untouched says whether out_handle kept its value. */
static inline omprpc_status plat_foreign_event_source(const omprpc_client *c, int *untouched, char **err) {
    void *handle = NULL;
    omprpc_status st = omprpc_client_event_handle(c, &handle, err);
    *untouched = handle == NULL;
    return st;
}

static inline int plat_make_temp_dir(const char *prefix, char *buf, size_t cap) {
    const char *tmp = getenv("TMPDIR");
    int w = snprintf(buf, cap, "%s/%s-XXXXXX", (tmp && *tmp) ? tmp : "/tmp", prefix);
    if (w < 0 || (size_t)w >= cap) return 0;
    return mkdtemp(buf) != NULL;
}

static inline int plat_read_file(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    size_t n;
    if (!f) return 0;
    n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return 1;
}

static inline int plat_setenv(const char *name, const char *value) { return setenv(name, value, 1); }

static inline int plat_unsetenv(const char *name) { return unsetenv(name); }

static inline int plat_file_is_private(const char *path, char *why, size_t cap) {
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, cap, "stat(%s) failed: %s", path, strerror(errno));
        return 0;
    }
    if ((st.st_mode & 0777) != 0600) {
        snprintf(why, cap, "%s has mode %o, not 600", path, (unsigned)(st.st_mode & 0777));
        return 0;
    }
    return 1;
}

static inline void plat_raise_fd_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static inline int plat_under_wine(void) { return 0; }

static inline int plat_added_env_name(const char *name) {
    (void)name;
    return 0;
}

#endif /* _WIN32 */

#endif /* OMPRPC_TEST_PLATFORM_H */
