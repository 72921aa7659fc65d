/* Loading rule files for the rewriter: the rules language checked against the kernel registry (a
 * replacement's target needs a kernel; `residual = @res` names a port of the fused op), then compiled
 * into the automaton. */
#include "rewrite/internal.h"

#include <string.h>

static bool has_kernel(ir_op op, void *user)
{
    (void)user;
    if (!kn_fused_entry_get(op))
        return true; /* every plain ONNX op has its CPU reference */
    for (int b = 0; b < KN_BACKEND_COUNT; b++)
        if (kn_kernel_name(op, (kn_backend)b))
            return true;
    return false;
}

static int input_port(ir_op op, const char *name, void *user)
{
    (void)user;
    const kn_fused_entry *e = kn_fused_entry_get(op);
    if (!e || e->variadic_inputs)
        return -2;
    for (int i = 0; i < KN_MAX_PORTS && e->inputs[i].name; i++)
        if (strcmp(e->inputs[i].name, name) == 0)
            return i;
    return -1;
}

dsl_options rw_dsl_options(void)
{
    return (dsl_options){.has_kernel = has_kernel, .input_port = input_port};
}

mt_automaton *rw_load_rules(const char *const *paths, size_t n, dsl_ruleset **rs, dg_context *dg)
{
    dsl_options opts = rw_dsl_options();
    *rs = dsl_ruleset_new(&opts);
    for (size_t i = 0; i < n; i++)
        dsl_load_file(*rs, paths[i], dg);
    return rw_compile_rules(*rs, dg);
}

mt_automaton *rw_compile_rules(dsl_ruleset *rs, dg_context *dg)
{
    if (!dsl_check(rs, dg) || dg_has_errors(dg))
        return NULL;
    mt_automaton *a = mt_compile(rs, dg);
    if (dg_has_errors(dg)) {
        mt_free(a);
        return NULL;
    }
    return a;
}
