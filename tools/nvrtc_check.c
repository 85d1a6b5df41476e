/*
 * nvrtc_check — compile CUDA C files (from `smelt compile --emit cuda`) with
 * NVRTC for sm_90 and sm_80; no GPU needed.
 *
 *   nvrtc_check FILE.cu...
 * Prints `FILE: PASS` or `FILE: FAIL <arch>: <log>` per file. Exit status: 0
 * when every file compiled without errors or warnings for both, 1 otherwise,
 * 77 when libnvrtc is absent (nothing was checked: a skip, not a failure).
 */
#include <stdio.h>
#include <stdlib.h>

#include "rt/cuda.h"

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n)
        buf[n] = 0;
    else
        free(buf), buf = NULL;
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: nvrtc_check FILE.cu...\n");
        return 2;
    }
    if (!rt_cuda_nvrtc_available()) {
        printf("nvrtc_check: SKIP libnvrtc not found\n");
        return 77;
    }
    static const char *const archs[] = {"sm_90", "sm_80"};
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        char *src = read_all(argv[i]);
        if (!src) {
            printf("%s: FAIL cannot read\n", argv[i]);
            bad++;
            continue;
        }
        int ok = 1;
        for (int a = 0; a < 2 && ok; a++)
            if (rt_cuda_check(src, archs[a])) {
                printf("%s: FAIL %s: %s\n", argv[i], archs[a], smelt_last_error());
                ok = 0;
            }
        if (ok) printf("%s: PASS\n", argv[i]);
        bad += !ok;
        free(src);
    }
    return bad ? 1 : 0;
}
