/*
 * powercut cut JOURNAL REPORT DIR[:DIR...]: what a power loss leaves of a broker's log dirs.
 * powercut settle JOURNAL DIR[:DIR...]: journal every file as it is now as durable.
 *
 * `cut` runs in entrypoint.sh before the broker starts again after the `power-loss` fault. It replays the journal
 * syncjournal.c wrote (fsync/msync: durable up to that size; ftruncate: nothing above the new size;
 * rename: the durable state moves with the name; unlink: gone), then cuts every regular file under DIR
 * back to its durable size; a file the journal never saw synced was never durable and is emptied. Kafka's
 * own recovery then runs on what is left, as after a real power cut.
 *
 * REPORT gets one JSON object per file cut: its path, size before, size kept, and for a log segment the
 * record batches dropped (Kafka discards a batch cut in half on recovery, so it counts as dropped whole):
 * their first and last offset and how many records they held. Afterwards the journal is rewritten to say
 * that every byte left is durable, so a second power loss starts from the state the first one left.
 *
 * `settle` runs before every broker start: what the log dirs hold when the broker starts (the storage
 * format's files, what recovery left) counts as durable. A real machine writes dirty pages back within
 * seconds (vm.dirty_expire_centisecs, 30 s by default) and a node has been up longer than that before
 * any fault; only what the broker writes while it runs is judged by its own syncs.
 */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* path -> durable size, open addressing; a removed entry keeps its slot with size -1 */
struct entry {
    char *path;
    long long size;
};
static struct entry *table;
static size_t capacity, used;

static size_t hash(const char *s) {
    size_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static struct entry *slot(const char *path) {
    size_t i = hash(path) & (capacity - 1);
    while (table[i].path && strcmp(table[i].path, path) != 0) i = (i + 1) & (capacity - 1);
    return &table[i];
}

static void put(const char *path, long long size) {
    if (2 * (used + 1) > capacity) {
        struct entry *old = table;
        size_t old_capacity = capacity;
        capacity = capacity ? 2 * capacity : 1024;
        table = calloc(capacity, sizeof *table);
        if (!table) exit(3);
        used = 0;
        for (size_t i = 0; i < old_capacity; i++)
            if (old[i].path) {
                *slot(old[i].path) = old[i];
                used++;
            }
        free(old);
    }
    struct entry *e = slot(path);
    if (!e->path) {
        e->path = strdup(path);
        used++;
    }
    e->size = size;
}

/* The durable size of `path`: -1 when the journal holds nothing durable for it. */
static long long durable(const char *path) {
    if (!capacity) return -1;
    struct entry *e = slot(path);
    return e->path ? e->size : -1;
}

static void replay(const char *journal) {
    FILE *in = fopen(journal, "re");
    if (!in) return; /* nothing was ever synced */
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, in) > 0) {
        char op[16], a[4096], b[4096];
        if (sscanf(line, "%15s %4095s %4095s", op, a, b) != 3) continue; /* a torn last line */
        if (!strcmp(op, "fsync") || !strcmp(op, "msync")) {
            put(a, atoll(b));
        } else if (!strcmp(op, "ftruncate")) {
            long long now = durable(a), cut = atoll(b);
            put(a, now < 0 ? 0 : (now < cut ? now : cut));
        } else if (!strcmp(op, "rename")) {
            put(b, durable(a));
            put(a, -1);
        } else if (!strcmp(op, "unlink")) {
            put(a, -1);
        }
    }
    free(line);
    fclose(in);
}

static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

/* The record batches of a segment that end above `kept`: first and last offset and record count. */
static void dropped_batches(const char *path, long long kept, long long size, FILE *report) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    unsigned char head[61];
    long long pos = 0, first = -1, last = -1, records = 0;
    while (pos + 17 <= size) {
        ssize_t n = pread(fd, head, sizeof head, pos);
        if (n < 17) break;
        long long base = (long long)be(head, 8);
        long long length = (long long)(int32_t)be(head + 8, 4);
        if (length <= 0) break;
        long long end = pos + 12 + length;
        if (end > kept) {
            int magic = head[16];
            long long batch_last = base, count = 1;
            if (magic >= 2 && n >= 61) {
                batch_last = base + (long long)(int32_t)be(head + 23, 4);
                count = (long long)(int32_t)be(head + 57, 4);
            }
            if (first < 0) first = base;
            last = batch_last;
            records += count;
        }
        pos = end;
    }
    close(fd);
    if (first >= 0)
        fprintf(report, ", \"first_offset\": %lld, \"last_offset\": %lld, \"records\": %lld", first, last, records);
}

static FILE *report;

static int cut(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)ftw;
    if (type != FTW_F || !S_ISREG(st->st_mode)) return 0;
    long long size = st->st_size, kept = durable(path);
    if (kept < 0) kept = 0;
    if (kept >= size) return 0;
    fprintf(report, "{\"path\": \"%s\", \"size\": %lld, \"kept\": %lld", path, size, kept);
    size_t len = strlen(path);
    if (len > 4 && !strcmp(path + len - 4, ".log")) dropped_batches(path, kept, size, report);
    fprintf(report, "}\n");
    if (truncate(path, kept) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

static FILE *rewritten;

static int durable_now(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)ftw;
    if (type == FTW_F && S_ISREG(st->st_mode)) fprintf(rewritten, "fsync %s %lld\n", path, (long long)st->st_size);
    return 0;
}

/* Rewrites the journal to say every file under `dir_list` is durable at its present size. */
static int settle(const char *journal, const char *dir_list) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", journal);
    rewritten = fopen(tmp, "we");
    if (!rewritten) {
        perror(tmp);
        return 1;
    }
    char *dirs = strdup(dir_list);
    for (char *dir = strtok(dirs, ":"); dir; dir = strtok(NULL, ":")) nftw(dir, durable_now, 16, FTW_PHYS);
    free(dirs);
    fclose(rewritten);
    if (rename(tmp, journal) != 0) {
        perror(journal);
        return 1;
    }
    sync();
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "settle")) return settle(argv[2], argv[3]);
    if (argc != 5 || strcmp(argv[1], "cut") != 0) {
        fprintf(stderr, "usage: powercut cut JOURNAL REPORT DIR[:DIR...] | powercut settle JOURNAL DIR[:DIR...]\n");
        return 2;
    }
    replay(argv[2]);
    report = fopen(argv[3], "we");
    if (!report) {
        perror(argv[3]);
        return 1;
    }
    char *dirs = strdup(argv[4]);
    int failed = 0;
    for (char *dir = strtok(dirs, ":"); dir; dir = strtok(NULL, ":"))
        if (nftw(dir, cut, 16, FTW_PHYS) != 0) failed = 1;
    free(dirs);
    fclose(report);
    return settle(argv[2], argv[4]) || failed;
}
