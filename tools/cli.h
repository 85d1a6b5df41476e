/*
 * The command-line tool's shared parts: the parsed command line and the
 * helpers its commands share (tools/smelt.c parses and runs, cli_check.c is
 * `smelt check`, cli_bench.c is `smelt bench`).
 */
#ifndef SMELT_TOOLS_CLI_H
#define SMELT_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "smelt.h"

#define MAX_INPUTS 64

typedef struct cli {
    const char *cmd, *path, *output_dir, *emit, *out_file;
    smelt_options opt;
    int runs;
    double atol, rtol; /* check: numpy allclose tolerances for float outputs */
    bool devices_given;
    int profile;     /* bench: per-kernel time breakdown */
    int no_cold;     /* bench: no cold compile in an empty cache, only one from the usual cache */
    int pipeline;    /* bench: also `runs` runs submitted with this many held at once (smelt_program_submit) */
    int n_inputs;
    smelt_tensor inputs[MAX_INPUTS]; /* from --input (data) or --shape (no data) */
    char *input_names[MAX_INPUTS];
} cli;

int fail(const char *what);              /* prints smelt_last_error() after what; returns 2 */
double now_ms(void);                     /* a monotonic clock in ms */
smelt_tensor *cli_input(cli *c, const char *name);        /* the input of that name, added when new */
int complete_inputs(cli *c, const smelt_model *m);        /* every model input gets data; 0 on error */
bool path_join(char *buf, size_t cap, const char *dir, const char *name);
int list_dir(const char *dir, const char *prefix, char **names, int cap);
int load_dir_inputs(cli *c, const char *dir, const smelt_model *m); /* a backend-test DIR's set 0 */

int cmd_check(cli *c);
int cmd_bench(cli *c);

#endif
