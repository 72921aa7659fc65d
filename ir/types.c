/* Element types, layouts and shapes. */
#include "ir/ir.h"

#include "base/check.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[IR_DTYPE_COUNT] = {
    [IR_DTYPE_UNKNOWN] = {"?", 0}, [IR_F32] = {"f32", 4}, [IR_F16] = {"f16", 2},
    [IR_BF16] = {"bf16", 2},       [IR_I8] = {"i8", 1},   [IR_U8] = {"u8", 1},
    [IR_I32] = {"i32", 4},         [IR_I64] = {"i64", 8}, [IR_BOOL] = {"bool", 1},
    [IR_F64] = {"f64", 8},         [IR_I16] = {"i16", 2}, [IR_U16] = {"u16", 2},
    [IR_U32] = {"u32", 4},         [IR_U64] = {"u64", 8},
};

const char *ir_dtype_name(ir_dtype dt)
{
    return (unsigned)dt < IR_DTYPE_COUNT ? dtypes[dt].name : "?";
}

size_t ir_dtype_size(ir_dtype dt)
{
    return (unsigned)dt < IR_DTYPE_COUNT ? dtypes[dt].size : 0;
}

bool ir_dtype_parse(const char *s, size_t len, ir_dtype *out)
{
    for (unsigned i = 1; i < IR_DTYPE_COUNT; i++) {
        if (strlen(dtypes[i].name) == len && memcmp(dtypes[i].name, s, len) == 0) {
            *out = (ir_dtype)i;
            return true;
        }
    }
    return false;
}

bool ir_dtype_is_float(ir_dtype dt)
{
    return dt == IR_F32 || dt == IR_F16 || dt == IR_BF16 || dt == IR_F64;
}

static const char *const layouts[IR_LAYOUT_COUNT] = {
    [IR_LAYOUT_NONE] = "",
#define IR_LAYOUT_NAME(name) [IR_LAYOUT_##name] = #name,
    IR_LAYOUTS(IR_LAYOUT_NAME)
#undef IR_LAYOUT_NAME
};

const char *ir_layout_name(ir_layout layout)
{
    return (unsigned)layout < IR_LAYOUT_COUNT ? layouts[layout] : "";
}

bool ir_layout_parse(const char *s, size_t len, ir_layout *out)
{
    for (unsigned i = 1; i < IR_LAYOUT_COUNT; i++) {
        if (strlen(layouts[i]) == len && memcmp(layouts[i], s, len) == 0) {
            *out = (ir_layout)i;
            return true;
        }
    }
    return false;
}

bool ir_type_equal(const ir_type *a, const ir_type *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->layout != b->layout)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

bool ir_type_is_static(const ir_type *t)
{
    if (t->rank < 0)
        return false;
    for (int i = 0; i < t->rank; i++)
        if (!ir_dim_is_static(t->dims[i]))
            return false;
    return true;
}

bool ir_type_numel(const ir_type *t, int64_t *numel)
{
    if (!ir_type_is_static(t))
        return false;
    /* n * d > IR_MAX_NUMEL exactly where n > IR_MAX_NUMEL / d (d > 0, floor division): the
     * product checked, not a division per dim (most of this function's time) */
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (__builtin_mul_overflow(n, t->dims[i], &n) || n > IR_MAX_NUMEL)
            return false;
    *numel = n;
    return true;
}

bool ir_type_nbytes(const ir_type *t, int64_t *nbytes)
{
    int64_t n;
    if (!ir_type_numel(t, &n) || ir_dtype_size(t->dtype) == 0)
        return false;
    *nbytes = n * (int64_t)ir_dtype_size(t->dtype);
    return true;
}

char *ir_type_format(const ir_graph *g, const ir_type *t, char *buf, size_t size)
{
    FR_CHECK(size > 0);
    size_t used = 0;
#define APPEND(...)                                                                                \
    do {                                                                                           \
        int n_ = snprintf(buf + used, size - used, __VA_ARGS__);                                   \
        if (n_ < 0 || (size_t)n_ >= size - used)                                                   \
            return buf;                                                                            \
        used += (size_t)n_;                                                                        \
    } while (0)
    buf[0] = '\0';
    APPEND("%s", ir_dtype_name(t->dtype));
    if (t->rank < 0) {
        APPEND("[*]");
    } else {
        APPEND("[");
        for (int i = 0; i < t->rank; i++) {
            int64_t d = t->dims[i];
            const char *sep = i ? "," : "";
            if (ir_dim_is_static(d))
                APPEND("%s%lld", sep, (long long)d);
            else if (ir_dim_is_symbol(d))
                APPEND("%s%s", sep, ir_symbol_name(g, d));
            else
                APPEND("%s?", sep);
        }
        APPEND("]");
    }
    if (t->layout != IR_LAYOUT_NONE)
        APPEND(" %s", ir_layout_name((ir_layout)t->layout));
#undef APPEND
    return buf;
}

/* ---- the graph's shared types ---- */

/* Dims past the rank are no part of a type (nor past IR_MAX_RANK, where a rank out of range is
 * still to be reported). */
static int type_dims(const ir_type *t)
{
    return t->rank < IR_MAX_RANK ? t->rank : IR_MAX_RANK;
}

static uint64_t type_hash(const ir_type *t)
{
    uint64_t h = (uint64_t)t->dtype << 16 | (uint64_t)(uint8_t)t->rank << 8 | t->layout;
    h = (h ^ 0x9e3779b97f4a7c15u) * 0xff51afd7ed558ccdu;
    for (int i = 0; i < type_dims(t); i++) {
        h = (h ^ (uint64_t)t->dims[i]) * 0x9e3779b97f4a7c15u;
        h ^= h >> 29;
    }
    return h ^ (h >> 32);
}

static bool same_type(const ir_type *a, const ir_type *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->layout != b->layout)
        return false;
    for (int i = 0; i < type_dims(a); i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

static void grow_types(ir_type_set *s)
{
    size_t cap = s->cap ? s->cap * 2 : 64, mask = cap - 1;
    FR_CHECK(cap <= SIZE_MAX / sizeof *s->slots);
    const ir_type **slots = calloc(cap, sizeof *slots);
    FR_CHECK(slots != NULL);
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slots[i])
            continue;
        size_t j = type_hash(s->slots[i]) & mask;
        while (slots[j]) /* types are distinct: the first free slot */
            j = (j + 1) & mask;
        slots[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
}

const ir_type *ir_type_intern(ir_graph *g, const ir_type *t)
{
    ir_type_set *s = &g->types;
    /* the values of a graph come mostly in runs of one type (a layer's activations): the last
     * copy is the one asked for again more often than not */
    if (s->last && same_type(s->last, t))
        return s->last;
    if ((s->len + 1) * 2 > s->cap)
        grow_types(s);
    size_t mask = s->cap - 1, j = type_hash(t) & mask;
    for (; s->slots[j]; j = (j + 1) & mask)
        if (same_type(s->slots[j], t))
            return s->last = s->slots[j];
    ir_type *copy = ar_alloc(g->arena, sizeof *copy); /* zeroed: no dims past the rank */
    copy->dtype = t->dtype;
    copy->rank = t->rank;
    copy->layout = t->layout;
    for (int i = 0; i < type_dims(t); i++)
        copy->dims[i] = t->dims[i];
    s->slots[j] = copy;
    s->len++;
    return s->last = copy;
}

const ir_type *ir_type_unknown_interned(ir_graph *g)
{
    if (!g->types.unknown)
        g->types.unknown = ir_type_intern(g, &(ir_type){.rank = -1});
    return g->types.unknown;
}

void ir_value_set_type(ir_graph *g, ir_value *v, const ir_type *t)
{
    if (v->type != t)
        v->type = ir_type_intern(g, t);
}
