/* tensor_file.c — .npy and TensorProto (.pb) files to and from smelt_tensor. */
#include "onnx/onnx.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx.pb-c.h"

static const char NPY_MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* npy type codes by dtype, without the byte-order character. */
static const struct { smelt_dtype dt; const char *code; } npy_types[] = {
    {SMELT_F32, "f4"}, {SMELT_F64, "f8"}, {SMELT_I8, "i1"}, {SMELT_I16, "i2"}, {SMELT_I32, "i4"},
    {SMELT_I64, "i8"}, {SMELT_U8, "u1"}, {SMELT_U16, "u2"}, {SMELT_U32, "u4"}, {SMELT_U64, "u8"},
    {SMELT_BOOL, "b1"}, {SMELT_F16, "f2"}, /* bfloat16 has no npy type: .pb only */
};

static smelt_status read_all(const char *path, unsigned char **buf, size_t *size)
{
    *buf = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return diag_fail(SMELT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    smelt_status st = SMELT_OK;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) st = diag_fail(SMELT_ERR_IO, "'%s' is not a regular file", path);
    else if (!(*buf = malloc((size_t)sb.st_size + 1))) st = diag_fail(SMELT_ERR_NOMEM, "out of memory reading '%s'", path);
    else if (fread(*buf, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size) st = diag_fail(SMELT_ERR_IO, "reading '%s' failed", path);
    fclose(f);
    if (st) {
        free(*buf);
        *buf = NULL;
    } else {
        *size = (size_t)sb.st_size;
    }
    return st;
}

/* The text after `'key':` in an npy header dict, or NULL. */
static const char *npy_value(const char *hdr, const char *key)
{
    char q[64];
    for (int quote = 0; quote < 2; quote++) {
        snprintf(q, sizeof q, quote ? "\"%s\"" : "'%s'", key);
        const char *p = strstr(hdr, q);
        if (!p) continue;
        p += strlen(q);
        while (isspace((unsigned char)*p)) p++;
        if (*p++ != ':') return NULL;
        while (isspace((unsigned char)*p)) p++;
        return p;
    }
    return NULL;
}

static smelt_status npy_parse_header(const char *path, const char *hdr, smelt_tensor *t)
{
    const char *d = npy_value(hdr, "descr"), *fo = npy_value(hdr, "fortran_order"), *sh = npy_value(hdr, "shape");
    if (!d || !sh || (*d != '\'' && *d != '"') || *sh != '(')
        return diag_fail(SMELT_ERR_IO, "'%s': malformed npy header", path);
    const char *dend = strchr(d + 1, *d);
    if (!dend || dend - d > 16) return diag_fail(SMELT_ERR_IO, "'%s': malformed npy descr", path);
    char descr[16] = {0};
    memcpy(descr, d + 1, (size_t)(dend - d - 1));
    const char *code = descr;
    if (*code == '<' || *code == '|' || *code == '=') code++;
    else if (*code == '>' && strcmp(code + 2, "1") != 0)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "'%s': big-endian npy data ('%s') is not supported", path, descr);
    else if (*code == '>') code++;
    t->dtype = SMELT_UNDEFINED;
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (strcmp(code, npy_types[i].code) == 0) t->dtype = npy_types[i].dt;
    if (strcmp(code, "?") == 0) t->dtype = SMELT_BOOL;
    if (!t->dtype) return diag_fail(SMELT_ERR_UNSUPPORTED, "'%s': npy dtype '%s' is not supported", path, descr);
    if (fo && strncmp(fo, "False", 5) != 0)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "'%s': Fortran-order npy arrays are not supported", path);
    const char *p = sh + 1;
    t->rank = 0;
    for (;;) {
        while (isspace((unsigned char)*p) || *p == ',') p++;
        if (*p == ')') break;
        if (!isdigit((unsigned char)*p)) return diag_fail(SMELT_ERR_IO, "'%s': malformed npy shape", path);
        if (t->rank == SMELT_MAX_RANK)
            return diag_fail(SMELT_ERR_UNSUPPORTED, "'%s': rank exceeds the maximum of %d", path, SMELT_MAX_RANK);
        int64_t v = 0;
        for (; isdigit((unsigned char)*p); p++)
            if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v))
                return diag_fail(SMELT_ERR_IO, "'%s': npy dimension too large", path);
        t->shape[t->rank++] = v;
    }
    return SMELT_OK;
}

static smelt_status npy_read(const char *path, const unsigned char *buf, size_t size, smelt_tensor *t)
{
    if (size < 10 || buf[6] < 1 || buf[6] > 3 || (buf[6] > 1 && size < 12))
        return diag_fail(SMELT_ERR_IO, "'%s': truncated or unknown npy version", path);
    size_t start = buf[6] == 1 ? 10 : 12;
    size_t hlen = buf[6] == 1 ? (size_t)(buf[8] | buf[9] << 8)
                              : (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    if (hlen > size - start) return diag_fail(SMELT_ERR_IO, "'%s': npy header runs past the end of the file", path);
    char *hdr = malloc(hlen + 1);
    if (!hdr) return diag_fail(SMELT_ERR_NOMEM, "out of memory reading '%s'", path);
    memcpy(hdr, buf + start, hlen);
    hdr[hlen] = 0;
    smelt_status st = npy_parse_header(path, hdr, t);
    free(hdr);
    TRY(st);
    ir_shape s = {.rank = t->rank};
    memcpy(s.dim, t->shape, sizeof(int64_t) * (size_t)t->rank);
    int64_t bytes = onnx_tensor_bytes(t->dtype, &s, NULL);
    size_t off = start + hlen;
    if (bytes < 0) return diag_fail(SMELT_ERR_IO, "'%s': npy shape is too large", path);
    if ((uint64_t)bytes > size - off)
        return diag_fail(SMELT_ERR_IO, "'%s': npy data is short: %lld bytes wanted, %zu present", path, (long long)bytes,
                         size - off);
    if (!(t->data = tensor_data_alloc((size_t)bytes))) return diag_fail(SMELT_ERR_NOMEM, "out of memory reading '%s'", path);
    memcpy(t->data, buf + off, (size_t)bytes);
    if (t->dtype == SMELT_BOOL)
        for (int64_t i = 0; i < bytes; i++) ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
    return SMELT_OK;
}

/* `base` is where external data lives (NULL: external data is refused). */
static smelt_status pb_read(const char *path, const char *base, const unsigned char *buf, size_t size, smelt_tensor *t)
{
    if (size == 0) return diag_fail(SMELT_ERR_IO, "'%s' is empty", path);
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, size, buf);
    if (!tp) return diag_fail(SMELT_ERR_IO, "'%s' is neither an npy file nor a serialized ONNX TensorProto", path);
    char what[600];
    snprintf(what, sizeof what, "tensor file '%s'", path);
    smelt_dtype dt = SMELT_UNDEFINED;
    ir_shape s;
    int64_t numel = 0, bytes = 0;
    smelt_status st = onnx_tensor_header(tp, base, what, &dt, &s);
    if (!st) {
        bytes = onnx_tensor_bytes(dt, &s, &numel);
        if (!(t->data = tensor_data_alloc((size_t)bytes))) st = diag_fail(SMELT_ERR_NOMEM, "out of memory reading '%s'", path);
    }
    if (!st) st = onnx_tensor_fill(tp, base, what, dt, numel, t->data, (size_t)bytes);
    if (!st && tp->name && *tp->name && !(t->name = strdup(tp->name))) st = diag_fail(SMELT_ERR_NOMEM, "out of memory");
    if (!st) {
        t->dtype = dt;
        t->rank = s.rank;
        memcpy(t->shape, s.dim, sizeof(int64_t) * (size_t)s.rank);
    }
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return st;
}

smelt_status tensor_file_read_memory(const void *data, size_t size, const char *name, const char *base_dir,
                                     smelt_tensor *out)
{
    memset(out, 0, sizeof *out);
    const unsigned char *buf = data;
    smelt_status st = size >= 6 && memcmp(buf, NPY_MAGIC, 6) == 0 ? npy_read(name, buf, size, out)
                                                                   : pb_read(name, base_dir, buf, size, out);
    if (st) tensor_file_free(out);
    return st;
}

smelt_status tensor_file_read(const char *path, smelt_tensor *out)
{
    memset(out, 0, sizeof *out);
    unsigned char *buf;
    size_t size;
    TRY(read_all(path, &buf, &size));
    /* External data of a .pb lives next to it. */
    char *dir = strdup(path);
    smelt_status st = dir ? SMELT_OK : diag_fail(SMELT_ERR_NOMEM, "out of memory");
    if (!st) {
        char *slash = strrchr(dir, '/');
        if (slash == dir) slash[1] = 0;
        else if (slash) *slash = 0;
        st = tensor_file_read_memory(buf, size, path, slash ? dir : ".", out);
    }
    free(dir);
    free(buf);
    return st;
}

void *tensor_data_alloc(size_t bytes)
{
    size_t a = SMELT_ALIGN, n = bytes / a * a + a; /* at least 1 byte, rounded up as aligned_alloc asks */
    if (n < bytes) return NULL;
    void *p = aligned_alloc(a, n);
    if (p) memset(p, 0, n);
    return p;
}

void tensor_file_free(smelt_tensor *t)
{
    free(t->data);
    free((char *)t->name);
    memset(t, 0, sizeof *t);
}

/* ---- writing ------------------------------------------------------------- */

/* `pb`: a TensorProto file, which also holds bfloat16. */
static smelt_status tensor_check(const char *path, const smelt_tensor *t, bool pb, int64_t *bytes)
{
    ir_shape s = {.rank = t->rank};
    if (t->rank < 0 || t->rank > SMELT_MAX_RANK)
        return diag_fail(SMELT_ERR_INVALID_ARG, "writing '%s': rank %d is out of range", path, t->rank);
    memcpy(s.dim, t->shape, sizeof(int64_t) * (size_t)t->rank);
    bool held = pb && t->dtype == SMELT_BF16;
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++) held |= npy_types[i].dt == t->dtype;
    if (!held)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "writing '%s': dtype %s is not supported", path,
                         smelt_dtype_name(t->dtype));
    if ((*bytes = onnx_tensor_bytes(t->dtype, &s, NULL)) < 0)
        return diag_fail(SMELT_ERR_INVALID_ARG, "writing '%s': invalid shape", path);
    if (*bytes && !t->data) return diag_fail(SMELT_ERR_INVALID_ARG, "writing '%s': tensor has no data", path);
    return SMELT_OK;
}

/* Write head then body to a temporary next to `path`, then rename it over
 * `path`: readers never see a partial file, and a failure leaves none. */
static smelt_status write_atomic(const char *path, const void *head, size_t nhead, const void *body, size_t nbody)
{
    size_t cap = strlen(path) + 16;
    char *tmp = malloc(cap);
    if (!tmp) return diag_fail(SMELT_ERR_NOMEM, "out of memory writing '%s'", path);
    snprintf(tmp, cap, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        smelt_status st = diag_fail(SMELT_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
        free(tmp);
        return st;
    }
    FILE *f = fdopen(fd, "wb");
    bool ok = f && fchmod(fd, 0644) == 0 && fwrite(head, 1, nhead, f) == nhead &&
              (!nbody || fwrite(body, 1, nbody, f) == nbody) && fflush(f) == 0;
    int err = errno;
    if (f ? fclose(f) != 0 : close(fd) != 0) ok = false;
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        err = errno;
    }
    smelt_status st = SMELT_OK;
    if (!ok) {
        unlink(tmp);
        st = diag_fail(SMELT_ERR_IO, "writing '%s' failed: %s", path, strerror(err));
    }
    free(tmp);
    return st;
}

smelt_status tensor_file_write_npy(const char *path, const smelt_tensor *t)
{
    int64_t bytes;
    TRY(tensor_check(path, t, false, &bytes));
    const char *code = "";
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (npy_types[i].dt == t->dtype) code = npy_types[i].code;
    char dims[SMELT_MAX_RANK * 24 + 4] = "";
    size_t n = 0;
    for (int i = 0; i < t->rank; i++)
        n += (size_t)snprintf(dims + n, sizeof dims - n, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    if (t->rank == 1) snprintf(dims + n, sizeof dims - n, ",");
    /* Version 1.0; the data starts 64-byte aligned, as numpy writes it. */
    char head[512];
    int len = snprintf(head + 10, sizeof head - 10, "{'descr': '%c%s', 'fortran_order': False, 'shape': (%s), }",
                       code[1] == '1' ? '|' : '<', code, dims);
    size_t total = (size_t)(10 + len + 1 + 63) & ~(size_t)63;
    memset(head + 10 + len, ' ', total - 10 - (size_t)len);
    head[total - 1] = '\n';
    memcpy(head, NPY_MAGIC, 6);
    head[6] = 1;
    head[7] = 0;
    head[8] = (char)((total - 10) & 0xff);
    head[9] = (char)((total - 10) >> 8);
    return write_atomic(path, head, total, t->data, (size_t)bytes);
}

smelt_status tensor_file_write_pb(const char *path, const smelt_tensor *t)
{
    int64_t bytes;
    TRY(tensor_check(path, t, true, &bytes));
    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    int64_t dims[SMELT_MAX_RANK];
    memcpy(dims, t->shape, sizeof dims);
    tp.n_dims = (size_t)t->rank;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = t->dtype;
    tp.name = (char *)(t->name ? t->name : "");
    tp.has_raw_data = 1;
    tp.raw_data.len = (size_t)bytes;
    tp.raw_data.data = t->data;
    size_t size = onnx__tensor_proto__get_packed_size(&tp);
    uint8_t *buf = malloc(size + 1);
    if (!buf) return diag_fail(SMELT_ERR_NOMEM, "out of memory writing '%s'", path);
    onnx__tensor_proto__pack(&tp, buf);
    smelt_status st = write_atomic(path, buf, size, NULL, 0);
    free(buf);
    return st;
}
