/* The BLAS the CPU kernels call (cblas_sgemm, and cblas_dgemm in their f64 build), opened with
 * dlopen the first time a kernel multiplies, not linked into every program.
 *
 * Why: a multithreaded OpenBLAS starts its worker threads in its library constructor, before
 * main, and they spin in sched_yield for a while waiting for work. Every fuserule command paid
 * that, though only `run`, `verify` and the kernel tests ever call a GEMM: a full-size ResNet-50
 * `apply` spent about 0.1 CPU s (half of it) in those idle threads (bench/README.md, "Real-size
 * weights"). These two definitions stand in for the library's: the kernels call them as they call
 * cblas.h's functions, and the first call opens the library CMake found (FR_BLAS_LIBRARY), then
 * the usual sonames. */
#include "base/check.h"

#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef void sgemm_fn(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint,
                      blasint, blasint, float, const float *, blasint, const float *, blasint,
                      float, float *, blasint);
typedef void dgemm_fn(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint,
                      blasint, blasint, double, const double *, blasint, const double *, blasint,
                      double, double *, blasint);

static struct {
    sgemm_fn *sgemm;
    dgemm_fn *dgemm;
} blas;
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

/* A BLAS is part of the build (CMake requires one): not finding it at run time is a broken
 * installation, reported and fatal like any other check. */
static void open_blas(void)
{
    static const char *const names[] = {FR_BLAS_LIBRARY, "libopenblas.so.0", "libblas.so.3"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "fuserule: cannot load the BLAS library %s: %s\n", FR_BLAS_LIBRARY,
                dlerror());
        abort();
    }
    blas.sgemm = (sgemm_fn *)dlsym(lib, "cblas_sgemm");
    blas.dgemm = (dgemm_fn *)dlsym(lib, "cblas_dgemm");
    FR_CHECK(blas.sgemm != NULL && blas.dgemm != NULL);
}

void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE ta,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE tb, OPENBLAS_CONST blasint m,
                 OPENBLAS_CONST blasint n, OPENBLAS_CONST blasint k, OPENBLAS_CONST float alpha,
                 OPENBLAS_CONST float *a, OPENBLAS_CONST blasint lda, OPENBLAS_CONST float *b,
                 OPENBLAS_CONST blasint ldb, OPENBLAS_CONST float beta, float *c,
                 OPENBLAS_CONST blasint ldc)
{
    pthread_once(&blas_once, open_blas);
    blas.sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void cblas_dgemm(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE ta,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE tb, OPENBLAS_CONST blasint m,
                 OPENBLAS_CONST blasint n, OPENBLAS_CONST blasint k, OPENBLAS_CONST double alpha,
                 OPENBLAS_CONST double *a, OPENBLAS_CONST blasint lda, OPENBLAS_CONST double *b,
                 OPENBLAS_CONST blasint ldb, OPENBLAS_CONST double beta, double *c,
                 OPENBLAS_CONST blasint ldc)
{
    pthread_once(&blas_once, open_blas);
    blas.dgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
