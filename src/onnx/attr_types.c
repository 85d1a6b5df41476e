/*
 * attr_types.c — the type an attribute must have, by name.
 *
 * The shape rules read attributes through ir_attr_int & co., which fall back
 * to the default when the type is wrong; so a model that gives `axis` as a
 * float or a string would be run with the default axis. The importer checks
 * every attribute against this table instead and fails naming the node and the
 * attribute. Only names with one type across all ONNX ops (and the contrib
 * ops smelt expands) are listed; `value`, `bias` and the like, whose type
 * depends on the op (or the opset: Cast-1 names `to` by a string), are
 * checked by their op's rule.
 */
#include <string.h>

#include "onnx/onnx.h"

static const struct {
    const char *name;
    ir_attr_type type;
} expected[] = {
    {"allowzero", IR_ATTR_INT},       {"alpha", IR_ATTR_FLOAT},          {"antialias", IR_ATTR_INT},
    {"auto_pad", IR_ATTR_STRING},     {"axes", IR_ATTR_INTS},            {"axis", IR_ATTR_INT},
    {"batch_dims", IR_ATTR_INT},      {"beta", IR_ATTR_FLOAT},           {"blocksize", IR_ATTR_INT},
    {"ceil_mode", IR_ATTR_INT},       {"coordinate_transformation_mode", IR_ATTR_STRING},
    {"count_include_pad", IR_ATTR_INT}, {"cubic_coeff_a", IR_ATTR_FLOAT}, {"dilations", IR_ATTR_INTS},
    {"direction", IR_ATTR_STRING},    {"ends", IR_ATTR_INTS},            {"epsilon", IR_ATTR_FLOAT},
    {"exclude_outside", IR_ATTR_INT}, {"exclusive", IR_ATTR_INT},        {"extrapolation_value", IR_ATTR_FLOAT},
    {"fmod", IR_ATTR_INT},            {"gamma", IR_ATTR_FLOAT},          {"group", IR_ATTR_INT},
    {"hidden_size", IR_ATTR_INT},     {"keepdims", IR_ATTR_INT},         {"kernel_shape", IR_ATTR_INTS},
    {"largest", IR_ATTR_INT},         {"mode", IR_ATTR_STRING},          {"momentum", IR_ATTR_FLOAT},
    {"nearest_mode", IR_ATTR_STRING}, {"noop_with_empty_axes", IR_ATTR_INT}, {"output_padding", IR_ATTR_INTS},
    {"output_shape", IR_ATTR_INTS},   {"pads", IR_ATTR_INTS},            {"perm", IR_ATTR_INTS},
    {"reduction", IR_ATTR_STRING},    {"reverse", IR_ATTR_INT},          {"select_last_index", IR_ATTR_INT},
    {"sorted", IR_ATTR_INT},          {"split", IR_ATTR_INTS},           {"starts", IR_ATTR_INTS},
    {"storage_order", IR_ATTR_INT},   {"strides", IR_ATTR_INTS},
    {"transA", IR_ATTR_INT},          {"transB", IR_ATTR_INT},
};

static const char *type_names[] = {"a float", "an int", "a string", "a tensor", "floats", "ints", "strings", "another type"};

const char *onnx_attr_type_name(ir_attr_type t) { return (unsigned)t < 8 ? type_names[t] : "?"; }

int onnx_attr_expected_type(const char *name)
{
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (strcmp(expected[i].name, name) == 0) return (int)expected[i].type;
    return -1;
}
