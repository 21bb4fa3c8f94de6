/*
 * A small JSON reader for the C tests and the demo: parses one document into a tree,
 * strict enough to reject garbage, lenient about nothing the library should send.
 * Header-only (static inline, so unused helpers cost no warnings); C99, libc only.
 *
 *   jval *v = json_parse(text);          NULL if text is not exactly one JSON value
 *   jget(v, "key"), jat(v, i), jlen(v)   navigation (NULL-safe: NULL in, NULL out)
 *   jpath(v, "a.b.0.c")                  dotted path; numeric parts index arrays
 *   jstr(v), jnum(v, &ok), jbool(v)      leaf values
 *   json_free(v)
 */
#ifndef OMPRPC_TEST_JSON_H
#define OMPRPC_TEST_JSON_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype type;
    int boolean;
    double num;
    char *str;            /* J_STR: NUL-terminated UTF-8 (strlen may be short on \u0000) */
    size_t str_len;       /* J_STR: byte length */
    struct jval **items;  /* J_ARR / J_OBJ values */
    char **keys;          /* J_OBJ keys */
    size_t n;
} jval;

typedef struct {
    const char *p;
    const char *end;
    int depth;
} jparser;

static inline void json_free(jval *v) {
    size_t i;
    if (!v) return;
    for (i = 0; i < v->n; i++) {
        json_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

static inline void jp_ws(jparser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static inline jval *jp_new(jtype t) {
    jval *v = (jval *)calloc(1, sizeof(jval));
    if (v) v->type = t;
    return v;
}

static inline int jp_hex4(const char *s, unsigned *out) {
    unsigned v = 0;
    int i;
    for (i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static inline size_t jp_utf8(unsigned cp, char *o) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F)); return 4;
}

/* Parses a string starting at the opening quote; returns a malloc'd buffer. */
static inline char *jp_string(jparser *ps, size_t *len_out) {
    const char *s = ps->p + 1;
    size_t cap = 0, len = 0;
    char *buf;
    const char *q = s;
    /* upper bound of the decoded size: the raw length */
    while (q < ps->end && *q != '"') { if (*q == '\\') q++; q++; }
    if (q >= ps->end) return NULL;
    cap = (size_t)(q - s) + 1;
    buf = (char *)malloc(cap + 4);
    if (!buf) return NULL;
    while (s < ps->end && *s != '"') {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20) { free(buf); return NULL; }
        if (c != '\\') { buf[len++] = (char)c; s++; continue; }
        s++;
        if (s >= ps->end) { free(buf); return NULL; }
        switch (*s) {
        case '"': buf[len++] = '"'; break;
        case '\\': buf[len++] = '\\'; break;
        case '/': buf[len++] = '/'; break;
        case 'b': buf[len++] = '\b'; break;
        case 'f': buf[len++] = '\f'; break;
        case 'n': buf[len++] = '\n'; break;
        case 'r': buf[len++] = '\r'; break;
        case 't': buf[len++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (ps->end - s < 5 || !jp_hex4(s + 1, &cp)) { free(buf); return NULL; }
            s += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && ps->end - s >= 7 && s[1] == '\\' && s[2] == 'u' &&
                jp_hex4(s + 3, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                s += 6;
            }
            len += jp_utf8(cp, buf + len);
            break;
        }
        default: free(buf); return NULL;
        }
        s++;
    }
    if (s >= ps->end) { free(buf); return NULL; }
    buf[len] = '\0';
    ps->p = s + 1;
    *len_out = len;
    return buf;
}

static inline jval *jp_value(jparser *ps);

static inline int jp_push(jval *v, jval *item, char *key) {
    jval **items = (jval **)realloc(v->items, (v->n + 1) * sizeof(jval *));
    if (!items) return 0;
    v->items = items;
    if (v->type == J_OBJ) {
        char **keys = (char **)realloc(v->keys, (v->n + 1) * sizeof(char *));
        if (!keys) return 0;
        v->keys = keys;
        v->keys[v->n] = key;
    }
    v->items[v->n++] = item;
    return 1;
}

static inline jval *jp_container(jparser *ps, int is_obj) {
    jval *v = jp_new(is_obj ? J_OBJ : J_ARR);
    if (!v) return NULL;
    ps->p++;
    jp_ws(ps);
    if (ps->p < ps->end && *ps->p == (is_obj ? '}' : ']')) { ps->p++; return v; }
    for (;;) {
        char *key = NULL;
        jval *item;
        jp_ws(ps);
        if (is_obj) {
            size_t klen;
            if (ps->p >= ps->end || *ps->p != '"' || !(key = jp_string(ps, &klen))) { json_free(v); return NULL; }
            jp_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') { free(key); json_free(v); return NULL; }
            ps->p++;
        }
        item = jp_value(ps);
        if (!item || !jp_push(v, item, key)) { free(key); json_free(item); json_free(v); return NULL; }
        jp_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
        if (ps->p < ps->end && *ps->p == (is_obj ? '}' : ']')) { ps->p++; return v; }
        json_free(v);
        return NULL;
    }
}

static inline jval *jp_value(jparser *ps) {
    jval *v;
    jp_ws(ps);
    if (ps->p >= ps->end || ++ps->depth > 512) return NULL;
    switch (*ps->p) {
    case '{': v = jp_container(ps, 1); break;
    case '[': v = jp_container(ps, 0); break;
    case '"':
        v = jp_new(J_STR);
        if (v && !(v->str = jp_string(ps, &v->str_len))) { free(v); v = NULL; }
        break;
    case 't':
        if (ps->end - ps->p >= 4 && !strncmp(ps->p, "true", 4)) { v = jp_new(J_BOOL); if (v) v->boolean = 1; ps->p += 4; }
        else v = NULL;
        break;
    case 'f':
        if (ps->end - ps->p >= 5 && !strncmp(ps->p, "false", 5)) { v = jp_new(J_BOOL); ps->p += 5; }
        else v = NULL;
        break;
    case 'n':
        if (ps->end - ps->p >= 4 && !strncmp(ps->p, "null", 4)) { v = jp_new(J_NULL); ps->p += 4; }
        else v = NULL;
        break;
    default: {
        char *endp = NULL;
        const char *q = ps->p;
        if (*q == '-') q++;
        if (q >= ps->end || *q < '0' || *q > '9') return NULL;
        v = jp_new(J_NUM);
        if (v) {
            v->num = strtod(ps->p, &endp);
            if (!endp || endp == ps->p || endp > ps->end) { free(v); return NULL; }
            ps->p = endp;
        }
    }
    }
    ps->depth--;
    return v;
}

/* NULL unless `text` is exactly one JSON value (surrounding whitespace allowed). */
static inline jval *json_parse(const char *text) {
    jparser ps;
    jval *v;
    if (!text) return NULL;
    ps.p = text;
    ps.end = text + strlen(text);
    ps.depth = 0;
    v = jp_value(&ps);
    if (!v) return NULL;
    jp_ws(&ps);
    if (ps.p != ps.end) { json_free(v); return NULL; }
    return v;
}

static inline jval *jget(const jval *v, const char *key) {
    size_t i;
    if (!v || v->type != J_OBJ) return NULL;
    for (i = 0; i < v->n; i++)
        if (!strcmp(v->keys[i], key)) return v->items[i];
    return NULL;
}

static inline jval *jat(const jval *v, size_t i) {
    if (!v || (v->type != J_ARR && v->type != J_OBJ) || i >= v->n) return NULL;
    return v->items[i];
}

/* Number of items of an array or object; 0 for anything else. */
static inline size_t jlen(const jval *v) {
    return (v && (v->type == J_ARR || v->type == J_OBJ)) ? v->n : 0;
}

static inline int jis(const jval *v, jtype t) { return v && v->type == t; }

static inline const char *jstr(const jval *v) { return (v && v->type == J_STR) ? v->str : NULL; }

static inline double jnum(const jval *v, int *ok) {
    if (ok) *ok = v && v->type == J_NUM;
    return (v && v->type == J_NUM) ? v->num : 0.0;
}

/* 1 for true, 0 for false, -1 for anything else. */
static inline int jbool(const jval *v) { return (v && v->type == J_BOOL) ? v->boolean : -1; }

/* Dotted path: "data.models.0.id". A part made only of digits indexes an array. */
static inline jval *jpath(const jval *v, const char *path) {
    char part[128];
    const char *p = path;
    const jval *cur = v;
    while (cur && *p) {
        size_t n = strcspn(p, ".");
        size_t i;
        int digits = n > 0;
        if (n >= sizeof part) return NULL;
        memcpy(part, p, n);
        part[n] = '\0';
        for (i = 0; i < n; i++)
            if (part[i] < '0' || part[i] > '9') digits = 0;
        cur = (digits && cur->type == J_ARR) ? jat(cur, (size_t)strtoul(part, NULL, 10)) : jget(cur, part);
        p += n;
        if (*p == '.') p++;
    }
    return (jval *)cur;
}

/* The string at `path`, or NULL. */
static inline const char *jpath_str(const jval *v, const char *path) { return jstr(jpath(v, path)); }

/* Appends `s` to `out` as a JSON string literal (quotes included). `out` must have room for
 * 6 * strlen(s) + 3 bytes. Returns the number of bytes written (without the NUL). */
static inline size_t json_quote_into(char *out, const char *s) {
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    out[n++] = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { out[n++] = '\\'; out[n++] = (char)c; }
        else if (c == '\n') { out[n++] = '\\'; out[n++] = 'n'; }
        else if (c == '\t') { out[n++] = '\\'; out[n++] = 't'; }
        else if (c == '\r') { out[n++] = '\\'; out[n++] = 'r'; }
        else if (c < 0x20) {
            out[n++] = '\\'; out[n++] = 'u'; out[n++] = '0'; out[n++] = '0';
            out[n++] = hex[c >> 4]; out[n++] = hex[c & 15];
        } else out[n++] = (char)c;
    }
    out[n++] = '"';
    out[n] = '\0';
    return n;
}

/* A malloc'd JSON string literal for `s`. */
static inline char *json_quote(const char *s) {
    char *out = (char *)malloc(strlen(s) * 6 + 3);
    if (out) json_quote_into(out, s);
    return out;
}

#endif /* OMPRPC_TEST_JSON_H */
