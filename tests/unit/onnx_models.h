/*
 * onnx_models.h — ONNX models built in memory for the importer's tests
 * (test_onnx*.c): ModelProto, nodes, attributes, initializers and functions
 * through protobuf-c's own structs, everything allocated from one pool that
 * each test frees (pool_free).
 */
#ifndef SMELT_TEST_ONNX_MODELS_H
#define SMELT_TEST_ONNX_MODELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ir/ir.h"
#include "onnx/onnx.pb-c.h"

/* Append x to the array arr of n pointers (a fresh pool array). */
#define APPEND(arr, n, x)                                                      \
    do {                                                                       \
        void **na_ = palloc(sizeof(void *) * ((n) + 1));                       \
        if ((n)) memcpy(na_, (arr), sizeof(void *) * (n));                     \
        na_[(n)++] = (x);                                                      \
        (arr) = (void *)na_;                                                   \
    } while (0)

typedef struct mb {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset;
} mb;

/* Shapes the tests share. */
static const int64_t D2x3[] = {2, 3}, D3[] = {3}, D2x2[] = {2, 2};

/* Zeroed memory that lives until pool_free (every model part is allocated here). */
void *palloc(size_t n);

/* Free everything palloc gave out: the end of each test. */
void pool_free(void);

/* A node "op" named `name` with comma-separated inputs and outputs ("" for an
 * omitted one), appended to g when g is not NULL. */
Onnx__NodeProto *node_new(Onnx__GraphProto *g, const char *op, const char *name, const char *ins, const char *outs);

/* Attributes appended to node n (when not NULL); type 0 leaves the type unset. */
Onnx__AttributeProto *pb_attr_new(Onnx__NodeProto *n, const char *name, int type);
void pb_attr_int(Onnx__NodeProto *n, const char *name, int64_t v);
void pb_attr_float(Onnx__NodeProto *n, const char *name, float v);
void pb_attr_ref(Onnx__NodeProto *n, const char *name, int type, const char *ref);
void pb_attr_ints(Onnx__NodeProto *n, const char *name, int cnt, const int64_t *v);
void pb_attr_str(Onnx__NodeProto *n, const char *name, const char *v);

/* A TensorProto with raw_data (NULL data: none). */
Onnx__TensorProto *tensor_raw(const char *name, int dtype, int rank, const int64_t *dims, const void *data,
                              size_t bytes);

/* A tensor ValueInfoProto; dims[i] < 0 leaves a dim unknown, params[i] names it. */
Onnx__ValueInfoProto *value_info(const char *name, int elem, int rank, const int64_t *dims, const char *const *params);

/* A model of one graph importing the default domain at `opset`, with its inputs,
 * outputs, packed form and import (onnx_load_memory). */
void mb_init(mb *b, int64_t opset);
void mb_input(mb *b, const char *name, int elem, int rank, const int64_t *dims);
void mb_output(mb *b, const char *name);
uint8_t *mb_pack(mb *b, size_t *size);
smelt_status mb_load(mb *b, const char *base_dir, ir_graph **g);

/* The index of g's tensor `name`, or -1. */
int tensor_named(const ir_graph *g, const char *name);

/* A model-local function with comma-separated inputs, outputs and attribute
 * names, its nodes and its attribute defaults (written as a newer writer
 * would: an unknown field 11). */
Onnx__FunctionProto *function_new(mb *b, const char *domain, const char *name, const char *ins, const char *outs,
                                  const char *attrs);
void function_node(Onnx__FunctionProto *f, Onnx__NodeProto *n);
void function_default(Onnx__FunctionProto *f, Onnx__AttributeProto *a);

/* Importing b fails with `want`, leaves no graph and names msg1 (and msg2). */
void check_error(mb *b, smelt_status want, const char *msg1, const char *msg2);

/* A float32 initializer of n values. */
void init_f32(mb *b, const char *name, int rank, const int64_t *dims, const float *v, size_t n);

#endif
