/* The compiled parts of twokeys.lexical (twokeys.lexical._kernel), each with a Python
 * path that gives identical results (tests compare them):
 *
 *   top_k, top_k_ids,   BM25 top-k of one query (its term ids as a list, or as
 *   top_k_many          RawTable.encode writes them), or of a batch (below)
 *   RawTable            a build's raw tokens: the analyzer's raw-token pattern
 *                       (twokeys.analysis._RAW_TOKEN) as a scan, each distinct token's
 *                       term ids kept by its characters (twokeys.lexical.coding)
 *   postings            term occurrences, chunk by chunk, to term-major postings
 *                       (twokeys.lexical.bm25.build_term_matrix_from_ids)
 *   instances           values of a slotted class (ScoredChunk, Hit) made in one call
 *
 * BM25 top-k of one query, or of a batch, over term-major postings:
 *
 * The compiled form of twokeys.lexical.bm25.score followed by
 * twokeys.topk.top_k(..., only_positive=True): the same float32 sums, added in the same
 * term order, and the same (-score, row) order, so results are identical to the numpy
 * path (tests compare both). It touches only the postings of the query's terms and the
 * rows they name: no pass over every chunk, no dense score vector allocated per query.
 * Built with -ffp-contract=off, so "score + qtf * weight" is never fused into one
 * rounding where numpy rounds twice.
 *
 * top_k(indptr, indices, weights, terms, qtfs, k, scores, touched[, maxw, cand,
 *       prune_from]) -> (rows, scores)
 *   indptr   int64[n_terms + 1]   term t's postings are indptr[t] .. indptr[t+1]
 *   indices  int32[n_postings]    chunk rows
 *   weights  float32[n_postings]  BM25 weights
 *   terms    sequence of int      term ids, in the order their weights are added
 *   qtfs     sequence of float    each term's query weight (its count in the query)
 *   k        int                  how many to return
 *   scores   float32[n_rows]      scratch, all zero; left all zero
 *   touched  int32[n_rows + 1]    scratch
 *   maxw     float32[n_terms]     optional: each term's largest weight, < 0 (or NaN) where
 *                                 not known yet (filled in as terms are met); with it the
 *                                 top k is pruned (score_top_k_pruned), same results
 *   cand     int64[n_rows + 1]    scratch, given with maxw
 *   prune_from  int               prune from this many postings a query (PRUNE_FROM_POSTINGS)
 * The GIL is released while scoring, so each thread needs its own scratch arrays.
 *
 * top_k_ids(indptr, indices, weights, ids, k, scores, touched[, maxw, cand, prune_from])
 *   top_k of a query given as int32 term ids in query order (a bytes object as
 *   RawTable.encode returns, or an int32 array; repeats allowed, negative ids skipped):
 *   sorted and repeats counted here, as top_k_many does (same numbering rule below).
 *
 * Scoring (score_top_k): when a query's postings are many for the rows, the weights are
 * added with no bookkeeping and every row is read back (score_top_k_dense); otherwise
 * the rows are listed on first touch (score_top_k_touched); same results.
 *
 * top_k_many(indptr, indices, weights, terms, bounds, k, threads, n_rows, rows, scores,
 *            counts)
 *   The same for a batch of queries, in one call, on `threads` threads of its own (the
 *   GIL released throughout, scratch allocated per thread here).
 *   terms    int64[...]           every query's term ids, one after another, with
 *                                 repeats, -1 for a term not in the vocabulary
 *   bounds   int64[n_queries + 1] query q's ids are terms[bounds[q] .. bounds[q+1]]
 *   rows     int32[n_queries * k] out: query q's rows at rows[q * k ..], best first
 *   scores   float32[n_queries*k] out: their scores
 *   n_rows   int                  the number of chunk rows (each thread's scratch)
 *   counts   int64[n_queries]     out: how many of query q's k slots are filled
 *   Term ids must be numbered in the order top_k's callers add them (the Python caller
 *   sorts a query's terms by their text; it uses this function only when ids are in
 *   text order): each query's ids are sorted and repeats become the term's count.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#ifndef _WIN32
#include <pthread.h>
#define HAVE_PTHREADS 1
#endif

typedef struct {
    float score;
    int32_t row;
} Entry;

/* a ranks before b: higher score, then lower row */
static inline int before(Entry a, Entry b) {
    return a.score > b.score || (a.score == b.score && a.row < b.row);
}

/* heap[0] is the entry every other ranks before (the worst kept) */
static void sift_down(Entry *heap, Py_ssize_t n, Py_ssize_t i) {
    for (;;) {
        Py_ssize_t worst = i, l = 2 * i + 1, r = l + 1;
        if (l < n && before(heap[worst], heap[l])) worst = l;
        if (r < n && before(heap[worst], heap[r])) worst = r;
        if (worst == i) return;
        Entry tmp = heap[i];
        heap[i] = heap[worst];
        heap[worst] = tmp;
        i = worst;
    }
}

static void sift_up(Entry *heap, Py_ssize_t i) {
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!before(heap[parent], heap[i])) return;
        Entry tmp = heap[i];
        heap[i] = heap[parent];
        heap[parent] = tmp;
        i = parent;
    }
}

static int compare(const void *pa, const void *pb) {
    Entry a = *(const Entry *)pa, b = *(const Entry *)pb;
    return before(a, b) ? -1 : (before(b, a) ? 1 : 0);
}

/* score_top_k (below) for a query whose postings are few for the rows: each row it
 * touches is listed once, on its first touch, and only the listed rows are read back. */
static Py_ssize_t score_top_k_touched(const int64_t *indptr, const int32_t *indices,
                              const float *weights, Py_ssize_t n_rows, const int64_t *term_ids,
                              const float *term_qtfs, Py_ssize_t n_query, Py_ssize_t k,
                              float *scores, int32_t *touched, Entry *heap) {
    Py_ssize_t n_touched = 0, kept = 0;
    int bad_row = 0;
    for (Py_ssize_t i = 0; i < n_query && !bad_row; i++) {
        int64_t t = term_ids[i], end = indptr[t + 1];
        float q = term_qtfs[i];
        for (int64_t p = indptr[t]; p < end; p++) {
            int32_t row = indices[p];
            if (row < 0 || row >= n_rows) {
                bad_row = 1;
                break;
            }
            /* branch-free: a row is listed when its score is still zero (first touch) */
            touched[n_touched] = row;
            n_touched += scores[row] == 0.0f && n_touched < n_rows;
            if (q == 0.0f)
                scores[row] = scores[row] + weights[p];
            else
                scores[row] = scores[row] + q * weights[p];
        }
    }
    for (Py_ssize_t i = 0; i < n_touched; i++) {
        Entry e = {scores[touched[i]], touched[i]};
        scores[touched[i]] = 0.0f;
        if (!(e.score > 0.0f) || k == 0) continue;
        if (kept < k) {
            heap[kept] = e;
            sift_up(heap, kept++);
        } else if (before(e, heap[0])) {
            heap[0] = e;
            sift_down(heap, kept, 0);
        }
    }
    qsort(heap, kept, sizeof(Entry), compare);
    return bad_row ? -1 : kept;
}

/* Offers the entry for `row` to the heap of the k best; returns the new threshold (the
 * worst kept score once k are kept, else 0). Rows come in increasing order, so a score
 * equal to the threshold never ranks before the worst kept (its row is lower). */
static inline float offer_row(Entry *heap, Py_ssize_t *kept, Py_ssize_t k, float score,
                              Py_ssize_t row) {
    Entry e = {score, (int32_t)row};
    if (*kept < k) {
        heap[*kept] = e;
        sift_up(heap, (*kept)++);
        return *kept == k ? heap[0].score : 0.0f;
    }
    if (before(e, heap[0])) {
        heap[0] = e;
        sift_down(heap, *kept, 0);
    }
    return heap[0].score;
}

/* score_top_k (below) for a query whose postings are many for the rows: the weights are
 * added with no bookkeeping (a scatter whose iterations don't wait on each other), then
 * every row's score is read in order, sixteen at a time, and only rows above the k-th
 * best so far are offered to the heap (about 70 of SciFact's 10,737 rows a query); the
 * scores are zeroed again in one pass. On SciFact (5,265 postings a query on average)
 * 6 against 16 us for the listing path, whose "first touch?" count chains every
 * posting's iteration to the one before. */
static Py_ssize_t score_top_k_dense(const int64_t *indptr, const int32_t *indices,
                                    const float *weights, Py_ssize_t n_rows,
                                    const int64_t *term_ids, const float *term_qtfs,
                                    Py_ssize_t n_query, Py_ssize_t k, float *restrict scores,
                                    Entry *heap) {
    int bad_row = 0;
    for (Py_ssize_t i = 0; i < n_query && !bad_row; i++) {
        int64_t t = term_ids[i], end = indptr[t + 1];
        float q = term_qtfs[i];
        if (q == 0.0f) {
            for (int64_t p = indptr[t]; p < end; p++) {
                uint32_t row = (uint32_t)indices[p];
                if (row >= (uint64_t)n_rows) {
                    bad_row = 1;
                    break;
                }
                scores[row] = scores[row] + weights[p];
            }
        } else {
            for (int64_t p = indptr[t]; p < end; p++) {
                uint32_t row = (uint32_t)indices[p];
                if (row >= (uint64_t)n_rows) {
                    bad_row = 1;
                    break;
                }
                scores[row] = scores[row] + q * weights[p];
            }
        }
    }
    Py_ssize_t kept = 0, row = 0;
    float floor = 0.0f; /* offered: scores above it (> 0, so never NaN) */
    if (!bad_row && k > 0) {
#ifdef __SSE2__
        __m128 vfloor = _mm_setzero_ps();
        for (; row + 16 <= n_rows; row += 16) {
            const float *s = scores + row;
            unsigned above =
                (unsigned)_mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(s), vfloor)) |
                (unsigned)_mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(s + 4), vfloor)) << 4 |
                (unsigned)_mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(s + 8), vfloor)) << 8 |
                (unsigned)_mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(s + 12), vfloor)) << 12;
            while (above) {
                int j = __builtin_ctz(above);
                above &= above - 1;
                if (s[j] > floor) {
                    floor = offer_row(heap, &kept, k, s[j], row + j);
                    vfloor = _mm_set1_ps(floor);
                }
            }
        }
#endif
        for (; row < n_rows; row++)
            if (scores[row] > floor) floor = offer_row(heap, &kept, k, scores[row], row);
    }
    memset(scores, 0, sizeof(float) * (size_t)n_rows);
    qsort(heap, kept, sizeof(Entry), compare);
    return bad_row ? -1 : kept;
}

/* From this many rows per posting a query reads, score_top_k lists the rows it touches
 * rather than reading every row back (a million-row index and a rare term). */
#define DENSE_MAX_ROWS_PER_POSTING 16

/* Scores of one query's terms into `scores` (zero on entry and on return), its top k
 * (by `before`) sorted into heap[0..kept). Returns kept, or -1 if a posting names a row
 * out of range. Needs no Python: it runs with the GIL released. */
static Py_ssize_t score_top_k(const int64_t *indptr, const int32_t *indices,
                              const float *weights, Py_ssize_t n_rows, const int64_t *term_ids,
                              const float *term_qtfs, Py_ssize_t n_query, Py_ssize_t k,
                              float *scores, int32_t *touched, Entry *heap) {
    int64_t postings = 0;
    for (Py_ssize_t i = 0; i < n_query; i++)
        postings += indptr[term_ids[i] + 1] - indptr[term_ids[i]];
    if ((int64_t)n_rows <= DENSE_MAX_ROWS_PER_POSTING * postings)
        return score_top_k_dense(indptr, indices, weights, n_rows, term_ids, term_qtfs, n_query,
                                 k, scores, heap);
    return score_top_k_touched(indptr, indices, weights, n_rows, term_ids, term_qtfs, n_query, k,
                               scores, touched, heap);
}

/* ---- the same top k, pruned (MaxScore, Turtle & Flood 1995) ----------------------
 *
 * Terms are scored in decreasing order of their largest possible contribution (the
 * term's largest weight, kept in maxw, times its query weight). Once the k-th best
 * partial score exceeds what all the terms still to come could add, no row untouched so
 * far can enter the top k: the rows that still can become candidates, and each later
 * term only looks its candidates up in its postings (a galloping search) instead of
 * walking them all, dropping candidates that can no longer reach the k-th score. Every
 * surviving candidate's score is then summed again in the callers' term order, exactly
 * as score_top_k adds it, so scores and ranking are identical to score_top_k's. Bounds
 * are compared with a margin (PRUNE_EPS) wider than float32 rounding of a sum in another
 * order can move a score, so no row of the exact top k is ever dropped. */

typedef struct {
    double bound; /* the largest contribution the term can make */
    Py_ssize_t term; /* its position in the callers' order */
} Impact;

static int by_bound(const void *pa, const void *pb) {
    double a = ((const Impact *)pa)->bound, b = ((const Impact *)pb)->bound;
    return a > b ? -1 : (a < b ? 1 : 0);
}

/* The k-th best score of n entries (k <= n), with heap as scratch (k floats). */
static float kth_best(const Entry *values, Py_ssize_t n, Py_ssize_t k, float *heap) {
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        float v = values[i].score;
        if (kept < k) { /* min-heap of the k best */
            Py_ssize_t j = kept++;
            while (j > 0 && heap[(j - 1) / 2] > v) {
                heap[j] = heap[(j - 1) / 2];
                j = (j - 1) / 2;
            }
            heap[j] = v;
        } else if (v > heap[0]) {
            Py_ssize_t j = 0;
            for (;;) {
                Py_ssize_t l = 2 * j + 1, r = l + 1, least = j;
                float low = v;
                if (l < k && heap[l] < low) least = l, low = heap[l];
                if (r < k && heap[r] < low) least = r, low = heap[r];
                if (least == j) break;
                heap[j] = heap[least];
                j = least;
            }
            heap[j] = v;
        }
    }
    return heap[0];
}

/* First position in [lo, end) whose row is >= row: a galloping search forward from lo,
 * then a branch-free binary search (conditional moves, no mispredicted jumps). */
static inline int64_t gallop(const int32_t *indices, int64_t lo, int64_t end, int32_t row) {
    int64_t step = 1, hi = lo;
    while (hi < end && indices[hi] < row) {
        lo = hi + 1;
        hi += step;
        step <<= 1;
    }
    if (hi > end) hi = end;
    if (lo >= hi) return lo;
    const int32_t *base = indices + lo;
    int64_t n = hi - lo;
    while (n > 1) {
        int64_t half = n >> 1;
        base = base[half] < row ? base + half : base;
        n -= half;
    }
    return (base - indices) + (*base < row);
}

static int by_row(const void *pa, const void *pb) {
    int32_t a = ((const Entry *)pa)->row, b = ((const Entry *)pb)->row;
    return (a > b) - (a < b);
}

/* The margin of every bound: float32 sums of up to m terms added in another order differ
 * by less than m * 2^-24 of the sum; this is over four times that. */
#define PRUNE_EPS(m) (1e-5 + 2.5e-7 * (double)(m))

/* The best partial scores so far, one entry per row: a min-heap on score (heap[0] the
 * k-th best once full). A row already in it has its score raised in place. */
static void best_sift_down(Entry *heap, Py_ssize_t n, Py_ssize_t i) {
    for (;;) {
        Py_ssize_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < n && heap[l].score < heap[least].score) least = l;
        if (r < n && heap[r].score < heap[least].score) least = r;
        if (least == i) return;
        Entry tmp = heap[i];
        heap[i] = heap[least];
        heap[least] = tmp;
        i = least;
    }
}

static void best_offer(Entry *heap, Py_ssize_t *n, Py_ssize_t k, int32_t row, float score) {
    for (Py_ssize_t i = 0; i < *n; i++)
        if (heap[i].row == row) {
            heap[i].score = score;
            best_sift_down(heap, *n, i);
            return;
        }
    if (*n < k) {
        Py_ssize_t i = (*n)++;
        while (i > 0 && heap[(i - 1) / 2].score > score) {
            heap[i] = heap[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        heap[i].row = row;
        heap[i].score = score;
        return;
    }
    heap[0].row = row;
    heap[0].score = score;
    best_sift_down(heap, *n, 0);
}

/* From this k up the running best (a linear search per raised row) costs more than it
 * saves: score_top_k instead. */
#define PRUNE_MAX_K 64
/* Below this many postings a query's plain scoring is quicker (SciFact's queries, about
 * 5,000 postings, took a quarter longer pruned: most rows stay candidates); at a million
 * chunks (about 430,000 postings a query) pruned scoring took 1,170 us against 1,490 */
#define PRUNE_FROM_POSTINGS 50000

/* score_top_k's result, pruned (above). maxw[t] < 0 is unknown: filled here. cand is
 * scratch of n_rows + 1 entries. Returns kept, -1 for a row out of range, -2 out of
 * memory. */
static Py_ssize_t score_top_k_pruned(const int64_t *indptr, const int32_t *indices,
                                     const float *weights, Py_ssize_t n_rows,
                                     const int64_t *term_ids, const float *term_qtfs,
                                     Py_ssize_t n_query, Py_ssize_t k, float *scores,
                                     int32_t *touched, Entry *heap, float *maxw, Entry *cand) {
    Py_ssize_t m = n_query, n_touched = 0, kept = 0, n_cand = 0, n_best = 0, j = 0;
    double eps = PRUNE_EPS(m);
    Impact *order = malloc(sizeof(Impact) * (m ? m : 1));
    double *rest = malloc(sizeof(double) * (m + 1));
    float *kbuf = malloc(sizeof(float) * (k ? k : 1));
    int64_t *cursor = malloc(sizeof(int64_t) * (m ? m : 1));
    Entry *best = malloc(sizeof(Entry) * (k ? k : 1));
    if (!order || !rest || !kbuf || !cursor || !best) {
        kept = -2;
        goto out;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        int64_t t = term_ids[i];
        float top = maxw[t];
        if (!(top >= 0.0f)) {
            top = 0.0f;
            for (int64_t p = indptr[t]; p < indptr[t + 1]; p++)
                if (weights[p] > top) top = weights[p];
            maxw[t] = top;
        }
        order[i].bound = (double)top * (term_qtfs[i] == 0.0f ? 1.0 : (double)term_qtfs[i]);
        order[i].term = i;
    }
    qsort(order, m, sizeof(Impact), by_bound);
    rest[m] = 0.0;
    for (Py_ssize_t i = m - 1; i >= 0; i--) rest[i] = rest[i + 1] + order[i].bound;

    /* phase 1: every posting of the terms of largest bounds, keeping the k best partial
     * scores, until what the other terms could add no longer reaches the k-th of them */
    float theta = -1.0f; /* the k-th best partial score (-1 until k rows have one) */
    double floor_ = -1.0; /* the k-th best score is at least this */
    int pruning = 0;
    for (; j < m; j++) {
        int64_t t = term_ids[order[j].term], end = indptr[t + 1];
        float q = term_qtfs[order[j].term];
        for (int64_t p = indptr[t]; p < end; p++) {
            int32_t row = indices[p];
            if (row < 0 || row >= n_rows) {
                for (Py_ssize_t i = 0; i < n_touched; i++) scores[touched[i]] = 0.0f;
                kept = -1;
                goto out;
            }
            float s = scores[row];
            touched[n_touched] = row;
            n_touched += s == 0.0f && n_touched < n_rows;
            s = q == 0.0f ? s + weights[p] : s + q * weights[p];
            scores[row] = s;
            if (s > theta) {
                best_offer(best, &n_best, k, row, s);
                if (n_best == k) theta = best[0].score;
            }
        }
        if (n_best < k || j + 1 == m) continue;
        if ((double)theta * (1.0 - eps) > floor_) floor_ = (double)theta * (1.0 - eps);
        pruning = rest[j + 1] * (1.0 + eps) < floor_;
        /* the k best rows' whole scores (the other terms looked up) bound the k-th best
         * score from below far more closely than their partial scores: looked up when
         * about to prune (fewer candidates), or while the other terms' postings
         * outnumber the lookups many times (pruning sooner) */
        if (!pruning) {
            int64_t left = 0, lookups = 0;
            for (Py_ssize_t l = j + 1; l < m; l++) {
                int64_t t = term_ids[order[l].term], len = indptr[t + 1] - indptr[t];
                left += len;
                for (lookups += k; len > 1; len >>= 1) lookups += k;
            }
            if (left < 64 * lookups) continue;
        }
        double whole_min = -1.0;
        for (Py_ssize_t i = 0; i < n_best; i++) {
            double whole = best[i].score;
            for (Py_ssize_t l = j + 1; l < m; l++) {
                int64_t t = term_ids[order[l].term], end = indptr[t + 1];
                int64_t pos = gallop(indices, indptr[t], end, best[i].row);
                if (pos < end && indices[pos] == best[i].row) {
                    float q = term_qtfs[order[l].term];
                    whole += q == 0.0f ? (double)weights[pos] : (double)q * weights[pos];
                }
            }
            if (whole_min < 0.0 || whole < whole_min) whole_min = whole;
        }
        if (whole_min * (1.0 - eps) > floor_) floor_ = whole_min * (1.0 - eps);
        pruning = rest[j + 1] * (1.0 + eps) < floor_;
        if (pruning) break;
    }
    if (pruning) j++; /* the term that made it prune is scored */
    /* candidates (in touched): the rows that may still reach the k-th best score;
     * every other row's score back to zero */
    if ((double)theta * (1.0 - eps) > floor_) floor_ = (double)theta * (1.0 - eps);
    for (Py_ssize_t i = 0; i < n_touched; i++) {
        int32_t row = touched[i];
        if (((double)scores[row] + rest[j]) * (1.0 + eps) >= floor_)
            touched[n_cand++] = row;
        else
            scores[row] = 0.0f;
    }
    /* phase 2: the other terms add to the candidates only, each term by looking the
     * candidates up in its postings or by walking them, whichever reads fewer */
    for (; j < m && n_cand > 0; j++) {
        int64_t t = term_ids[order[j].term], start = indptr[t], end = indptr[t + 1];
        float q = term_qtfs[order[j].term];
        int64_t steps = 1;
        for (int64_t len = end - start; len > 1; len >>= 1) steps++;
        if ((int64_t)n_cand * steps * 4 < end - start) {
            for (Py_ssize_t i = 0; i < n_cand; i++) {
                int32_t row = touched[i];
                int64_t pos = gallop(indices, start, end, row);
                if (pos < end && indices[pos] == row)
                    scores[row] = q == 0.0f ? scores[row] + weights[pos]
                                            : scores[row] + q * weights[pos];
            }
        } else {
            for (int64_t p = start; p < end; p++) {
                int32_t row = indices[p];
                if (row < 0 || row >= n_rows) {
                    for (Py_ssize_t i = 0; i < n_cand; i++) scores[touched[i]] = 0.0f;
                    kept = -1;
                    goto out;
                }
                if (scores[row] != 0.0f)
                    scores[row] = q == 0.0f ? scores[row] + weights[p] : scores[row] + q * weights[p];
            }
        }
        Py_ssize_t n = 0;
        for (Py_ssize_t i = 0; i < n_cand; i++) {
            int32_t row = touched[i];
            if (((double)scores[row] + rest[j + 1]) * (1.0 + eps) >= floor_)
                touched[n++] = row;
            else
                scores[row] = 0.0f;
        }
        n_cand = n;
    }
    /* the candidates left, scores back to zero; the ones near the k-th best kept */
    for (Py_ssize_t i = 0; i < n_cand; i++) {
        cand[i].row = touched[i];
        cand[i].score = scores[touched[i]];
        scores[touched[i]] = 0.0f;
    }
    if (k == 0) goto out;
    if (n_cand > k) {
        floor_ = (double)kth_best(cand, n_cand, k, kbuf) * (1.0 - eps);
        Py_ssize_t n = 0;
        for (Py_ssize_t i = 0; i < n_cand; i++)
            if ((double)cand[i].score * (1.0 + eps) >= floor_) cand[n++] = cand[i];
        n_cand = n;
    }
    qsort(cand, n_cand, sizeof(Entry), by_row);
    /* their exact scores, summed in the callers' order as score_top_k does */
    for (Py_ssize_t i = 0; i < m; i++) cursor[i] = indptr[term_ids[i]];
    for (Py_ssize_t c = 0; c < n_cand; c++) {
        int32_t row = cand[c].row;
        float s = 0.0f;
        for (Py_ssize_t i = 0; i < m; i++) {
            int64_t end = indptr[term_ids[i] + 1];
            int64_t pos = cursor[i] = gallop(indices, cursor[i], end, row);
            if (pos < end && indices[pos] == row) {
                float q = term_qtfs[i];
                s = q == 0.0f ? s + weights[pos] : s + q * weights[pos];
            }
        }
        Entry e = {s, row};
        if (!(e.score > 0.0f)) continue;
        if (kept < k) {
            heap[kept] = e;
            sift_up(heap, kept++);
        } else if (before(e, heap[0])) {
            heap[0] = e;
            sift_down(heap, kept, 0);
        }
    }
    qsort(heap, kept, sizeof(Entry), compare);
out:
    free(order);
    free(rest);
    free(kbuf);
    free(cursor);
    free(best);
    return kept;
}

static int get_buffer(PyObject *obj, Py_buffer *view, const char *name, Py_ssize_t itemsize,
                      const char *kinds, int writable) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    const char *format = view->format ? view->format : "B";
    if (*format == '<' || *format == '=' || *format == '@') format++;
    if (view->itemsize != itemsize || strlen(format) != 1 || !strchr(kinds, format[0])) {
        PyErr_Format(PyExc_TypeError, "%s: expected %zd-byte items of kind %s, got '%s'", name,
                     itemsize, kinds, view->format ? view->format : "B");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* A query's known term ids (t < 0: unknown, skipped), sorted in place into ids[0..m),
 * repeats made counts: qtfs[i] is term i's count, 0 for a count of 1 (its weight added
 * as it is). Returns m. Insertion sort: queries are short. */
static Py_ssize_t sorted_counts(const int64_t *terms, Py_ssize_t n_terms, int64_t *ids,
                                float *qtfs) {
    Py_ssize_t n = 0;
    for (Py_ssize_t p = 0; p < n_terms; p++) {
        int64_t t = terms[p];
        if (t < 0) continue;
        Py_ssize_t j = n++;
        while (j > 0 && ids[j - 1] > t) {
            ids[j] = ids[j - 1];
            j--;
        }
        ids[j] = t;
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (m && ids[m - 1] == ids[i]) {
            qtfs[m - 1] = (qtfs[m - 1] == 0.0f ? 1.0f : qtfs[m - 1]) + 1.0f;
            continue;
        }
        ids[m] = ids[i];
        qtfs[m++] = 0.0f;
    }
    return m;
}

/* The arrays of top_k and top_k_ids, and their call: `term_ids` (checked here against
 * indptr) and `term_qtfs` (0: a count of 1) are the query, in the order weights are
 * added. Returns (rows, scores), or NULL with an exception set. */
static PyObject *run_top_k(PyObject *o_indptr, PyObject *o_indices, PyObject *o_weights,
                           int64_t *term_ids, float *term_qtfs, Py_ssize_t n_query,
                           Py_ssize_t k, PyObject *o_scores, PyObject *o_touched,
                           PyObject *o_maxw, PyObject *o_cand, Py_ssize_t prune_from) {
    if ((o_maxw == NULL) != (o_cand == NULL)) {
        PyErr_SetString(PyExc_TypeError, "top_k: maxw and cand go together");
        return NULL;
    }
    Py_buffer b_indptr, b_indices, b_weights, b_scores, b_touched, b_maxw, b_cand;
    int got = 0;
    PyObject *result = NULL;
    Entry *heap = NULL;

    if (get_buffer(o_indptr, &b_indptr, "indptr", 8, "qlLQ", 0) < 0) goto done;
    got = 1;
    if (get_buffer(o_indices, &b_indices, "indices", 4, "iI", 0) < 0) goto done;
    got = 2;
    if (get_buffer(o_weights, &b_weights, "weights", 4, "f", 0) < 0) goto done;
    got = 3;
    if (get_buffer(o_scores, &b_scores, "scores", 4, "f", 1) < 0) goto done;
    got = 4;
    if (get_buffer(o_touched, &b_touched, "touched", 4, "iI", 1) < 0) goto done;
    got = 5;
    if (o_maxw != NULL) {
        if (get_buffer(o_maxw, &b_maxw, "maxw", 4, "f", 1) < 0) goto done;
        got = 6;
        if (get_buffer(o_cand, &b_cand, "cand", 8, "qlLQ", 1) < 0) goto done;
        got = 7;
    }

    const int64_t *indptr = (const int64_t *)b_indptr.buf;
    const int32_t *indices = (const int32_t *)b_indices.buf;
    const float *weights = (const float *)b_weights.buf;
    float *scores = (float *)b_scores.buf;
    int32_t *touched = (int32_t *)b_touched.buf;
    Py_ssize_t n_terms = b_indptr.len / 8 - 1;
    Py_ssize_t n_postings = b_indices.len / 4;
    Py_ssize_t n_rows = b_scores.len / 4;
    if (b_weights.len / 4 != n_postings || b_touched.len / 4 != n_rows + 1 || n_terms < 0) {
        PyErr_SetString(PyExc_ValueError, "top_k: array lengths disagree");
        goto done;
    }
    if (got == 7 && (b_maxw.len / 4 != n_terms || b_cand.len / 8 != n_rows + 1)) {
        PyErr_SetString(PyExc_ValueError, "top_k: maxw or cand lengths disagree");
        goto done;
    }
    if (k < 0) k = 0;
    if (k > n_rows) k = n_rows;
    for (Py_ssize_t i = 0; i < n_query; i++) {
        int64_t t = term_ids[i];
        if (t < 0 || t >= n_terms) {
            PyErr_Format(PyExc_ValueError, "top_k: term id %lld out of range", (long long)t);
            goto done;
        }
        int64_t start = indptr[t], end = indptr[t + 1];
        if (start < 0 || end < start || end > n_postings) {
            PyErr_Format(PyExc_ValueError, "top_k: postings of term %lld out of range",
                         (long long)t);
            goto done;
        }
    }

    Py_ssize_t kept;
    heap = PyMem_Malloc(sizeof(Entry) * (k ? k : 1));
    if (!heap) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    int64_t n_postings_read = 0;
    for (Py_ssize_t i = 0; i < n_query; i++)
        n_postings_read += indptr[term_ids[i] + 1] - indptr[term_ids[i]];
    if (got == 7 && n_query > 1 && k > 0 && k <= PRUNE_MAX_K &&
        n_postings_read >= prune_from)
        kept = score_top_k_pruned(indptr, indices, weights, n_rows, term_ids, term_qtfs, n_query,
                                  k, scores, touched, heap, (float *)b_maxw.buf,
                                  (Entry *)b_cand.buf);
    else
        kept = score_top_k(indptr, indices, weights, n_rows, term_ids, term_qtfs, n_query, k,
                           scores, touched, heap);
    Py_END_ALLOW_THREADS
    if (kept == -2) {
        PyErr_NoMemory();
        goto done;
    }
    if (kept < 0) {
        PyErr_SetString(PyExc_ValueError, "top_k: a posting names a row out of range");
        goto done;
    }

    PyObject *rows = PyList_New(kept), *values = PyList_New(kept);
    if (!rows || !values) {
        Py_XDECREF(rows);
        Py_XDECREF(values);
        goto done;
    }
    for (Py_ssize_t i = 0; i < kept; i++) {
        PyList_SET_ITEM(rows, i, PyLong_FromLong(heap[i].row));
        PyList_SET_ITEM(values, i, PyFloat_FromDouble((double)heap[i].score));
    }
    result = PyTuple_Pack(2, rows, values);
    Py_DECREF(rows);
    Py_DECREF(values);

done:
    PyMem_Free(heap);
    if (got >= 7) PyBuffer_Release(&b_cand);
    if (got >= 6) PyBuffer_Release(&b_maxw);
    if (got >= 5) PyBuffer_Release(&b_touched);
    if (got >= 4) PyBuffer_Release(&b_scores);
    if (got >= 3) PyBuffer_Release(&b_weights);
    if (got >= 2) PyBuffer_Release(&b_indices);
    if (got >= 1) PyBuffer_Release(&b_indptr);
    return result;
}

static PyObject *top_k(PyObject *self, PyObject *args) {
    PyObject *o_indptr, *o_indices, *o_weights, *o_terms, *o_qtfs, *o_scores, *o_touched;
    PyObject *o_maxw = NULL, *o_cand = NULL;
    Py_ssize_t k, prune_from = PRUNE_FROM_POSTINGS;
    if (!PyArg_ParseTuple(args, "OOOOOnOO|OOn", &o_indptr, &o_indices, &o_weights, &o_terms,
                          &o_qtfs, &k, &o_scores, &o_touched, &o_maxw, &o_cand, &prune_from))
        return NULL;
    PyObject *result = NULL, *terms = NULL, *qtfs = NULL;
    int64_t *term_ids = NULL;
    float *term_qtfs = NULL;
    terms = PySequence_Fast(o_terms, "top_k: terms must be a sequence");
    if (!terms) goto done;
    qtfs = PySequence_Fast(o_qtfs, "top_k: qtfs must be a sequence");
    if (!qtfs) goto done;
    Py_ssize_t n_query = PySequence_Fast_GET_SIZE(terms);
    if (PySequence_Fast_GET_SIZE(qtfs) != n_query) {
        PyErr_SetString(PyExc_ValueError, "top_k: terms and qtfs differ in length");
        goto done;
    }
    term_ids = PyMem_Malloc(sizeof(int64_t) * (n_query ? n_query : 1));
    term_qtfs = PyMem_Malloc(sizeof(float) * (n_query ? n_query : 1));
    if (!term_ids || !term_qtfs) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n_query; i++) {
        long long t = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(terms, i));
        double q = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(qtfs, i));
        if (PyErr_Occurred()) goto done;
        if (t < 0) {
            PyErr_Format(PyExc_ValueError, "top_k: term id %lld out of range", t);
            goto done;
        }
        term_ids[i] = t;
        term_qtfs[i] = q == 1.0 ? 0.0f : (float)q; /* 0: add the weight as it is */
    }
    result = run_top_k(o_indptr, o_indices, o_weights, term_ids, term_qtfs, n_query, k,
                       o_scores, o_touched, o_maxw, o_cand, prune_from);
done:
    PyMem_Free(term_ids);
    PyMem_Free(term_qtfs);
    Py_XDECREF(terms);
    Py_XDECREF(qtfs);
    return result;
}

/* top_k of a query given as its term ids in query order (int32, -1 or any negative for
 * a term not in the vocabulary; repeats allowed), as RawTable.encode writes them: the ids
 * are sorted and repeats counted here, as top_k_many does, which needs ids numbered in
 * the order top_k's callers add terms (term text order). */
static PyObject *top_k_ids(PyObject *self, PyObject *args) {
    PyObject *o_indptr, *o_indices, *o_weights, *o_ids, *o_scores, *o_touched;
    PyObject *o_maxw = NULL, *o_cand = NULL;
    Py_ssize_t k, prune_from = PRUNE_FROM_POSTINGS;
    if (!PyArg_ParseTuple(args, "OOOOnOO|OOn", &o_indptr, &o_indices, &o_weights, &o_ids, &k,
                          &o_scores, &o_touched, &o_maxw, &o_cand, &prune_from))
        return NULL;
    /* int32 values: RawTable.encode's bytes (items of one byte, read four at a time) or
     * a contiguous buffer of 4-byte integers; an int64 or float array is refused rather
     * than read as twice as many int32 ids. */
    Py_buffer b_ids;
    if (PyObject_GetBuffer(o_ids, &b_ids, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return NULL;
    const char *fmt = b_ids.format ? b_ids.format : "B";
    size_t fmt_len = strlen(fmt);
    /* one type code, optionally after a byte-order mark naming this machine's order
     * ('@', '=', or '<' / '>' where it is the native one): a byte-swapped array
     * would be read as other term ids */
    const unsigned int probe = 1;
    const char native = *(const unsigned char *)&probe ? '<' : '>';
    int order_ok = fmt_len == 1 || (fmt_len == 2 && (fmt[0] == '@' || fmt[0] == '=' || fmt[0] == native));
    char code = fmt_len ? fmt[fmt_len - 1] : '\0';
    int bytes = b_ids.itemsize == 1 && (code == 'B' || code == 'b' || code == 'c');
    int int32 = b_ids.itemsize == 4 && (code == 'i' || code == 'I' || code == 'l' || code == 'L');
    if (!order_ok || (!bytes && !int32) || b_ids.len % 4) {
        PyErr_Format(PyExc_ValueError,
                     "top_k_ids: ids must be int32 values (bytes or a 4-byte integer buffer), "
                     "got format '%s' with %zd-byte items",
                     fmt, b_ids.itemsize);
        PyBuffer_Release(&b_ids);
        return NULL;
    }
    const int32_t *raw = (const int32_t *)b_ids.buf;
    Py_ssize_t n = b_ids.len / 4;
    PyObject *result = NULL;
    int64_t small_ids[64];
    float small_qtfs[64];
    int64_t *ids = small_ids;
    float *qtfs = small_qtfs;
    if (n > 64) {
        ids = PyMem_Malloc(sizeof(int64_t) * (size_t)n);
        qtfs = PyMem_Malloc(sizeof(float) * (size_t)n);
        if (!ids || !qtfs) {
            PyErr_NoMemory();
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) ids[i] = raw[i];
    Py_ssize_t m = sorted_counts(ids, n, ids, qtfs);
    result = run_top_k(o_indptr, o_indices, o_weights, ids, qtfs, m, k, o_scores, o_touched,
                       o_maxw, o_cand, prune_from);
done:
    if (ids != small_ids) PyMem_Free(ids);
    if (qtfs != small_qtfs) PyMem_Free(qtfs);
    PyBuffer_Release(&b_ids);
    return result;
}

/* One batch, shared by its threads; each thread takes the next query (an atomic
 * counter) and writes only that query's output slots. */
typedef struct {
    const int64_t *indptr;
    const int32_t *indices;
    const float *weights;
    Py_ssize_t n_rows, n_terms;
    const int64_t *terms, *bounds;
    Py_ssize_t n_queries, k, longest;
    int32_t *out_rows;
    float *out_scores;
    int64_t *out_counts;
    Py_ssize_t next; /* the next query to take */
    int failed;      /* 1: out of memory, 2: a row out of range */
} Batch;

static Py_ssize_t take(Batch *b) {
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED);
#else
    return b->next++; /* one thread only (see run_batch) */
#endif
}

static void *batch_worker(void *arg) {
    Batch *b = (Batch *)arg;
    float *scores = calloc(b->n_rows ? b->n_rows : 1, sizeof(float));
    int32_t *touched = malloc(sizeof(int32_t) * (b->n_rows + 1));
    Entry *heap = malloc(sizeof(Entry) * (b->k ? b->k : 1));
    int64_t *ids = malloc(sizeof(int64_t) * (b->longest ? b->longest : 1));
    float *qtfs = malloc(sizeof(float) * (b->longest ? b->longest : 1));
    if (!scores || !touched || !heap || !ids || !qtfs) {
        b->failed = 1;
        goto out;
    }
    for (Py_ssize_t q = take(b); q < b->n_queries && !b->failed; q = take(b)) {
        Py_ssize_t m = sorted_counts(b->terms + b->bounds[q], b->bounds[q + 1] - b->bounds[q],
                                     ids, qtfs);
        Py_ssize_t kept = score_top_k(b->indptr, b->indices, b->weights, b->n_rows, ids, qtfs, m,
                                      b->k, scores, touched, heap);
        if (kept < 0) {
            b->failed = 2;
            break;
        }
        for (Py_ssize_t i = 0; i < kept; i++) {
            b->out_rows[q * b->k + i] = heap[i].row;
            b->out_scores[q * b->k + i] = heap[i].score;
        }
        b->out_counts[q] = kept;
    }
out:
    free(scores);
    free(touched);
    free(heap);
    free(ids);
    free(qtfs);
    return NULL;
}

/* Runs the batch on `threads` threads: this one and threads - 1 started here. */
static void run_batch(Batch *b, int threads) {
#ifdef HAVE_PTHREADS
    pthread_t pool[64];
    int started = 0;
    if (threads > 64) threads = 64;
    for (int i = 1; i < threads; i++)
        if (pthread_create(&pool[started], NULL, batch_worker, b) == 0) started++;
    batch_worker(b);
    for (int i = 0; i < started; i++) pthread_join(pool[i], NULL);
#else
    (void)threads;
    batch_worker(b);
#endif
}

static PyObject *top_k_many(PyObject *self, PyObject *args) {
    PyObject *o_indptr, *o_indices, *o_weights, *o_terms, *o_bounds, *o_rows, *o_scores, *o_counts;
    Py_ssize_t k, n_rows;
    int threads;
    if (!PyArg_ParseTuple(args, "OOOOOninOOO", &o_indptr, &o_indices, &o_weights, &o_terms,
                          &o_bounds, &k, &threads, &n_rows, &o_rows, &o_scores, &o_counts))
        return NULL;
    Py_buffer views[8];
    int got = 0;
    PyObject *result = NULL;
    const char *names[8] = {"indptr", "indices", "weights", "terms",
                            "bounds", "rows",    "scores",  "counts"};
    PyObject *objs[8] = {o_indptr, o_indices, o_weights, o_terms,
                         o_bounds, o_rows,    o_scores,  o_counts};
    const Py_ssize_t sizes[8] = {8, 4, 4, 8, 8, 4, 4, 8};
    const char *kinds[8] = {"qlLQ", "iI", "f", "qlLQ", "qlLQ", "iI", "f", "qlLQ"};
    for (; got < 8; got++)
        if (get_buffer(objs[got], &views[got], names[got], sizes[got], kinds[got], got >= 5) < 0)
            goto done;

    Batch b;
    memset(&b, 0, sizeof b);
    b.indptr = (const int64_t *)views[0].buf;
    b.indices = (const int32_t *)views[1].buf;
    b.weights = (const float *)views[2].buf;
    b.terms = (const int64_t *)views[3].buf;
    b.bounds = (const int64_t *)views[4].buf;
    b.out_rows = (int32_t *)views[5].buf;
    b.out_scores = (float *)views[6].buf;
    b.out_counts = (int64_t *)views[7].buf;
    b.n_terms = views[0].len / 8 - 1;
    Py_ssize_t n_postings = views[1].len / 4, n_ids = views[3].len / 8;
    b.n_rows = n_rows;
    b.n_queries = views[4].len / 8 - 1;
    b.k = k < 0 ? 0 : k;
    if (views[2].len / 4 != n_postings || b.n_terms < 0 || b.n_queries < 0 || n_rows < 0 ||
        views[5].len / 4 != b.n_queries * b.k || views[6].len / 4 != b.n_queries * b.k ||
        views[7].len / 8 != b.n_queries) {
        PyErr_SetString(PyExc_ValueError, "top_k_many: array lengths disagree");
        goto done;
    }
    for (Py_ssize_t q = 0; q < b.n_queries; q++) {
        int64_t lo = b.bounds[q], hi = b.bounds[q + 1];
        if (lo < 0 || hi < lo || hi > n_ids) {
            PyErr_SetString(PyExc_ValueError, "top_k_many: query bounds out of range");
            goto done;
        }
        if (hi - lo > b.longest) b.longest = hi - lo;
        for (int64_t p = lo; p < hi; p++) {
            int64_t t = b.terms[p];
            if (t >= b.n_terms) {
                PyErr_Format(PyExc_ValueError, "top_k_many: term id %lld out of range",
                             (long long)t);
                goto done;
            }
            if (t >= 0 && (b.indptr[t] < 0 || b.indptr[t + 1] < b.indptr[t] ||
                           b.indptr[t + 1] > n_postings)) {
                PyErr_Format(PyExc_ValueError, "top_k_many: postings of term %lld out of range",
                             (long long)t);
                goto done;
            }
        }
    }
    Py_BEGIN_ALLOW_THREADS
    run_batch(&b, threads < 1 ? 1 : threads);
    Py_END_ALLOW_THREADS
    if (b.failed == 1) {
        PyErr_NoMemory();
        goto done;
    }
    if (b.failed == 2) {
        PyErr_SetString(PyExc_ValueError, "top_k_many: a posting names a row out of range");
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&views[i]);
    return result;
}

/* ---- values of a slotted class, made without running its __init__ ---------------------
 *
 * instances(cls, names, columns) -> list
 *   cls      a class with __slots__ (a frozen dataclass with slots=True)
 *   names    tuple of str: slots to set, each a plain object slot of cls
 *   columns  tuple, one per name: a list (one value per instance) or any other object (the
 *            same value for every instance); the lists all of one length, the count
 * What a frozen dataclass's __init__ does with object.__setattr__, for a run of values at
 * once (a search's ten ScoredChunk or Hit values cost more to build in Python than to
 * score). Slots not named are left unset, as __new__ leaves them. */
static PyObject *instances(PyObject *self, PyObject *args) {
    PyTypeObject *cls;
    PyObject *names, *columns;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyType_Type, &cls, &PyTuple_Type, &names,
                          &PyTuple_Type, &columns))
        return NULL;
    Py_ssize_t n_fields = PyTuple_GET_SIZE(names), count = -1;
    if (PyTuple_GET_SIZE(columns) != n_fields || n_fields > 16) {
        PyErr_SetString(PyExc_ValueError, "instances: one column per name, 16 at most");
        return NULL;
    }
    if (cls->tp_new != PyBaseObject_Type.tp_new || cls->tp_alloc == NULL) {
        PyErr_SetString(PyExc_TypeError, "instances: cls must be created by object.__new__");
        return NULL;
    }
    Py_ssize_t offsets[16];
    for (Py_ssize_t f = 0; f < n_fields; f++) {
        PyObject *descr = PyObject_GetAttr((PyObject *)cls, PyTuple_GET_ITEM(names, f));
        if (!descr) PyErr_Clear();
        int ok = descr && Py_IS_TYPE(descr, &PyMemberDescr_Type) &&
                 ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX &&
                 !(((PyMemberDescrObject *)descr)->d_member->flags & READONLY);
        if (ok) offsets[f] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_XDECREF(descr);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "instances: %R is not a slot of %s",
                         PyTuple_GET_ITEM(names, f), cls->tp_name);
            return NULL;
        }
        PyObject *column = PyTuple_GET_ITEM(columns, f);
        if (PyList_Check(column)) {
            if (count >= 0 && PyList_GET_SIZE(column) != count) {
                PyErr_SetString(PyExc_ValueError, "instances: columns differ in length");
                return NULL;
            }
            count = PyList_GET_SIZE(column);
        }
    }
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "instances: no list among the columns");
        return NULL;
    }
    PyObject *out = PyList_New(count);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *obj = cls->tp_alloc(cls, 0);
        if (!obj) {
            Py_DECREF(out);
            return NULL;
        }
        for (Py_ssize_t f = 0; f < n_fields; f++) {
            PyObject *column = PyTuple_GET_ITEM(columns, f);
            PyObject *value = PyList_Check(column) ? PyList_GET_ITEM(column, i) : column;
            PyObject **slot = (PyObject **)((char *)obj + offsets[f]);
            Py_XSETREF(*slot, Py_NewRef(value));
        }
        PyList_SET_ITEM(out, i, obj);
    }
    return out;
}

/* ---- raw tokens: twokeys.analysis' _RAW_TOKEN.findall, as distinct-token ids ---------- */

/* Character classes of the raw-token pattern (twokeys.analysis._RAW_TOKEN):
 *   alnum      [^\W_]  what re calls a word character, less "_": Py_UNICODE_ISALNUM
 *   connector  [-_.:/@+#'=]
 *   word       \w      alnum or "_" */
#define C_ALNUM 1
#define C_CONNECTOR 2
static unsigned char ascii_class[128];

static void init_ascii_class(void) {
    for (int c = 0; c < 128; c++) ascii_class[c] = Py_UNICODE_ISALNUM((Py_UCS4)c) ? C_ALNUM : 0;
    for (const char *c = "-_.:/@+#'="; *c; c++) ascii_class[(unsigned char)*c] = C_CONNECTOR;
}

static inline int is_alnum(Py_UCS4 c) {
    return c < 128 ? ascii_class[c] == C_ALNUM : Py_UNICODE_ISALNUM(c);
}
static inline int is_connector(Py_UCS4 c) { return c < 128 && ascii_class[c] == C_CONNECTOR; }
static inline int is_word(Py_UCS4 c) { return c == '_' || is_alnum(c); }

/* The end of the raw token that starts at `p` (as _RAW_TOKEN matches there: an optional
 * lead "-", "--", "." or "/" before an alnum; alnum runs joined by connector runs; an
 * optional trail "++" or "#" not before a word character), or -1 if none starts there. */
#if defined(__GNUC__) || defined(__clang__)
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE static inline
#endif

/* (Inlined where `kind` is a constant, so each kind of string gets a scan of its own.) */
ALWAYS_INLINE Py_ssize_t token_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t p) {
#define AT(i) PyUnicode_READ(kind, data, (i))
    Py_UCS4 c = AT(p);
    Py_ssize_t q;
    if (is_alnum(c))
        q = p;
    else if (c == '-' && p + 2 < n && AT(p + 1) == '-' && is_alnum(AT(p + 2)))
        q = p + 2;
    else if ((c == '-' || c == '.' || c == '/') && p + 1 < n && is_alnum(AT(p + 1)))
        q = p + 1;
    else
        return -1;
    Py_ssize_t e = q + 1;
    for (;;) {
        while (e < n && is_alnum(AT(e))) e++;
        Py_ssize_t f = e;
        while (f < n && is_connector(AT(f))) f++;
        if (f == e || f == n || !is_alnum(AT(f))) break;
        e = f;
    }
    if (e + 1 < n && AT(e) == '+' && AT(e + 1) == '+')
        e += 2;
    else if (e < n && AT(e) == '#' && !(e + 1 < n && is_word(AT(e + 1))))
        e += 1;
    return e;
#undef AT
}

/* A growable array of int32 (PyMem: the GIL is held). */
typedef struct {
    int32_t *data;
    Py_ssize_t size, capacity;
} Ints;

static int ints_reserve(Ints *a, Py_ssize_t more) {
    if (a->size + more <= a->capacity) return 0;
    Py_ssize_t capacity = a->capacity ? a->capacity : 1024;
    while (capacity < a->size + more) capacity *= 2;
    int32_t *grown = PyMem_Realloc(a->data, (size_t)capacity * sizeof(int32_t));
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    a->data = grown;
    a->capacity = capacity;
    return 0;
}

static inline int ints_push(Ints *a, int32_t value) {
    if (a->size == a->capacity && ints_reserve(a, 1) < 0) return -1;
    a->data[a->size++] = value;
    return 0;
}

/* RawTable: the distinct raw tokens a build has met, each with its term ids.
 *
 * A raw token is looked up by its characters where the scan finds it (an FNV-1a hash
 * of its code points, open addressing), so a token met before costs no str object and
 * no dict lookup: its term ids are copied out directly. Tokens met for the first time
 * in a call are handed, in order of first appearance, to the caller's `learn(raws)`,
 * which returns their term ids (int32, all of them one after another) and how many
 * each has (int32); then every occurrence is written out. */
typedef struct {
    PyObject_HEAD
    Py_ssize_t n_raws, n_learned;
    /* per raw token: hash, where its code points and its term ids start, how many */
    uint64_t *hashes;
    int64_t *key_start, *term_start;
    int32_t *key_len, *term_len;
    Py_ssize_t raws_capacity;
    Py_UCS4 *keys;
    Py_ssize_t keys_size, keys_capacity;
    Ints terms;
    int32_t *slots; /* raw id + 1, 0: empty */
    Py_ssize_t n_slots;
} RawTable;

static void raw_table_dealloc(RawTable *t) {
    PyMem_Free(t->hashes);
    PyMem_Free(t->key_start);
    PyMem_Free(t->term_start);
    PyMem_Free(t->key_len);
    PyMem_Free(t->term_len);
    PyMem_Free(t->keys);
    PyMem_Free(t->terms.data);
    PyMem_Free(t->slots);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyObject *raw_table_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (!PyArg_ParseTuple(args, ":RawTable")) return NULL;
    RawTable *t = (RawTable *)type->tp_alloc(type, 0);
    if (t == NULL) return NULL;
    t->n_slots = 1 << 12;
    t->slots = PyMem_Calloc((size_t)t->n_slots, sizeof(int32_t));
    if (t->slots == NULL) {
        Py_DECREF(t);
        return PyErr_NoMemory();
    }
    return (PyObject *)t;
}

ALWAYS_INLINE uint64_t span_hash(int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    uint64_t h = 14695981039346656037ULL;
    for (Py_ssize_t i = start; i < end; i++) {
        h ^= (uint64_t)PyUnicode_READ(kind, data, i);
        h *= 1099511628211ULL;
    }
    return h;
}

ALWAYS_INLINE int span_equals(RawTable *t, Py_ssize_t raw, int kind, const void *data,
                              Py_ssize_t start, Py_ssize_t end) {
    if (t->key_len[raw] != end - start) return 0;
    const Py_UCS4 *key = t->keys + t->key_start[raw];
    for (Py_ssize_t i = start; i < end; i++)
        if (*key++ != PyUnicode_READ(kind, data, i)) return 0;
    return 1;
}

static int raw_table_grow_slots(RawTable *t) {
    Py_ssize_t n_slots = t->n_slots * 2;
    int32_t *slots = PyMem_Calloc((size_t)n_slots, sizeof(int32_t));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t r = 0; r < t->n_raws; r++) {
        Py_ssize_t s = (Py_ssize_t)(t->hashes[r] & (uint64_t)(n_slots - 1));
        while (slots[s]) s = (s + 1) & (n_slots - 1);
        slots[s] = (int32_t)(r + 1);
    }
    PyMem_Free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

#define GROW(field, type)                                                                \
    do {                                                                                 \
        type *grown = PyMem_Realloc(t->field, (size_t)capacity * sizeof(type));          \
        if (grown == NULL) {                                                             \
            PyErr_NoMemory();                                                            \
            return -1;                                                                   \
        }                                                                                \
        t->field = grown;                                                                \
    } while (0)

/* Adds the raw token text[start:end] (hash h, not in the table; slot s is free for it)
 * and appends its str to `new`: its id, or -1 on error. */
static Py_ssize_t raw_table_add(RawTable *t, PyObject *text, int kind, const void *data,
                                Py_ssize_t start, Py_ssize_t end, uint64_t h, Py_ssize_t s,
                                PyObject *new) {
    if (t->n_raws >= INT32_MAX - 1) {
        PyErr_SetString(PyExc_OverflowError, "RawTable: more than 2**31 distinct tokens");
        return -1;
    }
    if (t->n_raws == t->raws_capacity) {
        Py_ssize_t capacity = t->raws_capacity ? 2 * t->raws_capacity : 4096;
        GROW(hashes, uint64_t);
        GROW(key_start, int64_t);
        GROW(term_start, int64_t);
        GROW(key_len, int32_t);
        GROW(term_len, int32_t);
        t->raws_capacity = capacity;
    }
    Py_ssize_t length = end - start;
    if (t->keys_size + length > t->keys_capacity) {
        Py_ssize_t capacity = t->keys_capacity ? 2 * t->keys_capacity : 1 << 15;
        while (capacity < t->keys_size + length) capacity *= 2;
        GROW(keys, Py_UCS4);
        t->keys_capacity = capacity;
    }
    PyObject *token = PyUnicode_Substring(text, start, end);
    if (token == NULL) return -1;
    int failed = PyList_Append(new, token);
    Py_DECREF(token);
    if (failed) return -1;
    Py_ssize_t raw = t->n_raws++;
    t->hashes[raw] = h;
    t->key_start[raw] = t->keys_size;
    t->key_len[raw] = (int32_t)length;
    t->term_start[raw] = -1;
    t->term_len[raw] = 0;
    for (Py_ssize_t i = start; i < end; i++) t->keys[t->keys_size++] = PyUnicode_READ(kind, data, i);
    t->slots[s] = (int32_t)(raw + 1);
    if (2 * t->n_raws > t->n_slots && raw_table_grow_slots(t) < 0) return -1;
    return raw;
}

/* The id of the raw token text[start:end], added if it is not in the table; -1 on error. */
ALWAYS_INLINE Py_ssize_t raw_table_id(RawTable *t, PyObject *text, int kind, const void *data,
                                      Py_ssize_t start, Py_ssize_t end, PyObject *new) {
    uint64_t h = span_hash(kind, data, start, end);
    Py_ssize_t s = (Py_ssize_t)(h & (uint64_t)(t->n_slots - 1));
    for (; t->slots[s]; s = (s + 1) & (t->n_slots - 1)) {
        Py_ssize_t raw = t->slots[s] - 1;
        if (t->hashes[raw] == h && span_equals(t, raw, kind, data, start, end)) return raw;
    }
    return raw_table_add(t, text, kind, data, start, end, h, s, new);
}

/* Appends the ids of the raw tokens of `text` to `raws`; -1 on error. */
ALWAYS_INLINE int scan_text(RawTable *t, PyObject *text, int kind, Ints *raws, PyObject *new) {
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t p = 0; p < n;) {
        Py_ssize_t e = token_end(kind, data, n, p);
        if (e < 0) {
            p++;
            continue;
        }
        Py_ssize_t raw = raw_table_id(t, text, kind, data, p, e, new);
        if (raw < 0 || ints_push(raws, (int32_t)raw) < 0) return -1;
        p = e;
    }
    return 0;
}

/* A str's kind and data are valid once it is "ready" (always, from Python 3.12). */
static inline int ready(PyObject *text) {
#if PY_VERSION_HEX < 0x030C0000
    return PyUnicode_READY(text);
#else
    (void)text;
    return 0;
#endif
}

static int scan_ucs1(RawTable *t, PyObject *text, Ints *raws, PyObject *new) {
    return scan_text(t, text, PyUnicode_1BYTE_KIND, raws, new);
}
static int scan_ucs2(RawTable *t, PyObject *text, Ints *raws, PyObject *new) {
    return scan_text(t, text, PyUnicode_2BYTE_KIND, raws, new);
}
static int scan_ucs4(RawTable *t, PyObject *text, Ints *raws, PyObject *new) {
    return scan_text(t, text, PyUnicode_4BYTE_KIND, raws, new);
}
#undef GROW

/* Hands the raw tokens met for the first time to learn(raws) and records their terms. */
static int raw_table_learn(RawTable *t, PyObject *learn, PyObject *new) {
    Py_ssize_t n_new = PyList_GET_SIZE(new);
    if (n_new == 0) return 0;
    PyObject *got = PyObject_CallOneArg(learn, new);
    if (got == NULL) return -1;
    Py_buffer v_terms, v_counts;
    int ok = -1;
    if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 2) {
        PyErr_SetString(PyExc_TypeError, "RawTable: learn must return (term ids, counts)");
        goto done;
    }
    if (get_buffer(PyTuple_GET_ITEM(got, 0), &v_terms, "term ids", 4, "iI", 0) < 0) goto done;
    if (get_buffer(PyTuple_GET_ITEM(got, 1), &v_counts, "counts", 4, "iI", 0) < 0) {
        PyBuffer_Release(&v_terms);
        goto done;
    }
    const int32_t *terms = v_terms.buf, *counts = v_counts.buf;
    Py_ssize_t n_terms = v_terms.len / 4, at = 0;
    if (v_counts.len / 4 != n_new || t->n_learned + n_new != t->n_raws) {
        PyErr_SetString(PyExc_ValueError, "RawTable: learn gave counts for other tokens");
    } else if (ints_reserve(&t->terms, n_terms) == 0) {
        for (Py_ssize_t i = 0; i < n_new; i++) {
            if (counts[i] < 0 || counts[i] > n_terms - at) break;
            Py_ssize_t raw = t->n_learned + i;
            t->term_start[raw] = t->terms.size;
            t->term_len[raw] = counts[i];
            memcpy(t->terms.data + t->terms.size, terms + at, (size_t)counts[i] * sizeof(int32_t));
            t->terms.size += counts[i];
            at += counts[i];
        }
        if (at != n_terms)
            PyErr_SetString(PyExc_ValueError, "RawTable: learn's counts do not add up");
        else {
            t->n_learned += n_new;
            ok = 0;
        }
    }
    PyBuffer_Release(&v_terms);
    PyBuffer_Release(&v_counts);
done:
    Py_DECREF(got);
    return ok;
}

static PyObject *raw_table_encode(RawTable *t, PyObject *args) {
    PyObject *items, *learn;
    if (!PyArg_ParseTuple(args, "O!O:encode", &PyList_Type, &items, &learn)) return NULL;
    Py_ssize_t n_items = PyList_GET_SIZE(items);
    Ints raws = {NULL, 0, 0}, ids = {NULL, 0, 0};
    int64_t *bounds = PyMem_Malloc((size_t)(n_items + 1) * sizeof(int64_t));
    PyObject *new = PyList_New(0), *result = NULL, *o_ids = NULL, *o_counts = NULL;
    if (bounds == NULL || new == NULL) {
        if (bounds == NULL) PyErr_NoMemory();
        goto done;
    }
    /* 1: every item's raw token ids */
    bounds[0] = 0;
    for (Py_ssize_t i = 0; i < n_items; i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (PyUnicode_Check(item)) {
            if (ready(item) < 0) goto done;
            int kind = PyUnicode_KIND(item), failed;
            if (kind == PyUnicode_1BYTE_KIND)
                failed = scan_ucs1(t, item, &raws, new);
            else if (kind == PyUnicode_2BYTE_KIND)
                failed = scan_ucs2(t, item, &raws, new);
            else
                failed = scan_ucs4(t, item, &raws, new);
            if (failed) goto done;
        } else if (PyList_Check(item)) { /* raw tokens already found */
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(item); j++) {
                PyObject *token = PyList_GET_ITEM(item, j);
                if (!PyUnicode_Check(token)) {
                    PyErr_SetString(PyExc_TypeError, "RawTable.encode: a token is not a str");
                    goto done;
                }
                if (ready(token) < 0) goto done;
                Py_ssize_t raw = raw_table_id(t, token, PyUnicode_KIND(token),
                                              PyUnicode_DATA(token), 0,
                                              PyUnicode_GET_LENGTH(token), new);
                if (raw < 0 || ints_push(&raws, (int32_t)raw) < 0) goto done;
            }
        } else {
            PyErr_SetString(PyExc_TypeError, "RawTable.encode: an item is neither str nor list");
            goto done;
        }
        bounds[i + 1] = raws.size;
    }
    /* 2: the new ones' terms */
    if (raw_table_learn(t, learn, new) < 0) goto done;
    /* 3: every occurrence's term ids, and each item's count */
    o_counts = PyBytes_FromStringAndSize(NULL, n_items * (Py_ssize_t)sizeof(int64_t));
    if (o_counts == NULL) goto done;
    int64_t *counts = (int64_t *)PyBytes_AS_STRING(o_counts);
    Py_ssize_t total = 0;
    for (Py_ssize_t k = 0; k < raws.size; k++) total += t->term_len[raws.data[k]];
    if (ints_reserve(&ids, total) < 0) goto done;
    for (Py_ssize_t i = 0; i < n_items; i++) {
        int32_t *out = ids.data + ids.size;
        for (int64_t k = bounds[i]; k < bounds[i + 1]; k++) {
            int32_t raw = raws.data[k], n = t->term_len[raw];
            const int32_t *terms = t->terms.data + t->term_start[raw];
            for (int32_t j = 0; j < n; j++) *out++ = terms[j];
        }
        counts[i] = out - (ids.data + ids.size);
        ids.size += counts[i];
    }
    o_ids = PyBytes_FromStringAndSize((const char *)ids.data, ids.size * (Py_ssize_t)sizeof(int32_t));
    if (o_ids == NULL) goto done;
    result = PyTuple_Pack(2, o_ids, o_counts);
done:
    Py_XDECREF(o_ids);
    Py_XDECREF(o_counts);
    Py_XDECREF(new);
    PyMem_Free(bounds);
    PyMem_Free(raws.data);
    PyMem_Free(ids.data);
    return result;
}

static PyObject *raw_table_len(RawTable *t, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSsize_t(t->n_raws);
}

static PyMethodDef raw_table_methods[] = {
    {"encode", (PyCFunction)raw_table_encode, METH_VARARGS,
     "encode(items, learn) -> (term ids, counts): see RawTable"},
    {"size", (PyCFunction)raw_table_len, METH_NOARGS, "size() -> distinct raw tokens held"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RawTableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "twokeys.lexical._kernel.RawTable",
    .tp_basicsize = sizeof(RawTable),
    .tp_dealloc = (destructor)raw_table_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The distinct raw tokens of a build and their term ids (see _kernel.c).",
    .tp_methods = raw_table_methods,
    .tp_new = raw_table_new,
};

/* ---- postings: term occurrences, chunk by chunk, to term-major postings ---------------- */

/* One pass over every block's occurrences, chunk row by chunk row. fill == 0: counts
 * each term's chunks into df (int64[n_terms], zero on entry). fill == 1: writes each
 * (term, chunk) posting at next[t]++ (int64[n_terms], the terms' first slots on entry)
 * with its count: rows increase within a term since chunks are visited in order.
 * `last` (int32[n_terms], all -1 on entry) and `slot` (int64[n_terms]) are scratch. */
static int postings_pass(PyObject *blocks, PyObject *lengths, const int32_t *remap,
                         Py_ssize_t n_terms, int fill, int64_t *df, int64_t *next,
                         int32_t *indices, float *tf, Py_ssize_t n_postings, int32_t *last,
                         int64_t *slot) {
    Py_ssize_t n_blocks = PyList_GET_SIZE(blocks);
    int64_t row = 0;
    for (Py_ssize_t b = 0; b < n_blocks; b++) {
        Py_buffer v_ids, v_len;
        if (get_buffer(PyList_GET_ITEM(blocks, b), &v_ids, "ids", 4, "iI", 0) < 0) return -1;
        if (get_buffer(PyList_GET_ITEM(lengths, b), &v_len, "lengths", 8, "qlLQ", 0) < 0) {
            PyBuffer_Release(&v_ids);
            return -1;
        }
        const int32_t *ids = v_ids.buf;
        const int64_t *per_chunk = v_len.buf;
        Py_ssize_t n_ids = v_ids.len / 4, n_chunks = v_len.len / 8, at = 0;
        const char *error = NULL;
        for (Py_ssize_t c = 0; c < n_chunks && !error; c++, row++) {
            if (per_chunk[c] < 0 || per_chunk[c] > n_ids - at) {
                error = "chunk lengths do not match the ids";
                break;
            }
            if (row > INT32_MAX) {
                error = "more than 2**31 chunks";
                break;
            }
            for (Py_ssize_t end = at + per_chunk[c]; at < end; at++) {
                int32_t id = ids[at];
                if (id < 0 || id >= n_terms) {
                    error = "a term id is out of range";
                    break;
                }
                int32_t t = remap[id];
                if (t < 0 || t >= n_terms) {
                    error = "remap names a term out of range";
                    break;
                }
                if (last[t] != (int32_t)row) {
                    last[t] = (int32_t)row;
                    if (!fill) {
                        df[t]++;
                    } else {
                        int64_t p = next[t]++;
                        if (p < 0 || p >= n_postings) {
                            error = "more postings than counted";
                            break;
                        }
                        slot[t] = p;
                        indices[p] = (int32_t)row;
                        tf[p] = 1.0f;
                    }
                } else if (fill) {
                    tf[slot[t]] += 1.0f;
                }
            }
        }
        if (!error && at != n_ids) error = "chunk lengths do not match the ids";
        PyBuffer_Release(&v_ids);
        PyBuffer_Release(&v_len);
        if (error) {
            PyErr_Format(PyExc_ValueError, "postings: block %zd: %s", b, error);
            return -1;
        }
    }
    return 0;
}

static PyObject *postings(PyObject *self, PyObject *args) {
    PyObject *blocks, *lengths, *o_remap, *o_df, *o_next, *o_indices, *o_tf;
    int fill;
    if (!PyArg_ParseTuple(args, "O!O!OpOOOO", &PyList_Type, &blocks, &PyList_Type, &lengths,
                          &o_remap, &fill, &o_df, &o_next, &o_indices, &o_tf))
        return NULL;
    if (PyList_GET_SIZE(blocks) != PyList_GET_SIZE(lengths)) {
        PyErr_SetString(PyExc_ValueError, "postings: as many blocks of ids as of lengths");
        return NULL;
    }
    Py_buffer views[5];
    int got = 0;
    PyObject *result = NULL;
    int32_t *last = NULL;
    int64_t *slot = NULL;
    if (get_buffer(o_remap, &views[got], "remap", 4, "iI", 0) < 0) goto done;
    got++;
    if (get_buffer(o_df, &views[got], "df", 8, "qlLQ", 1) < 0) goto done;
    got++;
    if (get_buffer(o_next, &views[got], "next", 8, "qlLQ", 1) < 0) goto done;
    got++;
    if (get_buffer(o_indices, &views[got], "indices", 4, "iI", 1) < 0) goto done;
    got++;
    if (get_buffer(o_tf, &views[got], "tf", 4, "f", 1) < 0) goto done;
    got++;
    Py_ssize_t n_terms = views[0].len / 4, n_postings = views[3].len / 4;
    if (views[1].len / 8 != n_terms || views[2].len / 8 != n_terms || views[4].len / 4 != n_postings) {
        PyErr_SetString(PyExc_ValueError, "postings: array sizes do not match");
        goto done;
    }
    last = PyMem_Malloc((size_t)(n_terms ? n_terms : 1) * sizeof(int32_t));
    slot = PyMem_Malloc((size_t)(n_terms ? n_terms : 1) * sizeof(int64_t));
    if (last == NULL || slot == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t t = 0; t < n_terms; t++) last[t] = -1;
    if (postings_pass(blocks, lengths, views[0].buf, n_terms, fill, views[1].buf, views[2].buf,
                      views[3].buf, views[4].buf, n_postings, last, slot) < 0)
        goto done;
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(last);
    PyMem_Free(slot);
    for (int i = 0; i < got; i++) PyBuffer_Release(&views[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"top_k", top_k, METH_VARARGS,
     "top_k(indptr, indices, weights, terms, qtfs, k, scores, touched[, maxw, cand, prune_from]) -> "
     "(rows, scores)"},
    {"top_k_ids", top_k_ids, METH_VARARGS,
     "top_k_ids(indptr, indices, weights, ids, k, scores, touched[, maxw, cand, prune_from]) -> "
     "(rows, scores)"},
    {"instances", instances, METH_VARARGS,
     "instances(cls, names, columns) -> list: values of a slotted class, slots set directly"},
    {"top_k_many", top_k_many, METH_VARARGS,
     "top_k_many(indptr, indices, weights, terms, bounds, k, threads, n_rows, rows, scores, "
     "counts) -> None"},
    {"postings", postings, METH_VARARGS,
     "postings(blocks, lengths, remap, fill, df, next, indices, tf) -> None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel",
                                    "BM25 top-k of one query or a batch (see _kernel.c).", -1, methods};

PyMODINIT_FUNC PyInit__kernel(void) {
    init_ascii_class();
    if (PyType_Ready(&RawTableType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "RawTable", (PyObject *)&RawTableType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
