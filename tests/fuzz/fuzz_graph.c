/* libFuzzer target for the graph text form: lexer, parser, validation (type inference, cycles,
 * duplicate names), the canonical printer and statistics, on arbitrary bytes.
 *
 * Besides "never crash", it checks the printer's contract: a graph that parses and validates
 * prints a canonical text that parses, validates and prints back byte for byte. Constants are not
 * materialized, so file() constants never read files and random() ones never allocate. */
#include "ir/ir.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The canonical text of g in a malloc'd buffer (*len bytes). */
static char *print_to_memory(const ir_graph *g, size_t *len)
{
    char *text = NULL;
    FILE *out = open_memstream(&text, len);
    if (!out)
        abort();
    ir_print(g, out);
    fclose(out);
    return text;
}

/* Parses and validates src; NULL when it is not a valid graph. The diagnostics and the graph
 * point into src, which must outlive both. */
static ir_graph *load(const dg_source *src, dg_context *dg)
{
    ir_graph *g = ir_parse(src, dg);
    if (g && !ir_validate(g, dg)) {
        ir_graph_free(g);
        g = NULL;
    }
    return g;
}

/* parse(print(g)) must print the same text again. */
static void check_round_trip(const char *first, size_t first_len)
{
    dg_context *dg = dg_new();
    dg_source src = {.path = "canonical.graph", .text = first, .len = first_len};
    ir_graph *g = load(&src, dg);
    if (!g) {
        fprintf(stderr, "canonical text does not load back:\n%.*s\n", (int)first_len, first);
        dg_print(dg, stderr);
        abort();
    }
    size_t second_len;
    char *second = print_to_memory(g, &second_len);
    if (second_len != first_len || memcmp(first, second, first_len) != 0) {
        fprintf(stderr, "canonical text is not stable:\n%.*s\n---\n%.*s\n", (int)first_len, first,
                (int)second_len, second);
        abort();
    }
    free(second);
    ir_graph_free(g);
    dg_free(dg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    dg_context *dg = dg_new();
    dg_source src = {.path = "fuzz.graph", .text = (const char *)data, .len = size};
    ir_graph *g = load(&src, dg);
    if (sink)
        dg_print(dg, sink);
    if (g) {
        ir_stats stats;
        ir_compute_stats(g, &stats);
        size_t len;
        char *text = print_to_memory(g, &len);
        check_round_trip(text, len);
        free(text);
        ir_graph_free(g);
    }
    dg_free(dg);
    return 0;
}
