/* fuserule: declarative operator fusion. `main` dispatches to one file per subcommand. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

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
    fputs("usage: fuserule [--debug-ir] COMMAND [ARGS...]\n\n"
          "Declarative operator fusion for neural-network inference graphs.\n\n"
          "commands:\n",
          out);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("\n`fuserule COMMAND --help` describes a command. Exit status: 0 success, 1 a check "
          "failed,\n2 bad input or usage.\n",
          out);
}

int main(int argc, char **argv)
{
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
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        print_help(stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].fn(argc - first, argv + first);
    fprintf(stderr, "fuserule: unknown command '%s' (see fuserule --help)\n", name);
    return EXIT_BAD_INPUT;
}
