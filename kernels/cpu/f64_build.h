/* The f64 build of the CPU kernels: every file of kernels/cpu/ is compiled a second time with this
 * header forced in first (`-include`, kernels/CMakeLists.txt), and the symbols it defines are then
 * renamed with an `_f64` suffix (kernels/f64_rename.cmake), so that `kn_cpu_Relu_f64` is the same
 * kernel computing in double. The executor calls these for nodes with an f64 operand and for every
 * node of a reference run (runtime/runtime.h, rt_run_reference).
 *
 * Why a second compilation and not a kernel per compute type: the kernels are written once, in
 * float, and read as the ONNX definition they implement; a second copy would drift from the first.
 * What this needs of a kernel file (docs/kernels.md, "The f64 build"):
 *   - float data is `float` (never `uint32_t` bit tricks on it); libm's f-suffixed functions and
 *     cblas_sgemm are the ones below, mapped to their double forms;
 *   - element sizes come from sizeof(float) or ir_dtype_size(), both 8 here for float tensors
 *     (a kernel sees every float tensor labelled IR_F32, as in the f32 build);
 *   - float literals (0.5f) keep their f32 value: exact for the usual constants, about 1e-8
 *     relative for the others (the GELU and sqrt(2/pi) constants).
 * System and project headers whose float must stay float are included here, before the switch. */
#ifndef FUSERULE_KERNELS_CPU_F64_BUILD_H
#define FUSERULE_KERNELS_CPU_F64_BUILD_H

#include "base/arena.h"
#include "base/check.h"
#include "base/diag.h"
#include "base/half.h"
#include "base/vec.h"
#include "ir/ir.h"
#include "kernels/kernels.h"

#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A float tensor's elements are doubles in this build. */
static inline size_t kn_f64_element_size(ir_dtype dt)
{
    return ir_dtype_is_float(dt) ? sizeof(double) : ir_dtype_size(dt);
}

#define float double
#define ir_dtype_size kn_f64_element_size
#define cblas_sgemm   cblas_dgemm

#define acosf      acos
#define acoshf     acosh
#define asinf      asin
#define asinhf     asinh
#define atanf      atan
#define atanhf     atanh
#define atan2f     atan2
#define ceilf      ceil
#define copysignf  copysign
#define cosf       cos
#define coshf      cosh
#define erff       erf
#define erfcf      erfc
#define expf       exp
#define exp2f      exp2
#define expm1f     expm1
#define fabsf      fabs
#define floorf     floor
#define fmaf       fma
#define fmaxf      fmax
#define fminf      fmin
#define fmodf      fmod
#define hypotf     hypot
#define ldexpf     ldexp
#define log10f     log10
#define log1pf     log1p
#define log2f      log2
#define logf       log
#define lrintf     lrint
#define nearbyintf nearbyint
#define powf       pow
#define remainderf remainder
#define rintf      rint
#define roundf     round
#define sinf       sin
#define sinhf      sinh
#define sqrtf      sqrt
#define tanf       tan
#define tanhf      tanh
#define truncf     trunc

/* The f-suffixed functions not mapped above are refused, so that a kernel that starts using one
 * fails to build instead of computing in float inside the f64 build: map it above. */
#pragma GCC poison cbrtf frexpf ilogbf lgammaf llrintf llroundf logbf lroundf modff nextafterf
#pragma GCC poison remquof scalbnf tgammaf

#endif
