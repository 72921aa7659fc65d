/* The malformed-file corpus (see malformed.h). Each expected message is the whole diagnostic line;
 * byte positions in JSON errors count from the first byte of the header. */
#include "malformed.h"

#include <stdlib.h>
#include <string.h>

/* One valid tensor: 2 x f32 = 8 bytes, under a 54-byte header. Truncating its file tests every
 * framing check. */
#define VALID_HEADER "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}"
#define T(name, dtype, shape, begin, end)                                                          \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":["                 \
        begin "," end "]}"

const malformed_case malformed_cases[] = {
    /* framing */
    {"empty", VALID_HEADER, 8, -1, 0,
     "PATH: error: file is too short for safetensors (0 bytes; the header length "
     "alone takes 8)", 0},
    {"truncated_in_length", VALID_HEADER, 8, -1, 7,
     "PATH: error: file is too short for safetensors (7 bytes; the header length "
     "alone takes 8)", 0},
    {"truncated_in_header", VALID_HEADER, 8, -1, 8 + 20,
     "PATH: error: header length 54 runs past the end of the file (20 bytes follow the length)", 0},
    {"truncated_in_data", VALID_HEADER, 8, -1, 8 + 54 + 3,
     "PATH: error: tensor 'a': data_offsets [0, 8] run past the end of the data "
     "buffer (3 bytes)", 0},
    {"length_over_limit", VALID_HEADER, 8, 100000001, -1,
     "PATH: error: header length 100000001 exceeds the limit of 100000000 bytes", 0},
    {"length_past_file", VALID_HEADER, 8, 4096, -1,
     "PATH: error: header length 4096 runs past the end of the file (62 bytes follow "
     "the length)", 0},
    {"length_huge", VALID_HEADER, 8, INT64_MAX, -1,
     "PATH: error: header length 9223372036854775807 exceeds the limit of 100000000 bytes", 0},

    /* offsets that do not tile the data buffer */
    {"overlap", "{" T("a", "F32", "[2]", "0", "8") "," T("b", "F32", "[2]", "4", "12") "}", 12, -1,
     -1, "PATH: error: tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]", 0},
    {"same_range", "{" T("a", "F32", "[2]", "0", "8") "," T("b", "I32", "[2]", "0", "8") "}", 8, -1,
     -1, "PATH: error: tensor 'b': data_offsets [0, 8] overlap tensor 'a' [0, 8]", 0},
    {"gap", "{" T("a", "F32", "[2]", "0", "8") "," T("b", "F32", "[2]", "12", "20") "}", 20, -1, -1,
     "PATH: error: tensor 'b': data_offsets [12, 20] leave a gap after tensor 'a', "
     "which ends at 8", 0},
    {"gap_at_start", "{" T("a", "F32", "[2]", "4", "12") "}", 12, -1, -1,
     "PATH: error: tensor 'a': data_offsets [4, 12] leave a gap at the start of the "
     "data buffer", 0},
    {"trailing_data", "{" T("a", "F32", "[2]", "0", "8") "}", 12, -1, -1,
     "PATH: error: the data buffer has 12 bytes but the tensors cover only 8", 0},
    {"data_past_end", "{" T("a", "F32", "[2]", "0", "8") "," T("b", "F32", "[2]", "8", "16") "}",
     12, -1, -1,
     "PATH: error: tensor 'b': data_offsets [8, 16] run past the end of the data buffer (12 "
     "bytes)", 0},
    {"offsets_reversed", "{" T("a", "F32", "[0]", "8", "0") "}", 8, -1, -1,
     "PATH: error: tensor 'a': data_offsets [8, 0] end before they begin", 0},
    {"offset_negative", "{" T("a", "F32", "[2]", "-1", "7") "}", 8, -1, -1,
     "PATH: error: tensor 'a': data offset -1 is negative", 0},
    {"offsets_three", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8, -1,
     -1, "PATH: error: tensor 'a': data_offsets must be an array of two integers", 0},

    /* shapes */
    {"negative_dim", "{" T("a", "F32", "[-2]", "0", "8") "}", 8, -1, -1,
     "PATH: error: tensor 'a': shape dimension -2 is negative", 0},
    {"fractional_dim", "{" T("a", "F32", "[2.0]", "0", "8") "}", 8, -1, -1,
     "PATH: error: tensor 'a': shape dimension 2.0 is not an integer", 0},
    {"exponent_dim", "{" T("a", "F32", "[2e0]", "0", "8") "}", 8, -1, -1,
     "PATH: error: tensor 'a': shape dimension 2e0 is not an integer", 0},
    {"dim_above_int64", "{" T("a", "U8", "[9223372036854775808]", "0", "8") "}", 8, -1, -1,
     "PATH: error: tensor 'a': shape dimension 9223372036854775808 is too large", 0},
    {"dim_above_uint64", "{" T("a", "U8", "[18446744073709551616]", "0", "8") "}", 8, -1, -1,
     "PATH: error: tensor 'a': shape dimension 18446744073709551616 is too large", 0},
    {"numel_overflow", "{" T("a", "U8", "[4294967296,4294967296,2]", "0", "8") "}", 8, -1, -1,
     "PATH: error: tensor 'a': the element count of shape [4294967296,4294967296,2] overflows", 0},
    /* 2^62 elements of 4 bytes: the count fits, the size does not (and must not wrap to 0) */
    {"bytes_overflow", "{" T("a", "F32", "[4611686018427387904]", "0", "0") "}", 0, -1, -1,
     "PATH: error: tensor 'a': the byte size of shape [4611686018427387904] overflows", 0},
    {"wrapping_product", "{" T("a", "F32", "[4294967296,4294967296]", "0", "0") "}", 0, -1, -1,
     "PATH: error: tensor 'a': the element count of shape [4294967296,4294967296] overflows", 0},
    {"size_mismatch", "{" T("a", "F32", "[3]", "0", "8") "}", 8, -1, -1,
     "PATH: error: tensor 'a': data_offsets [0, 8] hold 8 bytes but shape [3] of dtype F32 "
     "needs 12", 0},
    {"subbyte_partial", "{" T("a", "F4", "[3]", "0", "2") "}", 2, -1, -1,
     "PATH: error: tensor 'a': shape [3] of dtype F4 is not a whole number of bytes", 0},
    {"shape_not_array", "{" T("a", "F32", "2", "0", "8") "}", 8, -1, -1,
     "PATH: error: tensor 'a': shape must be an array", 0},

    /* dtypes and fields */
    {"unknown_dtype", "{" T("a", "F33", "[2]", "0", "8") "}", 8, -1, -1,
     "PATH: error: tensor 'a': unknown dtype \"F33\"", 0},
    {"lowercase_dtype", "{" T("a", "f32", "[2]", "0", "8") "}", 8, -1, -1,
     "PATH: error: tensor 'a': unknown dtype \"f32\"", 0},
    {"dtype_not_string", "{\"a\":{\"dtype\":32,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, -1, -1,
     "PATH: error: tensor 'a': dtype must be a string", 0},
    {"missing_offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, -1, -1,
     "PATH: error: tensor 'a': missing field \"data_offsets\"", 0},
    {"unknown_field",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"stride\":[1]}}", 8, -1, -1,
     "PATH: error: tensor 'a': unknown field \"stride\"", 0},
    {"entry_not_object", "{\"a\":[1,2]}", 0, -1, -1,
     "PATH: error: tensor 'a': entry must be an object", 0},
    {"metadata_not_strings", "{\"__metadata__\":{\"format\":1}}", 0, -1, -1,
     "PATH: error: __metadata__ value of \"format\" must be a string", 0},

    /* JSON */
    {"duplicate_key", "{" T("a", "F32", "[2]", "0", "8") "," T("a", "F32", "[2]", "8", "16") "}",
     16, -1, -1,
     "PATH: error: header is not valid JSON: duplicate key \"a\" (byte 54 of the header)", 0},
    {"duplicate_field", "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],"
                        "\"data_offsets\":[0,8]}}", 8, -1, -1,
     "PATH: error: header is not valid JSON: duplicate key \"dtype\" (byte 20 of the header)", 0},
    {"not_json", "hello, world", 0, -1, -1,
     "PATH: error: header is not a JSON object (it must start with '{')", 0},
    {"array_header", "[1,2]", 0, -1, -1,
     "PATH: error: header is not a JSON object (it must start with '{')", 0},
    {"unterminated_object", "{\"a\":{\"dtype\":\"F32\"", 0, -1, -1,
     "PATH: error: header is not valid JSON: expected ',' or '}' (byte 19 of the header)", 0},
    {"missing_value", "{\"a\": }", 0, -1, -1,
     "PATH: error: header is not valid JSON: expected a value (byte 6 of the header)", 0},
    {"trailing_comma", "{\"a\":{\"dtype\":\"F32\",}}", 0, -1, -1,
     "PATH: error: header is not valid JSON: expected a string key (byte 20 of the header)", 0},
    {"unquoted_key", "{a:1}", 0, -1, -1,
     "PATH: error: header is not valid JSON: expected a string key (byte 1 of the header)", 0},
    {"literal_true", "{\"a\":true}", 0, -1, -1,
     "PATH: error: header is not valid JSON: true, false and null are not allowed (byte 5 of the "
     "header)", 0},
    {"leading_zero", "{" T("a", "F32", "[02]", "0", "8") "}", 8, -1, -1,
     "PATH: error: header is not valid JSON: invalid number (leading zero) (byte 29 of the "
     "header)", 0},
    /* nesting beyond the schema is refused where it appears */
    {"nested_metadata", "{\"__metadata__\":{\"k\":[[[\"v\"]]]}}", 0, -1, -1,
     "PATH: error: __metadata__ value of \"k\" must be a string", 0},
    {"nested_shape", "{" T("a", "F32", "[[2]]", "0", "8") "}", 8, -1, -1,
     "PATH: error: tensor 'a': shape must hold integers", 0},
    {"too_many_dims",
     "{" T("a", "U8", "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
           "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", "0", "1") "}",
     1, -1, -1, "PATH: error: tensor 'a': shape has more than 64 dimensions", 0},
    {"duplicate_metadata", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, -1, -1,
     "PATH: error: header is not valid JSON: duplicate key \"__metadata__\" (byte 19 of the "
     "header)", 0},
    {"missing_colon", "{\"a\" {}}", 0, -1, -1,
     "PATH: error: header is not valid JSON: expected ':' (byte 5 of the header)", 0},
    {"missing_comma", "{" T("a", "F32", "[2 2]", "0", "8") "}", 8, -1, -1,
     "PATH: error: header is not valid JSON: expected ',' or ']' (byte 31 of the header)", 0},
    {"text_after_object", "{}  x", 0, -1, -1,
     "PATH: error: header is not valid JSON: unexpected text after the header object (byte 4 of "
     "the header)", 0},
    {"nul_padding", "{}\0\0\0\0\0\0", 0, -1, -1,
     "PATH: error: header is not valid JSON: unexpected text after the header object (byte 2 of "
     "the header)",
     8},
    {"unterminated_string", "{\"a", 0, -1, -1,
     "PATH: error: header is not valid JSON: unterminated string (byte 1 of the header)", 0},
    {"bad_escape", "{\"a\\q\":{}}", 0, -1, -1,
     "PATH: error: header is not valid JSON: invalid escape in a string (byte 3 of the header)", 0},
    {"nul_escape", "{\"a\\u0000\":{}}", 0, -1, -1,
     "PATH: error: header is not valid JSON: NUL character in a string (byte 3 of the header)", 0},
    {"lone_surrogate", "{\"a\\ud800\":{}}", 0, -1, -1,
     "PATH: error: header is not valid JSON: unpaired surrogate in a \\u escape (byte 3 of the "
     "header)", 0},
    {"raw_newline_in_key", "{\"a\nb\":{}}", 0, -1, -1,
     "PATH: error: header is not valid JSON: control character in a string (byte 3 of the "
     "header)", 0},
    {"not_utf8", "{\"a\xff\":{}}", 0, -1, -1,
     "PATH: error: header is not valid UTF-8 (byte 3 of the header)", 0},
    {"overlong_utf8", "{\"\xc0\xaf\":{}}", 0, -1, -1,
     "PATH: error: header is not valid UTF-8 (byte 2 of the header)", 0},
    {"utf16_surrogate_bytes", "{\"\xed\xa0\x80\":{}}", 0, -1, -1,
     "PATH: error: header is not valid UTF-8 (byte 2 of the header)", 0},
};

const size_t malformed_case_count = sizeof malformed_cases / sizeof malformed_cases[0];

unsigned char *malformed_build(const malformed_case *c, size_t *len)
{
    size_t header_len = c->header_bytes ? c->header_bytes : strlen(c->header);
    size_t total = 8 + header_len + c->data_len;
    unsigned char *bytes = malloc(total ? total : 1);
    if (!bytes)
        abort();
    uint64_t prefix = c->length < 0 ? (uint64_t)header_len : (uint64_t)c->length;
    for (int i = 0; i < 8; i++)
        bytes[i] = (unsigned char)(prefix >> (8 * i));
    memcpy(bytes + 8, c->header, header_len);
    for (size_t i = 0; i < c->data_len; i++)
        bytes[8 + header_len + i] = (unsigned char)(i * 7 + 1);
    *len = c->keep >= 0 && (size_t)c->keep < total ? (size_t)c->keep : total;
    return bytes;
}
