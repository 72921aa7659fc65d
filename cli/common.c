/* Argument scanning and diagnostics shared by the subcommands. */
#include "cli/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool cli_debug_ir;

void cli_debug_dump(const char *stage, const ir_graph *g)
{
    if (!cli_debug_ir)
        return;
    fprintf(stderr, "--- IR after %s ---\n", stage);
    ir_print(g, stderr);
}

int cli_finish_diagnostics(dg_context *dg)
{
    dg_print(dg, stderr);
    return dg_has_errors(dg) ? EXIT_BAD_INPUT : EXIT_OK;
}

cli_args cli_args_start(int argc, char **argv)
{
    return (cli_args){.argc = argc, .i = 1, .argv = argv, .cmd = argv[0]};
}

const char *cli_next(cli_args *a)
{
    if (a->inline_value) { /* `--flag=x` for an option that takes no value */
        fprintf(stderr, "fuserule %s: option %s takes no value (given '%s')\n", a->cmd, a->opt,
                a->inline_value);
        exit(EXIT_BAD_INPUT);
    }
    if (a->i >= a->argc)
        return NULL;
    const char *arg = a->argv[a->i++];
    const char *eq = strchr(arg, '=');
    if (strncmp(arg, "--", 2) != 0 || !eq || (size_t)(eq - arg) >= sizeof a->opt)
        return arg;
    memcpy(a->opt, arg, (size_t)(eq - arg)); /* `--opt=value`: the name now, the value next */
    a->opt[eq - arg] = '\0';
    a->inline_value = eq + 1;
    return a->opt;
}

const char *cli_value(cli_args *a, const char *opt)
{
    if (a->inline_value) {
        const char *v = a->inline_value;
        a->inline_value = NULL;
        return v;
    }
    if (a->i >= a->argc) {
        fprintf(stderr, "fuserule %s: option %s needs a value\n", a->cmd, opt);
        return NULL;
    }
    return a->argv[a->i++];
}

int cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuserule %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n%s", usage);
    va_end(ap);
    return EXIT_BAD_INPUT;
}

bool cli_output_overwrites(const char *in, const char *out, dg_context *dg)
{
    struct stat a, b;
    if (!in || !out || stat(in, &a) != 0 || stat(out, &b) != 0 || a.st_dev != b.st_dev ||
        a.st_ino != b.st_ino)
        return false;
    dg_error_path(dg, out, "this is the input '%s'; writing it would destroy the input", in);
    return true;
}

bool cli_is_rules_file(const char *path)
{
    size_t n = strlen(path);
    return n > 6 && strcmp(path + n - 6, ".rules") == 0;
}

/* Optimal-string-alignment distance, capped: enough to tell a typo from another word. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63)
        return 64;
    size_t d[64][64];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

const char *cli_suggest(const char *word, const char *const *candidates)
{
    size_t len = strlen(word), limit = len <= 3 ? 1 : len <= 6 ? 2 : 3, best = limit + 1;
    const char *found = NULL;
    for (size_t i = 0; candidates[i]; i++) {
        size_t d = edit_distance(word, candidates[i]);
        if (d < best) {
            best = d;
            found = candidates[i];
        }
    }
    return found;
}
