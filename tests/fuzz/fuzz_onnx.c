/* libFuzzer target for ONNX import on arbitrary bytes: the wire-format walk, protobuf-c decoding
 * under its memory budget, tensors, attributes, opset handling and validation of the imported
 * graph. An imported graph is printed and exported again (export may refuse, never crash).
 *
 * ox_import reads a path (external data is resolved against the model's folder), so each input is
 * written to model.onnx in a private temporary folder; that folder holds nothing else, so external
 * data references can only reach the model itself. */
#include "onnx/onnx_io.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/fuzz_onnx.XXXXXX";
static char model_path[64];

/* Removes the temporary folder when libFuzzer exits. */
static void cleanup(void)
{
    unlink(model_path);
    rmdir(dir);
}

static void write_model(const uint8_t *data, size_t size)
{
    if (!model_path[0]) {
        if (!mkdtemp(dir))
            abort();
        snprintf(model_path, sizeof model_path, "%s/model.onnx", dir);
        atexit(cleanup);
    }
    FILE *f = fopen(model_path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    write_model(data, size);
    dg_context *dg = dg_new();
    ox_import_info info;
    ir_graph *g = ox_import(model_path, &info, dg);
    if (g) {
        if (sink)
            ir_print(g, sink);
        uint8_t *bytes = NULL;
        size_t len = 0;
        ox_export_options opts = {0};
        if (ox_export(g, &opts, &bytes, &len, dg))
            free(bytes);
        ir_graph_free(g);
    }
    if (sink)
        dg_print(dg, sink);
    dg_free(dg);
    return 0;
}
