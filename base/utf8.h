/* UTF-8 validation, by the rules every reader of text shares (the .graph lexer and printer, the
 * safetensors header, ONNX protobuf strings): overlong forms, surrogates and code points above
 * U+10FFFF are invalid. */
#ifndef FUSERULE_BASE_UTF8_H
#define FUSERULE_BASE_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s[0..len) (1 for an ASCII byte, NUL included), or 0 when
 * it is invalid or cut short by len. A NUL byte ends any sequence, so a NUL-terminated string may
 * pass SIZE_MAX as len. */
size_t utf8_sequence(const unsigned char *s, size_t len);
/* Offset of the first invalid byte, or len when all of s[0..len) is valid UTF-8. */
size_t utf8_invalid_at(const unsigned char *s, size_t len);

#endif
