/* onnx_models.c — ONNX models built in memory for the importer's tests (onnx_models.h). */
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"
#include "onnx_models.h"
#include "test.h"

/* Everything a test model allocates, freed by pool_free. */
static void *pool[4096];
static int n_pool;

void *palloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (n_pool < (int)(sizeof pool / sizeof pool[0])) pool[n_pool++] = p;
    return p;
}

void pool_free(void)
{
    while (n_pool) free(pool[--n_pool]);
}

/* Split "a,b,,c" into strings; "" gives none. */
static char **split(const char *list, size_t *n)
{
    *n = 0;
    if (!*list) return NULL;
    char **v = palloc(sizeof(char *) * (strlen(list) + 1));
    char *s = palloc(strlen(list) + 1);
    strcpy(s, list);
    for (char *p = s;;) {
        v[(*n)++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    return v;
}

Onnx__NodeProto *node_new(Onnx__GraphProto *g, const char *op, const char *name, const char *ins,
                                 const char *outs)
{
    Onnx__NodeProto *n = palloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = (char *)name;
    n->input = split(ins, &n->n_input);
    n->output = split(outs, &n->n_output);
    if (g) APPEND(g->node, g->n_node, n);
    return n;
}

Onnx__AttributeProto *pb_attr_new(Onnx__NodeProto *n, const char *name, int type)
{
    Onnx__AttributeProto *a = palloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = type != 0;
    a->type = type;
    if (n) APPEND(n->attribute, n->n_attribute, a);
    return a;
}

void pb_attr_int(Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = pb_attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void pb_attr_float(Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = pb_attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

void pb_attr_ref(Onnx__NodeProto *n, const char *name, int type, const char *ref)
{
    pb_attr_new(n, name, type)->ref_attr_name = (char *)ref;
}

Onnx__TensorProto *tensor_raw(const char *name, int dtype, int rank, const int64_t *dims, const void *data,
                                     size_t bytes)
{
    Onnx__TensorProto *t = palloc(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = (size_t)rank;
    t->dims = (int64_t *)dims;
    if (data) {
        t->has_raw_data = 1;
        t->raw_data.len = bytes;
        t->raw_data.data = (uint8_t *)data;
    }
    return t;
}

Onnx__ValueInfoProto *value_info(const char *name, int elem, int rank, const int64_t *dims,
                                        const char *const *params)
{
    Onnx__ValueInfoProto *v = palloc(sizeof *v);
    Onnx__TypeProto *tp = palloc(sizeof *tp);
    Onnx__TypeProto__Tensor *tt = palloc(sizeof *tt);
    Onnx__TensorShapeProto *sh = palloc(sizeof *sh);
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    v->name = (char *)name;
    v->type = tp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    tt->shape = sh;
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = palloc(sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (params && params[i]) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = (char *)params[i];
        } else if (dims[i] >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        }
        APPEND(sh->dim, sh->n_dim, d);
    }
    return v;
}

void mb_init(mb *b, int64_t opset)
{
    onnx__model_proto__init(&b->m);
    onnx__graph_proto__init(&b->g);
    onnx__operator_set_id_proto__init(&b->opset);
    b->m.has_ir_version = 1;
    b->m.ir_version = 8;
    b->m.graph = &b->g;
    b->g.name = "test";
    b->opset.domain = "";
    b->opset.has_version = 1;
    b->opset.version = opset;
    APPEND(b->m.opset_import, b->m.n_opset_import, &b->opset);
}

void mb_input(mb *b, const char *name, int elem, int rank, const int64_t *dims)
{
    APPEND(b->g.input, b->g.n_input, value_info(name, elem, rank, dims, NULL));
}

void mb_output(mb *b, const char *name)
{
    Onnx__ValueInfoProto *v = palloc(sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = (char *)name;
    APPEND(b->g.output, b->g.n_output, v);
}

uint8_t *mb_pack(mb *b, size_t *size)
{
    *size = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = palloc(*size);
    onnx__model_proto__pack(&b->m, buf);
    return buf;
}

smelt_status mb_load(mb *b, const char *base_dir, ir_graph **g)
{
    size_t size;
    uint8_t *buf = mb_pack(b, &size);
    return onnx_load_memory(buf, size, base_dir, g);
}

int tensor_named(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0) return i;
    return -1;
}

Onnx__FunctionProto *function_new(mb *b, const char *domain, const char *name, const char *ins,
                                         const char *outs, const char *attrs)
{
    Onnx__FunctionProto *f = palloc(sizeof *f);
    onnx__function_proto__init(f);
    f->domain = (char *)domain;
    f->name = (char *)name;
    f->input = split(ins, &f->n_input);
    f->output = split(outs, &f->n_output);
    f->attribute = split(attrs, &f->n_attribute);
    APPEND(f->opset_import, f->n_opset_import, &b->opset);
    APPEND(b->m.functions, b->m.n_functions, f);
    return f;
}

void function_node(Onnx__FunctionProto *f, Onnx__NodeProto *n) { APPEND(f->node, f->n_node, n); }

/* FunctionProto.attribute_proto (field 11) is newer than our onnx.proto, so the
 * test writes it the way a newer writer would: as a field protobuf-c does not know. */
void function_default(Onnx__FunctionProto *f, Onnx__AttributeProto *a)
{
    size_t n = onnx__attribute_proto__get_packed_size(a);
    ProtobufCMessageUnknownField *u = palloc(sizeof *u * (f->base.n_unknown_fields + 1));
    if (f->base.n_unknown_fields) memcpy(u, f->base.unknown_fields, sizeof *u * f->base.n_unknown_fields);
    /* protobuf-c keeps an unknown field's length prefix in its data (n < 128 here). */
    uint8_t *data = palloc(n + 1);
    data[0] = (uint8_t)n;
    onnx__attribute_proto__pack(a, data + 1);
    u[f->base.n_unknown_fields] = (ProtobufCMessageUnknownField){11, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, n + 1, data};
    f->base.unknown_fields = u;
    f->base.n_unknown_fields++;
}

void check_error(mb *b, smelt_status want, const char *msg1, const char *msg2)
{
    ir_graph *g = (ir_graph *)1;
    CHECK_EQ_INT(mb_load(b, NULL, &g), want);
    CHECK(g == NULL);
    CHECK_STR_HAS(smelt_last_error(), msg1);
    if (msg2) CHECK_STR_HAS(smelt_last_error(), msg2);
    pool_free();
}

void pb_attr_ints(Onnx__NodeProto *n, const char *name, int cnt, const int64_t *v)
{
    Onnx__AttributeProto *a = pb_attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)cnt, a->ints = (int64_t *)v;
}

void pb_attr_str(Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = pb_attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1, a->s.data = (uint8_t *)v, a->s.len = strlen(v);
}

void init_f32(mb *b, const char *name, int rank, const int64_t *dims, const float *v, size_t n)
{
    APPEND(b->g.initializer, b->g.n_initializer, tensor_raw(name, SMELT_F32, rank, dims, v, n * sizeof(float)));
}
