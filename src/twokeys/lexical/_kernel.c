/* BM25 top-k of one query over term-major postings: twokeys.lexical._kernel.
 *
 * The compiled form of twokeys.lexical.bm25.score followed by
 * twokeys.topk.top_k(..., only_positive=True): the same float32 sums, added in the same
 * term order, and the same (-score, row) order, so results are identical to the numpy
 * path (tests compare both). It touches only the postings of the query's terms and the
 * rows they name: no pass over every chunk, no dense score vector allocated per query.
 * Built with -ffp-contract=off, so "score + qtf * weight" is never fused into one
 * rounding where numpy rounds twice.
 *
 * top_k(indptr, indices, weights, terms, qtfs, k, scores, touched) -> (rows, scores)
 *   indptr   int64[n_terms + 1]   term t's postings are indptr[t] .. indptr[t+1]
 *   indices  int32[n_postings]    chunk rows
 *   weights  float32[n_postings]  BM25 weights
 *   terms    sequence of int      term ids, in the order their weights are added
 *   qtfs     sequence of float    each term's query weight (its count in the query)
 *   k        int                  how many to return
 *   scores   float32[n_rows]      scratch, all zero; left all zero
 *   touched  int32[n_rows + 1]    scratch
 * The GIL is released while scoring, so each thread needs its own scratch arrays.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

static PyObject *top_k(PyObject *self, PyObject *args) {
    PyObject *o_indptr, *o_indices, *o_weights, *o_terms, *o_qtfs, *o_scores, *o_touched;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OOOOOnOO", &o_indptr, &o_indices, &o_weights, &o_terms, &o_qtfs,
                          &k, &o_scores, &o_touched))
        return NULL;
    Py_buffer b_indptr, b_indices, b_weights, b_scores, b_touched;
    int got = 0;
    PyObject *result = NULL, *terms = NULL, *qtfs = NULL;
    int64_t *term_ids = NULL;
    float *term_qtfs = NULL;
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
    if (k < 0) k = 0;
    if (k > n_rows) k = n_rows;

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
        if (t < 0 || t >= n_terms) {
            PyErr_Format(PyExc_ValueError, "top_k: term id %lld out of range", t);
            goto done;
        }
        int64_t start = indptr[t], end = indptr[t + 1];
        if (start < 0 || end < start || end > n_postings) {
            PyErr_Format(PyExc_ValueError, "top_k: postings of term %lld out of range", t);
            goto done;
        }
        term_ids[i] = t;
        term_qtfs[i] = q == 1.0 ? 0.0f : (float)q; /* 0: add the weight as it is */
    }

    Py_ssize_t n_touched = 0, kept = 0;
    int bad_row = 0;
    heap = PyMem_Malloc(sizeof(Entry) * (k ? k : 1));
    if (!heap) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
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
    Py_END_ALLOW_THREADS
    if (bad_row) {
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
    PyMem_Free(term_ids);
    PyMem_Free(term_qtfs);
    Py_XDECREF(terms);
    Py_XDECREF(qtfs);
    if (got >= 5) PyBuffer_Release(&b_touched);
    if (got >= 4) PyBuffer_Release(&b_scores);
    if (got >= 3) PyBuffer_Release(&b_weights);
    if (got >= 2) PyBuffer_Release(&b_indices);
    if (got >= 1) PyBuffer_Release(&b_indptr);
    return result;
}

static PyMethodDef methods[] = {
    {"top_k", top_k, METH_VARARGS,
     "top_k(indptr, indices, weights, terms, qtfs, k, scores, touched) -> (rows, scores)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel",
                                    "BM25 top-k of one query (see _kernel.c).", -1, methods};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&module); }
