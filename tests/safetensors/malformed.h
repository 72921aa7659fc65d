/* A corpus of malformed safetensors files, built in memory: each case is a header text, a data
 * buffer length, and optionally a lying length prefix or a truncation, with the exact diagnostic
 * fuserule must print for it. Used by test_safetensors.c and by gen_malformed.c, which writes the
 * corpus to a folder (for fuzzing seeds or for trying other readers on it). */
#ifndef FUSERULE_TESTS_SAFETENSORS_MALFORMED_H
#define FUSERULE_TESTS_SAFETENSORS_MALFORMED_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *name;     /* file name stem */
    const char *header;   /* the JSON text, written as is */
    size_t data_len;      /* data buffer bytes after the header */
    int64_t length;       /* the length prefix to write; -1: the header's true length */
    long keep;            /* keep only this many bytes of the file; -1: all */
    const char *expected; /* the diagnostic, with PATH standing for the file's path */
    size_t header_bytes;  /* the header's length when it holds NUL bytes; 0: strlen(header) */
} malformed_case;

extern const malformed_case malformed_cases[];
extern const size_t malformed_case_count;

/* The file's bytes (malloc'd; the caller frees) and their count. */
unsigned char *malformed_build(const malformed_case *c, size_t *len);

#endif
