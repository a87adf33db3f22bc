/* One native pass over a block for the scanner (read/scanner.py, NativeFinder).
 *
 * Optional: built by setuptools when a C compiler is there (setup.py marks the extension
 * optional); without it the scanner uses its other engines and gives the same lines.
 *
 * Matcher(literals) finds, in buf[lo:hi], the first occurrence of each literal in each
 * line that holds one (what scanner.FindFinder.pairs gives, one bytes.find pass per
 * literal), in one pass over the bytes:
 *   - every literal has a 4-byte anchor (the window of it least likely to occur in a log,
 *     by a fixed byte-frequency guess; a 3-byte literal's anchor is the literal with any
 *     4th byte); a bitmap of hashed anchors is tested at every position and a hit is
 *     verified exactly (anchor key, then memcmp of the whole literal, within [lo, hi));
 *   - in the same pass, per 64-byte stride, the first CR, ESC and NUL of each line
 *     (SSE2 where there is SSE2).
 * newline_bits(buf, lo, bits, k0, k1) sets the bits of the newlines of buf[lo+k0:lo+k1]
 * (bit k of the array is byte lo+k), as read/vector.pack_newlines does.
 * The GIL is released while the bytes are searched.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define HAVE_SSE2 1
#endif

#define HBITS 17
#define HSIZE (1u << HBITS)
#define STRIDE 4      /* a window is hashed at every STRIDE-th position */
#define MIN_HASHED (STRIDE + 2)  /* shorter literals are compared at every position instead */
#define BATCH_MAX 4   /* strides whose window hits the AVX2 pass tries together (flush_batch) */

typedef struct {
    uint32_t key;  /* the window's 3 bytes (a 4-byte load & key_mask) */
    int32_t lit, off, next;
} Entry;

typedef struct {
    uint32_t key, pre;  /* the window's key; the literal's first 4 bytes */
    int32_t lit, off;
    Py_ssize_t len;
} PEntry;

#define HEADBITS 12
#define HEADSIZE (1u << HEADBITS)
#define HEAD(h) ((h) >> (HBITS - HEADBITS))

/* a short literal (fewer than MIN_HASHED bytes), as the pass tests it at every position: its
 * bytes, its three picked offsets and the bytes there, side by side (one cache line per
 * literal, read at every stride; not a chain of loads through the matcher's arrays) */
typedef struct {
    const unsigned char *u;
    Py_ssize_t len;
    int lit;
    int pick[3];
    unsigned char c[3];
} ShortLit;

typedef struct {
    PyObject_HEAD
    int nlits;
    unsigned char **lits;
    Py_ssize_t *lens;
    uint32_t *pre;    /* per literal: its first 4 bytes (a 4-byte load), when it has 4 */
    int *shorts;      /* the literals shorter than MIN_HASHED */
    int *pick;        /* per literal: two of its byte offsets (short literals) */
    int nshorts;
    ShortLit *sl;     /* the short literals (shorts[k]'s is sl[k]) */
    uint8_t *bitmap;  /* HSIZE bits */
    int32_t *head;    /* HSIZE chain heads, -1 = none */
    Entry *entries;
    int nentries, capentries;
    /* what the pass reads: the entries of each chain contiguous, by the hash's top HEADBITS
     * bits (a slot holds the chains of several bitmap bits, told apart by the key), in chain
     * order, with the literal's length and first 4 bytes beside the key (one cache line per
     * candidate instead of a pointer chase through four arrays) */
    uint32_t *slot_start;  /* HEADSIZE + 1 */
    PEntry *packed;
} Matcher;

typedef struct {
    int64_t *data;
    Py_ssize_t len, cap;
    int failed;
} Vec;

static void vec_push2(Vec *v, int64_t a, int64_t b)
{
    if (v->failed)
        return;
    if (v->len + 2 > v->cap) {
        Py_ssize_t cap = v->cap ? v->cap * 2 : 1024;
        int64_t *d = (int64_t *)realloc(v->data, (size_t)cap * sizeof(int64_t));
        if (d == NULL) {
            v->failed = 1;
            return;
        }
        v->data = d;
        v->cap = cap;
    }
    v->data[v->len++] = a;
    v->data[v->len++] = b;
}

static inline uint32_t hash32(uint32_t x)
{
    x ^= x >> 15;
    return (x * 2654435761u) >> (32 - HBITS);
}

static inline uint32_t load32(const unsigned char *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}

/* How common a byte is in a log (higher: more common); a guess, used only to pick
 * anchors, never for what is found. */
static int commonness(unsigned char c)
{
    if (c == ' ')
        return 100;
    if (c >= '0' && c <= '9')
        return 60;
    if (c >= 'a' && c <= 'z') {
        static const char top[] = "etaoinsrhldcumfpgwybvkxjqz";
        const char *f = strchr(top, c);
        return 80 - (int)(f - top) * 2;
    }
    if (c >= 'A' && c <= 'Z')
        return 20;
    switch (c) {
    case ':': case '.': case ',': case '-': case '[': case ']': case '=': case '/': case '_':
    case '(': case ')': case '\'': case '"':
        return 40;
    case '\n':
        return 30;
    default:
        return 10;
    }
}

static int add_entry(Matcher *m, uint32_t key, int lit, int off)
{
    if (m->nentries == m->capentries) {
        int cap = m->capentries ? m->capentries * 2 : 256;
        Entry *e = (Entry *)PyMem_Realloc(m->entries, (size_t)cap * sizeof(Entry));
        if (e == NULL)
            return -1;
        m->entries = e;
        m->capentries = cap;
    }
    uint32_t h = hash32(key);
    Entry *e = &m->entries[m->nentries];
    e->key = key;
    e->lit = lit;
    e->off = off;
    e->next = m->head[h];
    m->head[h] = m->nentries++;
    m->bitmap[h >> 3] |= (uint8_t)(1u << (h & 7));
    return 0;
}

static void Matcher_dealloc(Matcher *self)
{
    if (self->lits) {
        for (int i = 0; i < self->nlits; i++)
            PyMem_Free(self->lits[i]);
        PyMem_Free(self->lits);
    }
    PyMem_Free(self->lens);
    PyMem_Free(self->shorts);
    PyMem_Free(self->pre);
    PyMem_Free(self->pick);
    PyMem_Free(self->sl);
    PyMem_Free(self->bitmap);
    PyMem_Free(self->head);
    PyMem_Free(self->entries);
    PyMem_Free(self->slot_start);
    PyMem_Free(self->packed);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define CBITS 16
static uint32_t key_mask;  /* the first 3 bytes of a 4-byte load */

static inline uint32_t count_slot(uint32_t x)
{
    return (x * 2246822519u) >> (32 - CBITS);
}

/* How often each 3-byte window occurs in the sample, hashed (collisions only add): used to
 * pick rare windows. */
static int count_windows(Py_buffer *sample, uint32_t **counts)
{
    uint32_t *c = (uint32_t *)PyMem_Calloc(1u << CBITS, sizeof(uint32_t));
    if (c == NULL)
        return -1;
    counts[0] = c;
    const unsigned char *b = (const unsigned char *)sample->buf;
    Py_ssize_t n = sample->len < (1 << 20) ? sample->len : (1 << 20);
    for (Py_ssize_t p = 0; p + 4 <= n; p++)
        c[count_slot(load32(b + p) & key_mask)]++;
    return 0;
}

static int init_literals(Matcher *self, PyObject *seq, uint32_t *counts);

static int Matcher_init(Matcher *self, PyObject *args, PyObject *kwds)
{
    PyObject *seq;
    Py_buffer sample = {0};
    uint32_t *counts[1] = {NULL};
    if (self->lits != NULL) {
        PyErr_SetString(PyExc_TypeError, "a Matcher is initialised once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O|y*", &seq, &sample))
        return -1;
    if (sample.buf != NULL) {
        int ok = sample.len >= 4096 && count_windows(&sample, counts) == 0;
        PyBuffer_Release(&sample);
        if (!ok && counts[0] != NULL) {
            PyMem_Free(counts[0]);
            counts[0] = NULL;
        }
    }
    int rc = init_literals(self, seq, counts[0]);
    PyMem_Free(counts[0]);
    return rc;
}

static int init_literals(Matcher *self, PyObject *seq, uint32_t *counts)
{
    PyObject *fast = PySequence_Fast(seq, "literals must be a sequence of bytes");
    if (fast == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n < 1 || n > 100000) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "between 1 and 100000 literals");
        return -1;
    }
    self->nlits = (int)n;
    self->lits = (unsigned char **)PyMem_Calloc((size_t)n, sizeof(unsigned char *));
    self->lens = (Py_ssize_t *)PyMem_Calloc((size_t)n, sizeof(Py_ssize_t));
    self->shorts = (int *)PyMem_Calloc((size_t)n, sizeof(int));
    self->pre = (uint32_t *)PyMem_Calloc((size_t)n, sizeof(uint32_t));
    self->pick = (int *)PyMem_Calloc((size_t)n * 3, sizeof(int));
    self->bitmap = (uint8_t *)PyMem_Calloc(HSIZE / 8, 1);
    self->head = (int32_t *)PyMem_Malloc(HSIZE * sizeof(int32_t));
    if (!self->lits || !self->lens || !self->shorts || !self->pre || !self->pick || !self->bitmap || !self->head) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    memset(self->head, 0xff, HSIZE * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        char *s;
        Py_ssize_t len;
        if (!PyBytes_Check(item) || PyBytes_AsStringAndSize(item, &s, &len) < 0) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_TypeError, "literals must be bytes");
            return -1;
        }
        if (len < 1 || len > (1 << 20)) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_ValueError, "a literal of 0 or more than 1 MiB bytes");
            return -1;
        }
        /* a newline only as the last byte: an occurrence then lies on one line */
        const char *nl = memchr(s, '\n', (size_t)len);
        if (nl != NULL && nl != s + len - 1) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_ValueError, "a literal with a newline before its end");
            return -1;
        }
        self->lits[i] = (unsigned char *)PyMem_Malloc((size_t)len);
        if (self->lits[i] == NULL)
            goto nomem;
        memcpy(self->lits[i], s, (size_t)len);
        self->lens[i] = len;
        if (len >= 4)
            self->pre[i] = load32(self->lits[i]);
        if (len < MIN_HASHED) {  /* looked for at every position: its two rarest bytes, then all */
            self->shorts[self->nshorts++] = (int)i;
            int j1 = 0, j2 = len > 1 ? 1 : 0;
            for (int j = 0; j < len; j++)
                if (commonness(self->lits[i][j]) < commonness(self->lits[i][j1]))
                    j1 = j;
            j2 = j1 == 0 ? (len > 1 ? 1 : 0) : 0;
            for (int j = 0; j < len; j++)
                if (j != j1 && commonness(self->lits[i][j]) < commonness(self->lits[i][j2]))
                    j2 = j;
            int j3 = j2;  /* a third byte (the AVX2 path compares three) */
            for (int j = 0; j < len; j++)
                if (j != j1 && j != j2 && (j3 == j2 || commonness(self->lits[i][j]) < commonness(self->lits[i][j3])))
                    j3 = j;
            self->pick[3 * i] = j1;
            self->pick[3 * i + 1] = j2;
            self->pick[3 * i + 2] = j3;
            continue;
        }
        /* one 3-byte window per residue of its offset mod STRIDE: every alignment of an
         * occurrence puts exactly one of them at a position the pass tests, so the windows
         * need not be consecutive (session 16: consecutive ones forced a common window into
         * most long literals, the "tur" of "Capturing batches", the "ail" of "Fail when
         * using backend:"); per residue the one least often seen in the sample (else the one
         * with the rarest bytes by a fixed guess), at an offset up to len - 3 as before */
        const unsigned char *u = self->lits[i];
        for (int r = 0; r < STRIDE; r++) {
            Py_ssize_t best = r;
            double best_score = -1;
            for (Py_ssize_t k = r; k <= len - 3; k += STRIDE) {
                double score;
                if (counts != NULL) {
                    unsigned char b[4] = {u[k], u[k + 1], u[k + 2], 0};
                    score = 1.0 + counts[count_slot(load32(b) & key_mask)];
                } else {
                    score = commonness(u[k]) + commonness(u[k + 1]) + commonness(u[k + 2]);
                }
                if (best_score < 0 || score < best_score) {
                    best_score = score;
                    best = k;
                }
            }
            unsigned char b[4] = {u[best], u[best + 1], u[best + 2], 0};
            if (add_entry(self, load32(b) & key_mask, (int)i, (int)best) < 0)
                goto nomem;
        }
    }
    Py_DECREF(fast);
    self->sl = (ShortLit *)PyMem_Calloc((size_t)(self->nshorts ? self->nshorts : 1), sizeof(ShortLit));
    if (self->sl == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int k = 0; k < self->nshorts; k++) {
        int lit = self->shorts[k];
        ShortLit *q = &self->sl[k];
        q->u = self->lits[lit];
        q->len = self->lens[lit];
        q->lit = lit;
        for (int j = 0; j < 3; j++) {
            q->pick[j] = self->pick[3 * lit + j];
            q->c[j] = q->u[q->pick[j]];
        }
    }
    /* the packed chains: per slot, the entries in chain order (the last added first, as the
     * chains of head/next hold them), so candidates are tried in the same order as before */
    self->slot_start = (uint32_t *)PyMem_Calloc(HEADSIZE + 1, sizeof(uint32_t));
    self->packed = (PEntry *)PyMem_Malloc((size_t)(self->nentries ? self->nentries : 1) * sizeof(PEntry));
    if (self->slot_start == NULL || self->packed == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int j = 0; j < self->nentries; j++)
        self->slot_start[HEAD(hash32(self->entries[j].key)) + 1]++;
    for (uint32_t t = 0; t < HEADSIZE; t++)
        self->slot_start[t + 1] += self->slot_start[t];
    {
        uint32_t *fill = (uint32_t *)PyMem_Malloc(HEADSIZE * sizeof(uint32_t));
        if (fill == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(fill, self->slot_start, HEADSIZE * sizeof(uint32_t));
        for (int j = self->nentries - 1; j >= 0; j--) {
            const Entry *e = &self->entries[j];
            PEntry *q = &self->packed[fill[HEAD(hash32(e->key))]++];
            q->key = e->key;
            q->pre = self->pre[e->lit];
            q->lit = e->lit;
            q->off = e->off;
            q->len = self->lens[e->lit];
        }
        PyMem_Free(fill);
    }
    return 0;
nomem:
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
}

/* the end of the line holding p: the offset of its newline, or hi */
static inline Py_ssize_t line_end(const unsigned char *buf, Py_ssize_t p, Py_ssize_t hi)
{
    const unsigned char *q = memchr(buf + p, '\n', (size_t)(hi - p));
    return q ? (Py_ssize_t)(q - buf) : hi;
}

typedef struct {
    Py_ssize_t *last;  /* per literal: end of the line of its last reported occurrence */
    Py_ssize_t *first; /* per literal: that occurrence */
    Py_ssize_t *slot;  /* per literal: its index in pairs */
    /* the short literals' occurrences in the strides of the AVX2 pass's open batch (BATCH
     * strides, their window hits tried together), in the order found: reported when the
     * batch is, before the window hits of later strides (scan_body) */
    Py_ssize_t *pend_pos;
    int *pend_lit;
    Py_ssize_t npend;
} State;

/* an occurrence of literal lit at s (verified): the first of its line is kept */
static inline void found(State *st, const unsigned char *buf, Py_ssize_t hi, int lit, Py_ssize_t s, Vec *pairs)
{
    if (s <= st->last[lit]) {  /* same line (found out of order by the strided windows) */
        if (s < st->first[lit] && !pairs->failed) {
            st->first[lit] = s;
            pairs->data[st->slot[lit]] = s;
        }
        return;
    }
    st->slot[lit] = pairs->len;
    st->first[lit] = s;
    vec_push2(pairs, s, lit);
    st->last[lit] = line_end(buf, s, hi);
}

static inline void candidate(const Matcher *m, const unsigned char *buf, Py_ssize_t lo, Py_ssize_t hi,
                             Py_ssize_t i, uint32_t x, uint32_t h, State *st, Vec *pairs)
{
    const PEntry *e = m->packed + m->slot_start[HEAD(h)], *end = m->packed + m->slot_start[HEAD(h) + 1];
    /* the last first-4-bytes test that failed: literals that share their window and its
     * offset and start alike (`Error: `, `Error(`, `Error\n`: the "rro" of every "error" in
     * a log) would each fail it again at the same place, so they are passed over */
    Py_ssize_t failed_at = -1;
    uint32_t failed_pre = 0;
    for (; e < end; e++) {
        if (x != e->key)
            continue;
        Py_ssize_t s = i - e->off;
        Py_ssize_t len = e->len;
        if (s < lo || s + len > hi)
            continue;
        if (s <= st->last[e->lit] && s >= st->first[e->lit])
            continue;
        if (s == failed_at && e->pre == failed_pre)
            continue;
        if (load32(buf + s) != e->pre) {  /* (a hashed literal has 6 bytes or more: its first 4 compared first) */
            failed_at = s;
            failed_pre = e->pre;
            continue;
        }
        if (memcmp(buf + s, m->lits[e->lit], (size_t)len) != 0)
            continue;
        found(st, buf, hi, e->lit, s, pairs);
    }
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(SGLANG_DOCTOR_NO_AVX2)
/* AVX2, when the CPU has it (checked at import): the windows of a 64-byte stride (every
 * STRIDE-th position, 16 of them) hashed 8 at a time and looked up in the bitmap with a
 * gather; bit k of the result: position 4k's window is in the bitmap.  The same test as the
 * scalar loop's, so the same candidates (tests/read/test_native.py, both paths). */
#include <immintrin.h>
#define HAVE_AVX2_DISPATCH 1
static int use_avx2;

__attribute__((target("avx2"))) static uint32_t window_hits_avx2(const uint8_t *bitmap, const unsigned char *p)
{
    const __m256i mask = _mm256_set1_epi32((int)key_mask), mul = _mm256_set1_epi32((int)2654435761u);
    const __m256i low5 = _mm256_set1_epi32(31), one = _mm256_set1_epi32(1);
    uint32_t out = 0;
    for (int half = 0; half < 2; half++) {
        __m256i x = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(p + 32 * half)), mask);
        __m256i h = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
        h = _mm256_srli_epi32(_mm256_mullo_epi32(h, mul), 32 - HBITS);
        /* the bitmap read as 32-bit words (little-endian: bit h is bit h&31 of word h>>5) */
        __m256i words = _mm256_i32gather_epi32((const int *)bitmap, _mm256_srli_epi32(h, 5), 4);
        __m256i bit = _mm256_sllv_epi32(one, _mm256_and_si256(h, low5));
        __m256i hit = _mm256_cmpeq_epi32(_mm256_and_si256(words, bit), bit);
        out |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(hit)) << (8 * half);
    }
    return out;
}

/* The AVX2 pass tries the window hits of BATCH strides (64 bytes each) together, from one
 * 64-bit mask: one loop over a few hits per 256 bytes instead of one per stride, whose
 * branches a CPU mispredicts about as often as a stride has a hit or none (a v2 log: 0.6
 * hits per stride, nearly all of them common text such as the "rro" of "error", rejected by
 * the first bytes).  The same candidates, tried in the same order, the short literals' own
 * occurrences reported between them as a stride at a time would (flush_batch). */
#define BATCH BATCH_MAX

static inline void flush_batch(const Matcher *m, const unsigned char *buf, Py_ssize_t lo, Py_ssize_t hi,
                               uint64_t wmask, Py_ssize_t wbase, State *st, Vec *pairs)
{
    Py_ssize_t k = 0, n = st->npend;
    while (wmask) {
        int b = __builtin_ctzll(wmask);
        wmask &= wmask - 1;
        /* the short literals found in this hit's stride and the ones before it come first */
        Py_ssize_t until = wbase + 64 * ((b >> 4) + 1);
        for (; k < n && st->pend_pos[k] < until; k++)
            found(st, buf, hi, st->pend_lit[k], st->pend_pos[k], pairs);
        Py_ssize_t q = wbase + STRIDE * b;
        uint32_t x = load32(buf + q) & key_mask;
        candidate(m, buf, lo, hi, q, x, hash32(x), st, pairs);
    }
    for (; k < n; k++)
        found(st, buf, hi, st->pend_lit[k], st->pend_pos[k], pairs);
    st->npend = 0;
}
#endif

#ifdef HAVE_AVX2_DISPATCH
/* bit b: the three picked bytes of a short literal u are where it would have them if it
 * started at p + b (b < 64) */
__attribute__((target("avx2"))) static uint64_t short_bits_avx2(const unsigned char *p, const ShortLit *sh)
{
    const int *pick = sh->pick;
    const __m256i c1 = _mm256_set1_epi8((char)sh->c[0]), c2 = _mm256_set1_epi8((char)sh->c[1]);
    const __m256i c3 = _mm256_set1_epi8((char)sh->c[2]);
    /* the rarest byte first, for the whole stride: most strides lack it (the '=' of ` pid=`
     * and `rc=` is in 12% of the v2 log's strides), and then no bit can be set */
    __m256i a1 = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + pick[0])), c1);
    __m256i b1 = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + 32 + pick[0])), c1);
    __m256i any = _mm256_or_si256(a1, b1);
    if (_mm256_testz_si256(any, any))
        return 0;
    uint64_t out = 0;
    for (int half = 0; half < 2; half++) {
        const unsigned char *q = p + 32 * half;
        __m256i acc = _mm256_and_si256(
            _mm256_and_si256(half ? b1 : a1,
                             _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(q + pick[1])), c2)),
            _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(q + pick[2])), c3));
        out |= (uint64_t)(uint32_t)_mm256_movemask_epi8(acc) << (32 * half);
    }
    return out;
}
#endif

#ifdef HAVE_AVX2_DISPATCH
/* bits[kind] of the 64 bytes at p: CR (kind 0), ESC (2), NUL (3); returns whether any is set;
 * with nl, *nl = the bits of its newlines */
__attribute__((target("avx2"))) static inline int dirty_bits_avx2(const unsigned char *p, uint64_t bits[4],
                                                                  uint64_t *nl)
{
    const __m256i cr = _mm256_set1_epi8('\r'), es = _mm256_set1_epi8(0x1b), zero = _mm256_setzero_si256();
    __m256i a = _mm256_loadu_si256((const __m256i *)p), b = _mm256_loadu_si256((const __m256i *)(p + 32));
    if (nl != NULL) {  /* the newline bits from the same loads (the pass's Newlines) */
        const __m256i n = _mm256_set1_epi8('\n');
        *nl = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, n)) |
              (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, n)) << 32;
    }
    __m256i ca = _mm256_cmpeq_epi8(a, cr), cb = _mm256_cmpeq_epi8(b, cr);
    __m256i ea = _mm256_cmpeq_epi8(a, es), eb = _mm256_cmpeq_epi8(b, es);
    __m256i za = _mm256_cmpeq_epi8(a, zero), zb = _mm256_cmpeq_epi8(b, zero);
    __m256i any = _mm256_or_si256(_mm256_or_si256(_mm256_or_si256(ca, cb), _mm256_or_si256(ea, eb)),
                                  _mm256_or_si256(za, zb));
    if (_mm256_testz_si256(any, any))
        return 0;  /* (the usual case) */
    bits[0] = (uint64_t)(uint32_t)_mm256_movemask_epi8(ca) | (uint64_t)(uint32_t)_mm256_movemask_epi8(cb) << 32;
    bits[1] = 0;
    bits[2] = (uint64_t)(uint32_t)_mm256_movemask_epi8(ea) | (uint64_t)(uint32_t)_mm256_movemask_epi8(eb) << 32;
    bits[3] = (uint64_t)(uint32_t)_mm256_movemask_epi8(za) | (uint64_t)(uint32_t)_mm256_movemask_epi8(zb) << 32;
    return 1;
}
#endif

static inline void mark(const unsigned char *buf, Py_ssize_t p, Py_ssize_t hi, Py_ssize_t *mlast, Vec *marks)
{
    unsigned char c = buf[p];
    int kind = c == '\r' ? 0 : c == 0x1b ? 2 : 3;
    if (p <= mlast[kind])
        return;
    vec_push2(marks, p, kind);
    mlast[kind] = line_end(buf, p, hi);
}

/* marks of one kind from its bits in the 64 bytes at i: only past the line of its last mark
 * (a NUL- or ESC-dense line costs one mark, not one test per byte) */
static inline void mark_bits(const unsigned char *buf, Py_ssize_t i, Py_ssize_t hi, uint64_t bits, int kind,
                             Py_ssize_t *mlast, Vec *marks)
{
    while (bits) {
        Py_ssize_t from = mlast[kind] + 1 - i;  /* bits below this are on a marked line */
        if (from >= 64)
            break;
        if (from > 0)
            bits &= ~((UINT64_C(1) << from) - 1);
        if (!bits)
            break;
        int b = __builtin_ctzll(bits);
        bits &= bits - 1;
        mark(buf, i + b, hi, mlast, marks);
    }
}

/* The newline bits the pass sets as it goes (what newline_bits gives), when asked: bit k of
 * words is byte base + k.  Only the words whose bytes (up to end, the index's end) all lie in
 * the pass's [lo, hi) are written, words [wlo, whi): a word shared with the part another
 * thread searches is left alone (zero) for the caller to fill (NativeFinder.scan_lines).
 * The strides start at lo, so each is (lo - base) % 64 bytes into a word: a word is the
 * carry of the stride before (its last bytes) and the first bytes of this one, written once
 * with a plain store. */
typedef struct {
    uint64_t *words;
    Py_ssize_t base, wlo, whi;
    uint64_t carry;  /* the bits of the last stride that belong to the next word */
    Py_ssize_t next; /* that word (-1: none yet) */
} Newlines;

/* the newline bits m of the 64 bytes (fewer at the end: the others zero) starting at i; the
 * strides come in order, 64 bytes apart */
static inline void put_newlines(Newlines *nl, Py_ssize_t i, uint64_t m)
{
    Py_ssize_t off = i - nl->base, w = off >> 6;
    int s = (int)(off & 63);
    if (s == 0) {
        if (w >= nl->wlo && w < nl->whi)
            nl->words[w] = m;
        return;
    }
    if (w >= nl->wlo && w < nl->whi)  /* (the first stride's word starts before lo: not written) */
        nl->words[w] = nl->carry | (m << s);
    nl->carry = m >> (64 - s);
    nl->next = w + 1;
}

/* after the last stride: its carry is the last word's start */
static inline void end_newlines(Newlines *nl)
{
    if (nl->next >= nl->wlo && nl->next < nl->whi)
        nl->words[nl->next] = nl->carry;
}

/* the pass; avx2 is a constant (scan_plain, scan_avx2: the AVX2 helpers inline in the latter) */
static inline __attribute__((always_inline)) void scan_body(const Matcher *m, const unsigned char *buf, Py_ssize_t lo,
                                                            Py_ssize_t hi, State *st, Vec *pairs, Vec *marks,
                                                            Newlines *nl, const int avx2)
{
    Py_ssize_t mlast[4] = {lo - 1, lo - 1, lo - 1, lo - 1};
    const uint8_t *bitmap = m->bitmap;
    Py_ssize_t i = lo;
#ifdef HAVE_AVX2_DISPATCH
    uint64_t wmask = 0;  /* the open batch's window hits: bit 16s + b, stride s's window b */
    Py_ssize_t wbase = lo;
    int nacc = 0;
#endif
    st->npend = 0;
    Py_ssize_t maxshort = 0;
    for (int k = 0; k < m->nlits; k++) {
        st->last[k] = lo - 1;
        st->first[k] = lo - 1;
    }
    for (int k = 0; k < m->nshorts; k++)
        if (m->lens[m->shorts[k]] > maxshort)
            maxshort = m->lens[m->shorts[k]];
    while (i < hi) {
        Py_ssize_t e = i + 64 < hi ? i + 64 : hi;
        /* a stride of the batches (its short literals' occurrences held for flush_batch) */
        const int batched = avx2 && e - i == 64;
#define SHORT_FOUND(lit, at)                                  \
        do {                                                  \
            if (batched) {                                    \
                st->pend_pos[st->npend] = (at);               \
                st->pend_lit[st->npend++] = (lit);            \
            } else {                                          \
                found(st, buf, hi, (lit), (at), pairs);       \
            }                                                 \
        } while (0)
#ifdef HAVE_AVX2_DISPATCH
        if (avx2 && e - i == 64) {
            uint64_t bits[4], nlbits = 0;
            if (dirty_bits_avx2(buf + i, bits, nl != NULL ? &nlbits : NULL))
                for (int kind = 0; kind < 4; kind++)
                    if (kind != 1 && mlast[kind] < e - 1)
                        mark_bits(buf, i, hi, bits[kind], kind, mlast, marks);
            if (nl != NULL)
                put_newlines(nl, i, nlbits);
        } else
#endif
#ifdef HAVE_SSE2
        if (e - i == 64) {
            /* CR, ESC, NUL in [i, e): per kind, only the bits past the line of its last
             * mark (a NUL- or ESC-dense line costs one mark, not one test per byte) */
            static const char needles[4] = {'\r', 0, 0x1b, 0};
            __m128i v[4];
            __m128i any = _mm_setzero_si128();
            const __m128i cr = _mm_set1_epi8('\r'), es = _mm_set1_epi8(0x1b), zero = _mm_setzero_si128();
            for (int q = 0; q < 4; q++) {
                v[q] = _mm_loadu_si128((const __m128i *)(buf + i + 16 * q));
                any = _mm_or_si128(any, _mm_or_si128(_mm_cmpeq_epi8(v[q], cr),
                                                     _mm_or_si128(_mm_cmpeq_epi8(v[q], es), _mm_cmpeq_epi8(v[q], zero))));
            }
            if (nl != NULL) {
                const __m128i n = _mm_set1_epi8('\n');
                uint64_t nlbits = 0;
                for (int q = 0; q < 4; q++)
                    nlbits |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v[q], n)) << (16 * q);
                put_newlines(nl, i, nlbits);
            }
            for (int kind = 0; kind < 4 && _mm_movemask_epi8(any); kind++) {  /* (none: the usual case) */
                if (kind == 1 || mlast[kind] >= e - 1)
                    continue;
                const __m128i c = _mm_set1_epi8(needles[kind]);
                uint64_t bits = 0;
                for (int q = 0; q < 4; q++)
                    bits |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v[q], c)) << (16 * q);
                mark_bits(buf, i, hi, bits, kind, mlast, marks);
            }
        } else
#endif
        {
            uint64_t nlbits = 0;
            for (Py_ssize_t p = i; p < e; p++) {
                unsigned char c = buf[p];
                if (c == '\r' || c == 0x1b || c == 0)
                    mark(buf, p, hi, mlast, marks);
                nlbits |= (uint64_t)(c == '\n') << (p - i);
            }
            if (nl != NULL)
                put_newlines(nl, i, nlbits);
        }
        /* short literals starting in [i, e) */
        if (m->nshorts) {
#ifdef HAVE_AVX2_DISPATCH
            if (avx2 && i + 64 + maxshort - 1 <= hi) {
                for (const ShortLit *sh = m->sl, *send = m->sl + m->nshorts; sh < send; sh++) {
                    uint64_t bits = short_bits_avx2(buf + i, sh);
                    if (!bits)
                        continue;
                    int lit = sh->lit;
                    const unsigned char *u = sh->u;
                    Py_ssize_t len = sh->len;
                    while (bits) {
                        int b = __builtin_ctzll(bits);
                        bits &= bits - 1;
                        const unsigned char *c = buf + i + b;
                        Py_ssize_t t = 0;
                        while (t < len && c[t] == u[t])
                            t++;
                        if (t == len)
                            SHORT_FOUND(lit, i + b);
                    }
                }
            } else
#endif
#ifdef HAVE_SSE2
            if (i + 64 + maxshort - 1 <= hi) {
                for (int k = 0; k < m->nshorts; k++) {
                    /* two of its bytes compared at every position, then the whole literal */
                    int lit = m->shorts[k];
                    const unsigned char *u = m->lits[lit];
                    Py_ssize_t len = m->lens[lit];
                    int j1 = m->pick[3 * lit], j2 = m->pick[3 * lit + 1];
                    const __m128i c1 = _mm_set1_epi8((char)u[j1]), c2 = _mm_set1_epi8((char)u[j2]);
                    uint64_t bits = 0;
                    for (int q = 0; q < 4; q++) {
                        __m128i acc = _mm_and_si128(
                            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(buf + i + 16 * q + j1)), c1),
                            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(buf + i + 16 * q + j2)), c2));
                        bits |= (uint64_t)(uint16_t)_mm_movemask_epi8(acc) << (16 * q);
                    }
                    while (bits) {
                        int b = __builtin_ctzll(bits);
                        bits &= bits - 1;
                        if (memcmp(buf + i + b, u, (size_t)len) == 0)
                            SHORT_FOUND(lit, i + b);
                    }
                }
            } else
#endif
            {
                for (int k = 0; k < m->nshorts; k++) {
                    int lit = m->shorts[k];
                    Py_ssize_t len = m->lens[lit];
                    for (Py_ssize_t p = i; p < e && p + len <= hi; p++)
                        if (buf[p] == m->lits[lit][0] && memcmp(buf + p, m->lits[lit], (size_t)len) == 0)
                            SHORT_FOUND(lit, p);
                }
            }
        }
        /* the hashed windows at every STRIDE-th position of [i, e) */
        Py_ssize_t p = i;
#ifdef HAVE_AVX2_DISPATCH
        if (avx2 && e - i == 64) {
            /* the 16 windows of the stride hashed and tested at once; the hits of BATCH
             * strides tried together (and before a stride that is not a batch's) */
            uint32_t hits = window_hits_avx2(bitmap, buf + i);
            if (nacc == 0)
                wbase = i;
            wmask |= (uint64_t)hits << (16 * nacc);
            if (++nacc == BATCH || e + 64 > hi) {
                flush_batch(m, buf, lo, hi, wmask, wbase, st, pairs);
                wmask = 0;
                nacc = 0;
            }
            p = e;
        }
#endif
        for (; p < e && p + 4 <= hi; p += STRIDE) {
            uint32_t x = load32(buf + p) & key_mask;
            uint32_t h = hash32(x);
            if (bitmap[h >> 3] & (1u << (h & 7)))
                candidate(m, buf, lo, hi, p, x, h, st, pairs);
        }
        for (; p < e; p += STRIDE) {  /* the last positions: zero-padded */
            unsigned char b[4] = {0, 0, 0, 0};
            memcpy(b, buf + p, (size_t)(hi - p));
            uint32_t x = load32(b) & key_mask;
            uint32_t h = hash32(x);
            if (bitmap[h >> 3] & (1u << (h & 7)))
                candidate(m, buf, lo, hi, p, x, h, st, pairs);
        }
        i = e;
#undef SHORT_FOUND
    }
    if (nl != NULL)
        end_newlines(nl);
}

static void scan_plain(const Matcher *m, const unsigned char *buf, Py_ssize_t lo, Py_ssize_t hi, State *st,
                       Vec *pairs, Vec *marks, Newlines *nl)
{
    scan_body(m, buf, lo, hi, st, pairs, marks, nl, 0);
}

#ifdef HAVE_AVX2_DISPATCH
__attribute__((target("avx2"))) static void scan_avx2(const Matcher *m, const unsigned char *buf, Py_ssize_t lo,
                                                      Py_ssize_t hi, State *st, Vec *pairs, Vec *marks,
                                                      Newlines *nl)
{
    scan_body(m, buf, lo, hi, st, pairs, marks, nl, 1);
}
#endif

static void scan(const Matcher *m, const unsigned char *buf, Py_ssize_t lo, Py_ssize_t hi,
                 State *st, Vec *pairs, Vec *marks, Newlines *nl)
{
#ifdef HAVE_AVX2_DISPATCH
    if (use_avx2) {
        scan_avx2(m, buf, lo, hi, st, pairs, marks, nl);
        return;
    }
#endif
    scan_plain(m, buf, lo, hi, st, pairs, marks, nl);
}

static int get_range(Py_buffer *view, Py_ssize_t *lo, Py_ssize_t *hi)
{
    if (*lo < 0 || *hi > view->len || *lo > *hi) {
        PyErr_SetString(PyExc_ValueError, "range outside the buffer");
        return -1;
    }
    return 0;
}

static PyObject *vec_bytes(Vec *v)
{
    PyObject *out = PyBytes_FromStringAndSize((const char *)v->data, v->len * (Py_ssize_t)sizeof(int64_t));
    free(v->data);
    v->data = NULL;
    return out;
}

/* scan(buf, lo, hi[, bits, base, end]) -> (pairs, marks): bytes of native int64 pairs,
 * (offset, literal id) and (offset, kind: 0 CR, 2 ESC, 3 NUL); given a zeroed writable bits
 * buffer for buf[base:end] (whole 64-bit words), also sets the bits of the newlines in
 * [lo, hi) there, as newline_bits(buf, base, bits, ...) would, in every 64-bit word whose
 * bytes all lie in [lo, hi) (see Newlines: the words it shares with another part are left
 * to the caller) */
/* scans shorter than this keep the GIL */
#define KEEP_GIL_BELOW 65536

static PyObject *Matcher_scan(Matcher *self, PyObject *args)
{
    Py_buffer view, bv = {0};
    Py_ssize_t lo, hi, base = 0, end = 0;
    if (!PyArg_ParseTuple(args, "y*nn|w*nn", &view, &lo, &hi, &bv, &base, &end))
        return NULL;
    Newlines nlw, *nl = NULL;
    if (bv.obj != NULL) {
        /* bits for buf[base:end] (bit k: byte base + k), whole 64-bit words */
        if (base < 0 || base > lo || hi > end || end > view.len || bv.len < (end - base + 63) / 64 * 8) {
            PyBuffer_Release(&view);
            PyBuffer_Release(&bv);
            PyErr_SetString(PyExc_ValueError, "newline bits: range outside the buffers");
            return NULL;
        }
        nlw.words = (uint64_t *)bv.buf;
        nlw.base = base;
        nlw.wlo = (lo - base + 63) / 64;  /* the first word starting at or after lo */
        nlw.whi = hi == end ? (end - base + 63) / 64 : (hi - base) / 64;  /* past the last ending by hi */
        nlw.carry = 0;
        nlw.next = -1;
        nl = &nlw;
    }
    if (get_range(&view, &lo, &hi) < 0) {
        PyBuffer_Release(&view);
        if (bv.obj != NULL)
            PyBuffer_Release(&bv);
        return NULL;
    }
    Vec pairs = {0}, marks = {0};
    State st;
    st.last = (Py_ssize_t *)malloc((size_t)self->nlits * 3 * sizeof(Py_ssize_t));
    if (st.last == NULL) {
        PyBuffer_Release(&view);
        if (bv.obj != NULL)
            PyBuffer_Release(&bv);
        return PyErr_NoMemory();
    }
    st.first = st.last + self->nlits;
    st.slot = st.first + self->nlits;
    /* a batch's short occurrences: at most 64 per short literal and stride */
    Py_ssize_t npend_max = (Py_ssize_t)BATCH_MAX * 64 * (self->nshorts ? self->nshorts : 1);
    st.pend_pos = (Py_ssize_t *)malloc((size_t)npend_max * sizeof(Py_ssize_t));
    st.pend_lit = (int *)malloc((size_t)npend_max * sizeof(int));
    st.npend = 0;
    if (st.pend_pos == NULL || st.pend_lit == NULL) {
        free(st.last);
        free(st.pend_pos);
        free(st.pend_lit);
        PyBuffer_Release(&view);
        if (bv.obj != NULL)
            PyBuffer_Release(&bv);
        return PyErr_NoMemory();
    }
    if (hi - lo >= KEEP_GIL_BELOW) {
        Py_BEGIN_ALLOW_THREADS
        scan(self, (const unsigned char *)view.buf, lo, hi, &st, &pairs, &marks, nl);
        Py_END_ALLOW_THREADS
    } else {
        /* a line's text (scanner.LiteralIndex): releasing the GIL would cost more than the
         * scan, and let another thread run Python for up to a switch interval meanwhile */
        scan(self, (const unsigned char *)view.buf, lo, hi, &st, &pairs, &marks, nl);
    }
    free(st.last);
    free(st.pend_pos);
    free(st.pend_lit);
    PyBuffer_Release(&view);
    if (bv.obj != NULL)
        PyBuffer_Release(&bv);
    if (pairs.failed || marks.failed) {
        free(pairs.data);
        free(marks.data);
        return PyErr_NoMemory();
    }
    PyObject *a = vec_bytes(&pairs);
    PyObject *b = vec_bytes(&marks);
    if (a == NULL || b == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    return Py_BuildValue("(NN)", a, b);
}

static PyMethodDef Matcher_methods[] = {
    {"scan", (PyCFunction)Matcher_scan, METH_VARARGS,
     "scan(buf, lo, hi[, bits, base, end]) -> (pairs, marks) as int64 bytes; with bits, the newline bits too"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject MatcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sglang_doctor.read._native.Matcher",
    .tp_basicsize = sizeof(Matcher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "First occurrence of each literal in each line, and the first CR/ESC/NUL of each line.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Matcher_init,
    .tp_dealloc = (destructor)Matcher_dealloc,
    .tp_methods = Matcher_methods,
};

/* newline_bits(buf, lo, bits, k0, k1): bits[k0/8 : ceil(k1/8)] = the newline bits of
 * buf[lo+k0 : lo+k1] (little bit order); k0 a multiple of 8 */
#ifdef HAVE_AVX2_DISPATCH
/* newline_bits' loop, 64 bytes at a time; returns where it stopped */
__attribute__((target("avx2"))) static Py_ssize_t newline_bits_avx2(const unsigned char *b, uint8_t *o, Py_ssize_t k,
                                                                    Py_ssize_t k1)
{
    const __m256i nl = _mm256_set1_epi8('\n');
    for (; k + 64 <= k1; k += 64) {
        uint64_t lo32 = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(b + k)), nl));
        uint64_t hi32 = (uint32_t)_mm256_movemask_epi8(
            _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(b + k + 32)), nl));
        uint64_t m = lo32 | (hi32 << 32);
        memcpy(o + (k >> 3), &m, 8);  /* (little-endian: byte j holds bits 8j..8j+7) */
    }
    return k;
}
#endif

static PyObject *newline_bits(PyObject *mod, PyObject *args)
{
    Py_buffer view, out;
    Py_ssize_t lo, k0, k1;
    if (!PyArg_ParseTuple(args, "y*nw*nn", &view, &lo, &out, &k0, &k1))
        return NULL;
    PyObject *result = NULL;
    if (k0 < 0 || (k0 & 7) || lo < 0 || k1 < k0 || lo + k1 > view.len || (k1 + 7) / 8 > out.len) {
        PyErr_SetString(PyExc_ValueError, "range outside the buffers");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    const unsigned char *b = (const unsigned char *)view.buf + lo;
    uint8_t *o = (uint8_t *)out.buf;
    Py_ssize_t k = k0;
#ifdef HAVE_AVX2_DISPATCH
    if (use_avx2)
        k = newline_bits_avx2(b, o, k, k1);
#endif
#ifdef HAVE_SSE2
    const __m128i nl = _mm_set1_epi8('\n');
    for (; k + 16 <= k1; k += 16) {
        int m = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(b + k)), nl));
        o[k >> 3] = (uint8_t)m;
        o[(k >> 3) + 1] = (uint8_t)(m >> 8);
    }
#endif
    for (; k < k1; k += 8) {
        uint8_t v = 0;
        for (int j = 0; j < 8 && k + j < k1; j++)
            v |= (uint8_t)((b[k + j] == '\n') << j);
        o[k >> 3] = v;
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&view);
    PyBuffer_Release(&out);
    return result;
}

/* ---- sift: the weak-hit filter of read/vector.py (WeakFilter.sift) in C ---------------- */

typedef struct {
    int64_t off, id, idx;
} Hit;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_hit(const void *a, const void *b)
{
    const Hit *x = (const Hit *)a, *y = (const Hit *)b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* where the line holding p starts (lo at the latest) */
static inline Py_ssize_t line_start(const unsigned char *buf, Py_ssize_t lo, Py_ssize_t p)
{
#if defined(__GLIBC__)
    const unsigned char *q = memrchr(buf + lo, '\n', (size_t)(p - lo));
    return q ? (Py_ssize_t)(q - buf) + 1 : lo;
#else
    while (p > lo && buf[p - 1] != '\n')
        p--;
    return p;
#endif
}

static void sort_i64(int64_t *a, Py_ssize_t n)
{
    for (Py_ssize_t k = 1; k < n; k++)
        if (a[k - 1] > a[k]) {
            qsort(a, (size_t)n, sizeof(int64_t), cmp_i64);
            return;
        }
}

#define WINDOW 64  /* vector.WINDOW: a header whose ']' is not within it is left to the scanner */

static inline int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* vector.sglang_header for the line starting at s: 1 when records._SGLANG matches there with
 * its ']' within WINDOW bytes, and *msg = where HEADER_BYTES' match ends (the message);
 * 0 otherwise.  Bytes at or past limit read as a newline, which no header byte is. */
static int sglang_header(const unsigned char *buf, Py_ssize_t s, Py_ssize_t limit, Py_ssize_t *msg)
{
    unsigned char w[WINDOW];
    for (int k = 0; k < WINDOW; k++)
        w[k] = s + k < limit ? buf[s + k] : '\n';
    static const char tmpl[] = "[0000-00-00 00:00:00";
    const int t = (int)sizeof(tmpl) - 1;
    for (int k = 0; k < t; k++) {
        if (tmpl[k] == '0' ? !is_digit(w[k]) : w[k] != (unsigned char)tmpl[k])
            return 0;
    }
    int q = t;
    const int last = WINDOW - 1;
#define BYTE(x) w[(x) < last ? (x) : last]
    if (BYTE(q) == '.' || BYTE(q) == ',') {
        if (is_digit(BYTE(q + 1))) {
            q++;
            for (int k = 0; k < 6 && is_digit(BYTE(q)); k++)
                q++;
        }
    }
    static const char *names[] = {"DP", "PP", "ATTN_CP", "MOE_DP", "TP", "EP"};
    for (int r = 0; r < 7; r++) {
        if (!(BYTE(q) == ' ' && q < last))
            break;
        int size = 0;
        for (int n = 0; n < 6 && !size; n++) {
            int len = (int)strlen(names[n]);
            int ok = is_digit(BYTE(q + 1 + len));
            for (int j = 0; ok && j < len; j++)
                ok = BYTE(q + 1 + j) == (unsigned char)names[n][j];
            if (ok)
                size = len;
        }
        if (!size)
            return 0;  /* a space not followed by a rank: ']' cannot match there */
        q += 1 + size;
        while (is_digit(BYTE(q)) && q < last)
            q++;
    }
    if (!(q < last && BYTE(q) == ']'))
        return 0;
#undef BYTE
    q++;
    if (s + q < limit && buf[s + q] == ' ')  /* the header's optional trailing space */
        q++;
    *msg = s + q;
    return 1;
}

typedef struct {
    Py_ssize_t weak;  /* literal id */
    Py_ssize_t off;
    const unsigned char *bytes;
    Py_ssize_t len;
} Hide;

/* The head conditions sift can decide itself (read/vector.NATIVE_HEADS maps each regex, a bytes
 * pattern with no flags, to its code here), matched at msg with the line's newline nl as the
 * end, as ``rx.match(buf, msg, nl)`` does (a lookbehind sees the bytes before msg): 1 when it
 * matches, 0 when not, -1 for a code it does not know.
 *   HEAD_ERROR (1): rb"loc\(|\S+(?: serve)?: error: " (incidents/assemble.py HEAD_ONLY_LITERALS).
 *     \S+ ends where the run of non-whitespace bytes from msg ends (r, the first ASCII
 *     whitespace of [msg, nl), else nl): ": error: " has its ':' at r - 1 (its space ends the
 *     run), " serve: error: " starts at r; both need a byte of the run before them.
 *   HEAD_NOT_WARNING (2): signals.WARNING_LINE_BYTES, a negative lookahead: no "To silence this
 *     warning", no "Warning: " or "NCCL INFO " after a non-word byte, no "WARNING" between
 *     non-word bytes (or the ends) in [msg, nl); a word byte is [A-Za-z0-9_\x80-\xff].
 *   HEAD_ERROR_OR_NOT_WARNING (3): the two alternatives joined by '|' (a weak literal that is
 *     also a rule's literal, incidents/assemble.py weak_literals). */
#define HEAD_ERROR 1
#define HEAD_NOT_WARNING 2
#define HEAD_ERROR_OR_NOT_WARNING 3

static inline int is_space_byte(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static inline int is_word_byte(unsigned char c)
{
    return c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int error_head(const unsigned char *buf, Py_ssize_t msg, Py_ssize_t nl)
{
    if (nl - msg >= 4 && memcmp(buf + msg, "loc(", 4) == 0)
        return 1;
    Py_ssize_t r = msg;
    while (r < nl && !is_space_byte(buf[r]))
        r++;
    if (r - 1 > msg && r - 1 + 9 <= nl && memcmp(buf + r - 1, ": error: ", 9) == 0)
        return 1;
    if (r > msg && r + 15 <= nl && memcmp(buf + r, " serve: error: ", 15) == 0)
        return 1;
    return 0;
}

static int not_warning(const unsigned char *buf, Py_ssize_t msg, Py_ssize_t nl)
{
    for (Py_ssize_t p = msg; p < nl; p++) {
        unsigned char c = buf[p];
        if (c == 'T') {
            if (nl - p >= 23 && memcmp(buf + p, "To silence this warning", 23) == 0)
                return 0;
        } else if (c == 'W' || c == 'N') {
            if (p > 0 && is_word_byte(buf[p - 1]))
                continue;
            if (c == 'N') {
                if (nl - p >= 10 && memcmp(buf + p, "NCCL INFO ", 10) == 0)
                    return 0;
            } else if (nl - p >= 9 && memcmp(buf + p, "Warning: ", 9) == 0) {
                return 0;
            } else if (nl - p >= 7 && memcmp(buf + p, "WARNING", 7) == 0 && (p + 7 == nl || !is_word_byte(buf[p + 7]))) {
                return 0;
            }
        }
    }
    return 1;
}

static int head_matches(int code, const unsigned char *buf, Py_ssize_t msg, Py_ssize_t nl)
{
    switch (code) {
    case HEAD_ERROR:
        return error_head(buf, msg, nl);
    case HEAD_NOT_WARNING:
        return not_warning(buf, msg, nl);
    case HEAD_ERROR_OR_NOT_WARNING:
        return error_head(buf, msg, nl) || not_warning(buf, msg, nl);
    default:
        return -1;
    }
}

/* sift(buf, lo, hi, pairs, marks, kinds, hides[, heads]) -> (hits, weak, esc, nul), all bytes of
 * native int64:
 *   pairs, marks: what Matcher.scan gave for buf[lo:hi] (whole lines);
 *   kinds: one byte per literal id of the matcher: 0 strong, 1 weak, 2 weak with a head
 *     condition, 3 the " pid=" needle (a mark);
 *   hides: ((weak id, offset, bytes), ...): a weak match at p may hide the bytes at p+offset;
 * hits: the sorted offsets of the strong hits and of the weak hits kept;
 * weak: (offset, id, msg, nl) per weak hit kept, sorted: msg is -1, or, for a line whose
 *   fate is its head condition (vector.WeakFilter._kept_by_heads), where its message starts;
 *   nl the line's newline;
 * heads (optional): one byte per literal id, the code of its head condition when sift can
 *   match it itself (head_matches), else 0: a line whose kind-2 hits all have a code is kept
 *   (msg -1) or dropped here, by its head conditions, instead of being left to the caller;
 * esc, nul: the first ESC / NUL of each line holding one, sorted.
 * What is dropped is exactly what WeakFilter.sift drops. */
static PyObject *sift(PyObject *mod, PyObject *args)
{
    Py_buffer view, pv, mv, kv, hv = {0};
    Py_ssize_t lo, hi;
    PyObject *hides_obj, *result = NULL, *fast = NULL;
    if (!PyArg_ParseTuple(args, "y*nny*y*y*O|y*", &view, &lo, &hi, &pv, &mv, &kv, &hides_obj, &hv))
        return NULL;
    const unsigned char *heads = hv.obj != NULL ? (const unsigned char *)hv.buf : NULL;
    Hide *hides = NULL;
    Py_ssize_t nhides = 0;
    Hit *weak = NULL;
    int64_t *strong = NULL, *others = NULL, *esc = NULL, *nul = NULL, *hits = NULL, *wout = NULL;
    Py_ssize_t ns = 0, nw = 0, no = 0, ne = 0, nn = 0, nh = 0, nwo = 0;
    if (heads != NULL && hv.len != kv.len) {
        PyErr_SetString(PyExc_ValueError, "heads: one byte per literal id, as kinds");
        goto done;
    }
    if (get_range(&view, &lo, &hi) < 0 || (pv.len % 16) || (mv.len % 16)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "pairs and marks are int64 pairs");
        goto done;
    }
    fast = PySequence_Fast(hides_obj, "hides must be a sequence");
    if (fast == NULL)
        goto done;
    nhides = PySequence_Fast_GET_SIZE(fast);
    hides = (Hide *)PyMem_Calloc((size_t)nhides + 1, sizeof(Hide));
    if (hides == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < nhides; k++) {
        char *b;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, k), "nny#", &hides[k].weak, &hides[k].off, &b,
                              &hides[k].len))
            goto done;
        hides[k].bytes = (const unsigned char *)b;
    }
    const int64_t *pairs = (const int64_t *)pv.buf, *marks = (const int64_t *)mv.buf;
    const unsigned char *kinds = (const unsigned char *)kv.buf;
    Py_ssize_t np_ = pv.len / 16, nm = mv.len / 16;
    for (Py_ssize_t k = 0; k < np_; k++) {
        int64_t id = pairs[2 * k + 1];
        if (id < 0 || id >= kv.len || pairs[2 * k] < lo || pairs[2 * k] >= hi) {
            PyErr_SetString(PyExc_ValueError, "a pair outside the range or without a kind");
            goto done;
        }
    }
    strong = (int64_t *)PyMem_Malloc(((size_t)np_ + 1) * sizeof(int64_t));
    others = (int64_t *)PyMem_Malloc(((size_t)np_ + nm + 1) * sizeof(int64_t));
    esc = (int64_t *)PyMem_Malloc(((size_t)nm + 1) * sizeof(int64_t));
    nul = (int64_t *)PyMem_Malloc(((size_t)nm + 1) * sizeof(int64_t));
    weak = (Hit *)PyMem_Malloc(((size_t)np_ + 1) * sizeof(Hit));
    hits = (int64_t *)PyMem_Malloc(((size_t)np_ + 1) * sizeof(int64_t));
    wout = (int64_t *)PyMem_Malloc(((size_t)np_ + 1) * 4 * sizeof(int64_t));
    if (!strong || !others || !esc || !nul || !weak || !hits || !wout) {
        PyErr_NoMemory();
        goto done;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t buflen = view.len;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < np_; k++) {
        int64_t off = pairs[2 * k], id = pairs[2 * k + 1];
        switch (kinds[id]) {
        case 0:
            strong[ns++] = off;
            break;
        case 3:
            others[no++] = off;
            break;
        default:
            weak[nw].off = off;
            weak[nw].id = id;
            weak[nw].idx = k;
            nw++;
        }
    }
    for (Py_ssize_t k = 0; k < nm; k++) {
        int64_t off = marks[2 * k], kind = marks[2 * k + 1];
        if (kind <= 1)
            others[no++] = off;
        else if (kind == 2)
            esc[ne++] = off;
        else
            nul[nn++] = off;
    }
    /* (the pass finds them almost in order: sorted only when they are not) */
    sort_i64(strong, ns);
    sort_i64(others, no);
    sort_i64(esc, ne);
    sort_i64(nul, nn);
    for (Py_ssize_t k = 1; k < nw; k++)
        if (cmp_hit(&weak[k - 1], &weak[k]) > 0) {
            qsort(weak, (size_t)nw, sizeof(Hit), cmp_hit);
            break;
        }
    {  /* unique strong offsets */
        Py_ssize_t u = 0;
        for (Py_ssize_t k = 0; k < ns; k++)
            if (u == 0 || strong[u - 1] != strong[k])
                strong[u++] = strong[k];
        ns = u;
    }
    {  /* one weak hit per offset (the first found), none where a strong hit is */
        Py_ssize_t u = 0, i = 0;
        for (Py_ssize_t k = 0; k < nw; k++) {
            if (u > 0 && weak[u - 1].off == weak[k].off)
                continue;
            while (i < ns && strong[i] < weak[k].off)
                i++;
            if (i < ns && strong[i] == weak[k].off)
                continue;
            weak[u++] = weak[k];
        }
        nw = u;
    }
    /* the weak hits, a line at a time */
    Py_ssize_t is = 0, io = 0, j = 0;
    while (j < nw) {
        Py_ssize_t p = (Py_ssize_t)weak[j].off;
        Py_ssize_t s = line_start(buf, lo, p);
        const unsigned char *q = memchr(buf + p, '\n', (size_t)(hi - p));
        Py_ssize_t nl = q ? (Py_ssize_t)(q - buf) : -1;
        Py_ssize_t e = nl >= 0 ? nl : hi;  /* the line's last offset (its rank is the line's) */
        Py_ssize_t k = j;
        while (k < nw && weak[k].off <= e)
            k++;
        int unsure = 0;
        while (is < ns && strong[is] < s)
            is++;
        if (is < ns && strong[is] <= e)
            unsure = 1;
        while (io < no && others[io] < s)
            io++;
        if (io < no && others[io] <= e)
            unsure = 1;
        for (Py_ssize_t x = j; x < k && !unsure; x++)
            for (Py_ssize_t h = 0; h < nhides && !unsure; h++) {
                if (hides[h].weak != weak[x].id)
                    continue;
                Py_ssize_t at = (Py_ssize_t)weak[x].off + hides[h].off;
                if (at + hides[h].len <= buflen && memcmp(buf + at, hides[h].bytes, (size_t)hides[h].len) == 0)
                    unsure = 1;
            }
        Py_ssize_t msg = -1;
        int keep = 1;
        if (!unsure && sglang_header(buf, s, hi, &msg)) {
            int headed = 0, decided = heads != NULL && nl >= 0, met = 0;
            for (Py_ssize_t x = j; x < k; x++) {
                if (kinds[weak[x].id] != 2)
                    continue;
                headed = 1;
                if (decided && !met) {
                    int m = head_matches(heads[weak[x].id], buf, msg, nl);
                    if (m < 0)
                        decided = 0;  /* a condition only the caller can match */
                    else
                        met = m;
                }
            }
            if (!headed)
                keep = 0;
            else if (decided) {  /* its head conditions, matched here */
                keep = met;
                msg = -1;
            }
        } else {
            msg = -1;
        }
        if (keep)
            for (Py_ssize_t x = j; x < k; x++) {
                wout[4 * nwo] = weak[x].off;
                wout[4 * nwo + 1] = weak[x].id;
                wout[4 * nwo + 2] = msg;
                wout[4 * nwo + 3] = nl;
                nwo++;
            }
        j = k;
    }
    {  /* hits: the strong ones and the weak ones kept, merged */
        Py_ssize_t a = 0, b = 0;
        while (a < ns || b < nwo) {
            if (b >= nwo || (a < ns && strong[a] < wout[4 * b]))
                hits[nh++] = strong[a++];
            else
                hits[nh++] = wout[4 * b++];
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(y#y#y#y#)", (const char *)hits, (Py_ssize_t)(nh * 8), (const char *)wout,
                           (Py_ssize_t)(nwo * 32), (const char *)esc, (Py_ssize_t)(ne * 8), (const char *)nul,
                           (Py_ssize_t)(nn * 8));
done:
    Py_XDECREF(fast);
    PyMem_Free(hides);
    PyMem_Free(strong);
    PyMem_Free(others);
    PyMem_Free(esc);
    PyMem_Free(nul);
    PyMem_Free(weak);
    PyMem_Free(hits);
    PyMem_Free(wout);
    PyBuffer_Release(&view);
    PyBuffer_Release(&pv);
    PyBuffer_Release(&mv);
    PyBuffer_Release(&kv);
    if (hv.obj != NULL)
        PyBuffer_Release(&hv);
    return result;
}

#ifdef HAVE_AVX2_DISPATCH
static int use_popcnt;  /* the CPU's POPCNT instruction (else __builtin_popcountll is a libgcc call) */

__attribute__((target("popcnt"))) static void prefix_counts_popcnt(const unsigned char *b, int64_t *c, Py_ssize_t n)
{
    int64_t total = 0;
    for (Py_ssize_t w = 0; w < n; w++) {
        c[w] = total;
        uint64_t x;
        memcpy(&x, b + 8 * w, 8);
        total += __builtin_popcountll(x);
    }
    c[n] = total;
}
#endif

/* prefix_counts(bits) -> bytes of native int64, one more than the 64-bit words of bits
 * (a whole number of them): entry w is how many bits are set in the words before w */
static PyObject *prefix_counts(PyObject *mod, PyObject *args)
{
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view))
        return NULL;
    PyObject *out = NULL;
    if (view.len % 8) {
        PyErr_SetString(PyExc_ValueError, "bits: a whole number of 64-bit words");
        goto done;
    }
    Py_ssize_t n = view.len / 8;
    out = PyBytes_FromStringAndSize(NULL, (n + 1) * 8);
    if (out == NULL)
        goto done;
    int64_t *c = (int64_t *)PyBytes_AS_STRING(out);
    const unsigned char *b = (const unsigned char *)view.buf;
    Py_BEGIN_ALLOW_THREADS
#ifdef HAVE_AVX2_DISPATCH
    if (use_popcnt)
        prefix_counts_popcnt(b, c, n);
    else
#endif
    {
        int64_t total = 0;
        for (Py_ssize_t w = 0; w < n; w++) {
            c[w] = total;
            uint64_t x;
            memcpy(&x, b + 8 * w, 8);
#if defined(__GNUC__)
            total += __builtin_popcountll(x);
#else
            while (x) {
                x &= x - 1;
                total++;
            }
#endif
        }
        c[n] = total;
    }
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&view);
    return out;
}

/* avx2([on]) -> whether the AVX2 path is used (tests: both paths must give the same);
 * given a flag, uses it from now on if the CPU has AVX2 */
static PyObject *avx2(PyObject *mod, PyObject *args)
{
    int on = -1;
    if (!PyArg_ParseTuple(args, "|p", &on))
        return NULL;
#ifdef HAVE_AVX2_DISPATCH
    if (on >= 0)
        use_avx2 = on && __builtin_cpu_supports("avx2");
    return PyBool_FromLong(use_avx2);
#else
    return PyBool_FromLong(0);
#endif
}

/* heap_blocks(mmap_max, trim) -> whether set: glibc's malloc serves allocations up to
 * mmap_max bytes from its heap and keeps up to trim bytes freed at its top (mallopt
 * M_MMAP_THRESHOLD, M_TRIM_THRESHOLD), so that the read-ahead's 8 MiB blocks reuse the
 * memory of the blocks freed before them instead of each being a fresh mapping whose 2,048
 * pages fault in.  Process-wide; False (nothing done) without glibc. */
static PyObject *heap_blocks(PyObject *mod, PyObject *args)
{
    int mmap_max, trim;
    if (!PyArg_ParseTuple(args, "ii", &mmap_max, &trim))
        return NULL;
#ifdef __GLIBC__
    return PyBool_FromLong(mallopt(M_MMAP_THRESHOLD, mmap_max) == 1 && mallopt(M_TRIM_THRESHOLD, trim) == 1);
#else
    (void)mmap_max;
    (void)trim;
    return PyBool_FromLong(0);
#endif
}

static PyMethodDef module_methods[] = {
    {"prefix_counts", prefix_counts, METH_VARARGS, "prefix_counts(bits) -> int64 bytes"},
    {"avx2", avx2, METH_VARARGS, "avx2([on]) -> whether the AVX2 path is used"},
    {"newline_bits", newline_bits, METH_VARARGS, "newline_bits(buf, lo, bits, k0, k1)"},
    {"sift", sift, METH_VARARGS, "sift(buf, lo, hi, pairs, marks, kinds, hides[, heads]) -> (hits, weak, esc, nul)"},
    {"heap_blocks", heap_blocks, METH_VARARGS, "heap_blocks(mmap_max, trim) -> whether glibc's malloc took them"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_native", "One native pass over a block (read/scanner.py).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__native(void)
{
    static const unsigned char first3[4] = {0xff, 0xff, 0xff, 0};
    key_mask = load32(first3);
#ifdef HAVE_AVX2_DISPATCH
    __builtin_cpu_init();
    use_avx2 = __builtin_cpu_supports("avx2") && getenv("SGLANG_DOCTOR_NO_AVX2") == NULL;
    use_popcnt = __builtin_cpu_supports("popcnt");
#endif
    if (PyType_Ready(&MatcherType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    /* sift takes the head conditions' codes (read/vector.NATIVE_HEADS) */
    if (PyModule_AddIntConstant(m, "SIFT_HEADS", 1) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    /* Matcher.scan sets newline bits too (the scanner falls back to newline_bits without) */
    if (PyModule_AddIntConstant(m, "SCAN_NEWLINES", 1) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&MatcherType);
    if (PyModule_AddObject(m, "Matcher", (PyObject *)&MatcherType) < 0) {
        Py_DECREF(&MatcherType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
