/* Internal to ir/: the per-op pieces that the catalog table in catalog.c is assembled from.
 * For every row of ops.def and fused_ops.def, some ir/ file defines
 *     const ir_attr_schema ir_attrs_Name[];  const uint32_t ir_nattrs_Name;
 *     bool ir_infer_Name(ir_graph *g, ir_node *n, dg_context *dg);
 * An op without attributes defines ir_nattrs_Name = 0 and ir_attrs_Name with one unused entry. */
#ifndef FUSERULE_IR_CATALOG_H
#define FUSERULE_IR_CATALOG_H

#include "ir/ir.h"

#define IR_OP(name, ...)                                                                           \
    extern const ir_attr_schema ir_attrs_##name[];                                                 \
    extern const uint32_t ir_nattrs_##name;                                                        \
    bool ir_infer_##name(ir_graph *g, ir_node *n, dg_context *dg);
#include "ir/ops.def"
#include "ir/fused_ops.def"
#undef IR_OP

#endif
