#define _POSIX_C_SOURCE 200809L /* sigaction, siginfo_t */

#include "base/mapwatch.h"

#include "base/check.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    uintptr_t start, end;
    char *path;
} watched;

/* Plain arrays: the handler may read them at any moment (it runs on the faulting access, never in
 * the middle of these functions, which touch no mapped file). */
static struct {
    watched *items;
    size_t len, cap;
} maps;

static struct {
    char **items;
    size_t len, cap;
} temps;

static const char *program_name = "fuserule";

static char *copy(const char *s)
{
    char *c = strdup(s);
    FR_CHECK(c != NULL);
    return c;
}

static void *grow(void *items, size_t *cap, size_t size)
{
    *cap = *cap ? *cap * 2 : 16;
    void *bigger = realloc(items, *cap * size);
    FR_CHECK(bigger != NULL);
    return bigger;
}

void mw_watch(const void *addr, size_t len, const char *path)
{
    if (maps.len == maps.cap)
        maps.items = grow(maps.items, &maps.cap, sizeof *maps.items);
    uintptr_t start = (uintptr_t)addr;
    maps.items[maps.len++] = (watched){start, start + len, copy(path)};
}

/* Searched from the newest: mappings mostly end in the reverse order of their start. */
void mw_forget(const void *addr)
{
    for (size_t i = maps.len; i-- > 0;) {
        if (maps.items[i].start == (uintptr_t)addr) {
            free(maps.items[i].path);
            maps.items[i] = maps.items[--maps.len];
            return;
        }
    }
}

void mw_temp_begin(const char *path)
{
    if (temps.len == temps.cap)
        temps.items = grow(temps.items, &temps.cap, sizeof *temps.items);
    temps.items[temps.len++] = copy(path);
}

void mw_temp_done(const char *path)
{
    for (size_t i = temps.len; i-- > 0;) {
        if (strcmp(temps.items[i], path) == 0) {
            free(temps.items[i]);
            temps.items[i] = temps.items[--temps.len];
            return;
        }
    }
}

const char *mw_write_error(int err)
{
    if (err == EFAULT)
        return "an input file shrank while it was being copied (another program truncated or "
               "rewrote it)";
    return strerror(err);
}

/* ---- the handler: async-signal-safe calls only (write, unlink, _exit, sigaction) ------------ */

static void say(const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t wrote = write(STDERR_FILENO, s, n);
        if (wrote <= 0)
            return;
        s += wrote;
        n -= (size_t)wrote;
    }
}

static void on_bus_error(int sig, siginfo_t *info, void *context)
{
    (void)context;
    uintptr_t at = (uintptr_t)info->si_addr;
    for (size_t i = 0; i < maps.len; i++) {
        if (at >= maps.items[i].start && at < maps.items[i].end) {
            for (size_t t = 0; t < temps.len; t++)
                unlink(temps.items[t]);
            say(program_name);
            say(": error: ");
            say(maps.items[i].path);
            say(": the file shrank while it was being read (another program truncated or "
                "rewrote it); no output file was replaced\n");
            _exit(MW_EXIT_STATUS);
        }
    }
    /* Not an input file: ours to fix. A faulting access faults again under the default action
     * once this returns; a signal sent by kill() is sent again. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (info->si_code <= 0)
        raise(sig);
}

void mw_install(const char *program)
{
    program_name = program;
    struct sigaction sa = {.sa_sigaction = on_bus_error, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}
