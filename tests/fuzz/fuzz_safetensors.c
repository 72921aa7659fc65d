/* libFuzzer target for the safetensors reader (st_open_memory) on arbitrary bytes: header length,
 * the JSON header, dtypes, shapes, offsets. Every tensor's bytes are read in full, so that a
 * reader that lets a lying header point outside the buffer is caught by AddressSanitizer.
 *
 * It also checks the writer against the reader: the tensors of an accepted file, written again
 * with st_write, must open and give the same names, dtypes, shapes and bytes. */
#include "ir/safetensors.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where touch_all's sums go, so that the reads cannot be optimized away. */
static volatile unsigned checksum;

/* Reads every byte of every tensor. */
static unsigned touch_all(const st_file *f)
{
    unsigned sum = 0;
    for (size_t i = 0; i < st_count(f); i++) {
        const st_tensor *t = st_at(f, i);
        const uint8_t *p = t->data;
        for (size_t b = 0; b < t->nbytes; b++)
            sum += p[b];
        if (st_find(f, t->name) == NULL)
            abort(); /* every listed tensor can be found by its name */
    }
    return sum;
}

static bool same_tensor(const st_tensor *a, const st_tensor *b)
{
    return strcmp(a->name, b->name) == 0 && a->dtype == b->dtype && a->rank == b->rank &&
           memcmp(a->dims, b->dims, a->rank * sizeof *a->dims) == 0 && a->nbytes == b->nbytes &&
           (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
}

/* Writes the tensors the IR knows the dtype of and reads them back. */
static void check_rewrite(const st_file *f)
{
    size_t n = st_count(f), kept = 0;
    st_entry *entries = calloc(n ? n : 1, sizeof *entries);
    for (size_t i = 0; i < n; i++) {
        const st_tensor *t = st_at(f, i);
        if (t->dtype == IR_DTYPE_UNKNOWN || t->name[0] == '\0')
            continue; /* the writer refuses what the IR cannot hold, and empty names */
        entries[kept++] = (st_entry){.name = t->name, .dtype = t->dtype, .rank = t->rank,
                                     .dims = t->dims, .data = t->data, .nbytes = t->nbytes};
    }
    char *bytes = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&bytes, &len);
    dg_context *dg = dg_new();
    bool written = st_write(out, "rewrite.safetensors", entries, kept, dg);
    fclose(out);
    st_file *back = written ? st_open_memory(bytes, len, "rewrite.safetensors", dg) : NULL;
    if (!back || st_count(back) != kept) {
        dg_print(dg, stderr);
        abort();
    }
    for (size_t i = 0; i < kept; i++) {
        const st_tensor *t = st_find(f, entries[i].name);
        if (!same_tensor(t, st_find(back, entries[i].name)))
            abort();
    }
    st_close(back);
    dg_free(dg);
    free(bytes);
    free(entries);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dg_context *dg = dg_new();
    st_file *f = st_open_memory(data, size, "fuzz.safetensors", dg);
    if (f) {
        checksum += touch_all(f);
        (void)st_metadata(f, "format");
        check_rewrite(f);
        st_close(f);
    }
    dg_free(dg);
    return 0;
}
