/* A kernel checked (kir_verify: every value defined before use, in a scope still open, types and
 * operands as each op requires) and printed (kir_dump); the builder is kir.c. */
#include "kir/kir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- verification ------------------------------------------------------- */

#define VFAIL(...) do { st = diag_fail(SMELT_ERR_INTERNAL, __VA_ARGS__); goto out; } while (0)

smelt_status kir_verify(const kir_kernel *k)
{
    smelt_status st = SMELT_OK;
    if (k->oom) return diag_fail(SMELT_ERR_NOMEM, "kernel %d: out of memory while building", k->id);
    /* scope[v]: block depth-id at which v was defined; -1 = not yet / out of scope */
    int *block_of = calloc((size_t)k->n_vals + 1, sizeof(int));
    int *stack = calloc((size_t)k->n_stmts + 2, sizeof(int));
    char *var_set = calloc((size_t)k->n_vars + 1, 1);
    if (!block_of || !stack || !var_set) {
        st = diag_fail(SMELT_ERR_NOMEM, "out of memory verifying kernel %d", k->id);
        goto out;
    }
    for (int v = 1; v < k->n_vals; v++) block_of[v] = k->vals[v].def < 0 ? 0 : -1;
    int depth = 0, next_block = 1;
    stack[0] = 0;
    char *open_blocks = calloc((size_t)k->n_stmts + 2, 1);
    if (!open_blocks) VFAIL("out of memory");
    open_blocks[0] = 1;
#define LIVE(v) ((v) > 0 && (v) < k->n_vals && block_of[v] >= 0 && open_blocks[block_of[v]])
    for (int i = 0; i < k->n_stmts; i++) {
        const kir_stmt *s = &k->stmts[i];
        switch (s->kind) {
        case KS_DEF: {
            const kir_value *v = &k->vals[s->val];
            int ar = kir_op_arity(v->op);
            kir_val ops[3] = {v->a, v->b, v->c};
            for (int j = 0; j < ar; j++)
                if (!LIVE(ops[j])) { free(open_blocks); VFAIL("kernel %d stmt %d: %s uses value %d out of scope", k->id, i, kir_op_name(v->op), ops[j]); }
            if (v->op == KIR_LOAD && (v->buf < 0 || v->buf >= k->n_bufs || k->vals[v->a].type != SMELT_I64)) { free(open_blocks); VFAIL("kernel %d stmt %d: bad load", k->id, i); }
            if (ar == 2 && v->op != KIR_SHL && v->op != KIR_SHR && k->vals[v->a].type != k->vals[v->b].type) { free(open_blocks); VFAIL("kernel %d stmt %d: %s of %s and %s", k->id, i, kir_op_name(v->op), smelt_dtype_name(k->vals[v->a].type), smelt_dtype_name(k->vals[v->b].type)); }
            if (v->op == KIR_SELECT && (k->vals[v->a].type != SMELT_BOOL || k->vals[v->b].type != k->vals[v->c].type)) { free(open_blocks); VFAIL("kernel %d stmt %d: bad select", k->id, i); }
            if (v->op == KIR_VARGET && !var_set[v->var]) { free(open_blocks); VFAIL("kernel %d stmt %d: var %d read before set", k->id, i, v->var); }
            block_of[s->val] = stack[depth];
            break;
        }
        case KS_STORE:
            if (s->buf < 0 || s->buf >= k->n_bufs || !k->bufs[s->buf].written) { free(open_blocks); VFAIL("kernel %d stmt %d: store to buffer %d not marked written", k->id, i, s->buf); }
            if (!LIVE(s->idx) || !LIVE(s->val)) { free(open_blocks); VFAIL("kernel %d stmt %d: store uses a value out of scope", k->id, i); }
            if (k->vals[s->val].type != k->bufs[s->buf].type) { free(open_blocks); VFAIL("kernel %d stmt %d: store of %s into %s buffer", k->id, i, smelt_dtype_name(k->vals[s->val].type), smelt_dtype_name(k->bufs[s->buf].type)); }
            break;
        case KS_LOOP_BEGIN:
            if (!LIVE(s->lo) || !LIVE(s->hi) || !LIVE(s->step)) { free(open_blocks); VFAIL("kernel %d stmt %d: loop bound out of scope", k->id, i); }
            stack[++depth] = next_block;
            open_blocks[next_block++] = 1;
            block_of[s->val] = stack[depth];
            break;
        case KS_IF_BEGIN:
            if (!LIVE(s->cond) || k->vals[s->cond].type != SMELT_BOOL) { free(open_blocks); VFAIL("kernel %d stmt %d: bad if condition", k->id, i); }
            stack[++depth] = next_block;
            open_blocks[next_block++] = 1;
            break;
        case KS_ELSE:
            if (depth == 0) { free(open_blocks); VFAIL("kernel %d stmt %d: else outside if", k->id, i); }
            open_blocks[stack[depth]] = 0;
            stack[depth] = next_block;
            open_blocks[next_block++] = 1;
            break;
        case KS_LOOP_END:
        case KS_IF_END:
            if (depth == 0) { free(open_blocks); VFAIL("kernel %d stmt %d: unbalanced block end", k->id, i); }
            open_blocks[stack[depth--]] = 0;
            break;
        case KS_VAR_SET:
            if (s->var < 0 || s->var >= k->n_vars || !LIVE(s->val) || k->vals[s->val].type != k->vars[s->var].type) { free(open_blocks); VFAIL("kernel %d stmt %d: bad var set", k->id, i); }
            var_set[s->var] = 1;
            break;
        case KS_PREFETCH:
            if (s->buf < 0 || s->buf >= k->n_bufs || k->bufs[s->buf].workgroup || !LIVE(s->idx) || k->vals[s->idx].type != SMELT_I64) { free(open_blocks); VFAIL("kernel %d stmt %d: bad prefetch", k->id, i); }
            break;
        case KS_BARRIER:
        case KS_COUNT:
            break;
        }
    }
#undef LIVE
    free(open_blocks);
    if (depth != 0) VFAIL("kernel %d: %d blocks left open", k->id, depth);
out:
    free(block_of);
    free(stack);
    free(var_set);
    return st;
}

/* ---- dump --------------------------------------------------------------- */

static void dump_val(const kir_kernel *k, kir_val v, FILE *f)
{
    const kir_value *x = &k->vals[v];
    if (x->op == KIR_CONST) {
        if (kir_is_float(x->type)) fprintf(f, "%g", x->imm.f);
        else fprintf(f, "%lld", (long long)x->imm.i);
    } else if (x->op == KIR_WG) {
        fprintf(f, "wg");
    } else if (x->op == KIR_LID) {
        fprintf(f, "lid");
    } else {
        fprintf(f, "%%%d", v);
    }
}

void kir_dump(const kir_kernel *k, FILE *f)
{
    fprintf(f, "kernel k%d (%lld workgroups x %d threads) ; %s\n", k->id, (long long)k->n_workgroups, k->wg_size,
            k->comment);
    for (int b = 0; b < k->n_bufs; b++) {
        if (k->bufs[b].workgroup)
            fprintf(f, "  buf%d: %s[%lld] workgroup memory at +%lld%s\n", b, smelt_dtype_name(k->bufs[b].type),
                    (long long)k->bufs[b].numel, (long long)k->bufs[b].smem_offset,
                    k->bufs[b].promote_reuse ? " promote_reuse" : "");
        else
            fprintf(f, "  buf%d: %s[%lld] tensor %d %s%s\n", b, smelt_dtype_name(k->bufs[b].type),
                    (long long)k->bufs[b].numel, k->bufs[b].tensor, k->bufs[b].read ? "r" : "",
                    k->bufs[b].written ? "w" : "");
    }
    int ind = 1;
    for (int i = 0; i < k->n_stmts; i++) {
        const kir_stmt *s = &k->stmts[i];
        if (s->kind == KS_LOOP_END || s->kind == KS_IF_END || s->kind == KS_ELSE) ind--;
        for (int j = 0; j < ind; j++) fputs("  ", f);
        switch (s->kind) {
        case KS_DEF: {
            const kir_value *v = &k->vals[s->val];
            fprintf(f, "%%%d: %s = %s", s->val, smelt_dtype_name(v->type), kir_op_name(v->op));
            if (v->op == KIR_LOAD) fprintf(f, " buf%d", v->buf);
            if (v->op == KIR_VARGET) fprintf(f, " var%d", v->var);
            kir_val ops[3] = {v->a, v->b, v->c};
            for (int j = 0; j < kir_op_arity(v->op); j++) {
                fputc(' ', f);
                dump_val(k, ops[j], f);
            }
            break;
        }
        case KS_STORE:
            fprintf(f, "store buf%d[", s->buf);
            dump_val(k, s->idx, f);
            fprintf(f, "] = ");
            dump_val(k, s->val, f);
            break;
        case KS_LOOP_BEGIN:
            fprintf(f, s->stream ? "stream for %%%d = " : s->gemm ? "gemm for %%%d = " : s->deint ? "deinterleave for %%%d = "
                       : s->masked ? "masked for %%%d = " : s->transpose ? "transpose for %%%d = "
                       : s->parallel ? "parallel for %%%d = " : "for %%%d = ", s->val);
            dump_val(k, s->lo, f);
            fprintf(f, " .. ");
            dump_val(k, s->hi, f);
            fprintf(f, " step ");
            dump_val(k, s->step, f);
            ind++;
            break;
        case KS_IF_BEGIN:
            fprintf(f, "if ");
            dump_val(k, s->cond, f);
            ind++;
            break;
        case KS_ELSE: fprintf(f, "else"); ind++; break;
        case KS_LOOP_END: fprintf(f, "end for"); break;
        case KS_IF_END: fprintf(f, "end if"); break;
        case KS_VAR_SET:
            fprintf(f, "var%d = ", s->var);
            dump_val(k, s->val, f);
            break;
        case KS_BARRIER: fprintf(f, "barrier"); break;
        case KS_PREFETCH:
            fprintf(f, "prefetch buf%d[", s->buf);
            dump_val(k, s->idx, f);
            fputc(']', f);
            break;
        case KS_COUNT: break;
        }
        fputc('\n', f);
    }
}
