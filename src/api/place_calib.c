/*
 * place_calib.c — what the placements measure, kept in the compile cache:
 * the `cost` placement's per-region times and per-device links
 * (api/place_measure.c) and the `split` placement's device speeds
 * (api/split.c). A second compile of the same model, options, input shapes
 * and device list (each device's identity and target) by the same build of
 * smelt reads them back instead of measuring again.
 *
 * An entry (`KEY.calib`) is a magic line, the payload's length, the payload
 * and a hash of it; rt_cache_read also checks the SHA-256 the cache recorded
 * when it was written. Any mismatch (damaged, another length, another
 * layout) is a miss: measured again and written anew. SMELT_RECALIBRATE=1
 * measures every time.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/program.h"
#include "core/hash.h"
#include "rt/rt.h"

#define CALIB_MAGIC "smelt-calib-1\n\0\0"

static _Atomic int64_t n_measured;

void calib_begin(calib_key *k, const smelt_model *m, const smelt_options *opt, const char *what)
{
    k->h = HASH_SEED;
    k->ok = m && m->digest_ok && program_cache_identity(&k->h);
    if (!k->ok) return;
    k->h = hash_str(k->h, CALIB_MAGIC);
    k->h = hash_str(k->h, what);
    k->h = hash_bytes(k->h, m->digest, sizeof m->digest);
    memcpy(k->digest, m->digest, sizeof k->digest);
    k->h = hash_str(k->h, opt->devices ? opt->devices : "");
    k->h = hash_str(k->h, opt->placement ? opt->placement : "");
    int64_t o[6] = {opt->threads, opt->locals, opt->no_fuse, opt->fuse_pad, opt->max_memory, opt->max_loop_iterations};
    k->h = hash_bytes(k->h, o, sizeof o);
}

void calib_add(calib_key *k, const void *data, size_t len)
{
    k->h = hash_bytes(k->h, &len, sizeof len);
    k->h = hash_bytes(k->h, data, len);
}

void calib_add_str(calib_key *k, const char *s) { calib_add(k, s ? s : "", s ? strlen(s) : 0); }

static void key_text(const calib_key *k, char key[33])
{
    uint64_t h2 = hash_bytes(k->h ^ 0x9e3779b97f4a7c15ull, k->digest, sizeof k->digest);
    snprintf(key, 33, "%016llx%016llx", (unsigned long long)k->h, (unsigned long long)h2);
}

bool calib_load(const calib_key *k, void *data, size_t len)
{
    const char *again = getenv("SMELT_RECALIBRATE");
    if (!k->ok || (again && strcmp(again, "0") != 0)) return false;
    char key[33];
    key_text(k, key);
    size_t got = 0;
    char *e = rt_cache_read(key, ".calib", &got);
    size_t head = sizeof CALIB_MAGIC + sizeof(uint64_t);
    bool ok = e && got == head + len + sizeof(uint64_t) && memcmp(e, CALIB_MAGIC, sizeof CALIB_MAGIC) == 0;
    uint64_t n = 0, sum = 0;
    if (ok) {
        memcpy(&n, e + sizeof CALIB_MAGIC, sizeof n);
        memcpy(&sum, e + head + len, sizeof sum);
        ok = n == len && sum == hash_bytes(HASH_SEED, e + head, len);
    }
    if (ok) memcpy(data, e + head, len);
    free(e);
    return ok;
}

void calib_store(const calib_key *k, const void *data, size_t len)
{
    if (!k->ok) return;
    char key[33];
    key_text(k, key);
    size_t head = sizeof CALIB_MAGIC + sizeof(uint64_t);
    char *e = malloc(head + len + sizeof(uint64_t));
    if (!e) return; /* the cache is an optimisation */
    uint64_t n = len, sum = hash_bytes(HASH_SEED, data, len);
    memcpy(e, CALIB_MAGIC, sizeof CALIB_MAGIC);
    memcpy(e + sizeof CALIB_MAGIC, &n, sizeof n);
    memcpy(e + head, data, len);
    memcpy(e + head + len, &sum, sizeof sum);
    rt_cache_write(key, ".calib", e, head + len + sizeof sum);
    free(e);
}

void calib_measured(void) { atomic_fetch_add(&n_measured, 1); }

int64_t calib_measurements(void) { return atomic_load(&n_measured); }
