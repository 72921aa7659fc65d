/* Constants' data: the seeded generator, materializing literal, random and file constants in their
 * dtype, and the per-graph cache of the safetensors files that file constants read.
 *
 * Data is stored in the value's dtype: f16 and bf16 as their 16-bit encodings, bool as one byte
 * (0 or 1), all little-endian as the host is. Payloads live in the graph's arena. */
#define _DEFAULT_SOURCE /* madvise */

#include "ir/ir.h"

#include "base/check.h"
#include "base/half.h"
#include "base/mapwatch.h"
#include "ir/safetensors.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

_Static_assert(sizeof(ir_const) <= 56, "ir/ir.h: a constant grew (a graph holds one per weight)");

/* The most payload one constant may have: a tiny graph must not be able to ask for petabytes. */
#define CONST_BUDGET_BYTES ((int64_t)16 << 30)

/* ---- the seeded generator -------------------------------------------------------------------- */

/* splitmix64's output function: a bijection on 64 bits that mixes every input bit into every
 * output bit. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Element i of stream `seed`, uniform in [0, 1) with 53 random bits: the (i+1)-th output of a
 * splitmix64 generator whose state starts at mix64(seed). Counter-based, so any element can be
 * computed alone, and machines agree bit for bit (integer arithmetic and one exact scaling). */
static double uniform01(uint64_t seed, uint64_t i)
{
    const uint64_t gamma = 0x9e3779b97f4a7c15u;
    uint64_t z = mix64(seed) + (i + 1) * gamma;
    return (double)(mix64(z) >> 11) * 0x1.0p-53;
}

/* Floating-point storage as raw bits (f32 in 32 bits, f16 and bf16 in 16), so that stepping to the
 * neighbouring representable value is one integer operation. */
static uint32_t encode_float(ir_dtype dt, double x)
{
    /* clamp first: converting an out-of-range double to float is undefined in C. A double just
     * above FLT_MAX (the shortest text of FLT_MAX, 3.4028235e+38, reads back as one) rounds to
     * FLT_MAX; only from halfway to the next power of two, 2^128 - 2^103, does it round to inf. */
    double round_to_inf = 0x1.ffffffp+127;
    float f = isnan(x)             ? NAN
              : x >= round_to_inf  ? INFINITY
              : x <= -round_to_inf ? -INFINITY
              : x > FLT_MAX        ? FLT_MAX
              : x < -FLT_MAX       ? -FLT_MAX
                                   : (float)x;
    switch (dt) {
    case IR_F32:
        return half_f32_bits(f);
    case IR_F16:
        return f32_to_f16(f);
    case IR_BF16:
        return f32_to_bf16(f);
    default:
        FR_UNREACHABLE();
        return 0;
    }
}

static double decode_float(ir_dtype dt, uint32_t bits)
{
    switch (dt) {
    case IR_F32:
        return half_bits_f32(bits);
    case IR_F16:
        return f16_to_f32((uint16_t)bits);
    case IR_BF16:
        return bf16_to_f32((uint16_t)bits);
    default:
        FR_UNREACHABLE();
        return 0;
    }
}

/* The next representable value towards -infinity (sign-magnitude encodings). */
static uint32_t step_down(ir_dtype dt, uint32_t bits)
{
    uint32_t sign = dt == IR_F32 ? 0x80000000u : 0x8000u;
    if (bits & sign)
        return bits + 1;
    return bits == 0 ? (sign | 1u) : bits - 1;
}

static void put_float_bits(ir_dtype dt, void *out, size_t i, uint32_t bits)
{
    if (dt == IR_F32) {
        memcpy((char *)out + 4 * i, &bits, 4);
    } else {
        uint16_t h = (uint16_t)bits;
        memcpy((char *)out + 2 * i, &h, 2);
    }
}

/* The range of an integer dtype (bool is 0..1). */
static void int_range(ir_dtype dt, double *min, double *max)
{
    switch (dt) {
    case IR_I8:
        *min = INT8_MIN, *max = INT8_MAX;
        return;
    case IR_U8:
        *min = 0, *max = UINT8_MAX;
        return;
    case IR_I32:
        *min = INT32_MIN, *max = INT32_MAX;
        return;
    case IR_I64: /* the largest double below 2^63 */
        *min = -0x1.0p63, *max = 0x1.fffffffffffffp62;
        return;
    case IR_I16:
        *min = INT16_MIN, *max = INT16_MAX;
        return;
    case IR_U16:
        *min = 0, *max = UINT16_MAX;
        return;
    case IR_U32:
        *min = 0, *max = UINT32_MAX;
        return;
    case IR_U64: /* the largest double below 2^64 */
        *min = 0, *max = 0x1.fffffffffffffp63;
        return;
    case IR_BOOL:
        *min = 0, *max = 1;
        return;
    default:
        FR_UNREACHABLE();
    }
}

/* Stores an integral value already within the dtype's range. */
static void put_int(ir_dtype dt, void *out, size_t i, double x)
{
    char *p = out;
    switch (dt) {
    case IR_I8: {
        int8_t v = (int8_t)x;
        memcpy(p + i, &v, 1);
        return;
    }
    case IR_U8:
    case IR_BOOL: {
        uint8_t v = (uint8_t)x;
        memcpy(p + i, &v, 1);
        return;
    }
    case IR_I32: {
        int32_t v = (int32_t)x;
        memcpy(p + 4 * i, &v, 4);
        return;
    }
    case IR_I64: {
        int64_t v = (int64_t)x;
        memcpy(p + 8 * i, &v, 8);
        return;
    }
    case IR_I16: {
        int16_t v = (int16_t)x;
        memcpy(p + 2 * i, &v, 2);
        return;
    }
    case IR_U16: {
        uint16_t v = (uint16_t)x;
        memcpy(p + 2 * i, &v, 2);
        return;
    }
    case IR_U32: {
        uint32_t v = (uint32_t)x;
        memcpy(p + 4 * i, &v, 4);
        return;
    }
    case IR_U64: {
        uint64_t v = (uint64_t)x;
        memcpy(p + 8 * i, &v, 8);
        return;
    }
    default:
        FR_UNREACHABLE();
    }
}

/* One generated element: x in [lo, hi] as computed, kept below hi when the dtype can. */
static void put_random(ir_dtype dt, void *out, size_t i, double u, double lo, double hi)
{
    if (dt == IR_BOOL) {
        put_int(dt, out, i, u < 0.5 ? 0 : 1);
        return;
    }
    /* lo*(1-u) + hi*u cannot overflow where hi - lo would */
    double x = lo * (1 - u) + hi * u;
    if (x >= hi && hi > lo)
        x = nextafter(hi, lo);
    if (dt == IR_F64) { /* x is already below hi */
        memcpy((char *)out + 8 * i, &x, 8);
        return;
    }
    if (ir_dtype_is_float(dt)) {
        uint32_t bits = encode_float(dt, x);
        if (decode_float(dt, bits) >= hi) { /* rounding reached hi: take the value below it */
            uint32_t below = step_down(dt, bits);
            if (decode_float(dt, below) >= lo)
                bits = below;
        }
        put_float_bits(dt, out, i, bits);
        return;
    }
    double min, max;
    int_range(dt, &min, &max);
    x = isnan(x) ? 0 : floor(x);
    put_int(dt, out, i, x < min ? min : x > max ? max : x);
}

void ir_random_fill_at(uint64_t seed, uint64_t first, double lo, double hi, ir_dtype dt, void *out,
                       size_t count)
{
    FR_CHECK(ir_dtype_size(dt) > 0);
    for (size_t i = 0; i < count; i++)
        put_random(dt, out, i, uniform01(seed, first + i), lo, hi);
}

void ir_random_fill(uint64_t seed, double lo, double hi, ir_dtype dt, void *out, size_t count)
{
    ir_random_fill_at(seed, 0, lo, hi, dt, out, count);
}

/* ---- errors ---------------------------------------------------------------------------------- */

/* An error about constant v, located at its definition when the graph came from text. */
static void const_error(ir_graph *g, const ir_value *v, dg_context *dg, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void const_error(ir_graph *g, const ir_value *v, dg_context *dg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *message = ar_vprintf(g->arena, fmt, ap);
    va_end(ap);
    if (g->src && v->src_offset)
        dg_error(dg, g->src, v->src_offset, ir_value_src_len(g->src, v), "%s", message);
    else
        dg_error(dg, NULL, 0, 0, "%s", message);
}

/* ---- the open-file cache --------------------------------------------------------------------- */

typedef struct {
    char *path;    /* as resolved against the graph's folder */
    st_file *file; /* NULL: opening failed (reported once) */
} open_file;

/* A file mapped read-only that the graph owns (an .onnx model whose tensors stay in it). */
typedef struct {
    void *base;
    size_t len;
    int fd;     /* the file's descriptor (base maps it from offset 0), or -1 */
    char *path; /* the name it was opened by, with fd */
} mapping;

typedef struct {
    VEC(open_file) files;
    VEC(mapping) maps;
    VEC(void *) owned; /* buffers ir_const_take_data adopted */
} file_cache;

void ir_const_files_close(ir_graph *g)
{
    file_cache *cache = g->const_files;
    if (!cache)
        return;
    for (size_t i = 0; i < cache->files.len; i++) {
        st_close(cache->files.items[i].file);
        free(cache->files.items[i].path);
    }
    for (size_t i = 0; i < cache->maps.len; i++) {
        mw_forget(cache->maps.items[i].base);
        munmap(cache->maps.items[i].base, cache->maps.items[i].len);
        if (cache->maps.items[i].fd >= 0)
            close(cache->maps.items[i].fd);
        free(cache->maps.items[i].path);
    }
    for (size_t i = 0; i < cache->owned.len; i++)
        free(cache->owned.items[i]);
    vec_free(&cache->files);
    vec_free(&cache->maps);
    vec_free(&cache->owned);
    free(cache);
    g->const_files = NULL;
}

static file_cache *the_cache(ir_graph *g)
{
    if (!g->const_files) {
        g->const_files = calloc(1, sizeof(file_cache));
        FR_CHECK(g->const_files != NULL);
    }
    return g->const_files;
}

void ir_const_adopt_mapping(ir_graph *g, void *base, size_t len)
{
    FR_CHECK(base != NULL && len > 0);
    vec_push(&the_cache(g)->maps, ((mapping){base, len, -1, NULL}));
}

void ir_const_adopt_mapped_file(ir_graph *g, void *base, size_t len, int fd, const char *path)
{
    FR_CHECK(base != NULL && len > 0 && fd >= 0 && path != NULL);
    char *copy = strdup(path);
    FR_CHECK(copy != NULL);
    vec_push(&the_cache(g)->maps, ((mapping){base, len, fd, copy}));
}

/* The adopted mapping that holds [p, p + n), or NULL. */
static const mapping *adopted_mapping(const ir_graph *g, const void *p, size_t n)
{
    const file_cache *cache = g->const_files;
    if (!cache || !p)
        return NULL;
    uintptr_t at = (uintptr_t)p;
    for (size_t i = 0; i < cache->maps.len; i++) {
        uintptr_t base = (uintptr_t)cache->maps.items[i].base;
        size_t len = cache->maps.items[i].len;
        if (at >= base && at - base <= len && n <= len - (at - base))
            return &cache->maps.items[i];
    }
    return NULL;
}

bool ir_const_file_range(const ir_graph *g, const void *p, size_t n, int *fd, int64_t *offset,
                         const char **path)
{
    const mapping *m = adopted_mapping(g, p, n);
    if (!m || m->fd < 0)
        return false;
    *fd = m->fd;
    if (path)
        *path = m->path;
    *offset = (int64_t)((uintptr_t)p - (uintptr_t)m->base);
    return true;
}

/* Whether [p, p + n) lies in one of g's file mappings. */
static bool in_mapping(const ir_graph *g, const void *p, size_t n)
{
    const file_cache *cache = g->const_files;
    if (!cache || !p)
        return false;
    if (adopted_mapping(g, p, n))
        return true;
    for (size_t i = 0; i < cache->files.len; i++)
        if (cache->files.items[i].file && st_maps(cache->files.items[i].file, p, n))
            return true;
    return false;
}

/* Ranges shorter than this are neither dropped nor mapped ahead: a madvise call costs more than
 * the few faults it saves, and dropping a small weight's pages drops its neighbours' too, which
 * are then read again (llama_126k's 11,665 concatenated parts of 4-16 KiB made 35,000 calls:
 * 0.13 CPU s of its apply). */
enum { ADVISE_MIN_BYTES = 64 << 10 };

void ir_const_release(const ir_graph *g, const void *p, size_t n)
{
    if (n < ADVISE_MIN_BYTES || !in_mapping(g, p, n))
        return;
    /* every page of these mappings is read-only file data: dropping one (a neighbour's too) only
     * means that a later read pages it in again */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)p & ~(page - 1), end = (uintptr_t)p + n;
    end = (end + page - 1) & ~(page - 1);
    madvise((void *)start, end - start, MADV_DONTNEED);
}

void ir_const_will_read(const ir_graph *g, const void *p, size_t n)
{
#ifdef MADV_POPULATE_READ
    if (n < ADVISE_MIN_BYTES || !in_mapping(g, p, n))
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)p & ~(page - 1), end = (uintptr_t)p + n;
    end = (end + page - 1) & ~(page - 1);
    madvise((void *)start, end - start, MADV_POPULATE_READ); /* before Linux 5.14: EINVAL */
#else
    (void)g, (void)p, (void)n;
#endif
}

/* v's constant becomes plain bytes of nbytes (the type's size, checked), its other sources
 * forgotten; the caller says where the bytes are (data or mapped). */
static ir_const *become_data(ir_graph *g, ir_value *v, size_t nbytes)
{
    FR_CHECK(v->kind == IR_VALUE_CONST);
    int64_t expected;
    FR_CHECK(ir_type_nbytes(v->type, &expected) && (size_t)expected == nbytes);
    if (!v->konst)
        v->konst = ir_const_new(g, IR_CONST_DATA);
    ir_const *c = v->konst;
    c->kind = IR_CONST_DATA; /* DATA's fields cover the union: the old kind's are gone */
    c->data = NULL;
    c->nbytes = nbytes;
    c->mapped = NULL;
    c->parts = NULL;
    c->nparts = 0;
    c->rows = 0;
    c->scaled = NULL;
    return c;
}

void ir_const_set_mapped(ir_graph *g, ir_value *v, const void *mapped, size_t nbytes)
{
    FR_CHECK(nbytes > 0 && in_mapping(g, mapped, nbytes));
    become_data(g, v, nbytes)->mapped = mapped;
}

void ir_const_set_rows(ir_graph *g, ir_value *v, size_t rows, const ir_const_part *parts,
                       uint32_t nparts)
{
    size_t row = 0;
    for (uint32_t i = 0; i < nparts; i++) {
        FR_CHECK(parts[i].src != NULL && parts[i].row_bytes > 0);
        row += parts[i].row_bytes;
    }
    FR_CHECK(rows > 0 && nparts > 0);
    ir_const *c = become_data(g, v, rows * row);
    ir_const_part *copy = ar_alloc_array(g->arena, nparts, sizeof *copy);
    memcpy(copy, parts, nparts * sizeof *copy);
    c->parts = copy;
    c->nparts = nparts;
    c->rows = rows;
}

const ir_const_part *ir_const_rows(const ir_value *v, size_t *rows, uint32_t *nparts)
{
    const ir_const *c = v->kind == IR_VALUE_CONST ? v->konst : NULL;
    if (!c || c->kind != IR_CONST_DATA || c->data || !c->parts)
        return NULL;
    *rows = c->rows;
    *nparts = c->nparts;
    return c->parts;
}

void ir_const_set_scaled(ir_graph *g, ir_value *v, const void *src, const double *factors,
                         size_t nfactors, size_t inner)
{
    int64_t nbytes;
    ir_dtype dt = v->type->dtype;
    FR_CHECK(src != NULL && nfactors > 0 && inner > 0 && ir_type_nbytes(v->type, &nbytes) &&
             nbytes > 0 && (dt == IR_F32 || dt == IR_F64 || dt == IR_F16 || dt == IR_BF16));
    ir_const *c = become_data(g, v, (size_t)nbytes);
    ir_const_scaled *sc = ar_alloc(g->arena, sizeof *sc);
    /* the folds of BatchNorms that share their parameters come one after another with the same
     * factors (a million-node graph's 83k folds would copy 2.7 MB of equal ones) */
    if (g->last_nfactors != nfactors ||
        memcmp(g->last_factors, factors, nfactors * sizeof *factors) != 0) {
        double *copy = ar_alloc_array(g->arena, nfactors, sizeof *copy);
        memcpy(copy, factors, nfactors * sizeof *copy);
        g->last_factors = copy;
        g->last_nfactors = nfactors;
    }
    *sc = (ir_const_scaled){src, g->last_factors, nfactors, inner};
    c->scaled = sc;
}

const ir_const_scaled *ir_const_scaled_get(const ir_value *v)
{
    const ir_const *c = v->kind == IR_VALUE_CONST ? v->konst : NULL;
    return c && c->kind == IR_CONST_DATA && !c->data ? c->scaled : NULL;
}

bool ir_const_is_deferred(const ir_value *v)
{
    const ir_const *c = v->kind == IR_VALUE_CONST ? v->konst : NULL;
    return c && c->kind == IR_CONST_DATA && !c->data && (c->parts || c->scaled);
}

enum { RELEASE_CHUNK = 8 << 20, SCAN_CHUNK = 256 << 10 };

/* Reads exactly len bytes at offset of fd; false on an error or an early end of file. */
static bool pread_all(int fd, unsigned char *buf, size_t len, int64_t offset)
{
    while (len) {
        ssize_t n = pread(fd, buf, len, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        buf += n;
        len -= (size_t)n;
        offset += n;
    }
    return true;
}

bool ir_const_scan(const ir_graph *g, const void *p, size_t n, size_t unit, ir_const_scan_fn fn,
                   void *arg)
{
    FR_CHECK(unit > 0 && unit <= SCAN_CHUNK);
    const unsigned char *x = p;
    int fd = -1;
    int64_t offset = 0;
    unsigned char *buf = NULL; /* a chunk read from the file; NULL: read in place */
    size_t chunk = SCAN_CHUNK / unit * unit;
    if (n && ir_const_file_range(g, p, n, &fd, &offset, NULL))
        buf = malloc(n < chunk ? n : chunk);
    if (!buf)
        chunk = RELEASE_CHUNK / unit * unit;
    bool ok = true;
    for (size_t at = 0; at < n && ok;) {
        size_t len = n - at < chunk ? n - at : chunk;
        if (buf && !pread_all(fd, buf, len, offset + (int64_t)at)) { /* in place from here on */
            free(buf);
            buf = NULL;
            chunk = RELEASE_CHUNK / unit * unit;
            continue;
        }
        ok = fn(arg, buf ? buf : x + at, at, len);
        if (!buf) /* read once: its pages need not stay */
            ir_const_release(g, x + at, len);
        at += len;
    }
    free(buf);
    return ok;
}

typedef struct {
    ir_dtype dt;
    const ir_const_scaled *sc;
    size_t first; /* the element at the range's start */
    unsigned char *out;
} scale_range;

/* The source's chunk scaled into its place in out, a run of elements with one factor at a time. */
static bool scale_chunk(void *arg, const void *chunk, size_t offset, size_t len)
{
    const scale_range *r = arg;
    const ir_const_scaled *sc = r->sc;
    size_t size = ir_dtype_size(r->dt), n = len / size, at = offset / size;
    for (size_t k = 0; k < n;) {
        size_t i = r->first + at + k, block = i / sc->inner;
        size_t run = (block + 1) * sc->inner - i; /* the elements left with this factor */
        run = run < n - k ? run : n - k;
        ir_const_scale_elems(r->dt, r->out + (at + k) * size,
                             (const unsigned char *)chunk + k * size, 0, run,
                             sc->factors[block % sc->nfactors]);
        k += run;
    }
    return true;
}

/* Bytes [offset, offset + len) of a row-assembled constant. */
static void read_rows(const ir_const *c, size_t offset, size_t len, unsigned char *out)
{
    size_t row = c->nbytes / c->rows;
    while (len) {
        size_t r = offset / row, col = offset % row, start = 0;
        uint32_t i = 0;
        while (col >= start + c->parts[i].row_bytes)
            start += c->parts[i++].row_bytes;
        size_t in = col - start, width = c->parts[i].row_bytes;
        size_t n = width - in < len ? width - in : len;
        memcpy(out, (const unsigned char *)c->parts[i].src + r * width + in, n);
        out += n;
        offset += n;
        len -= n;
    }
}

/* Bytes [offset, offset + len) of a deferred constant, computed. */
static void read_deferred(const ir_graph *g, const ir_value *v, size_t offset, size_t len,
                          void *out)
{
    const ir_const *c = v->konst;
    FR_CHECK(offset <= c->nbytes && len <= c->nbytes - offset);
    if (c->parts) {
        read_rows(c, offset, len, out);
        return;
    }
    size_t size = ir_dtype_size(v->type->dtype);
    FR_CHECK(offset % size == 0 && len % size == 0);
    scale_range r = {v->type->dtype, c->scaled, offset / size, out};
    ir_const_scan(g, (const unsigned char *)c->scaled->src + offset, len, size, scale_chunk, &r);
}

bool ir_const_read_at(ir_graph *g, ir_value *v, size_t offset, size_t len, void *out,
                      dg_context *dg)
{
    FR_CHECK(v->kind == IR_VALUE_CONST && v->konst != NULL);
    if (ir_const_is_deferred(v)) {
        read_deferred(g, v, offset, len, out);
        return true;
    }
    size_t nbytes;
    const unsigned char *bytes = ir_const_bytes(g, v, &nbytes, dg);
    if (!bytes)
        return false;
    FR_CHECK(offset <= nbytes && len <= nbytes - offset);
    if (len)
        memcpy(out, bytes + offset, len);
    return true;
}

/* A row-assembled constant's bytes put together in out; a part's pages in a file mapping go back
 * as they are read, so that a part never stays resident whole. */
static void assemble_rows(const ir_graph *g, const ir_const *c, unsigned char *out)
{
    size_t row = c->nbytes / c->rows, col = 0;
    for (uint32_t i = 0; i < c->nparts; i++) {
        const unsigned char *x = c->parts[i].src;
        size_t width = c->parts[i].row_bytes, released = 0;
        for (size_t r = 0; r < c->rows; r++) {
            memcpy(out + r * row + col, x + r * width, width);
            size_t done = (r + 1) * width;
            if (done - released >= RELEASE_CHUNK || r + 1 == c->rows) {
                ir_const_release(g, x + released, done - released);
                released = done;
            }
        }
        col += width;
    }
}

/* The file a path names, opened once per graph. NULL when it cannot be opened; *failed_before
 * then tells whether that was reported by an earlier call. */
static st_file *cached_open(ir_graph *g, const char *path, dg_context *dg, bool *failed_before)
{
    file_cache *cache = the_cache(g);
    *failed_before = false;
    for (size_t i = 0; i < cache->files.len; i++) {
        if (strcmp(cache->files.items[i].path, path) == 0) {
            *failed_before = cache->files.items[i].file == NULL;
            return cache->files.items[i].file;
        }
    }
    open_file entry = {strdup(path), st_open(path, dg)};
    FR_CHECK(entry.path != NULL);
    vec_push(&cache->files, entry);
    return entry.file;
}

/* ---- materializing --------------------------------------------------------------------------- */

/* The element count and byte size of a constant's type, within the budget. */
static bool const_size(ir_graph *g, const ir_value *v, dg_context *dg, int64_t *numel,
                       int64_t *nbytes)
{
    char type[256]; /* formatted only for a message */
    if (!ir_type_is_static(v->type) || ir_dtype_size(v->type->dtype) == 0) {
        const_error(g, v, dg, "constant '%s' needs a static type to hold data, not %s", v->name,
                    ir_type_format(g, v->type, type, sizeof type));
        return false;
    }
    if (!ir_type_numel(v->type, numel) || !ir_type_nbytes(v->type, nbytes) ||
        *nbytes > CONST_BUDGET_BYTES) {
        const_error(g, v, dg,
                    "constant '%s' of type %s is too large (constants are limited to "
                    "16 GiB)",
                    v->name, ir_type_format(g, v->type, type, sizeof type));
        return false;
    }
    return true;
}

/* Why value x cannot be stored in dt, or NULL when it can. */
static const char *literal_problem(ir_dtype dt, double x)
{
    if (dt == IR_F64) /* the literal was read as a double: it fits */
        return NULL;
    if (ir_dtype_is_float(dt)) {
        uint32_t bits = encode_float(dt, x);
        return isfinite(x) && isinf(decode_float(dt, bits)) ? "overflows" : NULL;
    }
    double min, max;
    int_range(dt, &min, &max);
    if (!isfinite(x) || x != floor(x))
        return "is not an integer";
    return x < min || x > max ? "is out of range" : NULL;
}

static void put_literal(ir_dtype dt, void *out, size_t i, double x)
{
    if (dt == IR_F64)
        memcpy((char *)out + 8 * i, &x, 8);
    else if (ir_dtype_is_float(dt))
        put_float_bits(dt, out, i, encode_float(dt, x));
    else
        put_int(dt, out, i, x);
}

/* A literal gives one value (to fill the tensor) or all of them, each storable in the dtype. */
static bool check_literal(ir_graph *g, const ir_value *v, dg_context *dg, int64_t numel)
{
    const ir_const *c = v->konst;
    ir_dtype dt = v->type->dtype;
    if (c->literal_count != 1 && c->literal_count != (size_t)numel) {
        const_error(g, v, dg, "constant '%s' lists %zu values for %lld elements (write 1 value "
                    "to fill it, or all %lld)", v->name, c->literal_count, (long long)numel,
                    (long long)numel);
        return false;
    }
    for (size_t i = 0; i < c->literal_count; i++) {
        const char *problem = literal_problem(dt, c->literal[i]);
        if (problem) {
            const_error(g, v, dg, "constant '%s': %s value %.17g %s", v->name, ir_dtype_name(dt),
                        c->literal[i], problem);
            return false;
        }
    }
    return true;
}

static void fill_literal(const ir_value *v, void *out, int64_t numel)
{
    const ir_const *c = v->konst;
    for (size_t i = 0; i < (size_t)numel; i++)
        put_literal(v->type->dtype, out, i, c->literal[c->literal_count == 1 ? 0 : i]);
}

static bool check_random(ir_graph *g, const ir_value *v, dg_context *dg)
{
    const ir_const *c = v->konst;
    if (!isfinite(c->lo) || !isfinite(c->hi) || c->lo > c->hi) {
        const_error(g, v, dg, "constant '%s': random range [%.17g, %.17g) is not a finite "
                    "range with lo <= hi", v->name, c->lo, c->hi);
        return false;
    }
    return true;
}

/* file() paths are relative to the graph's folder unless absolute. */
static char *resolve_path(const ir_graph *g, const char *file)
{
    if (file[0] == '/' || !g->dir || !g->dir[0])
        return ar_strdup(g->arena, file);
    return ar_printf(g->arena, "%s/%s", g->dir, file);
}

/* "[2,3]" for messages; cut short if buf is too small. */
static const char *format_dims(const st_tensor *t, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (uint32_t i = 0; i < t->rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "," : "",
                                 (long long)t->dims[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* The tensor a file constant names, checked against the declared type. */
static const st_tensor *find_file_tensor(ir_graph *g, ir_value *v, dg_context *dg)
{
    const ir_const *c = v->konst;
    const char *path = resolve_path(g, c->file);
    bool failed_before;
    st_file *f = cached_open(g, path, dg, &failed_before);
    if (!f) {
        if (failed_before)
            const_error(g, v, dg, "constant '%s': %s could not be loaded (see above)", v->name,
                        path);
        else
            const_error(g, v, dg, "constant '%s' cannot be loaded from %s", v->name, path);
        return NULL;
    }
    const st_tensor *t = st_find(f, c->key);
    if (!t) {
        const_error(g, v, dg, "constant '%s': no tensor \"%s\" in %s", v->name, c->key, path);
        return NULL;
    }
    if (t->dtype == IR_DTYPE_UNKNOWN) {
        const_error(g, v, dg, "constant '%s': tensor \"%s\" in %s has dtype %s, which fuserule "
                    "does not support", v->name, c->key, path, t->dtype_name);
        return NULL;
    }
    if (t->dtype != v->type->dtype) {
        const_error(g, v, dg, "constant '%s' is declared %s but tensor \"%s\" in %s is %s", v->name,
                    ir_dtype_name(v->type->dtype), c->key, path, t->dtype_name);
        return NULL;
    }
    bool same_shape = t->rank == (uint32_t)v->type->rank;
    for (uint32_t i = 0; same_shape && i < t->rank; i++)
        same_shape = t->dims[i] == v->type->dims[i];
    if (!same_shape) {
        char type[256], shape[1536];
        const_error(g, v, dg, "constant '%s' is declared %s but tensor \"%s\" in %s has shape %s",
                    v->name, ir_type_format(g, v->type, type, sizeof type), c->key, path,
                    format_dims(t, shape, sizeof shape));
        return NULL;
    }
    return t;
}

const void *ir_const_data(ir_graph *g, ir_value *v, dg_context *dg)
{
    FR_CHECK(v->kind == IR_VALUE_CONST && v->konst != NULL);
    ir_const *c = v->konst;
    if (c->data)
        return c->data;
    int64_t numel, nbytes;
    if (!const_size(g, v, dg, &numel, &nbytes))
        return NULL;
    const st_tensor *t = NULL;
    switch (c->kind) {
    case IR_CONST_LITERAL:
        if (!check_literal(g, v, dg, numel))
            return NULL;
        break;
    case IR_CONST_RANDOM:
        if (!check_random(g, v, dg))
            return NULL;
        break;
    case IR_CONST_FILE:
        if (!(t = find_file_tensor(g, v, dg)))
            return NULL;
        FR_CHECK(t->nbytes == (size_t)nbytes);
        break;
    case IR_CONST_DATA:
        /* an in-memory constant holds its data from birth, has it in a mapped file, assembles
         * it from rows or computes it by scaling; only an empty one may lack all four */
        FR_CHECK(c->mapped || c->parts || c->scaled ? c->nbytes == (size_t)nbytes : nbytes == 0);
        break;
    }
    void *out = ar_try_alloc(g->arena, nbytes ? (size_t)nbytes : 1);
    if (!out) {
        const_error(g, v, dg, "constant '%s': cannot allocate %lld bytes", v->name,
                    (long long)nbytes);
        return NULL;
    }
    if (c->kind == IR_CONST_LITERAL)
        fill_literal(v, out, numel);
    else if (c->kind == IR_CONST_RANDOM)
        ir_random_fill(c->seed, c->lo, c->hi, v->type->dtype, out, (size_t)numel);
    else if (c->kind == IR_CONST_FILE && nbytes) {
        memcpy(out, t->data, (size_t)nbytes);
        ir_const_release(g, t->data, (size_t)nbytes);
    } else if (c->kind == IR_CONST_DATA && c->parts) {
        assemble_rows(g, c, out);
    } else if (c->kind == IR_CONST_DATA && c->scaled) {
        read_deferred(g, v, 0, (size_t)nbytes, out);
    } else if (c->kind == IR_CONST_DATA && nbytes) {
        memcpy(out, c->mapped, (size_t)nbytes); /* aligned for the kernels that compute on it */
        ir_const_release(g, c->mapped, (size_t)nbytes);
    }
    c->data = out;
    c->nbytes = (size_t)nbytes;
    return out;
}

const void *ir_const_data_or_null(ir_graph *g, ir_value *v)
{
    dg_context *dg = dg_new();
    const void *data = ir_const_data(g, v, dg);
    dg_free(dg);
    return data;
}

const void *ir_const_bytes(ir_graph *g, ir_value *v, size_t *nbytes, dg_context *dg)
{
    FR_CHECK(v->kind == IR_VALUE_CONST && v->konst != NULL);
    ir_const *c = v->konst;
    if (c->data || (c->kind == IR_CONST_DATA && c->mapped)) {
        *nbytes = c->nbytes;
        return c->data ? c->data : c->mapped;
    }
    if (c->kind != IR_CONST_FILE) {
        const void *data = ir_const_data(g, v, dg);
        *nbytes = c->nbytes;
        return data;
    }
    int64_t numel, size;
    const st_tensor *t;
    if (!const_size(g, v, dg, &numel, &size) || !(t = find_file_tensor(g, v, dg)))
        return NULL;
    FR_CHECK(t->nbytes == (size_t)size);
    *nbytes = (size_t)size;
    return size ? t->data : "";
}

bool ir_const_is_cheap(const ir_value *v)
{
    if (v->kind != IR_VALUE_CONST || !v->konst)
        return false;
    const ir_const *c = v->konst;
    return c->data != NULL || c->kind == IR_CONST_LITERAL || c->kind == IR_CONST_RANDOM;
}

void ir_const_set_data(ir_graph *g, ir_value *v, const void *data, size_t nbytes)
{
    ir_const *c = become_data(g, v, nbytes);
    void *copy = ar_alloc(g->arena, nbytes ? nbytes : 1);
    if (nbytes)
        memcpy(copy, data, nbytes);
    c->data = copy;
}

void ir_const_take_data(ir_graph *g, ir_value *v, void *data, size_t nbytes)
{
    FR_CHECK(data != NULL);
    ir_const *c = become_data(g, v, nbytes);
    vec_push(&the_cache(g)->owned, data);
    c->data = data;
}
