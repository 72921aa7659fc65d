/* fuserule: declarative operator fusion. `main` dispatches to one file per subcommand. */
#include "cli/cli.h"

#include "base/mapwatch.h"

#include <stdio.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
#define CMD(name, fn, summary) {#name, fn, summary},
#include "cli/commands.def"
#undef CMD
};

static void print_help(FILE *out)
{
    fputs("usage: fuserule [--debug-ir] COMMAND [ARGS...]\n"
          "       fuserule help [COMMAND]\n"
          "       fuserule --version\n\n"
          "Declarative operator fusion for neural-network inference graphs.\n\n"
          "commands:\n",
          out);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("\n`fuserule help COMMAND` (or `fuserule COMMAND --help`) describes a command.\n"
          "--debug-ir prints the IR to stderr after the graph is loaded and after apply.\n"
          "--version prints fuserule's version. Options take `--opt VALUE` or `--opt=VALUE`; `-`\n"
          "names stdin or stdout wherever a file is read or written.\n"
          "Exit status: 0 success, 1 a check failed, 2 bad input or usage.\n",
          out);
}

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0)
            return &commands[i];
    return NULL;
}

/* `fuserule help COMMAND` is `fuserule COMMAND --help`. */
static int help(int argc, char **argv)
{
    if (argc < 2) {
        print_help(stdout);
        return EXIT_OK;
    }
    const command *c = find_command(argv[1]);
    if (!c) {
        fprintf(stderr, "fuserule help: unknown command '%s' (see fuserule --help)\n", argv[1]);
        return EXIT_BAD_INPUT;
    }
    if (argc > 2) {
        fprintf(stderr, "fuserule help: one command at a time\n");
        return EXIT_BAD_INPUT;
    }
    char *args[] = {argv[1], "--help", NULL};
    return c->fn(2, args);
}

int main(int argc, char **argv)
{
#if defined(__GLIBC__)
    /* Blocks of 1 MiB and more from their own mappings, always: glibc raises its threshold to the
     * size of each such block freed (up to 32 MiB), after which the large lists a million-node
     * graph grows by doubling (its node and value lists, a round's records, refusals) come from the
     * heap, where each move leaves the old copy behind, resident (28 MB of free heap at the end of
     * round 1's commits). Mapped, a list grows in place (mremap) and goes back when freed. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
    mw_install("fuserule"); /* an input file that shrinks under us: exit 2, naming it */
    int first = 1;
    while (first < argc && strcmp(argv[first], "--debug-ir") == 0) {
        cli_debug_ir = true;
        first++;
    }
    if (first >= argc) {
        print_help(stderr);
        return EXIT_BAD_INPUT;
    }
    const char *name = argv[first];
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        printf("fuserule %s\n", FUSERULE_VERSION);
        return EXIT_OK;
    }
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        return help(1, argv + first);
    if (strcmp(name, "help") == 0)
        return help(argc - first, argv + first);
    const command *c = find_command(name);
    if (c)
        return c->fn(argc - first, argv + first);
    fprintf(stderr, "fuserule: unknown command '%s' (see fuserule --help)\n", name);
    return EXIT_BAD_INPUT;
}
