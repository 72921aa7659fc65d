/* A graph's value names: see ir/names.h. */
#include "ir/names.h"

#include "base/bigmem.h"
#include "base/check.h"
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

/* A slot: the tag (4 bytes, 0 when the slot is empty) and the value's address (6 bytes: the low
 * 48 bits, all an address of user space has), each read and written as the same integer type, so
 * the layout holds on either byte order. */
static uint32_t tag_at(const ir_names *m, size_t i)
{
    uint32_t t;
    memcpy(&t, m->slots + i * IR_NAME_SLOT, 4);
    return t;
}

static void put(ir_names *m, size_t i, uint32_t tag, const struct ir_value *v)
{
    unsigned char *p = m->slots + i * IR_NAME_SLOT;
    uint64_t a = (uint64_t)(uintptr_t)v;
    uint32_t lo = (uint32_t)a;
    uint16_t hi = (uint16_t)(a >> 32);
    memcpy(p, &tag, 4);
    memcpy(p + 4, &lo, 4);
    memcpy(p + 8, &hi, 2);
}

static void move(ir_names *m, size_t to, size_t from)
{
    memcpy(m->slots + to * IR_NAME_SLOT, m->slots + from * IR_NAME_SLOT, IR_NAME_SLOT);
}

/* The table grows past 3/4 full, to half full; a reserve leaves it 7/10 full (or less: resize). */
static bool over(size_t cap, size_t len)
{
    return len > cap / 4 * 3 + cap % 4 * 3 / 4;
}

/* The name's hash, high 32 bits, never 0: 8 bytes a step (the last step's 8 bytes overlap the one
 * before; a name under 8 bytes is read in two overlapping halves, or by its bytes), then a
 * finalizer that spreads every byte over the high bits (the slot's place is taken from them). The
 * length is hashed too, so that the overlaps do not make names of different lengths agree. */
static uint32_t tag_of(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * 0xbf58476d1ce4e5b9ull);
    uint64_t w = 0;
    if (len >= 8) {
        const char *last = s + len - 8;
        for (; s < last; s += 8) {
            memcpy(&w, s, 8);
            h = (h ^ w) * 0x94d049bb133111ebull;
            h ^= h >> 29;
        }
        memcpy(&w, last, 8);
    } else if (len >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + len - 4, 4);
        w = (uint64_t)a << 32 | b;
    } else if (len) {
        w = (uint64_t)(unsigned char)s[0] << 16 | (uint64_t)(unsigned char)s[len / 2] << 8 |
            (unsigned char)s[len - 1];
    }
    h ^= w;
    h ^= h >> 33; /* murmur3's fmix64 */
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    uint32_t t = (uint32_t)(h >> 32);
    return t ? t : 1;
}

/* Where a probe for tag starts: the tag scaled to [0, cap). */
static size_t home(uint32_t tag, size_t cap)
{
    return (size_t)(((uint64_t)tag * cap) >> 32);
}

/* v's name is the len bytes of key (a name is a C string: its bytes up to the NUL; a key with a
 * NUL in it names nothing). Read only as far as both agree. */
static bool named(const struct ir_value *v, const char *key, size_t len)
{
    const char *name = v->name;
    for (size_t i = 0; i < len; i++)
        if (name[i] != key[i] || !name[i])
            return false;
    return name[len] == '\0';
}

/* The map changes: what a pass found no longer stands. */
static void drop_seen(ir_names *m)
{
    if (m->seen) {
        free(m->seen);
        m->seen = NULL;
        m->seen_of = NULL;
        m->nseen = 0;
    }
}

void ir_names_free(ir_names *m)
{
    drop_seen(m);
    bm_free(m->slots, m->cap * IR_NAME_SLOT);
    m->slots = NULL;
    m->cap = m->len = 0;
}

void ir_names_keep_seen(ir_names *m, bool *seen, struct ir_value *const *values, size_t n)
{
    drop_seen(m);
    m->seen = seen;
    m->seen_of = values;
    m->nseen = n;
}

bool *ir_names_take_seen(ir_names *m, struct ir_value *const *values, size_t n)
{
    bool *seen = m->seen && m->seen_of == (const void *)values && m->nseen == n ? m->seen : NULL;
    if (seen)
        m->seen = NULL;
    drop_seen(m);
    return seen;
}

/* Slot i, counted on from the end to the start (any i: the table may be smaller than i - cap). */
static size_t wrap(const ir_names *m, size_t i)
{
    while (i >= m->cap)
        i -= m->cap;
    return i;
}

static size_t next(const ir_names *m, size_t i)
{
    return i + 1 < m->cap ? i + 1 : 0;
}

/* A slot found empty from tag's home on (len < cap: there is one). */
static size_t free_slot(const ir_names *m, uint32_t tag)
{
    size_t i = home(tag, m->cap);
    while (tag_at(m, i))
        i = next(m, i);
    return i;
}

/* Rehomes the entries in a table of cap slots or more, by their stored tags (no name is read). A
 * table of huge pages takes all the slots its last page holds. */
static void resize(ir_names *m, size_t cap)
{
    FR_CHECK(cap > m->len && cap <= UINT32_MAX / 2 && cap <= SIZE_MAX / IR_NAME_SLOT);
    drop_seen(m);
    size_t bytes = cap * IR_NAME_SLOT;
    if (bytes >= BM_HUGE)
        cap = (bytes + BM_HUGE - 1) / BM_HUGE * BM_HUGE / IR_NAME_SLOT;
    ir_names to = {.slots = bm_alloc(cap * IR_NAME_SLOT), .cap = cap, .len = m->len};
    FR_CHECK(to.slots != NULL);
    for (size_t i = 0; i < m->cap; i++) {
        uint32_t tag = tag_at(m, i);
        if (tag)
            memcpy(to.slots + free_slot(&to, tag) * IR_NAME_SLOT, m->slots + i * IR_NAME_SLOT,
                   IR_NAME_SLOT);
    }
    ir_names_free(m);
    *m = to;
}

void ir_names_reserve(ir_names *m, size_t n)
{
    if (over(m->cap, n)) {
        FR_CHECK(n <= UINT32_MAX / 4);
        resize(m, n * 10 / 7 > 16 ? n * 10 / 7 : 16);
    }
}

void ir_names_prefetch(const ir_names *m, const char *name, size_t len)
{
    if (m->cap)
        __builtin_prefetch(m->slots + home(tag_of(name, len), m->cap) * IR_NAME_SLOT);
}

/* The slot holding name, or the empty one where the probe ends. */
static size_t find(const ir_names *m, const char *name, size_t len, uint32_t tag)
{
    size_t i = home(tag, m->cap);
    for (;;) {
        uint32_t t = tag_at(m, i);
        if (!t || (t == tag && named(ir_names_value_at(m, i), name, len)))
            return i;
        i = next(m, i);
    }
}

struct ir_value *ir_names_get(const ir_names *m, const char *name, size_t len)
{
    if (!m->cap || len > UINT32_MAX) /* no name that long is stored */
        return NULL;
    return ir_names_value_at(m, find(m, name, len, tag_of(name, len)));
}

bool ir_names_claim(ir_names *m, const char *name, size_t len, size_t *at)
{
    FR_CHECK(len <= UINT32_MAX);
    if (over(m->cap, m->len + 1)) {
        FR_CHECK(m->len <= UINT32_MAX / 4);
        resize(m, (m->len + 1) * 2 > 16 ? (m->len + 1) * 2 : 16);
    }
    uint32_t tag = tag_of(name, len);
    size_t i = find(m, name, len, tag);
    if (tag_at(m, i))
        return false;
    drop_seen(m);
    put(m, i, tag, NULL);
    m->len++;
    *at = i;
    return true;
}

void ir_names_set(ir_names *m, size_t at, struct ir_value *v)
{
    FR_CHECK((uint64_t)(uintptr_t)v >> 48 == 0); /* a user-space address: see put */
    drop_seen(m);
    put(m, at, tag_at(m, at), v);
}

struct ir_value *ir_names_new_value(ar_arena *arena, const char *name, size_t len)
{
    FR_CHECK(len < SIZE_MAX - sizeof(ir_value));
    ir_value *v = ar_alloc(arena, sizeof *v + len + 1);
    char *copy = (char *)(v + 1);
    if (len)
        memcpy(copy, name, len);
    v->name = copy; /* (its NUL is the arena's zero) */
    return v;
}

/* Empties slot i, moving back each entry after it whose probe passed through i (backward-shift
 * deletion: no tombstones, so probes stay as short as the live names make them). */
static void remove_at(ir_names *m, size_t i)
{
    uint32_t tag;
    for (size_t j = next(m, i); (tag = tag_at(m, j)) != 0; j = next(m, j)) {
        size_t h = home(tag, m->cap);
        /* the entry at j may fill i when i lies on its probe, from h to j (cyclically) */
        size_t dist_h = j >= h ? j - h : j + m->cap - h;
        size_t dist_i = j >= i ? j - i : j + m->cap - i;
        if (dist_h >= dist_i) {
            move(m, i, j);
            i = j;
        }
    }
    put(m, i, 0, NULL);
    m->len--;
}

void ir_names_remove(ir_names *m, const struct ir_value *v)
{
    if (!m->cap)
        return;
    drop_seen(m);
    uint32_t tag = tag_of(v->name, strlen(v->name));
    for (size_t i = home(tag, m->cap); tag_at(m, i); i = next(m, i))
        if (ir_names_value_at(m, i) == v) {
            remove_at(m, i);
            return;
        }
}

void ir_names_remove_dead(ir_names *m, struct ir_value *const *values, size_t n, const bool *live,
                          bool *seen)
{
    drop_seen(m);
    if (!m->len)
        return;
    /* the pass starts after a slot empty before it (a probe never crosses one), so that each
     * entry's probe, from its home to its slot, lies in what the pass has already settled */
    size_t start = 0;
    while (tag_at(m, start))
        start++;
    /* the slots are read in order, the values they point to and the entries of values and live
     * at their ids at random: a value is prefetched 2 * AHEAD slots ahead, its entries AHEAD slots
     * ahead (by its id, loaded by then; a slot ahead is not moved before the pass reaches it) */
    enum { AHEAD = 16 };
    bool moved = false; /* a slot of this run of full slots was emptied: the rest may move back */
    for (size_t k = 1; k <= m->cap; k++) {
        size_t i = start + k < m->cap ? start + k : start + k - m->cap;
        const ir_value *ahead = ir_names_value_at(m, wrap(m, i + 2 * AHEAD));
        if (ahead)
            __builtin_prefetch(&ahead->id);
        ahead = ir_names_value_at(m, wrap(m, i + AHEAD));
        if (ahead && ahead->id < n) {
            __builtin_prefetch(&values[ahead->id]);
            __builtin_prefetch(&live[ahead->id]);
        }
        uint32_t tag = tag_at(m, i);
        if (!tag) {
            moved = false;
            continue;
        }
        const ir_value *v = ir_names_value_at(m, i);
        bool in_list = v->id < n && values[v->id] == v;
        if (in_list && !live[v->id]) {
            put(m, i, 0, NULL);
            m->len--;
            moved = true;
            continue;
        }
        if (in_list && seen)
            seen[v->id] = true;
        if (moved) {
            put(m, i, 0, NULL);
            put(m, free_slot(m, tag), tag, v); /* at i or before it */
        }
    }
}
