/* GPU benchmarks (bench/README.md, "GPU"):
 *
 *   gpu_bench kernels          each memory-bound kernel's achieved bandwidth as a fraction of this
 *                              GPU's measured device-to-device copy bandwidth (target >= 85%), and
 *                              each GEMM epilogue's time against the same GEMM with a plain store
 *                              (targets: bias, ReLU <= 2% extra; GELU <= 5%)
 *   gpu_bench e2e A.graph B.graph
 *                              end-to-end time of an unfused graph and its fused form
 *
 * Kernel timings run one-node graphs through the CUDA executor (rt_cuda_time): warmed up once,
 * then captured as a CUDA graph and replayed, so that only the kernel is timed. Without a CUDA
 * device every mode prints why and exits 77. */
#include "base/diag.h"
#include "kernels/cuda/cuda_kernels.h"
#include "runtime/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Repetitions: kernels are timed over 50 replays; whole graphs over 3 runs (their plain ops run
 * on the CPU, which takes seconds on the larger examples). */
enum { ITERS = 50, E2E_ITERS = 3 };

/* Device-to-device copy bandwidth in bytes per second (read + write counted). */
static bool copy_bandwidth(double *bytes_per_s)
{
    char err[KC_ERROR_SIZE];
    kc_context *kc = kc_create(err);
    if (!kc) {
        fprintf(stderr, "gpu_bench: %s\n", err);
        return false;
    }
    const size_t size = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    float ms = 0;
    bool ok = kc_alloc(kc, size, &a) && kc_alloc(kc, size, &b) && kc_fill_bytes(kc, a, 1, size) &&
              kc_copy(kc, b, a, size) && kc_sync(kc) && kc_timer_start(kc);
    for (int i = 0; ok && i < ITERS; i++)
        ok = kc_copy(kc, b, a, size);
    ok = ok && kc_timer_stop(kc, &ms);
    if (!ok)
        fprintf(stderr, "gpu_bench: %s\n", kc_last_error(kc));
    else
        *bytes_per_s = 2.0 * (double)size * ITERS / (ms * 1e-3);
    kc_free(kc, a);
    kc_free(kc, b);
    kc_destroy(kc);
    return ok;
}

/* Parses graph text and times it; false after printing the diagnostics. */
static bool time_text(const char *name, const char *text, bool cuda_graph, double *ms)
{
    dg_context *dg = dg_new();
    dg_source src = {name, text, strlen(text)};
    ir_graph *g = ir_parse(&src, dg);
    rt_options opts = {.seed = 1};
    bool ok = g && ir_validate(g, dg) && rt_cuda_time(g, &opts, ITERS, cuda_graph, ms, dg);
    if (!ok)
        dg_print(dg, stderr);
    if (g)
        ir_graph_free(g);
    dg_free(dg);
    return ok;
}

typedef struct bw_case {
    const char *name;
    const char *text;
    double bytes; /* read once + written once */
} bw_case;

#define R 16384.0
#define C 4096.0
#define H2 2.0 /* bytes of an f16 */

static const bw_case cases[] = {
    {"RMSNorm f16 [16384,4096]",
     "graph b {\n input x : f16[16384,4096]\n const s : f16[4096] = random(seed=1)\n"
     " y = RMSNorm(x, s)\n output y\n}\n", 2 * R * C * H2},
    {"AddLayerNorm f16 [16384,4096] +sum",
     "graph b {\n input a : f16[16384,4096]\n input c : f16[16384,4096]\n"
     " const s : f16[4096] = random(seed=1)\n const t : f16[4096] = random(seed=2)\n"
     " y, sum = AddLayerNorm(a, c, s, t)\n output y\n output sum\n}\n", 4 * R * C * H2},
    {"AddRMSNorm f16 [16384,4096]",
     "graph b {\n input a : f16[16384,4096]\n input c : f16[16384,4096]\n"
     " const s : f16[4096] = random(seed=1)\n y = AddRMSNorm(a, c, s)\n output y\n}\n",
     3 * R * C * H2},
    {"FusedSoftmax f16 [16384,4096] mask",
     "graph b {\n input x : f16[16384,4096]\n input m : f16[4096]\n"
     " y = FusedSoftmax(x, m) {scale=0.125}\n output y\n}\n", 2 * R * C * H2},
    {"SwiGLU f16 [16384,4096]",
     "graph b {\n input g : f16[16384,4096]\n input u : f16[16384,4096]\n"
     " y = SwiGLU(g, u)\n output y\n}\n", 3 * R * C * H2},
    {"RoPE f16 [32,32,512,128]",
     "graph b {\n input x : f16[32,32,512,128]\n input c : f16[512,64]\n input s : f16[512,64]\n"
     " y = RoPE(x, c, s)\n output y\n}\n", 2 * R * C * H2},
    {"ElementwiseChain f16 3 inputs",
     "graph b {\n input a : f16[16384,4096]\n input c : f16[16384,4096]\n input d : f16[4096]\n"
     " y = ElementwiseChain(a, c, d) {expr=\"mul(silu(add(x0, x2)), x1)\"}\n output y\n}\n",
     3 * R * C * H2},
};

/* GEMM epilogues: the same f16 GEMM [8192,4096] x [4096,4096] with each epilogue. */
static const struct epi_case {
    const char *name, *operands, *attrs;
    double target;
} epi[] = {
    {"plain store", "a, w", "", 0},
    {"bias", "a, w, b", "", 2},
    {"bias + ReLU", "a, w, b", "{act=\"Relu\"}", 2},
    {"bias + GELU (tanh, cuBLASLt)", "a, w, b", "{act=\"GeluTanh\"}", 5},
    {"bias + GELU (erf, epilogue kernel)", "a, w, b", "{act=\"Gelu\"}", 5},
};

/* The GEMM graph of epilogue case i. */
static void epi_text(size_t i, char *text, size_t size)
{
    snprintf(text, size,
             "graph e {\n input a : f16[8192,4096]\n const w : f16[4096,4096] = random(seed=1)\n"
             " const b : f16[4096] = random(seed=2)\n y = GemmEpilogue(%s) %s\n output y\n}\n",
             epi[i].operands, epi[i].attrs);
}

static bool valid_text(const char *name, const char *text)
{
    dg_context *dg = dg_new();
    dg_source src = {name, text, strlen(text)};
    ir_graph *g = ir_parse(&src, dg);
    bool ok = g && ir_validate(g, dg);
    if (!ok)
        dg_print(dg, stderr);
    if (g)
        ir_graph_free(g);
    dg_free(dg);
    return ok;
}

/* Every benchmark graph is valid (checked before the device is looked for). */
static bool check_texts(void)
{
    bool ok = true;
    char text[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ok = valid_text(cases[i].name, cases[i].text) && ok;
    for (size_t i = 0; i < sizeof epi / sizeof epi[0]; i++) {
        epi_text(i, text, sizeof text);
        ok = valid_text(epi[i].name, text) && ok;
    }
    return ok;
}

static int bench_kernels(void)
{
    double copy;
    if (!copy_bandwidth(&copy))
        return 1;
    printf("device-to-device copy: %.1f GB/s (read + write)\n\n", copy / 1e9);
    printf("%-38s %10s %10s %9s\n", "memory-bound kernel", "time ms", "GB/s", "of copy");
    bool ok = true;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double ms;
        if (!time_text(cases[i].name, cases[i].text, true, &ms)) {
            ok = false;
            continue;
        }
        double bw = cases[i].bytes / (ms * 1e-3);
        printf("%-38s %10.4f %10.1f %8.1f%%%s\n", cases[i].name, ms, bw / 1e9, 100 * bw / copy,
               bw / copy >= 0.85 ? "" : "  (below the 85% target)");
    }
    printf("\n%-38s %10s %10s\n", "GEMM f16 8192x4096x4096 epilogue", "time ms", "extra");
    double plain = 0;
    for (size_t i = 0; i < sizeof epi / sizeof epi[0]; i++) {
        char text[512];
        epi_text(i, text, sizeof text);
        double ms;
        if (!time_text(epi[i].name, text, true, &ms)) {
            ok = false;
            continue;
        }
        if (i == 0)
            plain = ms;
        double extra = plain > 0 ? 100 * (ms - plain) / plain : 0;
        if (i == 0)
            printf("%-38s %10.4f %10s\n", epi[i].name, ms, "-");
        else
            printf("%-38s %10.4f %9.1f%%%s\n", epi[i].name, ms, extra,
                   extra <= epi[i].target ? "" : "  (above the target)");
    }
    return ok ? 0 : 1;
}

static bool time_file(const char *path, double *ms)
{
    dg_context *dg = dg_new();
    ir_graph *g = ir_load_text(path, dg);
    rt_options opts = {.seed = 1};
    bool ok = g && rt_cuda_time(g, &opts, E2E_ITERS, false, ms, dg);
    if (!ok)
        dg_print(dg, stderr);
    if (g)
        ir_graph_free(g);
    dg_free(dg);
    return ok;
}

/* Both graphs run on the CUDA executor: nodes without a CUDA kernel run on the CPU. */
static int bench_e2e(const char *unfused, const char *fused)
{
    double a, b;
    if (!time_file(unfused, &a) || !time_file(fused, &b))
        return 1;
    printf("%s: unfused %.3f ms, fused %.3f ms, speedup %.2fx\n", unfused, a, b, a / b);
    return 0;
}

int main(int argc, char **argv)
{
    char why[256];
    if (argc < 2 || (strcmp(argv[1], "kernels") != 0 && strcmp(argv[1], "e2e") != 0) ||
        (strcmp(argv[1], "e2e") == 0 && argc != 4)) {
        fprintf(stderr, "usage: gpu_bench kernels | gpu_bench e2e UNFUSED.graph FUSED.graph\n");
        return 2;
    }
    if (strcmp(argv[1], "kernels") == 0 && !check_texts())
        return 1;
    if (!rt_cuda_available(why, sizeof why)) {
        printf("skipped: %s\n", why);
        return 77;
    }
    return strcmp(argv[1], "kernels") == 0 ? bench_kernels() : bench_e2e(argv[2], argv[3]);
}
