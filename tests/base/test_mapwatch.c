/* base/mapwatch: a mapped input that shrinks under us ends the process with status 2, a message
 * naming the file and its temporary outputs removed; any other SIGBUS keeps its default action.
 * Each case runs in a child process, which truncates a file it has mapped and reads past the new
 * end. */
#define _DEFAULT_SOURCE /* mkdtemp */

#include "base/mapwatch.h"
#include "tests/unit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { PAGES = 4 };

enum { PATH_SIZE = 4096 + 64 }; /* a folder of up to 4096 bytes and a name */

static char folder[4096];
static long page;

static void path_of(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", folder, name);
}

static void write_file(const char *path, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    for (size_t i = 0; f && i < len; i++)
        fputc('x', f);
    if (f)
        fclose(f);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Maps the file at path, truncates it to one page, and reads its last page: the child's end. */
static void shrink_and_read(const char *path, bool watch, bool forget)
{
    int fd = open(path, O_RDWR);
    size_t len = (size_t)(PAGES * page);
    volatile const char *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (fd < 0 || map == MAP_FAILED)
        _exit(90);
    if (watch)
        mw_watch((const void *)map, len, path);
    if (forget)
        mw_forget((const void *)map);
    if (ftruncate(fd, page) != 0)
        _exit(91);
    char c = map[len - 1]; /* past the new end: SIGBUS */
    _exit(c == 'x' ? 92 : 93);
}

typedef struct {
    int status;    /* waitpid's */
    char err[PATH_SIZE + 256]; /* what the child wrote to stderr */
} outcome;

static outcome run_child(const char *name, bool watch, bool forget, const char *temp,
                         const char *temp_done)
{
    char path[PATH_SIZE], err_path[PATH_SIZE];
    path_of(path, sizeof path, name);
    path_of(err_path, sizeof err_path, "stderr.txt");
    write_file(path, (size_t)(PAGES * page));
    outcome o = {0};
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(err_path, "w", stderr))
            _exit(94);
        mw_install("fuserule");
        if (temp)
            mw_temp_begin(temp);
        if (temp_done) {
            mw_temp_begin(temp_done);
            mw_temp_done(temp_done);
        }
        shrink_and_read(path, watch, forget);
    }
    CHECK(pid > 0);
    waitpid(pid, &o.status, 0);
    FILE *f = fopen(err_path, "r");
    if (f) {
        size_t n = fread(o.err, 1, sizeof o.err - 1, f);
        o.err[n] = '\0';
        fclose(f);
    }
    return o;
}

static void test_watched_file_exits_2_naming_it(void)
{
    char temp[PATH_SIZE], kept[PATH_SIZE], path[PATH_SIZE];
    path_of(temp, sizeof temp, "out.graph.tmp.1");
    path_of(kept, sizeof kept, "other.tmp.1");
    path_of(path, sizeof path, "model.safetensors");
    write_file(temp, 10);
    write_file(kept, 10);
    outcome o = run_child("model.safetensors", true, false, temp, kept);
    CHECK(WIFEXITED(o.status));
    CHECK_INT(WEXITSTATUS(o.status), MW_EXIT_STATUS);
    char expected[PATH_SIZE + 256];
    snprintf(expected, sizeof expected,
             "fuserule: error: %s: the file shrank while it was being read (another program "
             "truncated or rewrote it); no output file was replaced\n",
             path);
    CHECK_STR(o.err, expected);
    CHECK(!exists(temp)); /* a temporary output being written is removed */
    CHECK(exists(kept));  /* one already done with is not */
}

static void test_unwatched_file_keeps_the_default(void)
{
    outcome o = run_child("plain.bin", false, false, NULL, NULL);
    CHECK(WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGBUS);
    CHECK_STR(o.err, "");
}

static void test_forgotten_file_keeps_the_default(void)
{
    outcome o = run_child("forgotten.bin", true, true, NULL, NULL);
    CHECK(WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGBUS);
}

static void test_sent_sigbus_keeps_the_default(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        mw_install("fuserule");
        raise(SIGBUS);
        _exit(95);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
}

/* write() of mapped bytes past a shrunk file's end raises no signal: it fails with EFAULT, which
 * mw_write_error says as the input having shrunk. */
static void test_write_from_shrunk_mapping_says_efault(void)
{
    char path[PATH_SIZE], sink_path[PATH_SIZE];
    path_of(path, sizeof path, "copied.bin");
    path_of(sink_path, sizeof sink_path, "sink.bin"); /* a file: /dev/null reads no bytes */
    size_t len = (size_t)(PAGES * page);
    write_file(path, len);
    int fd = open(path, O_RDWR), sink = open(sink_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const char *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    CHECK(fd >= 0 && sink >= 0 && map != MAP_FAILED);
    if (fd < 0 || sink < 0 || map == MAP_FAILED)
        return;
    CHECK_INT(write(sink, map + len - page, (size_t)page), page); /* whole: all of it is there */
    CHECK_INT(ftruncate(fd, page), 0);
    errno = 0;
    CHECK_INT(write(sink, map + len - page, (size_t)page), -1);
    CHECK_INT(errno, EFAULT);
    CHECK_STR(mw_write_error(EFAULT), "an input file shrank while it was being copied (another "
                                      "program truncated or rewrote it)");
    CHECK_STR(mw_write_error(ENOSPC), strerror(ENOSPC));
    munmap((void *)map, len);
    close(fd);
    close(sink);
}

static void remove_folder(void)
{
    const char *names[] = {"model.safetensors", "plain.bin",  "forgotten.bin", "other.tmp.1",
                           "out.graph.tmp.1",   "stderr.txt", "copied.bin",    "sink.bin"};
    char path[PATH_SIZE];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        path_of(path, sizeof path, names[i]);
        unlink(path);
    }
    rmdir(folder);
}

int main(void)
{
    page = sysconf(_SC_PAGESIZE);
    snprintf(folder, sizeof folder, "%s/fr_mapwatch_XXXXXX", /* mkdtemp's template */
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(folder)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_watched_file_exits_2_naming_it);
    RUN(test_unwatched_file_keeps_the_default);
    RUN(test_forgotten_file_keeps_the_default);
    RUN(test_sent_sigbus_keeps_the_default);
    RUN(test_write_from_shrunk_mapping_says_efault);
    remove_folder();
    return unit_finish();
}
