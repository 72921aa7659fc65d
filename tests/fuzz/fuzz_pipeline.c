/* libFuzzer target for the whole main job: a model (ONNX bytes, or a .graph text when the input
 * starts like one) is imported or parsed and validated, fused with the standard rule library
 * (rules/cnn.rules and rules/transformer.rules, compiled once), and saved with ir_save; the saved
 * graph must then load back and validate, and its constants must read back from the files written.
 *
 * Inputs are written to a private temporary folder, which is also where the output goes. Text
 * graphs whose constants hold more than a few megabytes are skipped: random() constants can be
 * any size a one-line input asks for, and materializing them is not what is being tested. */
#include "onnx/onnx_io.h"
#include "rewrite/rewrite.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_CONST_BYTES = 16 << 20 };

static char dir[] = "/tmp/fuzz_pipeline.XXXXXX";
static char model_path[64], graph_path[64], out_path[64];
static mt_automaton *automaton;
static dsl_ruleset *ruleset;

/* Removes the working folder's files (those a save may write too) when libFuzzer exits. */
static void cleanup(void)
{
    const char *names[] = {"model.onnx", "model.graph", "out.graph", "out.safetensors"};
    char path[96];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* Compiles the rule library and makes the working folder, once. */
static void setup(void)
{
    if (!mkdtemp(dir))
        abort();
    atexit(cleanup);
    snprintf(model_path, sizeof model_path, "%s/model.onnx", dir);
    snprintf(graph_path, sizeof graph_path, "%s/model.graph", dir);
    snprintf(out_path, sizeof out_path, "%s/out.graph", dir);
    const char *rules[] = {FUSERULE_SOURCE_DIR "/rules/cnn.rules",
                           FUSERULE_SOURCE_DIR "/rules/transformer.rules"};
    dg_context *dg = dg_new();
    automaton = rw_load_rules(rules, 2, &ruleset, dg);
    if (!automaton) {
        dg_print(dg, stderr);
        abort();
    }
    dg_free(dg);
}

static bool looks_like_text(const uint8_t *data, size_t size)
{
    size_t i = 0;
    while (i < size && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t'))
        i++;
    return i < size && (data[i] == 'g' || data[i] == '#');
}

static const char *write_input(const uint8_t *data, size_t size, bool text)
{
    const char *path = text ? graph_path : model_path;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();
    return path;
}

static bool constants_small(const ir_graph *g)
{
    int64_t total = 0, bytes;
    for (uint32_t i = 0; i < g->values.len; i++) {
        const ir_value *v = g->values.items[i];
        if (v->kind != IR_VALUE_CONST)
            continue;
        if (!ir_type_nbytes(v->type, &bytes) || (total += bytes) > MAX_CONST_BYTES)
            return false;
    }
    return true;
}

/* The saved graph must load, validate and give back every constant's bytes. */
static void check_saved(void)
{
    dg_context *dg = dg_new();
    ir_graph *g = ir_load_text(out_path, dg);
    for (uint32_t i = 0; g && i < g->values.len; i++) {
        ir_value *v = g->values.items[i];
        if (v->kind == IR_VALUE_CONST && !ir_const_data(g, v, dg))
            break;
    }
    if (!g || dg_has_errors(dg)) {
        fprintf(stderr, "the saved graph does not load back:\n");
        dg_print(dg, stderr);
        abort();
    }
    ir_graph_free(g);
    dg_free(dg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!automaton) {
        setup();
        sink = fopen("/dev/null", "w");
    }
    bool text = looks_like_text(data, size);
    const char *path = write_input(data, size, text);
    dg_context *dg = dg_new();
    ir_graph *g = text ? ir_load_text(path, dg) : ox_import(path, NULL, dg);
    if (g && constants_small(g)) {
        rw_options opts = rw_options_default();
        rw_report report = {0};
        bool ok = rw_apply(g, automaton, &opts, &report, dg);
        if (ok && sink)
            rw_report_print(&report, sink, RW_REPORT_JSON, false);
        rw_report_free(&report);
        if (ok && ir_save(g, out_path, dg))
            check_saved();
    }
    if (sink)
        dg_print(dg, sink);
    ir_graph_free(g);
    dg_free(dg);
    return 0;
}
