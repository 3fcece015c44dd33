/*
 * Shifts the wall clock of one process (the `clock` fault). A container cannot set the clock (the kernel
 * has one, shared by every container and the host), so the broker JVM is started with this library
 * preloaded, and the library adds an offset to what the process reads as the time of day:
 * clock_gettime(CLOCK_REALTIME and its coarse variant), gettimeofday and time. The monotonic clocks are
 * left alone: the JVM's own timers (System.nanoTime) run on them, and a host's NTP step does not move them
 * either. What Kafka times with System.currentTimeMillis (sessions, ISR lag, transaction timeouts,
 * retention, LogAppendTime) sees the shifted clock.
 *
 * The shift is read from a small text file, $KCHAOS_CLOCK_SHIFT, which the harness writes into the
 * container; the library looks at it at most every CHECK_NS of monotonic time, so changing the clock costs
 * the broker one read of a small file a tenth of a second, and a lookup of the time stays a few nanoseconds. The file
 * holds one line of four numbers:
 *
 *   <generation> <mode> <offset_ms> <period_ms>
 *
 *   mode 0 (jump):   the clock reads offset_ms later (earlier if negative) than the real one
 *   mode 1 (strobe): it alternates between offset_ms and the real time, every period_ms
 *   mode 2 (drift):  it gains offset_ms every second (loses, if negative) from the moment the line is read
 *
 * Once the library has taken a generation it writes that number to $KCHAOS_CLOCK_APPLIED, so the harness
 * knows the JVM's clock moved (it asked for the time after the change), not just that a file was written.
 * No file, or an unreadable line, means no shift.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define CHECK_NS 100000000LL /* how often the shift file is looked at: 0.1 s */
#define SLOTS 256            /* shifts kept; a reader never holds one long enough for 256 reloads */

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

struct shift {
    long long generation;
    int mode;
    long long offset_ns;
    long long period_ns;
    long long since_ns; /* monotonic time the line was read: strobe and drift count from it */
};

static struct shift slots[SLOTS];
static _Atomic(struct shift *) current = NULL;
static atomic_llong next_check = 0;
static atomic_uint loads = 0;
static long long taken = -1; /* the generation last taken: only the thread that won next_check touches it */
static clock_gettime_fn real_clock_gettime = NULL;

static clock_gettime_fn resolve(void) {
    clock_gettime_fn fn = real_clock_gettime;
    if (fn == NULL) {
        fn = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
        real_clock_gettime = fn;
    }
    return fn;
}

static long long monotonic_ns(void) {
    struct timespec ts;
    if (resolve()(CLOCK_MONOTONIC_COARSE, &ts) != 0) return 0;
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void write_applied(long long generation) {
    const char *path = getenv("KCHAOS_CLOCK_APPLIED");
    if (path == NULL || *path == '\0') return;
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[32];
    int n = snprintf(line, sizeof line, "%lld\n", generation);
    ssize_t written = write(fd, line, (size_t)n);
    close(fd);
    if (written == n) rename(tmp, path); /* whole, or not at all: the harness never reads half a number */
}

/* Reads the shift file and takes its line if its generation is new; called by one thread at a time. The
 * file is read whole each time rather than judged by stat(2): Docker writes it with a whole-second mtime,
 * so two shifts within a second could look alike. */
static void reload(long long now) {
    const char *path = getenv("KCHAOS_CLOCK_SHIFT");
    if (path == NULL || *path == '\0') return;
    /* open/read rather than stdio: no allocation on a thread that only asked for the time */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        atomic_store(&current, NULL); /* no file: no shift */
        return;
    }
    char text[128];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    long long generation = 0, offset_ms = 0, period_ms = 0;
    int mode = 0;
    int fields = sscanf(text, "%lld %d %lld %lld", &generation, &mode, &offset_ms, &period_ms);
    if (generation == taken) return;
    taken = generation;
    if (fields != 4 || mode < 0 || mode > 2 || (mode == 1 && period_ms <= 0)) {
        atomic_store(&current, NULL);
        return;
    }
    struct shift *slot = &slots[atomic_fetch_add(&loads, 1) % SLOTS];
    slot->generation = generation;
    slot->mode = mode;
    slot->offset_ns = offset_ms * 1000000LL;
    slot->period_ns = period_ms * 1000000LL;
    slot->since_ns = now;
    atomic_store(&current, slot);
    write_applied(generation);
}

/* The nanoseconds to add to the real time of day now. */
static long long offset_now(void) {
    long long now = monotonic_ns();
    long long due = atomic_load(&next_check);
    if (now >= due && atomic_compare_exchange_strong(&next_check, &due, now + CHECK_NS)) reload(now);
    struct shift *shift = atomic_load(&current);
    if (shift == NULL) return 0;
    long long elapsed = now - shift->since_ns;
    if (elapsed < 0) elapsed = 0;
    switch (shift->mode) {
    case 1:
        return (elapsed / shift->period_ns) % 2 == 0 ? shift->offset_ns : 0;
    case 2:
        return (long long)((double)shift->offset_ns * ((double)elapsed / 1e9));
    default:
        return shift->offset_ns;
    }
}

static void add(struct timespec *ts, long long offset_ns) {
    long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns;
    ts->tv_sec = (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    int result = resolve()(clock, ts);
    if (result == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) add(ts, offset_now());
    return result;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz;
    struct timespec ts;
    int result = clock_gettime(CLOCK_REALTIME, &ts);
    if (result == 0) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return result;
}

time_t time(time_t *out) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
    if (out != NULL) *out = ts.tv_sec;
    return ts.tv_sec;
}
