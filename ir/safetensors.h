/* safetensors files: a strict, self-contained reader and a deterministic writer.
 *
 * The format (https://github.com/huggingface/safetensors): an 8-byte little-endian header length
 * N, N bytes of UTF-8 JSON, then the data buffer. The JSON object maps each tensor name to
 * {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} (offsets relative to the data
 * buffer), plus an optional "__metadata__" object of string -> string.
 *
 * The reader refuses anything it cannot fully account for: a header over 100,000,000 bytes or past
 * the end of the file, a header that is not UTF-8 or not the JSON above (floats, negative numbers,
 * true/false/null, nesting beyond the schema, duplicate or unknown keys), unknown dtype strings,
 * shapes of more than 64 dimensions or whose size overflows, `end - begin` that disagrees with the
 * shape, and offsets that do not tile the data buffer exactly (sorted by begin: contiguous from 0,
 * no gap, no overlap, the last end equal to the buffer's length). Dtypes the format knows but the
 * IR does not (C64, F8_E4M3, ...) may be listed; they have dtype IR_DTYPE_UNKNOWN and are
 * refused by whoever uses them.
 * docs/safetensors.md says why each check exists.
 *
 * Every error is reported once, as "PATH: error: ..." naming the tensor when there is one.
 * Memory: the header is parsed without building a JSON tree, so the tensor table costs a small
 * multiple of the header's size; the data is mapped read-only from the file, so only what is read
 * is paged in. */
#ifndef FUSERULE_IR_SAFETENSORS_H
#define FUSERULE_IR_SAFETENSORS_H

#include "base/diag.h"
#include "ir/ir.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The format's limit on the header, shared with the reference implementation. */
#define ST_MAX_HEADER_BYTES 100000000u

typedef struct st_file st_file;

typedef struct st_tensor {
    const char *name;
    const char *dtype_name; /* as written in the file: "F32", "C64", "F8_E4M3", ... */
    ir_dtype dtype;         /* IR_DTYPE_UNKNOWN when the IR has no such dtype */
    uint32_t rank;
    const int64_t *dims;    /* rank entries, each >= 0 */
    uint64_t begin, end;    /* data_offsets, relative to the data buffer */
    const void *data;       /* begin's address; aligned only as far as the file's layout is */
    size_t nbytes;          /* end - begin */
} st_tensor;

/* Maps and checks a file. NULL after reporting an error. */
st_file *st_open(const char *path, dg_context *dg);
/* Checks `len` bytes of a file image already in memory (the bytes must outlive the result);
 * `path` names the file in messages. NULL after reporting an error. */
st_file *st_open_memory(const void *bytes, size_t len, const char *path, dg_context *dg);
void st_close(st_file *f);

const char *st_path(const st_file *f);
/* Tensors in header order. */
size_t st_count(const st_file *f);
const st_tensor *st_at(const st_file *f, size_t index);
/* NULL when the file has no tensor of that name. */
const st_tensor *st_find(const st_file *f, const char *name);
/* A "__metadata__" value, or NULL. */
const char *st_metadata(const st_file *f, const char *key);
/* Whether [p, p + n) lies in the file's mapping (false for st_open_memory's files). */
bool st_maps(const st_file *f, const void *p, size_t n);

/* One tensor to write. `data` may be NULL when nbytes is 0. */
typedef struct st_entry {
    const char *name;
    ir_dtype dtype;
    uint32_t rank;
    const int64_t *dims;
    const void *data;
    size_t nbytes; /* must equal the shape's element count times the dtype's size */
} st_entry;

/* The format's name of an IR dtype ("F32", "BF16", ...); NULL when the format has none. */
const char *st_dtype_name(ir_dtype dt);

/* Writes a safetensors file to `out`. Header entries are sorted by name; the data is laid out by
 * element size (largest first), then by name, so that every tensor's data is aligned to its
 * element size; the header is padded with spaces to a multiple of 8 bytes. The same entries give
 * byte-identical output. Reports refused entries (duplicate or empty names, invalid UTF-8 in a
 * name, a size that disagrees with the shape) and write errors against `path`; false then. */
bool st_write(FILE *out, const char *path, const st_entry *entries, size_t n, dg_context *dg);

/* Where the bytes of an entry without `data` lie: `rows` rows, each the concatenation of the
 * parts' rows (ir_const_rows: concatenated weights); nparts 0 when the entry has its data. */
typedef struct st_rows {
    const ir_const_part *parts;
    uint32_t nparts;
    size_t rows;
} st_rows;

/* st_write where rows[i] says where the bytes of entries[i] lie when its `data` is NULL: they are
 * written row by row from there, never put together in memory. */
bool st_write_rows(FILE *out, const char *path, const st_entry *entries, const st_rows *rows,
                   size_t n, dg_context *dg);

#endif
