/*
 * conv_winograd.h — the three internal ops of a Winograd convolution
 * F(m x m, 3 x 3) (graph/winograd.c writes them in place of a 3x3 stride-1
 * Conv; a model cannot name them, OPF_INTERNAL):
 *
 *   WinogradInput(X) -> V
 *       X [N, C, H, W]; T = m + 2, P = T*T; V [P, C, tiles] with
 *       tiles = N * TH * TW, TH = ceil(OH / m), TW = ceil(OW / m), tile
 *       (n, th, tw) numbered (n * TH + th) * TW + tw, and
 *       V[a*T + b][c][tile] = (B^T d B)[a][b], d the T x T patch of X[n][c] at
 *       rows th*m - pads[0] .., columns tw*m - pads[1] .. (outside X: 0, so
 *       the Conv's pads fold into the reads and the right/bottom partial tiles
 *       read zeros).
 *       attributes: m (2 or 4), pads [top, left], out_hw [OH, OW].
 *   WinogradGemm(V, U) -> M
 *       the P products as one batched GEMM: M [P, tiles, K],
 *       M[p][tile][k] = sum over c of V[p][c][tile] * U[p][c][k], U the filter
 *       transformed at compile time, U[p] = (G g G^T)[a][b] as [C, K]: held
 *       row-major [P, C, K], or (the C target) as the panels of every product
 *       one after the other, [P * ceil(K/NR), C, NR] (ir.h IR_ENC_PANELS with
 *       the logical shape [P, C, K]), read by the packed GEMM's microkernel
 *       (ops/gemm_packed.h, b_batched) in one kernel whose units range over
 *       products x row blocks of tiles x column blocks of K.
 *   WinogradOutput(M[, B]) -> Y
 *       Y [N, K, OH, OW] with Y[n][k][th*m + i][tw*m + j] = B[k] +
 *       (A^T Mt A)[i][j] over the tile's T x T matrix
 *       Mt[a][b] = M[a*T + b][tile][k]; the partial tiles' rows and columns
 *       past OH, OW are not stored.
 *       attributes: m, shape [N, K, OH, OW].
 * The tile index is V's innermost dim, so WinogradInput walks a row of tiles
 * over six rows of X and stores unit-stride, and the GEMM reads A = V[p]^T in
 * place (A[tile][c] at tile + c*tiles, as a 1x1 conv reads X: no pack); the
 * channel is M's innermost dim, so WinogradOutput reads the P products of a
 * run of channels unit-stride (its channel loop is the vector loop).
 *
 * Input and output lower to one kernel each over the tiles on every target
 * kind; fusion sees all three as opaque roots, so a Conv epilogue (Relu, a
 * residual Add) fused after WinogradOutput is applied at its stores, and a
 * producer of X that costs nothing (a Transpose, a Reshape) is read through.
 */
#ifndef SMELT_OPS_CONV_WINOGRAD_H
#define SMELT_OPS_CONV_WINOGRAD_H

#include "lower/lower.h"

smelt_status infer_WinogradInput(struct ir_graph *g, int node);
smelt_status infer_WinogradGemm(struct ir_graph *g, int node);
smelt_status infer_WinogradOutput(struct ir_graph *g, int node);
smelt_status lower_WinogradInput(struct lower_ctx *c);
smelt_status lower_WinogradGemm(struct lower_ctx *c);
smelt_status lower_WinogradOutput(struct lower_ctx *c);

#endif
