/*
 * ops_more.h — rows of the op table for ops beyond the core data and compute
 * sets (see ops.h for the columns): resampling, scatter/gather variants,
 * sorting, quantization, losses. Their functions live in graph/infer_more.c
 * and kernel/lower_more*.c.
 */
#ifndef SMELT_IR_OPS_MORE_H
#define SMELT_IR_OPS_MORE_H

/*  name            kind         in     out  value_in infer                scalar   elem     lower  flags */
#define OPS_MORE(X)

#endif
