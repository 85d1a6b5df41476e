/*
 * conv_winograd.h — the two internal ops of a Winograd convolution
 * F(m x m, 3 x 3) (graph/winograd.c writes them in place of a 3x3 stride-1
 * Conv; a model cannot name them, OPF_INTERNAL):
 *
 *   WinogradInput(X) -> V_0 .. V_{T*T-1}
 *       X [N, C, H, W]; T = m + 2; output p = a*T + b is [C, tiles] with
 *       tiles = N * TH * TW, TH = ceil(OH / m), TW = ceil(OW / m), tile
 *       (n, th, tw) numbered (n * TH + th) * TW + tw, and
 *       V_p[c][tile] = (B^T d B)[a][b], d the T x T patch of X[n][c] at rows
 *       th*m - pads[0] .., columns tw*m - pads[1] .. (outside X: 0, so the
 *       Conv's pads fold into the reads and the right/bottom partial tiles
 *       read zeros).
 *       attributes: m (2 or 4), pads [top, left], out_hw [OH, OW].
 *   WinogradOutput(M_0 .. M_{T*T-1}[, B]) -> Y
 *       M_p [tiles, K] (the MatMul of V_p^T by the filter transformed at compile
 *       time, U_p = (G g G^T)[a][b] as [C, K]); Y [N, K, OH, OW] with
 *       Y[n][k][th*m + i][tw*m + j] = B[k] + (A^T M A)[i][j] over the tile's
 *       T x T matrix M[a][b] = M_{a*T+b}[tile][k]; the partial tiles' rows and
 *       columns past OH, OW are not stored.
 *       attributes: m, shape [N, K, OH, OW].
 * The tile index is V_p's innermost dim, so WinogradInput walks a row of tiles
 * over six rows of X and stores unit-stride, and the MatMul's A packing (MR
 * rows of A^T's k-th column at a time) reads unit-stride too; the channel is
 * M_p's innermost dim, so WinogradOutput reads the T*T products of a run of
 * channels unit-stride.
 *
 * Both lower to one kernel over the tiles on every target kind (the C target
 * vectorizes the channel loop); fusion sees them as opaque roots, so a Conv
 * epilogue (Relu, a residual Add) fused after WinogradOutput is applied at
 * its stores.
 */
#ifndef SMELT_OPS_CONV_WINOGRAD_H
#define SMELT_OPS_CONV_WINOGRAD_H

#include "lower/lower.h"

smelt_status infer_WinogradInput(struct ir_graph *g, int node);
smelt_status infer_WinogradOutput(struct ir_graph *g, int node);
smelt_status lower_WinogradInput(struct lower_ctx *c);
smelt_status lower_WinogradOutput(struct lower_ctx *c);

#endif
