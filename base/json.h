/* JSON text written by fuserule (the apply report, safetensors headers). */
#ifndef FUSERULE_BASE_JSON_H
#define FUSERULE_BASE_JSON_H

/* s as a JSON string, quotes included: '"' and '\\' escaped, \n and \t by their short escapes,
 * other control characters as \u00XX, everything else (UTF-8 included) as it is. malloc'd; the
 * caller frees. */
char *json_quote(const char *s);

#endif
