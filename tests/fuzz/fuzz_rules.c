/* libFuzzer target for the rules front end: lexer, parser (with its error recovery), semantic
 * checks and the printing of diagnostics, on arbitrary bytes. Includes are disabled, so that the
 * input cannot make the fuzzer read files. */
#include "dsl/dsl.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    dsl_options opts = {.no_includes = true};
    dsl_ruleset *rs = dsl_ruleset_new(&opts);
    dg_context *dg = dg_new();
    dsl_load_text(rs, "fuzz.rules", (const char *)data, size, dg);
    if (dsl_check(rs, dg) && sink)
        for (uint32_t i = 0; i < rs->nrules; i++)
            dsl_rule_print(rs->rules[i], sink);
    if (sink)
        dg_print(dg, sink);
    dg_free(dg);
    dsl_ruleset_free(rs);
    return 0;
}
