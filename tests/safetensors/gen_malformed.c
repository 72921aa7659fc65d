/* Writes every case of the malformed-file corpus to DIR/<name>.safetensors, with the message
 * fuserule gives for it in DIR/<name>.expected. Usage: st_malformed_gen DIR */
#include "malformed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_file(const char *path, const void *bytes, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return 0;
    }
    int ok = fwrite(bytes, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok)
        fprintf(stderr, "%s: write failed\n", path);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: st_malformed_gen DIR\n");
        return 2;
    }
    for (size_t i = 0; i < malformed_case_count; i++) {
        const malformed_case *c = &malformed_cases[i];
        char path[4096];
        size_t len;
        unsigned char *bytes = malformed_build(c, &len);
        snprintf(path, sizeof path, "%s/%s.safetensors", argv[1], c->name);
        int ok = write_file(path, bytes, len);
        free(bytes);
        snprintf(path, sizeof path, "%s/%s.expected", argv[1], c->name);
        ok = ok && write_file(path, c->expected, strlen(c->expected));
        if (!ok)
            return 1;
    }
    return 0;
}
