/* import_tensor.c — TensorProto elements (raw, typed fields, external files) into dense buffers. */
#include "onnx/onnx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx.pb-c.h"

const char *onnx_dtype_name(int onnx_type)
{
    static const char *const names[] = {
        "undefined", "float32", "uint8", "int8", "uint16", "int16", "int32", "int64",
        "string", "bool", "float16", "float64", "uint32", "uint64", "complex64",
        "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
        "float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2",
    };
    if (onnx_type >= 0 && (size_t)onnx_type < sizeof names / sizeof names[0]) return names[onnx_type];
    return "unknown";
}

static bool dtype_held(int t)
{
    return (t != SMELT_STRING && t > 0 && t <= SMELT_U64) || t == SMELT_BF16;
}

int64_t onnx_tensor_bytes(smelt_dtype dt, const ir_shape *shape, int64_t *numel)
{
    /* The product of the non-zero dims must fit too: a tensor of shape [0, 2^62, 4] holds nothing,
     * but whoever multiplies its dims in order (smelt_tensor_numel, strides) would overflow. */
    int64_t n = 1, nonzero = 1;
    bool empty = false;
    for (int i = 0; i < shape->rank; i++) {
        if (shape->dim[i] < 0) return -1;
        if (shape->dim[i] == 0) empty = true;
        else if (__builtin_mul_overflow(nonzero, shape->dim[i], &nonzero)) return -1;
    }
    int64_t bytes;
    if (__builtin_mul_overflow(nonzero, (int64_t)smelt_dtype_size(dt), &bytes) || (uint64_t)bytes > SIZE_MAX / 2)
        return -1;
    if (empty) n = bytes = 0;
    else n = nonzero;
    if (numel) *numel = n;
    return bytes;
}

/* A location is acceptable if it stays inside the model's directory. */
static bool location_is_safe(const char *loc)
{
    if (!*loc || loc[0] == '/') return false;
    for (const char *p = loc; *p;) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') return false;
        if (memchr(p, '\\', n)) return false;
        p += n;
        while (*p == '/') p++;
    }
    return true;
}

static bool parse_u64(const char *s, int64_t *out)
{
    if (!s || !*s) return false;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || __builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *s - '0', &v))
            return false;
    }
    *out = v;
    return true;
}

/* Open `loc` (already checked by location_is_safe) under the directory `base`
 * one component at a time, never following a symbolic link (O_NOFOLLOW on
 * every component, so a link anywhere on the way cannot lead out of the
 * model's directory) and without blocking (O_NONBLOCK: a FIFO must not hang
 * the load; the caller takes only regular files). Returns the fd, or -1 with
 * *why set. */
static int open_beneath(const char *base, const char *loc, const char **why)
{
    int dir = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) {
        *why = strerror(errno);
        return -1;
    }
    char name[256];
    for (const char *p = loc;;) {
        while (*p == '/') p++;
        size_t n = strcspn(p, "/");
        const char *next = p + n;
        while (*next == '/') next++;
        bool last = *next == 0;
        if (n >= sizeof name) {
            close(dir);
            *why = "a path component is too long";
            return -1;
        }
        memcpy(name, p, n);
        name[n] = 0;
        if (n == 0 || !strcmp(name, ".")) {
            if (last) {
                close(dir);
                *why = "it names a directory";
                return -1;
            }
            p = next;
            continue;
        }
        int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY);
        int fd = openat(dir, name, flags);
        int err = errno;
        close(dir);
        if (fd < 0) {
            /* O_NOFOLLOW on a link fails with ELOOP (ENOTDIR for a link where a directory is wanted). */
            *why = err == ELOOP || err == ENOTDIR
                       ? "a symbolic link or a non-directory on the way (links are not followed)"
                       : strerror(err);
            return -1;
        }
        if (last) return fd;
        dir = fd;
        p = next;
    }
}

/* Open the external data of `tp` at its offset, checking that `nbytes` are there. */
static smelt_status external_open(const Onnx__TensorProto *tp, const char *base_dir, const char *what, size_t nbytes,
                                  FILE **out)
{
    *out = NULL;
    const char *loc = NULL;
    int64_t offset = 0, length = -1;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const char *k = tp->external_data[i]->key, *v = tp->external_data[i]->value;
        if (!k) continue;
        if (strcmp(k, "location") == 0) loc = v ? v : "";
        else if ((strcmp(k, "offset") == 0 && !parse_u64(v, &offset)) ||
                 (strcmp(k, "length") == 0 && !parse_u64(v, &length)))
            return diag_fail(SMELT_ERR_MODEL, "%s: external data %s '%s' is not a number", what, k, v ? v : "");
    }
    if (!loc) return diag_fail(SMELT_ERR_MODEL, "%s: external data without a location", what);
    if (!location_is_safe(loc))
        return diag_fail(SMELT_ERR_MODEL, "%s: external data location '%s' is absolute or leaves the model's directory",
                         what, loc);
    if (!base_dir)
        return diag_fail(SMELT_ERR_INVALID_ARG, "%s: external data '%s' but no base directory was given", what, loc);
    if (length >= 0 && (uint64_t)length != nbytes)
        return diag_fail(SMELT_ERR_MODEL, "%s: external data length %lld does not match the %zu bytes of its shape",
                         what, (long long)length, nbytes);
    size_t plen = strlen(base_dir) + strlen(loc) + 2;
    char *path = malloc(plen);
    if (!path) return diag_fail(SMELT_ERR_NOMEM, "%s: out of memory", what);
    snprintf(path, plen, "%s/%s", *base_dir ? base_dir : ".", loc);
    smelt_status st = SMELT_OK;
    const char *why = NULL;
    int fd = open_beneath(*base_dir ? base_dir : ".", loc, &why);
    FILE *f = NULL;
    struct stat sb;
    if (fd < 0)
        st = diag_fail(SMELT_ERR_IO, "%s: cannot open external data '%s': %s", what, path, why);
    else if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = diag_fail(SMELT_ERR_IO, "%s: external data '%s' is not a regular file", what, path);
    else if (offset > sb.st_size || (uint64_t)(sb.st_size - offset) < nbytes)
        st = diag_fail(SMELT_ERR_MODEL, "%s: external data '%s' is too short: %zu bytes wanted at offset %lld of %lld",
                       what, path, nbytes, (long long)offset, (long long)sb.st_size);
    else if (fcntl(fd, F_SETFL, 0) != 0 || !(f = fdopen(fd, "rb")))
        st = diag_fail(SMELT_ERR_IO, "%s: cannot read external data '%s': %s", what, path, strerror(errno));
    else if (fseeko(f, (off_t)offset, SEEK_SET) != 0)
        st = diag_fail(SMELT_ERR_IO, "%s: seeking in external data '%s' failed", what, path);
    free(path);
    if (st && f) fclose(f);
    else if (st && fd >= 0) close(fd);
    if (!st) *out = f;
    return st;
}

static smelt_status count_mismatch(const char *what, const char *field, size_t have, int64_t numel)
{
    return diag_fail(SMELT_ERR_MODEL, "%s: %s holds %zu elements but the shape has %lld", what, field, have,
                     (long long)numel);
}

/* The element count of the typed field ONNX uses for `dt`, and its name. */
static size_t typed_count(const Onnx__TensorProto *tp, smelt_dtype dt, const char **field)
{
    switch (dt) {
    case SMELT_F32: *field = "float_data"; return tp->n_float_data;
    case SMELT_F64: *field = "double_data"; return tp->n_double_data;
    case SMELT_I64: *field = "int64_data"; return tp->n_int64_data;
    case SMELT_U32: case SMELT_U64: *field = "uint64_data"; return tp->n_uint64_data;
    default: *field = "int32_data"; return tp->n_int32_data;
    }
}

/* Copy that typed field (its count checked), narrowing to the element size. */
static void fill_typed(const Onnx__TensorProto *tp, smelt_dtype dt, int64_t numel, void *dst)
{
    size_t n = (size_t)numel;
    for (size_t i = 0; i < n; i++) {
        switch (dt) {
        case SMELT_F32: ((float *)dst)[i] = tp->float_data[i]; break;
        case SMELT_F64: ((double *)dst)[i] = tp->double_data[i]; break;
        case SMELT_I64: ((int64_t *)dst)[i] = tp->int64_data[i]; break;
        case SMELT_U64: ((uint64_t *)dst)[i] = tp->uint64_data[i]; break;
        case SMELT_U32: ((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i]; break;
        case SMELT_I32: ((int32_t *)dst)[i] = tp->int32_data[i]; break;
        case SMELT_I16: ((int16_t *)dst)[i] = (int16_t)tp->int32_data[i]; break;
        case SMELT_U16: case SMELT_F16: case SMELT_BF16: ((uint16_t *)dst)[i] = (uint16_t)tp->int32_data[i]; break;
        case SMELT_I8: ((int8_t *)dst)[i] = (int8_t)tp->int32_data[i]; break;
        case SMELT_U8: ((uint8_t *)dst)[i] = (uint8_t)tp->int32_data[i]; break;
        default: ((uint8_t *)dst)[i] = tp->int32_data[i] != 0; break;
        }
    }
}

static bool is_external(const Onnx__TensorProto *tp)
{
    return tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

/* Is the data `tp` carries (or points to) exactly what its shape needs? */
static smelt_status data_check(const Onnx__TensorProto *tp, const char *base_dir, const char *what,
                               smelt_dtype dt, int64_t numel, size_t nbytes)
{
    if (is_external(tp)) {
        FILE *f;
        TRY(external_open(tp, base_dir, what, nbytes, &f));
        fclose(f);
        return SMELT_OK;
    }
    if (tp->has_raw_data) {
        if (tp->raw_data.len != nbytes)
            return diag_fail(SMELT_ERR_MODEL, "%s: raw_data holds %zu bytes but the shape needs %zu", what,
                             tp->raw_data.len, nbytes);
        return SMELT_OK;
    }
    const char *field;
    size_t have = typed_count(tp, dt, &field);
    if (have != (size_t)numel) return count_mismatch(what, field, have, numel);
    return SMELT_OK;
}

smelt_status onnx_tensor_header(const Onnx__TensorProto *tp, const char *base_dir, const char *what,
                                smelt_dtype *dt, ir_shape *shape)
{
    int t = tp->has_data_type ? tp->data_type : 0;
    if (!dtype_held(t))
        return diag_fail(t == 0 ? SMELT_ERR_MODEL : SMELT_ERR_UNSUPPORTED, "%s: dtype %s is not supported",
                         what, onnx_dtype_name(t));
    if (tp->n_dims > IR_MAX_RANK)
        return diag_fail(SMELT_ERR_UNSUPPORTED, "%s: rank %zu exceeds the maximum of %d", what, tp->n_dims, IR_MAX_RANK);
    ir_shape s = {.rank = (int)tp->n_dims};
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0)
            return diag_fail(SMELT_ERR_MODEL, "%s: negative dimension %lld", what, (long long)tp->dims[i]);
        s.dim[i] = tp->dims[i];
    }
    int64_t numel, bytes = onnx_tensor_bytes((smelt_dtype)t, &s, &numel);
    if (bytes < 0) return diag_fail(SMELT_ERR_MODEL, "%s: shape is too large", what);
    if (tp->segment) return diag_fail(SMELT_ERR_UNSUPPORTED, "%s: segmented tensors are not supported", what);
    TRY(data_check(tp, base_dir, what, (smelt_dtype)t, numel, (size_t)bytes));
    *dt = (smelt_dtype)t;
    *shape = s;
    return SMELT_OK;
}

smelt_status onnx_tensor_fill(const Onnx__TensorProto *tp, const char *base_dir, const char *what,
                              smelt_dtype dt, int64_t numel, void *dst, size_t nbytes)
{
    if (!is_external(tp)) TRY(data_check(tp, base_dir, what, dt, numel, nbytes));
    if (is_external(tp)) {
        FILE *f;
        TRY(external_open(tp, base_dir, what, nbytes, &f));
        size_t got = fread(dst, 1, nbytes, f);
        fclose(f);
        if (got != nbytes) return diag_fail(SMELT_ERR_IO, "%s: reading external data failed", what);
    } else if (tp->has_raw_data) {
        if (nbytes) memcpy(dst, tp->raw_data.data, nbytes);
    } else {
        fill_typed(tp, dt, numel, dst);
        return SMELT_OK;
    }
    if (dt == SMELT_BOOL)
        for (size_t i = 0; i < nbytes; i++) ((uint8_t *)dst)[i] = ((uint8_t *)dst)[i] != 0;
    return SMELT_OK;
}
