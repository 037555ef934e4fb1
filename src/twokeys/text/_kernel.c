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

static PyObject *approx_counts(PyObject *self, PyObject *texts) {
    PyObject *seq = PySequence_Fast(texts, "approx_counts: expected a sequence of str");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *out = PyList_New(n);
    if (out == NULL) goto fail;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (!PyUnicode_Check(items[k])) {
            PyErr_Format(PyExc_TypeError, "approx_counts: item %zd is %.100s, not str", k,
                         Py_TYPE(items[k])->tp_name);
            goto fail;
        }
        PyObject *count =
            PyLong_FromSsize_t(approx_count(items[k], 0, PyUnicode_GET_LENGTH(items[k])));
        if (count == NULL) goto fail;
        PyList_SET_ITEM(out, k, count);
    }
    Py_DECREF(seq);
    return out;
fail:
    Py_XDECREF(out);
    Py_DECREF(seq);
    return NULL;
}

static PyObject *approx_span_counts(PyObject *self, PyObject *args) {
    PyObject *text, *spans;
    if (!PyArg_ParseTuple(args, "UO:approx_span_counts", &text, &spans)) return NULL;
    PyObject *seq = PySequence_Fast(spans, "approx_span_counts: expected a sequence of spans");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), length = PyUnicode_GET_LENGTH(text);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *out = PyList_New(n);
    if (out == NULL) goto fail;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (!PyTuple_Check(items[k]) || PyTuple_GET_SIZE(items[k]) != 2) {
            PyErr_Format(PyExc_TypeError, "approx_span_counts: span %zd is not a pair", k);
            goto fail;
        }
        Py_ssize_t a = PyLong_AsSsize_t(PyTuple_GET_ITEM(items[k], 0));
        Py_ssize_t b = PyLong_AsSsize_t(PyTuple_GET_ITEM(items[k], 1));
        if ((a == -1 || b == -1) && PyErr_Occurred()) goto fail;
        if (a < 0 || b > length || a > b) {
            PyErr_Format(PyExc_ValueError,
                         "approx_span_counts: span %zd (%zd, %zd) is not within the text", k,
                         a, b);
            goto fail;
        }
        PyObject *count = PyLong_FromSsize_t(approx_count(text, a, b));
        if (count == NULL) goto fail;
        PyList_SET_ITEM(out, k, count);
    }
    Py_DECREF(seq);
    return out;
fail:
    Py_XDECREF(out);
    Py_DECREF(seq);
    return NULL;
}

static PyMethodDef methods[] = {
    {"sentence_spans", sentence_spans, METH_VARARGS,
     "sentence_spans(text, start, end, is_abbreviation) -> [(start, end), ...]"},
    {"approx_counts", approx_counts, METH_O, "approx_counts(texts) -> [count, ...]"},
    {"approx_span_counts", approx_span_counts, METH_VARARGS,
     "approx_span_counts(text, spans) -> [count of text[a:b] for a, b in spans]"},
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
