/* TensorProto: element types, and decoding dims and data with every size checked first.
 *
 * A tensor's data is in raw_data (little-endian, packed), in the typed repeated field of its
 * dtype (float_data, int32_data, int64_data), or in an external file next to the model. Whichever
 * it is, the element count the dims declare must be exactly what the data holds, and that is
 * checked before anything is allocated, so a tiny file cannot claim a huge tensor. */
#define _XOPEN_SOURCE 700 /* realpath */

#include "onnx/onnx_internal.h"

#include "base/check.h"
#include "base/half.h"
#include "base/mapwatch.h"
#include "base/numtext.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* raw_data and external data are little-endian; the tensors are used as they are in memory. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ONNX raw data is little-endian");

/* ---- element types -------------------------------------------------------------------------- */

enum { ONNX_UINT16 = 4 };

static const struct {
    int32_t code;
    const char *name;
    ir_dtype dtype; /* IR_DTYPE_UNKNOWN: not in the IR */
} dtypes[] = {
    {1, "FLOAT", IR_F32},         {2, "UINT8", IR_U8},
    {3, "INT8", IR_I8},           {4, "UINT16", IR_U16},
    {5, "INT16", IR_I16}, {6, "INT32", IR_I32},
    {7, "INT64", IR_I64},         {8, "STRING", IR_DTYPE_UNKNOWN},
    {9, "BOOL", IR_BOOL},         {10, "FLOAT16", IR_F16},
    {11, "DOUBLE", IR_F64}, {12, "UINT32", IR_U32},
    {13, "UINT64", IR_U64}, {14, "COMPLEX64", IR_DTYPE_UNKNOWN},
    {15, "COMPLEX128", IR_DTYPE_UNKNOWN}, {16, "BFLOAT16", IR_BF16},
    {17, "FLOAT8E4M3FN", IR_DTYPE_UNKNOWN}, {18, "FLOAT8E4M3FNUZ", IR_DTYPE_UNKNOWN},
    {19, "FLOAT8E5M2", IR_DTYPE_UNKNOWN}, {20, "FLOAT8E5M2FNUZ", IR_DTYPE_UNKNOWN},
    {21, "UINT4", IR_DTYPE_UNKNOWN}, {22, "INT4", IR_DTYPE_UNKNOWN},
    {23, "FLOAT4E2M1", IR_DTYPE_UNKNOWN},
};

bool ox_dtype_from_onnx(int32_t code, ir_dtype *out)
{
    for (size_t i = 0; i < FR_COUNT_OF(dtypes); i++) {
        if (dtypes[i].code == code && dtypes[i].dtype != IR_DTYPE_UNKNOWN) {
            *out = dtypes[i].dtype;
            return true;
        }
    }
    return false;
}

int32_t ox_dtype_to_onnx(ir_dtype dt)
{
    for (size_t i = 0; i < FR_COUNT_OF(dtypes); i++)
        if (dtypes[i].dtype == dt && dt != IR_DTYPE_UNKNOWN)
            return dtypes[i].code;
    FR_UNREACHABLE();
    return 0;
}

const char *ox_onnx_dtype_name(int32_t code)
{
    for (size_t i = 0; i < FR_COUNT_OF(dtypes); i++)
        if (dtypes[i].code == code)
            return dtypes[i].name;
    return code == 0 ? "UNDEFINED" : "an unknown type code";
}

/* The shortest decimal of f (at most 9 digits) as a double (numtext.h: the "%.*g" and strtod
 * search without the round trips); export and the executor convert it back through the double. */
double ox_float_to_double(float f)
{
    return numtext_float_as_double(f);
}

/* ---- dims ----------------------------------------------------------------------------------- */

static void format_dims(const int64_t *dims, size_t n, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (size_t i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, i ? "," : "", dims[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

static bool decode_type(ox_report *r, const Onnx__TensorProto *t, const char *what, ir_type *type)
{
    if (!t->has_data_type || t->data_type == 0) {
        ox_invalid(r, "%s has no data type", what);
        return false;
    }
    ir_dtype dt;
    if (!ox_dtype_from_onnx(t->data_type, &dt)) {
        ox_unsupported(r, "%s has element type %s, which the IR does not hold", what,
                       ox_onnx_dtype_name(t->data_type));
        return false;
    }
    if (t->n_dims > IR_MAX_RANK) {
        ox_unsupported(r, "%s has rank %zu; the IR holds ranks up to %d", what, t->n_dims,
                       IR_MAX_RANK);
        return false;
    }
    *type = (ir_type){.dtype = dt, .rank = (int8_t)t->n_dims};
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0) {
            ox_invalid(r, "%s has a negative dim %" PRId64, what, t->dims[i]);
            return false;
        }
        type->dims[i] = t->dims[i];
    }
    int64_t numel;
    if (!ir_type_numel(type, &numel)) {
        char dims[256];
        format_dims(t->dims, t->n_dims, dims, sizeof dims);
        ox_invalid(r, "%s declares dims %s, more than %" PRId64 " elements", what, dims,
                   IR_MAX_NUMEL);
        return false;
    }
    return true;
}

/* ---- data in the typed fields --------------------------------------------------------------- */

static bool count_matches(ox_report *r, const char *what, const char *field, size_t count,
                          int64_t numel)
{
    if ((int64_t)count == numel)
        return true;
    ox_invalid(r, "%s holds %zu values in %s but its dims declare %" PRId64, what, count, field,
               numel);
    return false;
}

/* int32_data carries i32, i8, u8, bool, and f16/bf16 bit patterns, one per entry. */
static bool from_int32_data(ox_report *r, const Onnx__TensorProto *t, const char *what,
                            ir_dtype dt, size_t numel, void *out)
{
    for (size_t i = 0; i < numel; i++) {
        int32_t v = t->int32_data[i];
        bool ok = true;
        switch (dt) {
        case IR_I32:
            ((int32_t *)out)[i] = v;
            break;
        case IR_I8:
            ok = v >= INT8_MIN && v <= INT8_MAX;
            ((int8_t *)out)[i] = (int8_t)v;
            break;
        case IR_U8:
        case IR_BOOL:
            ok = v >= 0 && v <= (dt == IR_BOOL ? 1 : UINT8_MAX);
            ((uint8_t *)out)[i] = (uint8_t)v;
            break;
        case IR_F16:
        case IR_BF16:
        case IR_U16:
            ok = v >= 0 && v <= UINT16_MAX;
            ((uint16_t *)out)[i] = (uint16_t)v;
            break;
        case IR_I16:
            ok = v >= INT16_MIN && v <= INT16_MAX;
            ((int16_t *)out)[i] = (int16_t)v;
            break;
        default:
            FR_UNREACHABLE();
        }
        if (!ok) {
            ox_invalid(r, "%s: value %" PRId32 " at index %zu is out of range for %s", what, v, i,
                       ir_dtype_name(dt));
            return false;
        }
    }
    return true;
}

static bool decode_typed(ox_report *r, const Onnx__TensorProto *t, const char *what,
                         ox_tensor_data *out, int64_t numel)
{
    ir_dtype dt = out->type.dtype;
    size_t n = (size_t)numel;
    const void *src = NULL;
    const char *field = NULL;
    size_t count = 0;
    switch (dt) {
    case IR_F32:
        src = t->float_data, field = "float_data", count = t->n_float_data;
        break;
    case IR_I64:
        src = t->int64_data, field = "int64_data", count = t->n_int64_data;
        break;
    case IR_F64:
        src = t->double_data, field = "double_data", count = t->n_double_data;
        break;
    case IR_U64:
        src = t->uint64_data, field = "uint64_data", count = t->n_uint64_data;
        break;
    case IR_U32: /* uint64_data holds one value per entry; checked and narrowed below */
        field = "uint64_data", count = t->n_uint64_data;
        break;
    default:
        field = "int32_data", count = t->n_int32_data;
        break;
    }
    if (!count_matches(r, what, field, count, numel))
        return false;
    if (n == 0) {
        out->data = "";
        return true;
    }
    out->owned = malloc(out->nbytes);
    if (!out->owned) {
        ox_invalid(r, "%s: out of memory for %zu bytes", what, out->nbytes);
        return false;
    }
    out->data = out->owned;
    if (src) {
        memcpy(out->owned, src, out->nbytes);
        return true;
    }
    if (dt == IR_U32) {
        for (size_t i = 0; i < n; i++) {
            if (t->uint64_data[i] > UINT32_MAX) {
                ox_invalid(r, "%s: value %" PRIu64 " at index %zu is out of range for u32", what,
                           t->uint64_data[i], i);
                return false;
            }
            ((uint32_t *)out->owned)[i] = (uint32_t)t->uint64_data[i];
        }
        return true;
    }
    return from_int32_data(r, t, what, dt, n, out->owned);
}

/* ---- external data -------------------------------------------------------------------------- */

/* A non-negative decimal integer, strictly. */
static bool parse_size(const char *s, int64_t *out)
{
    if (!*s)
        return false;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (INT64_MAX - (*s - '0')) / 10)
            return false;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return true;
}

/* The location must name a file inside the model's folder: relative, without `..`, and not a
 * link that resolves outside it. */
static char *resolve_location(ox_report *r, const char *what, const char *model_dir,
                              const char *location)
{
    if (!location[0] || location[0] == '/') {
        ox_invalid(r, "%s: external data location '%s' must be a path relative to the model's "
                      "folder",
                   what, location);
        return NULL;
    }
    for (const char *p = location; *p;) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            ox_invalid(r, "%s: external data location '%s' leaves the model's folder", what,
                       location);
            return NULL;
        }
        p += n + (end ? 1 : 0);
    }
    char *dir = realpath(model_dir, NULL);
    size_t need = strlen(model_dir) + strlen(location) + 2;
    char *joined = malloc(need);
    FR_CHECK(joined != NULL);
    snprintf(joined, need, "%s/%s", model_dir, location);
    char *target = dir ? realpath(joined, NULL) : NULL;
    int saved = errno;
    free(joined);
    if (!target) {
        if (!ox_missing_seen(r, location)) /* once per file, not once per tensor that reads it */
            ox_invalid(r, "%s: cannot open external data '%s': %s", what, location,
                       strerror(saved));
        free(dir);
        return NULL;
    }
    size_t dlen = strlen(dir);
    bool inside = strncmp(target, dir, dlen) == 0 && (target[dlen] == '/' || dlen == 1);
    free(dir);
    if (!inside) {
        ox_invalid(r, "%s: external data '%s' resolves outside the model's folder", what,
                   location);
        free(target);
        return NULL;
    }
    return target;
}

/* Maps the pages of f that hold [offset, offset + out->nbytes); false when mapping fails (the
 * bytes are then read). */
static bool map_external(FILE *f, const char *path, int64_t offset, ox_tensor_data *out)
{
    int64_t page = sysconf(_SC_PAGESIZE);
    int64_t start = offset - offset % page;
    size_t len = (size_t)(offset - start) + out->nbytes;
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fileno(f), (off_t)start);
    if (map == MAP_FAILED)
        return false;
    mw_watch(map, len, path);
    out->map = map;
    out->map_len = len;
    out->data = (const uint8_t *)map + (offset - start);
    out->mapped = true;
    return true;
}

static bool read_external(ox_report *r, const Onnx__TensorProto *t, const char *model_dir,
                          const char *what, ox_tensor_data *out)
{
    if (!model_dir) {
        ox_invalid(r, "%s: external data is not allowed here", what);
        return false;
    }
    const char *location = NULL;
    int64_t offset = 0, length = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const char *key = t->external_data[i]->key, *value = t->external_data[i]->value;
        if (!key || !value)
            continue;
        bool ok = true;
        if (strcmp(key, "location") == 0)
            location = value;
        else if (strcmp(key, "offset") == 0)
            ok = parse_size(value, &offset);
        else if (strcmp(key, "length") == 0)
            ok = parse_size(value, &length);
        if (!ok) {
            ox_invalid(r, "%s: external data %s '%s' is not a non-negative integer", what, key,
                       value);
            return false;
        }
    }
    if (!location) {
        ox_invalid(r, "%s: external data without a location", what);
        return false;
    }
    char *path = resolve_location(r, what, model_dir, location);
    if (!path)
        return false;
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        ox_invalid(r, "%s: external data '%s' is not a readable regular file", what, location);
        if (f)
            fclose(f);
        free(path);
        return false;
    }
    int64_t file_size = st.st_size;
    if (length < 0)
        length = offset <= file_size ? file_size - offset : 0;
    bool ok = false;
    if (offset > file_size)
        ox_invalid(r, "%s: external data '%s' has %" PRId64 " bytes, fewer than offset %" PRId64,
                   what, location, file_size, offset);
    else if (length > file_size - offset)
        ox_invalid(r,
                   "%s: external data '%s' has %" PRId64 " bytes, fewer than offset %" PRId64
                   " + length %" PRId64,
                   what, location, file_size, offset, length);
    else if ((size_t)length != out->nbytes)
        ox_invalid(r, "%s: external data holds %" PRId64 " bytes but its dims need %zu", what,
                   length, out->nbytes);
    else if (out->nbytes >= OX_LAZY_MIN_BYTES && map_external(f, path, offset, out))
        ok = true; /* left in its file, mapped: weights are never copied */
    else if (!(out->owned = malloc(out->nbytes ? out->nbytes : 1)))
        ox_invalid(r, "%s: out of memory for %zu bytes", what, out->nbytes);
    else if (fseeko(f, (off_t)offset, SEEK_SET) != 0 ||
             fread(out->owned, 1, out->nbytes, f) != out->nbytes)
        ox_invalid(r, "%s: cannot read external data '%s'", what, location);
    else
        ok = true;
    fclose(f);
    free(path);
    if (!out->mapped)
        out->data = out->owned;
    return ok;
}

/* ---- the whole tensor ----------------------------------------------------------------------- */

bool ox_tensor_decode(ox_report *r, const Onnx__TensorProto *t, const char *model_dir,
                      const char *what, ox_tensor_data *out)
{
    *out = (ox_tensor_data){0};
    if (!decode_type(r, t, what, &out->type))
        return false;
    int64_t nbytes;
    FR_CHECK(ir_type_nbytes(&out->type, &nbytes)); /* numel was checked */
    out->nbytes = (size_t)nbytes;
    int64_t numel = nbytes / (int64_t)ir_dtype_size(out->type.dtype);

    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return read_external(r, t, model_dir, what, out);
    size_t typed = t->n_float_data + t->n_int32_data + t->n_int64_data + t->n_double_data +
                   t->n_uint64_data + t->n_string_data;
    const uint8_t *raw = t->raw_data.data;
    size_t raw_len = t->raw_data.len;
    bool mapped = ox_lazy_raw_data(r->decoded, &t->base, &raw, &raw_len);
    bool has_raw = t->has_raw_data || mapped;
    if (has_raw && typed) {
        ox_invalid(r, "%s has both raw_data and typed data", what);
        return false;
    }
    if (has_raw) {
        if (raw_len != out->nbytes) {
            ox_invalid(r, "%s: raw_data holds %zu bytes but its dims need %zu", what, raw_len,
                       out->nbytes);
            return false;
        }
        out->data = raw_len ? (const void *)raw : "";
        out->mapped = mapped;
        return true;
    }
    return decode_typed(r, t, what, out, numel);
}

void ox_tensor_data_release(ox_tensor_data *d)
{
    free(d->owned);
    if (d->map) {
        mw_forget(d->map);
        munmap(d->map, d->map_len);
    }
    d->owned = NULL;
    d->map = NULL;
    d->data = NULL;
}

/* ---- tensor files --------------------------------------------------------------------------- */

bool ox_read_tensor(const char *path, ir_dtype as, ar_arena *arena, ox_tensor *out,
                    ox_import_info *info, dg_context *dg)
{
    ox_import_info scratch;
    if (!info)
        info = &scratch;
    *info = (ox_import_info){0};
    ox_report r = {.path = path, .dg = dg, .info = info};
    ox_decoded *owner;
    const Onnx__TensorProto *t =
        (const Onnx__TensorProto *)ox_decode_file(&r, &onnx__tensor_proto__descriptor, &owner);
    bool ok = false;
    if (t) {
        ox_tensor_data td;
        const char *name = t->name ? t->name : "";
        Onnx__TensorProto bits = *t;
        if ((as == IR_BF16 || as == IR_F16) && t->has_data_type && t->data_type == ONNX_UINT16) {
            bits.data_type = ox_dtype_to_onnx(as);
            t = &bits;
        }
        if (ox_tensor_decode(&r, t, NULL, "the tensor", &td)) {
            void *copy = ar_try_alloc(arena, td.nbytes ? td.nbytes : 1);
            if (copy) {
                memcpy(copy, td.data, td.nbytes);
                *out = (ox_tensor){ar_strdup(arena, name), td.type, copy, td.nbytes};
                ok = true;
            } else {
                ox_invalid(&r, "out of memory for %zu bytes", td.nbytes);
            }
            ox_tensor_data_release(&td);
        }
    }
    ox_decoded_free(owner);
    ox_report_finish(&r);
    return ok;
}
