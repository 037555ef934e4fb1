/* The compiled parts of twokeys.text (twokeys.text._kernel), each the compiled form of a
 * Python function that stays the reference and the fallback (tests compare the two on
 * the test collections and on random strings):
 *
 *   sentence_spans(text, start, end, is_abbreviation) -> list of (start, end)
 *       twokeys.text.sentences.sentence_spans of text[start:end]. Characters are
 *       classified with the very tests str methods and the re module use
 *       (Py_UNICODE_ISSPACE for \s and str.isspace, Py_UNICODE_ISDECIMAL for \d, ...).
 *       The abbreviation test of a word that is not all ASCII is the Python one,
 *       is_abbreviation(text, floor, dot): re's IGNORECASE matching of letters beyond
 *       ASCII (the Kelvin sign matches "k") is left to re.
 *
 *   approx_counts(texts) -> list of int
 *       twokeys.text.tokens.approx_token_counter: per text, each run of \w characters
 *       (alphanumeric or "_") of n characters counts ceil(n / 6), each run of characters
 *       neither \w nor \s counts 1.
 *   approx_span_counts(text, spans) -> list of int
 *       approx_counts([text[a:b] for a, b in spans]), read in place in text.
 *
 *   all_below(text, code) -> bool
 *       Whether every character of text is below the code point `code` (no scan where
 *       the str's width already says so).
 *
 *   pack(spans, counts, block_sizes, block_code, section_blocks, budgets, max_chars,
 *        overlap_tokens, min_tokens) -> list of (section, start, end), or None
 *       The chunker's packing of a document's sections (twokeys.chunking._pack, its
 *       _Packer) where no piece must be cut: None when one must (a piece of more tokens
 *       than its section's budget outside code, or of more than max_chars characters),
 *       and the Python path cuts and packs it. spans and counts: every piece (sentence
 *       or line) of the document in order; block_sizes: the pieces of each block in
 *       order, block_code whether it is code; section_blocks: the blocks of each section
 *       in order, budgets its token budget.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* --- sentence ends ------------------------------------------------------------------- */

static inline int is_ender(Py_UCS4 c) {
    return c == '.' || c == '!' || c == '?' || c == 0x3002 || c == 0xFF01 || c == 0xFF1F;
}

/* the first sentence punctuation in data[i:end], or end: the scan most characters see,
 * a loop of its own for each width of str */
#define FIND_ENDER(TYPE)                                                                 \
    {                                                                                    \
        const TYPE *p = (const TYPE *)data;                                              \
        while (i < end && !(p[i] < 128 ? ascii_ender[p[i]] : is_ender(p[i]))) i++;       \
        return i;                                                                        \
    }

static unsigned char ascii_ender[128];

static Py_ssize_t find_ender(int kind, const void *data, Py_ssize_t i, Py_ssize_t end) {
    if (kind == PyUnicode_1BYTE_KIND) FIND_ENDER(Py_UCS1)
    if (kind == PyUnicode_2BYTE_KIND) FIND_ENDER(Py_UCS2)
    FIND_ENDER(Py_UCS4)
}

/* the closing quotes, brackets and emphasis marks after a sentence's punctuation
 * (sentences._CLOSERS and _CJK_CLOSERS) */
static inline int is_closer(Py_UCS4 c) {
    switch (c) {
    case '"': case '\'': case ')': case '*': case ']': case '_': case '`':
    case 0x2019: case 0x201D: case 0x3009: case 0x300B: case 0x300D: case 0x300F:
    case 0x3011: case 0x3015: case 0xFF09:
        return 1;
    default:
        return 0;
    }
}

/* what may open the sentence after a Western stop (sentences._SENTENCE_OPENERS) */
static inline int is_sentence_opener(Py_UCS4 c) {
    return c == '"' || c == '\'' || c == '(' || c == '[' || c == '`' || c == '*' ||
           c == 0x201C || c == 0x2018;
}

/* what is stripped from the front of a word before the abbreviation test
 * (sentences._OPENERS_BEFORE_WORD) */
static inline int is_opener_before_word(Py_UCS4 c) {
    return c == '"' || c == '\'' || c == '(' || c == '[' || c == '*' || c == '_' ||
           c == '`' || c == 0x201C || c == 0x2018;
}

/* the words listed in sentences._ABBREVIATION, lowercase */
static const char *const LISTED[] = {
    "etc", "vs", "cf", "al", "approx", "ca", "dr", "mr", "mrs", "ms", "prof",
    "sr", "jr", "st", "no", "nos", "fig", "figs", "eq", "vol", "ed", "pp",
    "inc", "ltd", "co", "corp", "dept", "resp", "incl", "ref", "sec", NULL,
};
#define LONGEST_LISTED 6

static inline int ascii_letter(Py_UCS4 c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* _ABBREVIATION.fullmatch(text[a:b]) for an all-ASCII text[a:b] whose last character is
 * the dot: "(?:[^\W\d_]\.)+" (initials, "e.g.") or a listed word and its dot */
static int ascii_abbreviation(int kind, const void *data, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t n = b - a;
    if (n >= 2 && n % 2 == 0) {
        int dotted = 1;
        for (Py_ssize_t i = a; i < b && dotted; i += 2)
            dotted = ascii_letter(PyUnicode_READ(kind, data, i)) &&
                     PyUnicode_READ(kind, data, i + 1) == '.';
        if (dotted) return 1;
    }
    Py_ssize_t letters = n - 1;
    if (letters < 2 || letters > LONGEST_LISTED) return 0;
    char word[LONGEST_LISTED + 1];
    for (Py_ssize_t i = 0; i < letters; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, a + i);
        if (!ascii_letter(c)) return 0;
        word[i] = (char)(c | 0x20); /* lowercase */
    }
    word[letters] = '\0';
    for (const char *const *w = LISTED; *w; w++)
        if (strcmp(word, *w) == 0) return 1;
    return 0;
}

/* sentences._is_abbreviation(text, floor, dot): 1, 0, or -1 with an exception set */
static int is_abbreviation(PyObject *text, int kind, const void *data, Py_ssize_t floor,
                           Py_ssize_t dot, PyObject *fallback) {
    if (dot - floor > LONGEST_LISTED) {
        int alnum = 1;
        for (Py_ssize_t i = dot - LONGEST_LISTED - 1; i < dot && alnum; i++)
            alnum = Py_UNICODE_ISALNUM(PyUnicode_READ(kind, data, i));
        if (alnum) return 0; /* longer than any listed word, and not "x." */
    }
    Py_ssize_t begin = dot;
    while (begin > floor && !Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, begin - 1)))
        begin--;
    while (is_opener_before_word(PyUnicode_READ(kind, data, begin))) begin++;
    int ascii = 1;
    for (Py_ssize_t i = begin; i < dot && ascii; i++)
        ascii = PyUnicode_READ(kind, data, i) < 128;
    if (ascii) return ascii_abbreviation(kind, data, begin, dot + 1);
    PyObject *result = PyObject_CallFunction(fallback, "Onn", text, floor, dot);
    if (result == NULL) return -1;
    int truth = PyObject_IsTrue(result);
    Py_DECREF(result);
    return truth;
}

/* _LIST_NUMBER.fullmatch(text, a, b): 1 to 9 decimal digits */
static int list_number(int kind, const void *data, Py_ssize_t a, Py_ssize_t b) {
    if (b - a < 1 || b - a > 9) return 0;
    for (Py_ssize_t i = a; i < b; i++)
        if (!Py_UNICODE_ISDECIMAL(PyUnicode_READ(kind, data, i))) return 0;
    return 1;
}

static int append_span(PyObject *out, Py_ssize_t a, Py_ssize_t b) {
    PyObject *span = Py_BuildValue("(nn)", a, b);
    if (span == NULL) return -1;
    int failed = PyList_Append(out, span);
    Py_DECREF(span);
    return failed;
}

static PyObject *sentence_spans(PyObject *self, PyObject *args) {
    PyObject *text, *fallback;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "UnnO:sentence_spans", &text, &start, &end, &fallback))
        return NULL;
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    /* slice-like bounds, as text[start:end] and re's pos/endpos take them */
    if (start < 0) start = 0;
    if (end > length) end = length;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t current = start;
    while (current < end && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, current))) current++;
    while (end > current && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, end - 1))) end--;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    Py_ssize_t i = current;
    while ((i = find_ender(kind, data, i, end)) < end) {
        Py_UCS4 first = PyUnicode_READ(kind, data, i);
        Py_ssize_t stop = i + 1; /* the match: enders, then closers */
        while (stop < end && is_ender(PyUnicode_READ(kind, data, stop))) stop++;
        while (stop < end && is_closer(PyUnicode_READ(kind, data, stop))) stop++;
        Py_ssize_t match = i;
        i = stop;
        int western = first < 128;
        if (western && (stop >= end || !Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, stop))))
            continue;
        Py_ssize_t next = stop;
        while (next < end && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, next))) next++;
        if (next >= end) break;
        if (western) {
            Py_UCS4 c = PyUnicode_READ(kind, data, next);
            if (!(Py_UNICODE_ISUPPER(c) || Py_UNICODE_ISDIGIT(c) || is_sentence_opener(c)))
                continue;
            if (first == '.') {
                int abbreviation = is_abbreviation(text, kind, data, current, match, fallback);
                if (abbreviation < 0) goto fail;
                if (abbreviation || list_number(kind, data, current, match)) continue;
            }
        }
        if (append_span(out, current, stop) < 0) goto fail;
        current = next;
    }
    if (current < end && append_span(out, current, end) < 0) goto fail;
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* --- approximate token counts ------------------------------------------------------- */

enum { SPACE, WORD, OTHER };

static unsigned char ascii_class[128];

static inline int char_class(Py_UCS4 c) {
    if (c < 128) return ascii_class[c];
    if (Py_UNICODE_ISALNUM(c)) return WORD;
    return Py_UNICODE_ISSPACE(c) ? SPACE : OTHER;
}

#define APPROX_COUNT(TYPE)                                                               \
    {                                                                                    \
        const TYPE *p = (const TYPE *)data;                                              \
        while (i < n) {                                                                  \
            int cls = char_class(p[i]);                                                  \
            Py_ssize_t run = i + 1;                                                      \
            while (run < n && char_class(p[run]) == cls) run++;                          \
            if (cls == WORD)                                                             \
                count += (run - i + 5) / 6;                                              \
            else if (cls == OTHER)                                                       \
                count += 1;                                                              \
            i = run;                                                                     \
        }                                                                                \
        return count;                                                                    \
    }

/* the count of text[i:n] */
static Py_ssize_t approx_count(PyObject *text, Py_ssize_t i, Py_ssize_t n) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t count = 0;
    if (kind == PyUnicode_1BYTE_KIND) APPROX_COUNT(Py_UCS1)
    if (kind == PyUnicode_2BYTE_KIND) APPROX_COUNT(Py_UCS2)
    APPROX_COUNT(Py_UCS4)
}

/* The counts of ``seq``'s items: each a whole str when ``text`` is NULL, else each a
 * (start, end) span of ``text``; a new list, or NULL with an error naming ``name``. */
static PyObject *counts_of(PyObject *seq, const char *name, PyObject *text) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Py_ssize_t length = text == NULL ? 0 : PyUnicode_GET_LENGTH(text);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t count;
        if (text == NULL) {
            if (!PyUnicode_Check(items[k])) {
                PyErr_Format(PyExc_TypeError, "%s: item %zd is %.100s, not str", name, k,
                             Py_TYPE(items[k])->tp_name);
                goto fail;
            }
            count = approx_count(items[k], 0, PyUnicode_GET_LENGTH(items[k]));
        } else {
            if (!PyTuple_Check(items[k]) || PyTuple_GET_SIZE(items[k]) != 2) {
                PyErr_Format(PyExc_TypeError, "%s: span %zd is not a pair", name, k);
                goto fail;
            }
            Py_ssize_t a = PyLong_AsSsize_t(PyTuple_GET_ITEM(items[k], 0));
            Py_ssize_t b = PyLong_AsSsize_t(PyTuple_GET_ITEM(items[k], 1));
            if ((a == -1 || b == -1) && PyErr_Occurred()) goto fail;
            if (a < 0 || b > length || a > b) {
                PyErr_Format(PyExc_ValueError, "%s: span %zd (%zd, %zd) is not within the text",
                             name, k, a, b);
                goto fail;
            }
            count = approx_count(text, a, b);
        }
        PyObject *value = PyLong_FromSsize_t(count);
        if (value == NULL) goto fail;
        PyList_SET_ITEM(out, k, value);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *approx_counts(PyObject *self, PyObject *texts) {
    PyObject *seq = PySequence_Fast(texts, "approx_counts: expected a sequence of str");
    if (seq == NULL) return NULL;
    PyObject *out = counts_of(seq, "approx_counts", NULL);
    Py_DECREF(seq);
    return out;
}

static PyObject *approx_span_counts(PyObject *self, PyObject *args) {
    PyObject *text, *spans;
    if (!PyArg_ParseTuple(args, "UO:approx_span_counts", &text, &spans)) return NULL;
    PyObject *seq = PySequence_Fast(spans, "approx_span_counts: expected a sequence of spans");
    if (seq == NULL) return NULL;
    PyObject *out = counts_of(seq, "approx_span_counts", text);
    Py_DECREF(seq);
    return out;
}

/* --- packing ----------------------------------------------------------------------- */

/* _Packer over one section's pieces: the open chunk is always the pieces lo..hi-1 of the
 * document (it grows at hi; the overlap it keeps is a suffix of it) */
typedef struct {
    const Py_ssize_t *start, *end;
    const long long *tokens;
    long long budget, max_chars, overlap_tokens, min_tokens;
    Py_ssize_t lo, hi, fresh_pieces;
    long long total, fresh_tokens;
    PyObject *out;
    Py_ssize_t section;
} Packer;

static int packer_fits(Packer *k, long long tokens, Py_ssize_t end) {
    if (k->total + tokens > k->budget) return 0;
    return k->lo == k->hi || end - k->start[k->lo] <= k->max_chars;
}

static void packer_drop_overlap(Packer *k) {
    if (!k->fresh_pieces) {
        k->lo = k->hi;
        k->total = 0;
    }
}

static int packer_close(Packer *k, long long next_tokens) {
    if (!k->fresh_pieces) return 0;
    PyObject *span = Py_BuildValue("(nnn)", k->section, k->start[k->lo], k->end[k->hi - 1]);
    if (span == NULL) return -1;
    int failed = PyList_Append(k->out, span);
    Py_DECREF(span);
    if (failed) return -1;
    long long limit = k->budget - next_tokens;
    if (k->overlap_tokens < limit) limit = k->overlap_tokens;
    Py_ssize_t keep = 0;
    long long total = 0;
    /* whole trailing pieces only (all are, on this path), never the entire chunk */
    while (limit > 0 && keep < k->hi - k->lo - 1) {
        long long t = k->tokens[k->hi - 1 - keep];
        if (total + t > limit) break;
        keep++;
        total += t;
    }
    k->lo = k->hi - keep;
    k->total = total;
    k->fresh_pieces = 0;
    k->fresh_tokens = 0;
    return 0;
}

static void packer_extend(Packer *k, Py_ssize_t to, long long tokens) {
    k->fresh_pieces += to - k->hi;
    k->hi = to;
    k->total += tokens;
    k->fresh_tokens += tokens;
}

/* _Packer.add_block of the pieces first..last-1 */
static int packer_add_block(Packer *k, Py_ssize_t first, Py_ssize_t last) {
    long long tokens = 0;
    for (Py_ssize_t i = first; i < last; i++) tokens += k->tokens[i];
    Py_ssize_t chars = k->end[last - 1] - k->start[first];
    if (packer_fits(k, tokens, k->end[last - 1])) {
        packer_extend(k, last, tokens);
    } else if (tokens <= k->budget && chars <= k->max_chars) { /* a chunk of its own */
        if (packer_close(k, tokens) < 0) return -1;
        if (!packer_fits(k, tokens, k->end[last - 1])) packer_drop_overlap(k);
        packer_extend(k, last, tokens);
    } else { /* cut it, merging its start into a tiny open chunk */
        if (k->fresh_tokens >= k->min_tokens && packer_close(k, k->tokens[first]) < 0)
            return -1;
        for (Py_ssize_t i = first; i < last; i++) {
            long long t = k->tokens[i];
            if (k->lo < k->hi &&
                (k->total + t > k->budget || k->end[i] - k->start[k->lo] > k->max_chars)) {
                if (packer_close(k, t) < 0) return -1;
                if (!packer_fits(k, t, k->end[i])) packer_drop_overlap(k);
            }
            packer_extend(k, i + 1, t);
        }
    }
    return 0;
}

/* a list of n Python ints as C values; -1 on error */
static int long_list(PyObject *list, const char *what, Py_ssize_t n, long long *out) {
    if (!PyList_Check(list) || PyList_GET_SIZE(list) != n) {
        PyErr_Format(PyExc_ValueError, "pack: %s: expected a list of %zd", what, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsLongLong(PyList_GET_ITEM(list, i));
        if (out[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

static PyObject *pack(PyObject *self, PyObject *args) {
    PyObject *spans, *counts, *block_sizes, *block_code, *section_blocks, *budgets;
    long long max_chars, overlap_tokens, min_tokens;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!LLL:pack", &PyList_Type, &spans, &PyList_Type,
                          &counts, &PyList_Type, &block_sizes, &PyList_Type, &block_code,
                          &PyList_Type, &section_blocks, &PyList_Type, &budgets, &max_chars,
                          &overlap_tokens, &min_tokens))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(spans), n_blocks = PyList_GET_SIZE(block_sizes);
    Py_ssize_t n_sections = PyList_GET_SIZE(section_blocks);
    PyObject *result = NULL;
    Py_ssize_t *start = PyMem_Malloc((size_t)(2 * n + 1) * sizeof(Py_ssize_t));
    long long *numbers = PyMem_Malloc((size_t)(n + 2 * n_blocks + 2 * n_sections + 1) *
                                      sizeof(long long));
    if (start == NULL || numbers == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t *end = start + n;
    long long *tokens = numbers, *sizes = numbers + n, *code = sizes + n_blocks;
    long long *blocks_of = code + n_blocks, *budget_of = blocks_of + n_sections;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *span = PyList_GET_ITEM(spans, i);
        if (!PyTuple_Check(span) || PyTuple_GET_SIZE(span) != 2) {
            PyErr_Format(PyExc_TypeError, "pack: span %zd is not a pair", i);
            goto done;
        }
        start[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 0));
        end[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 1));
        if ((start[i] == -1 || end[i] == -1) && PyErr_Occurred()) goto done;
    }
    if (long_list(counts, "counts", n, tokens) < 0) {
        /* counts that are not integers (a counter's own kind of number): the Python path */
        if (PyErr_ExceptionMatches(PyExc_TypeError) ||
            PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            result = Py_NewRef(Py_None);
        }
        goto done;
    }
    if (long_list(block_sizes, "block_sizes", n_blocks, sizes) < 0 ||
        long_list(block_code, "block_code", n_blocks, code) < 0 ||
        long_list(section_blocks, "section_blocks", n_sections, blocks_of) < 0 ||
        long_list(budgets, "budgets", n_sections, budget_of) < 0)
        goto done;
    /* the shapes must add up; then whether any piece must be cut (the Python path's) */
    Py_ssize_t pieces = 0, blocks = 0;
    for (Py_ssize_t s = 0; s < n_sections; s++) {
        if (blocks_of[s] < 0 || blocks + blocks_of[s] > n_blocks) break;
        for (Py_ssize_t b = blocks; b < blocks + blocks_of[s]; b++) {
            if (sizes[b] < 1 || pieces + sizes[b] > n) {
                pieces = -1;
                break;
            }
            for (Py_ssize_t i = pieces; i < pieces + sizes[b]; i++)
                if ((tokens[i] > budget_of[s] && !code[b]) || end[i] - start[i] > max_chars) {
                    result = Py_NewRef(Py_None);
                    goto done;
                }
            pieces += sizes[b];
        }
        if (pieces < 0) break;
        blocks += blocks_of[s];
    }
    if (pieces != n || blocks != n_blocks) {
        PyErr_SetString(PyExc_ValueError, "pack: the blocks do not add up to the pieces");
        goto done;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) goto done;
    Packer k = {start, end, tokens, 0, max_chars, overlap_tokens, min_tokens, 0, 0, 0, 0, 0,
                out, 0};
    Py_ssize_t piece = 0, block = 0;
    for (Py_ssize_t s = 0; s < n_sections; s++) {
        k.budget = budget_of[s];
        k.section = s;
        k.lo = k.hi = piece;
        k.fresh_pieces = 0;
        k.total = k.fresh_tokens = 0;
        for (Py_ssize_t b = block; b < block + blocks_of[s]; b++) {
            if (packer_add_block(&k, piece, piece + sizes[b]) < 0) {
                Py_DECREF(out);
                goto done;
            }
            piece += sizes[b];
        }
        block += blocks_of[s];
        if (packer_close(&k, k.budget) < 0) {
            Py_DECREF(out);
            goto done;
        }
    }
    result = out;
done:
    PyMem_Free(start);
    PyMem_Free(numbers);
    return result;
}

/* --- the largest character ------------------------------------------------------------ */

static PyObject *all_below(PyObject *self, PyObject *args) {
    PyObject *text;
    unsigned long code;
    if (!PyArg_ParseTuple(args, "Uk:all_below", &text, &code)) return NULL;
    if (PyUnicode_MAX_CHAR_VALUE(text) < code) Py_RETURN_TRUE;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyUnicode_READ(kind, data, i) >= code) Py_RETURN_FALSE;
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"sentence_spans", sentence_spans, METH_VARARGS,
     "sentence_spans(text, start, end, is_abbreviation) -> [(start, end), ...]"},
    {"approx_counts", approx_counts, METH_O, "approx_counts(texts) -> [count, ...]"},
    {"approx_span_counts", approx_span_counts, METH_VARARGS,
     "approx_span_counts(text, spans) -> [count of text[a:b] for a, b in spans]"},
    {"all_below", all_below, METH_VARARGS,
     "all_below(text, code) -> whether every character is below code"},
    {"pack", pack, METH_VARARGS,
     "pack(spans, counts, block_sizes, block_code, section_blocks, budgets, max_chars, "
     "overlap_tokens, min_tokens) -> [(section, start, end), ...] or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel",
                                    "Sentence ends and token counts (see _kernel.c).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__kernel(void) {
    for (Py_UCS4 c = 0; c < 128; c++) {
        ascii_ender[c] = (unsigned char)is_ender(c);
        ascii_class[c] = (unsigned char)(Py_UNICODE_ISALNUM(c) || c == '_' ? WORD
                                         : Py_UNICODE_ISSPACE(c)            ? SPACE
                                                                            : OTHER);
    }
    return PyModule_Create(&module);
}
