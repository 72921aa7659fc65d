/* NumPy .npy files: a strict reader for one array (`fuserule run/verify --input NAME=FILE.npy`).
 *
 * The format (numpy.lib.format): the magic "\x93NUMPY", a major and minor version byte, the header
 * length (2 bytes little-endian in version 1, 4 bytes in versions 2 and 3), then the header, a
 * Python dict literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }, padded
 * with spaces and ended by a newline, then the data.
 *
 * The reader accepts versions 1, 2 and 3; the keys descr, fortran_order and shape exactly once
 * each, in any order; little-endian (or byte-order-free) descrs of the IR's dtypes: <f2 <f4 <f8
 * |i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 |b1 ('=' counts as '<' on a little-endian host); C order; at
 * most IR_MAX_RANK
 * dims whose product is at most IR_MAX_NUMEL; and data that is exactly the shape's size. It
 * refuses anything else by name: a header over 65,536 bytes or past the end of the file, a
 * big-endian or unknown descr, Fortran order, object arrays, trailing or missing bytes. Every error
 * is "PATH: error: ...". */
#ifndef FUSERULE_IR_NPY_H
#define FUSERULE_IR_NPY_H

#include "base/diag.h"
#include "ir/ir.h"

#include <stdbool.h>
#include <stddef.h>

enum { NPY_MAX_HEADER_BYTES = 65536 };

typedef struct npy_array {
    ir_type type; /* static */
    void *data;   /* malloc'd, nbytes long (at least 1 byte); the caller frees it */
    size_t nbytes;
} npy_array;

/* Reads the array in `path`; false after reporting why not. */
bool npy_read(const char *path, npy_array *out, dg_context *dg);

#endif
