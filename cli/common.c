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
