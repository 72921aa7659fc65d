/* The apply report, as text for people or one JSON object (docs/matcher.md, "The report"). */
#include "rewrite/internal.h"

#include "base/check.h"
#include "base/json.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void json_string(FILE *out, const char *s)
{
    char *quoted = json_quote(s);
    fputs(quoted, out);
    free(quoted);
}

/* The lists of refusals and near misses (250k entries at a million nodes) are written through a
 * buffer of their own, strings escaped in place: stdio's per-call locking and json_quote's
 * malloc per string were most of printing them. */
typedef struct {
    FILE *file;
    size_t len;
    char buf[1 << 16];
} jbuf;

static jbuf *jb_open(FILE *file)
{
    jbuf *b = malloc(sizeof *b);
    FR_CHECK(b != NULL);
    b->file = file;
    b->len = 0;
    return b;
}

static void jb_flush(jbuf *b)
{
    if (b->len)
        fwrite(b->buf, 1, b->len, b->file);
    b->len = 0;
}

static void jb_close(jbuf *b)
{
    jb_flush(b);
    free(b);
}

static void jb_write(jbuf *b, const char *s, size_t n)
{
    if (n > sizeof b->buf - b->len) {
        jb_flush(b);
        if (n > sizeof b->buf) {
            fwrite(s, 1, n, b->file);
            return;
        }
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
}

#define JB_LIT(b, literal) jb_write(b, literal, sizeof literal - 1)

/* A JSON string as json_quote writes it: quotes, backslashes, \n, \t and the other control
 * characters escaped, every other byte as it is. */
static void jb_string(jbuf *b, const char *s)
{
    JB_LIT(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s;;) {
        const unsigned char *run = p;
        while (*p >= 0x20 && *p != '"' && *p != '\\')
            p++;
        jb_write(b, (const char *)run, (size_t)(p - run));
        if (!*p)
            break;
        switch (*p) {
        case '"': JB_LIT(b, "\\\""); break;
        case '\\': JB_LIT(b, "\\\\"); break;
        case '\n': JB_LIT(b, "\\n"); break;
        case '\t': JB_LIT(b, "\\t"); break;
        default: {
            char esc[8];
            jb_write(b, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", *p));
        }
        }
        p++;
    }
    JB_LIT(b, "\"");
}

static void json_item(jbuf *b, size_t i, const rw_refusal *item)
{
    if (i)
        JB_LIT(b, ",\n    {\"rule\": ");
    else
        JB_LIT(b, "\n    {\"rule\": ");
    jb_string(b, item->rule);
    JB_LIT(b, ", \"node\": ");
    jb_string(b, item->node);
    JB_LIT(b, ", \"reason\": ");
    jb_string(b, item->reason);
    JB_LIT(b, "}");
}

static void json_list(FILE *out, const char *key, const rw_refusal *items, size_t n)
{
    fprintf(out, ",\n  \"%s\": [", key);
    jbuf *b = jb_open(out);
    for (size_t i = 0; i < n; i++)
        json_item(b, i, &items[i]);
    jb_close(b);
    fputs(n ? "\n  ]" : "]", out);
}

/* The refusals, each made text here. */
static void json_refused(FILE *out, const rw_report *r)
{
    char buf[RW_REASON_SIZE];
    fputs(",\n  \"refused\": [", out);
    jbuf *b = jb_open(out);
    for (size_t i = 0; i < r->refused.len; i++) {
        rw_refusal f = rw_report_refusal(r, i, buf);
        json_item(b, i, &f);
    }
    jb_close(b);
    fputs(r->refused.len ? "\n  ]" : "]", out);
}

/* ---- overlaps: a match refused because a match ranked before it took some of its nodes ---- */

/* The overlap check's records (driver.c, check_overlap) name the rule that took the nodes ('?'
 * when none did); a value an earlier rewrite removed names none. */
static const char TAKEN_BY[] = "already fused by rule '";

/* The rule that took the nodes, as its length and text, or "an earlier rewrite". */
static const char *taken_by(const rw_report *r, const rw_refusal_rec *f, int *len)
{
    const char *at = NULL;
    if (f->code == RW_REASON_OVERLAP_SHORTER || f->code == RW_REASON_OVERLAP_TAKEN)
        at = f->owner >= 0 ? r->rule_names[f->owner] : "?";
    else if (f->code == RW_REASON_TEXT && (at = strstr(f->name, TAKEN_BY)))
        at += sizeof TAKEN_BY - 1;
    if (at) {
        const char *end = strchr(at, '\'');
        *len = end ? (int)(end - at) : (int)strlen(at);
        return at;
    }
    *len = (int)strlen("an earlier rewrite");
    return "an earlier rewrite";
}

/* The index of the pair (rule, by) among the n of p, or n. The newest first: the refusals come
 * rule by rule, mostly of the last pair seen. The same rule's name is one string: its address is
 * compared first. */
static size_t find_pair(const rw_overlap_count *p, size_t n, const char *rule, const char *by,
                        int len)
{
    for (size_t k = n; k-- > 0;)
        if ((p[k].rule == rule || strcmp(p[k].rule, rule) == 0) && p[k].by_len == len &&
            (p[k].by == by || strncmp(p[k].by, by, (size_t)len) == 0))
            return k;
    return n;
}

size_t rw_report_count_overlap(rw_report *r, const rw_refusal_rec *f)
{
    int len;
    const char *by = taken_by(r, f, &len), *rule = r->rule_names[f->rule];
    size_t k = find_pair(r->overlaps, r->noverlaps, rule, by, len);
    if (k == r->noverlaps) {
        if (k == r->overlaps_cap) { /* a few pairs: the arena keeps the old array, as small */
            size_t cap = k ? 2 * k : 8;
            rw_overlap_count *grown = ar_alloc_array(r->arena, cap, sizeof *grown);
            if (k)
                memcpy(grown, r->overlaps, k * sizeof *grown);
            r->overlaps = grown;
            r->overlaps_cap = cap;
        }
        if (f->code == RW_REASON_TEXT) /* `by` points into the caller's text */
            by = ar_strndup(r->arena, by, (size_t)len);
        r->overlaps[r->noverlaps++] = (rw_overlap_count){rule, by, len, 0};
    }
    r->overlaps[k].count++;
    return k;
}

/* One entry per (winner, refused rule) pair: those counted (count_overlaps), then those of the
 * records, in order of first appearance (a few: the list grows as they appear, not sized for
 * every refusal). A rewrite counts all its overlaps or records all, so the order is the one the
 * records would give either way. */
static size_t count_overlaps(const rw_report *r, rw_overlap_count **out)
{
    VEC(rw_overlap_count) pairs = {0};
    vec_reserve(&pairs, r->noverlaps + 8);
    for (size_t i = 0; i < r->noverlaps; i++)
        vec_push(&pairs, r->overlaps[i]);
    for (size_t i = 0; i < r->refused.len; i++) {
        const rw_refusal_rec *f = &r->refused.items[i];
        if (!rw_refusal_is_overlap(f))
            continue;
        int len;
        const char *by = taken_by(r, f, &len), *rule = r->rule_names[f->rule];
        size_t k = find_pair(pairs.items, pairs.len, rule, by, len);
        if (k == pairs.len)
            vec_push(&pairs, ((rw_overlap_count){rule, by, len, 0}));
        pairs.items[k].count++;
    }
    *out = pairs.items;
    return pairs.len;
}

static void json_overlaps(FILE *out, const rw_report *r)
{
    rw_overlap_count *pairs;
    size_t n = count_overlaps(r, &pairs);
    fputs(",\n  \"overlaps\": [", out);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",\n    {\"rule\": " : "\n    {\"rule\": ", out);
        json_string(out, pairs[i].rule);
        fputs(", \"by\": ", out);
        char by[256];
        snprintf(by, sizeof by, "%.*s", pairs[i].by_len, pairs[i].by);
        json_string(out, by);
        fprintf(out, ", \"count\": %zu}", pairs[i].count);
    }
    fputs(n ? "\n  ]" : "]", out);
    free(pairs);
}

static void print_json(const rw_report *r, FILE *out, bool explain)
{
    fprintf(out,
            "{\n  \"nodes_before\": %zu,\n  \"nodes_after\": %zu,\n  \"kernels_before\": %zu,\n"
            "  \"kernels_after\": %zu,\n  \"bytes_before\": %" PRId64 ",\n  \"bytes_after\": %" PRId64
            ",\n  \"rounds\": %u,\n  \"round_limit_reached\": %s,\n  \"folded_bytes\": %" PRId64
            ",\n  \"removed_unread\": %zu,\n  \"fired\": {",
            r->before.nodes, r->after.nodes, r->before.kernels, r->after.kernels, r->before.bytes,
            r->after.bytes, r->rounds, r->round_limit ? "true" : "false", r->folded_bytes,
            r->removed_unread);
    for (uint32_t i = 0; i < r->nrules; i++) {
        fputs(i ? ",\n    " : "\n    ", out);
        json_string(out, r->rule_names[i]);
        fprintf(out, ": %u", r->fired[i]);
    }
    fputs(r->nrules ? "\n  }" : "}", out);
    json_refused(out, r);
    json_overlaps(out, r);
    if (explain)
        json_list(out, "near_misses", r->near_misses.items, r->near_misses.len);
    fputs("\n}\n", out);
}

enum { TEXT_LIST_LIMIT = 20 };

/* The reason's check: the text before the first ':' ("overlap", "fan-out", "kernel", ...). */
static size_t reason_kind(const char *reason)
{
    size_t n = strcspn(reason, ":");
    return reason[n] ? n : 0;
}

typedef struct {
    const char *text; /* a reason of this kind */
    size_t len, count;
} reason_count;

/* A list of refusals: how many of each kind (with `kinds`), then each (the first TEXT_LIST_LIMIT,
 * unless all). */
static void text_list(FILE *out, const char *title, const rw_refusal *all_items, size_t all_n,
                      bool all, bool by_kind)
{
    const rw_refusal **items = calloc(all_n ? all_n : 1, sizeof *items);
    FR_CHECK(items != NULL);
    size_t n = 0;
    for (size_t i = 0; i < all_n; i++)
        items[n++] = &all_items[i];
    reason_count kinds[16];
    size_t nkinds = 0, other = 0;
    for (size_t i = 0; by_kind && i < n; i++) {
        size_t len = reason_kind(items[i]->reason), k = 0;
        while (k < nkinds && !(kinds[k].len == len && strncmp(kinds[k].text, items[i]->reason, len) == 0))
            k++;
        if (k == nkinds && (len == 0 || nkinds == FR_COUNT_OF(kinds))) {
            other++;
            continue;
        }
        if (k == nkinds)
            kinds[nkinds++] = (reason_count){items[i]->reason, len, 0};
        kinds[k].count++;
    }
    fprintf(out, "%s: %zu", title, n);
    for (size_t k = 0; k < nkinds; k++)
        fprintf(out, "%s%.*s %zu", k ? ", " : " (", (int)kinds[k].len, kinds[k].text, kinds[k].count);
    if (other)
        fprintf(out, "%sother %zu", nkinds ? ", " : " (", other);
    fputs(nkinds || other ? ")\n" : "\n", out);
    size_t shown = all || n <= TEXT_LIST_LIMIT ? n : TEXT_LIST_LIMIT;
    for (size_t i = 0; i < shown; i++)
        fprintf(out, "  %s at %s: %s\n", items[i]->rule, items[i]->node, items[i]->reason);
    if (shown < n)
        fprintf(out, "  ... and %zu more (--explain or --report json lists them all)\n", n - shown);
    free(items);
}


/* Overlaps are no failure: a match ranked first took the nodes. One line per pair of rules; each
 * one only with --explain. */
static void text_overlaps(FILE *out, const rw_report *r, bool explain)
{
    rw_overlap_count *pairs;
    size_t n = count_overlaps(r, &pairs), total = 0;
    for (size_t i = 0; i < n; i++)
        total += pairs[i].count;
    if (total) {
        fprintf(out, "overlaps: %zu (a match ranked first took the nodes%s)\n", total,
                explain ? "" : "; --explain lists each");
        for (size_t i = 0; i < n; i++)
            fprintf(out, "  %.*s superseded %s %zu time%s\n", pairs[i].by_len, pairs[i].by,
                    pairs[i].rule, pairs[i].count, pairs[i].count == 1 ? "" : "s");
    }
    free(pairs);
    char buf[RW_REASON_SIZE];
    if (explain && total)
        for (size_t i = 0; i < r->refused.len; i++)
            if (rw_refusal_is_overlap(&r->refused.items[i])) {
                rw_refusal f = rw_report_refusal(r, i, buf);
                fprintf(out, "  %s at %s: %s\n", f.rule, f.node, f.reason);
            }
}

/* The refusals that are no overlap (a match ranked first took the nodes: no failure), as text:
 * their records hold it. */
static void text_refused(FILE *out, const rw_report *r, bool explain)
{
    size_t n = 0; /* the list sized for these, not for the overlaps too */
    for (size_t i = 0; i < r->refused.len; i++)
        n += !rw_refusal_is_overlap(&r->refused.items[i]);
    rw_refusal *items = calloc(n ? n : 1, sizeof *items);
    FR_CHECK(items != NULL);
    n = 0;
    for (size_t i = 0; i < r->refused.len; i++)
        if (!rw_refusal_is_overlap(&r->refused.items[i]))
            items[n++] = rw_report_refusal(r, i, NULL);
    text_list(out, "refused", items, n, explain, true);
    free(items);
}

static void print_text(const rw_report *r, FILE *out, bool explain)
{
    fprintf(out, "nodes    %zu -> %zu\n", r->before.nodes, r->after.nodes);
    fprintf(out, "kernels  %zu -> %zu\n", r->before.kernels, r->after.kernels);
    fprintf(out, "bytes    %" PRId64 " -> %" PRId64 "\n", r->before.bytes, r->after.bytes);
    fprintf(out, "rounds   %u%s\n", r->rounds,
            r->round_limit ? " (the limit: rules may still fire)" : "");
    if (r->folded_bytes)
        fprintf(out, "folded   %" PRId64 " bytes of new constants\n", r->folded_bytes);
    if (r->removed_unread)
        fprintf(out, "unread   %zu node%s removed\n", r->removed_unread,
                r->removed_unread == 1 ? "" : "s");
    fputs("fired:\n", out);
    for (uint32_t i = 0; i < r->nrules; i++)
        if (r->fired[i])
            fprintf(out, "  %-24s %u\n", r->rule_names[i], r->fired[i]);
    text_refused(out, r, explain);
    text_overlaps(out, r, explain);
    if (explain)
        text_list(out, "near misses", r->near_misses.items, r->near_misses.len, true, false);
}

void rw_report_print(const rw_report *report, FILE *out, rw_report_format format, bool explain)
{
    if (format == RW_REPORT_JSON)
        print_json(report, out, explain);
    else
        print_text(report, out, explain);
}
