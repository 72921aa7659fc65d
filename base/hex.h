/* Hexadecimal digits, as the readers of escapes share them (the .graph lexer's "\xHH", the
 * safetensors header's JSON "\uXXXX"). */
#ifndef FUSERULE_BASE_HEX_H
#define FUSERULE_BASE_HEX_H

/* The value of hexadecimal digit c (either case), or -1 when c is none. */
static inline int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
